package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/views"
)

// A running job whose session waits behind another job that waits behind a
// session idle in its transaction: the job's page says what it waits on and
// whom for, links the chain and offers the root's action, not its own; the
// tree panel says what each node waits for; the root finding links both
// jobs, on the overview and in /api/v1/findings.
func TestJobWaitingOnALockIsExplained(t *testing.T) {
	t.Parallel()
	th := diagnostics.DefaultThresholds()
	th.RootBlockerWait = 100 * time.Millisecond
	e := setupWith(t, setupOpts{thresholds: &th})
	ctx := context.Background()
	_, err := e.owner.Exec(ctx, "CREATE TABLE ledger (id int PRIMARY KEY, n int); INSERT INTO ledger VALUES (1, 0)")
	require.NoError(t, err)
	// The check finds a job's session by its name in every database of
	// the server, where other tests name sessions after their own jobs 1,
	// 2, …: this database's jobs start at ids no other database has.
	_, err = e.owner.Exec(ctx, `DO $$ BEGIN EXECUTE format('ALTER TABLE jobs ALTER COLUMN id RESTART WITH %s',
		(SELECT oid::int8 * 1000 FROM pg_database WHERE datname = current_database())); END $$`)
	require.NoError(t, err)
	var ids [2]int64
	for i := range ids {
		require.NoError(t, e.owner.QueryRow(ctx, `INSERT INTO jobs (queue, kind, status, lease_owner, lease_until, lease_generation, attempts, started_at)
			VALUES ('mail', 'send', 'running', 'w1', now() + interval '1 hour', 1, 1, now()) RETURNING id`).Scan(&ids[i]))
	}
	root := testdb.Connect(t, e.url, "backfill")
	_, err = root.Exec(ctx, "BEGIN; UPDATE ledger SET n = -1 WHERE id = 1")
	require.NoError(t, err)
	// Each job's session is named as queues.JobConn names it.
	var sessions [2]*pgx.Conn
	var done [2]chan error
	for i, id := range ids {
		sessions[i] = testdb.Connect(t, e.url, fmt.Sprintf("console-worker job=%d", id))
		done[i] = make(chan error, 1)
		go func() {
			_, err := sessions[i].Exec(ctx, "UPDATE ledger SET n = n + 1 WHERE id = 1")
			done[i] <- err
		}()
		testdb.WaitBackend(t, e.owner, fmt.Sprintf("console-worker job=%d", id), "wait_event_type = 'Lock'")
	}
	t.Cleanup(func() {
		root.Exec(context.Background(), "ROLLBACK")
		<-done[0]
		<-done[1]
	})
	rootPID := int32(root.PgConn().PID())
	op := e.signedIn(t, "admin") // terminate is an admin's action

	// The second job waits behind the first, which waits behind the root.
	var m views.JobDetail
	require.Equal(t, http.StatusOK, op.getJSON("/jobs/"+itoa64(ids[1]), &m))
	require.NotNil(t, m.LockWait, "the job's page says it waits")
	first := sessions[0].PgConn().PID()
	require.Contains(t, m.LockWait.Text, fmt.Sprintf("Backend pid %d is waiting on ", sessions[1].PgConn().PID()))
	require.Contains(t, m.LockWait.Text, fmt.Sprintf("held by pid %d (job #%d / application \"console-worker job=%d\")", first, ids[0], ids[0]))
	require.Contains(t, m.LockWait.Root, fmt.Sprintf("The chain's root is pid %d (idle in transaction, transaction ", rootPID))
	require.Contains(t, m.LockWait.Root, `application "backfill"`)
	require.Equal(t, "/runbook/blocking", m.LockWait.ChainHref)
	require.NotEmpty(t, m.LockWait.Actions)
	require.Equal(t, findings.ActionBackendTerminate, m.LockWait.Actions[0].Name, "the root is idle in transaction: terminate leads")
	for _, a := range m.LockWait.Actions {
		require.Contains(t, a.Href, fmt.Sprintf("pid=%d", rootPID), "the root's action, not the job's")
	}
	body := op.page("/jobs/" + itoa64(ids[0]))
	require.Contains(t, body, `data-testid="job-lock-wait"`)
	require.Contains(t, body, fmt.Sprintf("held by pid %d (application &#34;backfill&#34;) as ExclusiveLock", rootPID))
	require.Contains(t, body, "(transactionid lock, wants ShareLock)")
	require.Contains(t, body, `href="/runbook/blocking" data-testid="job-lock-chain"`)

	// The tree panel says what each waits for (its words, read without the
	// glossary's markup around lock modes and targets).
	panel := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(op.page("/panels/blocking_tree"), "")
	require.Contains(t, panel, "wants ShareLock on transaction ")
	require.Contains(t, panel, fmt.Sprintf("of pid %d (transactionid); pid %d holds ExclusiveLock", rootPID, rootPID))

	// The root finding links both jobs.
	var ov views.Overview
	prefix := fmt.Sprintf("pid %d ", rootPID)
	require.Eventually(t, func() bool {
		body := op.page("/", "Accept", "application/json")
		require.NoError(t, json.Unmarshal([]byte(body), &ov))
		f := findingRow(ov, findings.CodeRootBlocker, prefix)
		return f != nil && len(f.Jobs) == 2
	}, 20*time.Second, 200*time.Millisecond, "no root finding listing both jobs")
	f := findingRow(ov, findings.CodeRootBlocker, prefix)
	hrefs := []string{f.Jobs[0].Href, f.Jobs[1].Href}
	require.ElementsMatch(t, []string{"/jobs/" + itoa64(ids[0]), "/jobs/" + itoa64(ids[1])}, hrefs)
	for _, j := range f.Jobs {
		require.Contains(t, j.Label, " mail/send, ")
	}
	require.Contains(t, op.page("/"), `data-testid="finding-job"`)

	var rep struct {
		Findings []struct {
			Code    string         `json:"code"`
			Subject map[string]any `json:"subject"`
		} `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(op.page("/api/v1/findings")), &rep))
	found := false
	for _, f := range rep.Findings {
		if f.Code != findings.CodeRootBlocker || fmt.Sprint(f.Subject["pid"]) != fmt.Sprint(rootPID) {
			continue
		}
		found = true
		require.Equal(t, "transactionid", f.Subject["lock_type"])
		require.True(t, strings.HasSuffix(f.Subject["lock_target"].(string), fmt.Sprintf(" of pid %d", rootPID)), f.Subject["lock_target"])
		require.Equal(t, "ExclusiveLock", f.Subject["mode_held"])
		require.Equal(t, "ShareLock", f.Subject["mode_wanted"])
		jobs := f.Subject["jobs"].([]any)
		require.Len(t, jobs, 2)
		j := jobs[0].(map[string]any)
		require.Equal(t, "mail", j["queue"])
		require.Equal(t, "send", j["kind"])
		require.True(t, strings.HasPrefix(j["url"].(string), "/jobs/"))
	}
	require.True(t, found, "the root's finding is in /api/v1/findings")
}
