package web

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/views"
)

// A running job's page says why it may be stuck: how long it has run, and
// whether its lease is held by a worker that heartbeats or expired with
// nobody renewing it, with expiring the lease offered first.
func TestJobPageSaysWhatItsLeaseSays(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var expired int64
	require.NoError(t, e.owner.QueryRow(t.Context(), `INSERT INTO jobs (queue, kind, status, lease_owner, lease_until, lease_generation, attempts, max_attempts, started_at)
		VALUES ('mail', 'send', 'running', 'host-9:41:dead', now() - interval '40 seconds', 1, 2, 5, now() - interval '10 minutes') RETURNING id`).Scan(&expired))
	op := e.signedIn(t, "operator")

	var m views.JobDetail
	op.getJSON("/jobs/"+itoa64(expired), &m)
	require.Regexp(t, `^Running for 10m\d\ds \(attempt 2 of 5\) on worker host-9:41:dead; the workers registry does not list it\. `+
		`Its lease expired 4\ds ago: nobody renews it, so nothing is working on it\. The reaper puts it back to ready; expire the lease to do that now\.$`, m.Running)
	require.Equal(t, "lease.expire", m.Actions[0].Name, "expiring the lease leads")

	root, _, _ := workerChain(t, e, 1, 0)
	testdb.Eventually(t, 20*time.Second, "the worker to heartbeat", func() bool {
		return e.queryInt(t, "SELECT count(*) FROM workers WHERE id = 'worker-reports'") == 1
	})
	m = views.JobDetail{}
	op.getJSON("/jobs/"+itoa64(root), &m)
	require.Regexp(t, `^Running for \d+(ms|s) \(attempt 1 of 1\) on worker worker-reports, which heartbeated \d+(ms|s) ago\. `+
		`Its lease runs \d+s more and is renewed while the worker lives\.$`, m.Running)
	body := op.page("/jobs/" + itoa64(root))
	require.Contains(t, body, `data-testid="job-running"`)
}
