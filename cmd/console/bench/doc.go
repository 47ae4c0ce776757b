// Package bench holds the modes of `console bench`: burn-down, continuous,
// enqueue, relay, the SQL floor, scale, bloat, fairness, footprint and
// pressure (the continuous load with the xmin horizon free, then pinned by a
// writing transaction, minute by minute). Each mode runs on a database the
// caller provides (cmd/console creates a scratch one), is bounded in time and count, checks what it
// measured (every job done exactly once, every event in the stream) and
// returns a Report: a table for people and one JSON object for scripts.
//
// The figures are for comparing runs on one machine in one sitting (the
// engine against River, against the SQL floor, one table size against
// another); absolute numbers depend on the box and its load.
package bench
