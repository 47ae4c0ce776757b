// Package recorder is the flight recorder: it keeps the evidence of
// incidents that cleared before anyone looked, and reads it back.
//
// A Recorder (New) writes each sample of the sampler, with the blocking
// tree, activity, wait events and findings of the same moment, as one row
// of history_samples (a jsonb document keyed by the diagnostics History
// keys), once per interval across every console attached to the database,
// and prunes by age and size (HistoryPrune, a maintenance job kind). The
// readers (HistoryAt, HistoryRange, HistorySeries, HistoryMoments,
// HistoryTimeline, PanelAt, HistoryDocAt) serve the history pages, a panel
// as it was, and charts. Its statements are in sql/, one per file.
package recorder
