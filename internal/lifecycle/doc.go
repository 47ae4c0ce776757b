// Package lifecycle is the start/stop plumbing of a background service:
// Start launches the service's goroutines under a context that Stop
// cancels, and Stop waits for them to return. A service embeds a Runner
// and writes only what its goroutines do.
package lifecycle
