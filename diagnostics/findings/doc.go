// Package findings turns the evidence of a diagnostics round into findings:
// statements about the database an operator can act on, each with the
// evidence it rests on, the runbook page that explains it and the actions
// that fit.
//
// Rules has one small rule per finding code (the Code constants), in the
// order findings of equal severity are listed; each names its runbook page
// (a diagnostics Step or a Runbook constant) and the actions it may suggest
// (the Action constants, spelled as the actions package registers them).
// Evaluate applies every rule to a diagnostics.Round against
// diagnostics.Thresholds; Run takes a round of its own and returns a
// Report, the answer of GET /api/v1/findings and `console findings`. A
// check that failed in the round becomes a diagnostics.unavailable finding
// naming it, never a silent gap.
//
// SetThreshold and SetThresholdFlag set a threshold by its finding's code
// ("tx.long_running=30s"), the form of `console findings --threshold` and
// of the serve settings.
//
// The package reads diagnostics and nothing reads it back there: the
// recorder keeps the findings of each sample, the collector counts them by
// code, and the console's pages show them.
package findings
