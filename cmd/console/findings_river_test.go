package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	riverqueue "github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// riverWaiting is the job kind of the River database below; no client
// works it.
type riverWaiting struct{}

func (riverWaiting) Kind() string { return "waiting" }

// `console findings` finds River's jobs as `serve --queue-source auto`
// would: on a database where River's schema holds the jobs (migrated and
// inserted by River's own migrator and client) it prints River's findings
// (a backlog, nobody leading) beside the database's; --queue-source
// console leaves River out.
func TestFindingsCommandReadsRiver(t *testing.T) {
	ctx := context.Background()
	url := testdb.URL(t)
	pool := testdb.Pool(t, url)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: quiet})
	require.NoError(t, err)
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	require.NoError(t, err)
	inserter, err := riverqueue.NewClient(riverpgxv5.New(pool), &riverqueue.Config{Logger: quiet})
	require.NoError(t, err)
	for range 3 {
		_, err := inserter.Insert(ctx, riverWaiting{}, &riverqueue.InsertOpts{Queue: "mail"})
		require.NoError(t, err)
	}

	codes := func(args ...string) map[string]map[string]any {
		// Three available jobs are a backlog at this threshold.
		args = append([]string{"findings", "--json", "--threshold", "river.backlog=3"}, args...)
		out, err := runCmd(t, envMap("DATABASE_URL", url), args...)
		require.NoError(t, err)
		var rep struct {
			Findings []struct {
				Code    string         `json:"code"`
				Subject map[string]any `json:"subject"`
			} `json:"findings"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &rep), "--json prints the report alone: %s", out)
		got := map[string]map[string]any{}
		for _, f := range rep.Findings {
			got[f.Code] = f.Subject
		}
		return got
	}
	got := codes()
	require.Contains(t, got, "river.backlog", "three available River jobs are a backlog: %v", got)
	require.Equal(t, "mail", got["river.backlog"]["queue"])
	require.Contains(t, got, "river.no_leader", "no River client leads while jobs wait: %v", got)
	require.NotContains(t, codes("--queue-source", "console"), "river.backlog", "--queue-source console reads the console's engine alone")

	out, err := runCmd(t, envMap("DATABASE_URL", url, "CONSOLE_QUEUE_SOURCE", "river"), "findings", "--threshold", "river.backlog=3")
	require.NoError(t, err)
	require.Contains(t, out, "River's jobs read too (schema at migration")
	require.Contains(t, out, "river.backlog")
}
