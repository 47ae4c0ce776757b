package web

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/views"
)

func TestSchedulesPage(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.signedIn(t, "operator")

	resp, body := c.get("/schedules")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `data-testid="schedules"`)
	require.Contains(t, body, "No schedules.")

	var jobID int64
	require.NoError(t, e.srv.cfg.Pool.QueryRow(t.Context(), `INSERT INTO jobs (queue, kind) VALUES ('maintenance', 'archive_jobs') RETURNING id`).Scan(&jobID))
	e.exec(t, `INSERT INTO schedules (name, spec, kind, enabled, last_run_at, last_job_id) VALUES
		('archive', '0 3 * * *', 'archive_jobs', true, now() - interval '1 hour', $1),
		('prune-inbox', '@every 1m', 'prune_inbox', false, NULL, NULL)`, jobID)

	resp, body = c.get("/schedules")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `data-testid="panel-schedules"`)
	require.Contains(t, body, "daily at 03:00 UTC")
	require.Contains(t, body, "every minute")
	require.Contains(t, body, `href="/jobs/`+itoa64(jobID)+`"`)
	require.Contains(t, body, "job "+itoa64(jobID)+": ready")
	require.Contains(t, body, `data-testid="action-schedule.run_now"`)
	require.Contains(t, body, `data-testid="action-schedule.disable"`)
	require.Contains(t, body, `data-testid="action-schedule.enable"`)

	var m views.SchedulesPage
	require.Equal(t, http.StatusOK, c.getJSON("/schedules", &m))
	require.Len(t, m.Schedules.Rows, 2)
	archive := m.Schedules.Rows[0]
	require.Equal(t, "archive", archive[0].Text)
	runs := strings.Split(archive[5].Text, ", ")
	require.Len(t, runs, 3)
	for _, r := range runs {
		require.True(t, strings.HasSuffix(r, " 03:00:00"), r)
	}
	require.Equal(t, "none (disabled)", m.Schedules.Rows[1][5].Text)
	require.Equal(t, "/actions/schedule.run_now?name=archive", archive[8].Actions[0].Href)

	resp, body = c.get("/schedules", "HX-Request", "true")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotContains(t, body, "<html")

	v := e.signedIn(t, "viewer")
	resp, body = v.get("/schedules")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotContains(t, body, `data-testid="action-schedule.run_now"`)

	// The built-in retention: this console keeps every done job (its
	// --job-retention is 0 here), and no run is recorded yet.
	require.Contains(t, body, "keeps every done job (--job-retention 0)")
	require.Contains(t, body, `data-testid="retention-none"`)
	// The leader (another process, say) ran it: its last run is shown.
	e.exec(t, `INSERT INTO maintenance_runs (kind, params, state, rows_moved, batches, wal_bytes, started_at, finished_at)
		VALUES ('prune_jobs', '{"retention": "168h0m0s"}', 'finished', 900, 4, 3145728, now() - interval '2 hours', now() - interval '2 hours'),
		       ('prune_jobs', '{"retention": "168h0m0s"}', 'finished', 1234, 3, 2097152, now() - interval '10 minutes', now() - interval '10 minutes'),
		       ('archive_jobs', '{"retention": "24h0m0s"}', 'finished', 5, 1, 0, now() - interval '1 minute', now())`)
	require.Equal(t, http.StatusOK, v.getJSON("/schedules", &m))
	facts := map[string]string{}
	for _, f := range m.Retention.LastRun {
		facts[f.Label] = f.Value
	}
	require.Regexp(t, `^10m\d\ds ago$`, facts["Started"])
	delete(facts, "Started")
	require.Equal(t, map[string]string{"State": "finished", "Done jobs deleted": "1234", "Batches": "3",
		"Kept": "7d0h", "WAL meanwhile": "2 MiB"}, facts, "the newest prune_jobs run, not the archive's")
	require.False(t, m.Retention.On)
}

// TestRetentionSentence: a console with a retention says how long done
// jobs are kept.
func TestRetentionSentence(t *testing.T) {
	r := retentionModel(7*24*time.Hour, nil, time.Now())
	require.True(t, r.On)
	require.Contains(t, r.Sentence, "Done jobs are kept 7d0h; older ones are deleted every hour")
	require.Empty(t, r.LastRun)
}

func TestCronWords(t *testing.T) {
	t.Parallel()
	tests := []struct{ spec, want string }{
		{"@every 1m", "every minute"},
		{"@every 5m", "every 5 minutes"},
		{"@every 10s", "every 10 seconds"},
		{"@every 1h", "every hour"},
		{"@every 90s", "every 1m30s"},
		{"@every nonsense", "@every nonsense"},
		{"@daily", "daily at 00:00 UTC"},
		{"@hourly", "hourly, on the hour"},
		{"0 3 * * *", "daily at 03:00 UTC"},
		{"30 14 * * *", "daily at 14:30 UTC"},
		{"* * * * *", "every minute"},
		{"*/15 * * * *", "every 15 minutes"},
		{"5 * * * *", "hourly at minute 5"},
		{"0 */6 * * *", "every 6 hours at minute 0"},
		{"0 4 * * 1", "every Monday at 04:00 UTC"},
		{"0 4 * * 7", "every Sunday at 04:00 UTC"},
		{"0 2 1 * *", "monthly on day 1 at 02:00 UTC"},
		{"0 3 * 1 *", "0 3 * 1 *"},
		{"0 3 * * 1-5", "0 3 * * 1-5"},
		{"0 0 3 * * *", "0 0 3 * * *"},
		{"CRON_TZ=Europe/Paris 0 3 * * *", "CRON_TZ=Europe/Paris 0 3 * * *"},
		{"61 3 * * *", "61 3 * * *"},
	}
	for _, tt := range tests {
		t.Run(strings.NewReplacer(" ", "_", "*", "x", "/", "-").Replace(tt.spec), func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, cronWords(tt.spec))
		})
	}
}

func TestNextRunsCell(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 12, 0, 30, 0, time.UTC)
	require.Equal(t, "2026-12-02 12:01:00, 2026-12-02 12:02:00, 2026-12-02 12:03:00",
		nextRunsCell(queues.Schedule{Spec: "@every 1m", Enabled: true}, now.Add(-30*time.Second)).Text)
	require.Equal(t, "invalid spec", nextRunsCell(queues.Schedule{Spec: "bogus", Enabled: true}, now).Text)
	require.Equal(t, "none (disabled)", nextRunsCell(queues.Schedule{Spec: "@daily"}, now).Text)
}

func TestLastJobCell(t *testing.T) {
	t.Parallel()
	id, gone, unread := int64(5), int64(6), int64(7)
	last := map[int64]*queues.Job{
		5: {ID: 5, Status: queues.StatusDead, ErrorClass: jobsPtr("timeout"), LastError: jobsPtr("context deadline exceeded")},
		6: nil,
	}
	require.Equal(t, "no run yet", lastJobCell(nil, last).Text)
	c := lastJobCell(&id, last)
	require.Equal(t, "job 5: dead (timeout)", c.Text)
	require.Equal(t, "/jobs/5", c.Href)
	require.Equal(t, "context deadline exceeded", c.Title)
	require.Equal(t, "job 6: archived", lastJobCell(&gone, last).Text)
	require.Equal(t, "job 7", lastJobCell(&unread, last).Text)
}
