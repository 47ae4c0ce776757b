package diagnostics

import (
	"encoding/json"
	"fmt"
	"time"
)

// History check names: the keys of a recorded document and the values of
// ?check= in GET /api/v1/history.
const (
	HistoryBlockingTree = "blocking_tree"
	HistoryActivity     = "activity"
	HistoryWaitEvents   = "wait_events"
	HistoryWAL          = "wal"
	HistoryReplication  = "replication"
	HistorySlots        = "slots"
	HistoryQueues       = "queues"
	HistoryOutbox       = "outbox"
	HistoryWorkers      = "workers"
	HistoryFindings     = "findings"
	// HistoryRiverQueues is River's queues (river.QueueStat), recorded
	// when the database's jobs are River's; absent from other samples.
	HistoryRiverQueues = "river_queues"
)

// HistoryChecks lists every check a recorded sample holds, in display order.
var HistoryChecks = []string{
	HistoryBlockingTree, HistoryActivity, HistoryWaitEvents, HistoryWAL,
	HistoryReplication, HistorySlots, HistoryQueues, HistoryOutbox, HistoryWorkers, HistoryFindings,
	HistoryRiverQueues,
}

// IsHistoryCheck reports whether name is one of HistoryChecks.
func IsHistoryCheck(name string) bool {
	for _, c := range HistoryChecks {
		if c == name {
			return true
		}
	}
	return false
}

// HistoryWALPoint is the WAL position of a sample and the rate since the
// sample before it (nil for the first sample or across a restart).
type HistoryWALPoint struct {
	LSN            string   `json:"lsn"`
	LSNBytes       int64    `json:"lsn_bytes"`
	BytesPerSecond *float64 `json:"bytes_per_second"`
}

// recorded decodes a recorded list into panel rows.
func recorded[T any](data json.RawMessage, _ time.Time) ([]any, error) {
	var rows []T
	if err := json.Unmarshal(data, &rows); err != nil {
		return nil, err
	}
	out := make([]any, len(rows))
	for i, r := range rows {
		out[i] = r
	}
	return out, nil
}

// recordedOne decodes a recorded single row (the outbox) into panel rows.
func recordedOne[T any](data json.RawMessage, _ time.Time) ([]any, error) {
	var row T
	if err := json.Unmarshal(data, &row); err != nil {
		return nil, err
	}
	return []any{row}, nil
}

// recordedWAL shows a recorded WAL position as the wal_position panel's
// row, sampled at the sample's time.
func recordedWAL(data json.RawMessage, at time.Time) ([]any, error) {
	var w HistoryWALPoint
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, err
	}
	return []any{WALPoint{LSN: w.LSN, LSNBytes: w.LSNBytes, SampledAt: at}}, nil
}

// RecordedRows decodes the flight recorder's value of c.History, recorded
// at at, into the rows of c's panel; an error for a check history does not
// keep.
func (c Check) RecordedRows(data json.RawMessage, at time.Time) ([]any, error) {
	if c.historyRows == nil {
		return nil, fmt.Errorf("check %s is not kept by the flight recorder", c.Name)
	}
	return c.historyRows(data, at)
}

// CapturedRows decodes the rows of c's panel as a capture stores them (the
// panel's rows as a JSON list, PanelResult.Rows marshalled) back into the
// panel's row type, so a captured panel is drawn by the same code as a
// live one. An error for a check whose rows cannot be read back.
func (c Check) CapturedRows(data json.RawMessage) ([]any, error) {
	if len(data) == 0 || string(data) == "null" {
		return nil, nil
	}
	if len(c.Columns) > 0 && c.Columns[0].rows != nil {
		return c.Columns[0].rows(data, time.Time{})
	}
	if c.Name == CheckBlockingTree {
		return recorded[BlockingNode](data, time.Time{})
	}
	return nil, fmt.Errorf("the rows of check %s cannot be read back", c.Name)
}
