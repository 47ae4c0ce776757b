// Package collector exposes the diagnostics as Prometheus metrics: a
// Collector serves the evidence of the shared findings round
// (diagnostics.Diagnostics.LatestRound) as gauges and counters with bounded
// labels, keeping each failed check's last good values, and NewPool serves
// the statistics of a pgx pool.
//
// A scrape never runs the catalog more often than Config.Refresh and never
// waits longer than Config.Wait; the metrics and their meaning are listed
// in METRICS.md. Metrics go to the Registerer the caller injects, never to
// the global registry.
package collector
