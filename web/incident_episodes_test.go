package web

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/audit"
)

// insertEpisode records an episode as the recorder would have: started
// at start, lasting for (open, last seen then, when end is false), with
// root application app and claims job claims held up. It returns its id.
func insertEpisode(t *testing.T, e *env, start time.Time, lasted time.Duration, closed bool, app string, claims int) int64 {
	t.Helper()
	var end *time.Time
	if closed {
		x := start.Add(lasted)
		end = &x
	}
	var id int64
	require.NoError(t, e.owner.QueryRow(context.Background(), `INSERT INTO lock_episodes (start_at, last_seen_at, end_at, end_seen,
		recorded_by, root_pid, root_application, root_query, lock_type, lock_mode, lock_target, tables, applications,
		peak_waiting, jobs_delayed, claims_delayed, waited_seconds)
		VALUES ($1, $2, $3::timestamptz, $3::timestamptz IS NOT NULL, 'test', 4242, $4, 'LOCK TABLE jobs IN SHARE MODE', 'relation', 'RowExclusiveLock', 'jobs',
		'{jobs}', ARRAY[$4, 'console-worker'], 3, 2, $5, 4.5) RETURNING id`,
		start, start.Add(lasted), end, app, claims).Scan(&id))
	return id
}

// The incident page's timeline lists the lock episodes that overlap the
// incident's window, between the other entries by their start: one that
// began before the window and lasted into it, one inside it, one still
// open; not one that ended before the window began. Those that began
// before the incident opened show with the rest of that time (?before=1).
func TestIncidentTimelineHasLockEpisodes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	now := time.Now().UTC()
	windowStart := now.Add(-30 * time.Minute)
	inc, err := audit.IncidentOpen(t.Context(), e.srv.cfg.Pool, audit.IncidentOpenParams{Title: "checkout slow", OpenedBy: "cli", WindowStart: &windowStart})
	require.NoError(t, err)
	insertEpisode(t, e, windowStart.Add(-10*time.Minute), 2*time.Second, true, "before-window", 1)
	across := insertEpisode(t, e, windowStart.Add(-time.Second), 3*time.Second, true, "across-start", 0)
	inside := insertEpisode(t, e, now.Add(-10*time.Minute), 2100*time.Millisecond, true, "nightly-report", 3)
	open := insertEpisode(t, e, now.Add(-time.Minute), 10*time.Second, false, "still-open", 1)

	viewer := e.signedIn(t, "viewer")
	episodeItems := regexp.MustCompile(`(?s)<li data-testid="timeline-episode">.*?</li>`)
	// The timeline starts when the incident opened: these episodes all
	// began in its window before that, so they wait behind "before".
	require.Empty(t, episodeItems.FindAllString(viewer.page(fmt.Sprintf("/incidents/%d", inc.ID)), -1))
	body := viewer.page(fmt.Sprintf("/incidents/%d?before=1", inc.ID))
	items := episodeItems.FindAllString(body, -1)
	require.Len(t, items, 3, "the episodes overlapping the window")
	require.NotContains(t, body, "before-window")
	for i, want := range []struct {
		id   int64
		text []string
	}{
		{across, []string{"pid 4242 (across-start)", "RowExclusiveLock on jobs", "lasted 3s"}},
		{inside, []string{"pid 4242 (nightly-report)", "lasted 2.1s", "3 job claims of the engine held up", "2 jobs delayed", "3 sessions waiting at most"}},
		{open, []string{"pid 4242 (still-open)", "still waiting at the last look", "1 job claim of the engine held up"}},
	} {
		for _, s := range want.text {
			require.Contains(t, items[i], s, "item %d", i)
		}
		require.Contains(t, items[i], fmt.Sprintf("#episode-%d", want.id), "item %d links its episode", i)
	}
	require.Less(t, strings.Index(body, "across-start"), strings.Index(body, "nightly-report"), "oldest first")
}
