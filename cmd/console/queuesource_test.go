package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/queues/river"
)

// pickQueueSource reads River only when asked to, or, by default, when
// River's schema is complete and the console's own engine has no job; a
// River schema it cannot read is refused when asked for and passed over
// with a sentence otherwise.
func TestPickQueueSource(t *testing.T) {
	complete := river.Schema{Present: true, Version: 6}
	half := river.Schema{Missing: []string{"river_leader"}, Version: 6}
	old := river.Schema{Present: true, Version: 3}
	for _, tc := range []struct {
		name        string
		mode        string
		schema      river.Schema
		consoleJobs bool
		engine      string
		note, err   string
	}{
		{"AutoWithoutRiver", "auto", river.Schema{}, false, queues.SourceConsole, "", ""},
		{"AutoRiverOnly", "auto", complete, false, queues.SourceRiver, "", ""},
		{"AutoBothWithJobs", "auto", complete, true, queues.SourceConsole, "--queue-source river", ""},
		{"AutoHalfRiver", "auto", half, false, queues.SourceConsole, "river_leader missing", ""},
		{"AutoOldRiver", "auto", old, false, queues.SourceConsole, "migration 3", ""},
		{"ConsoleDespiteRiver", "console", complete, false, queues.SourceConsole, "", ""},
		{"RiverAsked", "river", complete, true, queues.SourceRiver, "", ""},
		{"RiverAskedNone", "river", river.Schema{}, false, "", "", "no River tables"},
		{"RiverAskedHalf", "river", half, false, "", "", "river_leader missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			engine, note, err := pickQueueSource(tc.mode, tc.schema, tc.consoleJobs)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.ErrorContains(t, err, "--queue-source river")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.engine, engine)
			if tc.note == "" {
				require.Empty(t, note)
			} else {
				require.Contains(t, note, tc.note)
			}
		})
	}
}
