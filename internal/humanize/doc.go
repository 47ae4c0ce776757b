// Package humanize writes numbers the way the console shows them to a
// person: the sentences of action previews and results, and the pages.
// It has no dependencies, so any package of the console may use it.
package humanize
