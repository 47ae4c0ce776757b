// Package sampler keeps a ring of recent diagnostics samples so pages show
// rates and sparklines, not totals since boot.
//
// A Sampler (New) is a service: Start it once, Stop it when done; one
// goroutine takes a diagnostics.Sample every Config.Interval
// (Diagnostics.TakeSample) and hands it to Config.OnSampleFunc, the flight
// recorder's Record. Series turns the ring into points: gauges as they were
// read, cumulative counters as rates between samples, skipping a pair
// across a stats reset or a restart. While it runs, its fresh WAL rate is
// the one findings rounds use.
package sampler
