package web

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics/recorder"
)

// A River page in the past says in place of its panels that no sample was
// recorded, or that the sample found could not be read; only a recorder
// that could not be read at all (no sample, another error) fails the
// request.
func TestPastSourceMark(t *testing.T) {
	t.Parallel()
	s := &Server{}
	at := time.Date(2026, 12, 6, 20, 30, 0, 0, time.UTC)
	tr := travel{q: historyQuery{at: at}}
	sample := recorder.HistoryEntry{At: at.Add(-5 * time.Second)}
	broken := errors.New("connection refused")
	for _, c := range []struct {
		name          string
		e             recorder.HistoryEntry
		err           error
		mark, missing string
		failed        error
	}{
		{"Found", sample, nil, "History · at 20:30:00 (sample 20:29:55)", "", nil},
		{"NoSample", recorder.HistoryEntry{}, fmt.Errorf("read: %w", recorder.ErrNoHistory), "History · at 20:30:00",
			"No sample of River's queues was recorded in the 30 seconds before 20:30:00 UTC. " + s.historyStatus().Reason, nil},
		{"SampleUnreadable", sample, errors.New("decode River's queues: bad json"), "History · at 20:30:00", "decode River's queues: bad json", nil},
		{"RecorderUnreadable", recorder.HistoryEntry{}, broken, "", "", broken},
	} {
		t.Run(c.name, func(t *testing.T) {
			mark, missing, failed := s.pastSourceMark(tr, c.e, c.err)
			require.Equal(t, c.mark, mark)
			require.Equal(t, c.missing, missing)
			require.Equal(t, c.failed, failed)
		})
	}
}
