package web

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var sealRE = regexp.MustCompile(`name="preview" value="([^"]+)"`)

// sealOf is the signed preview an action page's Execute button carries.
func sealOf(t *testing.T, body string) string {
	t.Helper()
	m := sealRE.FindStringSubmatch(body)
	require.NotNil(t, m, "the page has no signed preview: %s", body)
	return m[1]
}

// TestActionExecuteNeedsItsPreview: the console executes only what was
// previewed, in this session, with these parameters and against the state
// the preview saw; anything else changes nothing and says why.
func TestActionExecuteNeedsItsPreview(t *testing.T) {
	t.Parallel()
	e := setup(t)
	paused := func(queue string) int {
		return e.queryInt(t, `SELECT count(*) FROM queue_settings WHERE queue = $1 AND paused`, queue)
	}
	op := e.signedIn(t, "operator")
	preview := func(c *client, name string, params url.Values) (url.Values, string) {
		t.Helper()
		return previewForm(t, c, name, params, "the provider is down")
	}

	// refused executes queue.pause with form as c and checks it was refused
	// for the reason want, pausing nothing.
	refused := func(t *testing.T, c *client, form url.Values, want string) string {
		t.Helper()
		resp, body := c.post("/actions/queue.pause", form)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
		require.Contains(t, body, want)
		require.Equal(t, 0, paused("billing")+paused("emails"))
		return body
	}

	t.Run("NoPreview", func(t *testing.T) {
		_, _ = op.get("/actions/queue.pause")
		body := refused(t, op, url.Values{"_csrf": {op.csrf}, "p.queue": {"emails"}, "reason": {"x"}},
			"Execute needs a preview first: nothing was done")
		require.Contains(t, body, `data-testid="action-form-edit"`, "the form is kept")
	})
	t.Run("Tampered", func(t *testing.T) {
		form, _ := preview(op, "queue.pause", url.Values{"queue": {"emails"}})
		enc, mac, _ := strings.Cut(form.Get("preview"), ".")
		payload, err := base64.RawURLEncoding.DecodeString(enc)
		require.NoError(t, err)
		forged := strings.Replace(string(payload), `"emails"`, `"billing"`, 1)
		require.NotEqual(t, string(payload), forged)
		form.Set("preview", base64.RawURLEncoding.EncodeToString([]byte(forged))+"."+mac)
		form.Set("p.queue", "billing")
		refused(t, op, form, "signature does not match")
	})
	t.Run("OtherParameters", func(t *testing.T) {
		form, _ := preview(op, "queue.pause", url.Values{"queue": {"emails"}})
		form.Set("p.queue", "billing")
		refused(t, op, form, "parameters differ from the ones previewed")
	})
	t.Run("OtherSession", func(t *testing.T) {
		form, _ := preview(op, "queue.pause", url.Values{"queue": {"emails"}})
		other := e.signedIn(t, "admin")
		_, _ = other.get("/actions/queue.pause")
		form.Set("_csrf", other.csrf)
		refused(t, other, form, "signature does not match")
	})
	t.Run("StateChanged", func(t *testing.T) {
		e.exec(t, `INSERT INTO jobs (queue, kind, status, error_class, last_error, finished_at)
			SELECT 'stale', 'send', 'dead', 'smtp.timeout', 'timeout', now() FROM generate_series(1, 3)`)
		form, body := preview(op, "deadletters.requeue", url.Values{"queue": {"stale"}, "error_class": {"smtp.timeout"}})
		require.Contains(t, body, "Requeue 3 dead jobs of class <code>smtp.timeout</code> in queue <code>stale</code>; cap 10,000")
		// Meanwhile, another job of the class dies.
		e.exec(t, `INSERT INTO jobs (queue, kind, status, error_class, last_error, finished_at)
			VALUES ('stale', 'send', 'dead', 'smtp.timeout', 'timeout', now())`)
		resp, body := op.post("/actions/deadletters.requeue", form)
		require.Equal(t, http.StatusConflict, resp.StatusCode, body)
		require.Contains(t, body, "Nothing was done: what this action would act on changed since your preview")
		require.Contains(t, body, "Requeue 4 dead jobs", "the new preview is shown")
		require.Contains(t, body, `data-testid="action-execute"`, "and asks again")
		require.Equal(t, 4, e.queryInt(t, `SELECT count(*) FROM jobs WHERE queue = 'stale' AND status = 'dead'`), "nothing moved")
		require.Equal(t, 1, e.queryInt(t, `SELECT count(*) FROM audit_events WHERE action = 'deadletters.requeue' AND outcome = 'refused'`),
			"the refusal is audited")

		form.Set("preview", sealOf(t, body))
		resp, body = op.post("/actions/deadletters.requeue", form)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		require.Contains(t, body, "Requeued 4 dead jobs of class <code>smtp.timeout</code>")
		require.Equal(t, 4, e.queryInt(t, `SELECT count(*) FROM jobs WHERE queue = 'stale' AND status = 'ready'`))
	})
	t.Run("ClassesChangedAtTheSameCount", func(t *testing.T) {
		// The count alone is not the decision: 2 timeouts and 1 bounce
		// are not 1 timeout and 2 bounces.
		e.exec(t, `INSERT INTO jobs (queue, kind, status, error_class, last_error, finished_at)
			SELECT 'mixed', 'send', 'dead', c, 'x', now() FROM unnest(ARRAY['smtp.timeout', 'smtp.timeout', 'smtp.bounce']) AS c`)
		form, body := preview(op, "deadletters.requeue", url.Values{"queue": {"mixed"}})
		require.Contains(t, body, "Requeue 3 dead jobs in queue <code>mixed</code>")
		// Meanwhile a timeout is retried elsewhere and another bounce dies.
		e.exec(t, `UPDATE jobs SET status = 'ready', finished_at = NULL
			WHERE id = (SELECT min(id) FROM jobs WHERE queue = 'mixed' AND error_class = 'smtp.timeout')`)
		e.exec(t, `INSERT INTO jobs (queue, kind, status, error_class, last_error, finished_at)
			VALUES ('mixed', 'send', 'dead', 'smtp.bounce', 'x', now())`)
		resp, body := op.post("/actions/deadletters.requeue", form)
		require.Equal(t, http.StatusConflict, resp.StatusCode, body)
		require.Contains(t, body, "Nothing was done: what this action would act on changed since your preview")
		require.Equal(t, 3, e.queryInt(t, `SELECT count(*) FROM jobs WHERE queue = 'mixed' AND status = 'dead'`), "nothing moved")
	})
	t.Run("GoneMeanwhile", func(t *testing.T) {
		e.exec(t, `INSERT INTO jobs (queue, kind, status, error_class, last_error, finished_at)
			SELECT 'gone', 'send', 'dead', 'smtp.timeout', 'timeout', now() FROM generate_series(1, 2)`)
		form, _ := preview(op, "deadletters.requeue", url.Values{"queue": {"gone"}})
		// Meanwhile someone else puts them back to ready.
		e.exec(t, `UPDATE jobs SET status = 'ready', finished_at = NULL WHERE queue = 'gone'`)
		resp, body := op.post("/actions/deadletters.requeue", form)
		require.Equal(t, http.StatusConflict, resp.StatusCode, body)
		require.Contains(t, body, "Nothing was done")
		require.Contains(t, body, "A new preview was refused too: no dead jobs match queue:gone; they may have been requeued already. Refresh the dead letters")
		require.Contains(t, body, `data-testid="action-form-edit"`, "back to the form")
		require.Equal(t, 0, e.queryInt(t, `SELECT count(*) FROM audit_events WHERE action = 'deadletters.requeue' AND outcome = 'succeeded' AND target = 'queue:gone'`))
	})
}
