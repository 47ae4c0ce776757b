package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/views"
)

// jumpQuery is what the jump box was asked: a kind ("job", "pid",
// "incident", "queue", or "" for a bare number that may be any of the
// first three) and the number or name.
type jumpQuery struct {
	kind string
	id   int64
	name string
}

var (
	jumpNumberRE = regexp.MustCompile(`^#?(\d{1,18})$`)
	jumpKindRE   = regexp.MustCompile(`^(job|j|pid|p|incident|inc|i)\s*#?\s*(\d{1,18})$`)
	jumpQueueRE  = regexp.MustCompile(`^(?:queue|q)\s+(\S+)$`)
)

// parseJump reads the jump box: "1234" or "#1234" (a job, incident or pid),
// "job 1234", "pid 4242", "incident 7" (or "j", "p", "i", "inc"), "queue
// emails" or a bare queue name.
func parseJump(q string) jumpQuery {
	q = strings.TrimSpace(q)
	if m := jumpNumberRE.FindStringSubmatch(q); m != nil {
		id, _ := strconv.ParseInt(m[1], 10, 64)
		return jumpQuery{id: id}
	}
	if m := jumpKindRE.FindStringSubmatch(strings.ToLower(q)); m != nil {
		id, _ := strconv.ParseInt(m[2], 10, 64)
		kind := map[string]string{"job": "job", "j": "job", "pid": "pid", "p": "pid", "incident": "incident", "inc": "incident", "i": "incident"}[m[1]]
		return jumpQuery{kind: kind, id: id}
	}
	if m := jumpQueueRE.FindStringSubmatch(q); m != nil {
		return jumpQuery{kind: "queue", name: m[1]}
	}
	return jumpQuery{kind: "queue", name: q}
}

// jump serves GET /jump?q=: the jump box. A query that names exactly one
// thing redirects to its page; otherwise the page lists what it may mean
// or says why nothing matches.
func (s *Server) jump(c echo.Context) error {
	raw := c.QueryParam("q")
	m := views.JumpPage{Query: raw}
	if strings.TrimSpace(raw) == "" {
		m.Message = "Type a job id (1234 or #1234), a queue name, pid 4242 or incident 7."
		return s.renderJump(c, m)
	}
	if len(raw) > maxFilterText {
		m.Message = fmt.Sprintf("That is %d characters; a job id, queue name, pid or incident number is shorter.", len(raw))
		return s.renderJump(c, m)
	}
	ctx, cancel := readContext(c)
	defer cancel()
	q := parseJump(raw)
	if q.kind == "queue" {
		return s.jumpQueue(c, ctx, m, q.name)
	}
	var hits []views.JumpChoice
	var backend *diagnostics.Backend
	var failed []string
	if q.kind == "" || q.kind == "job" {
		if _, err := queues.JobGet(ctx, s.cfg.Pool, q.id); err == nil {
			hits = append(hits, views.JumpChoice{Label: fmt.Sprintf("Job #%d", q.id), Href: fmt.Sprintf("/jobs/%d", q.id), What: "a job"})
		} else if !errors.Is(err, queues.ErrNotFound) {
			failed = append(failed, "jobs")
		}
	}
	if q.kind == "" || q.kind == "incident" {
		if inc, err := audit.IncidentGet(ctx, s.cfg.Pool, q.id); err == nil {
			hits = append(hits, views.JumpChoice{Label: fmt.Sprintf("Incident #%d", q.id), Href: fmt.Sprintf("/incidents/%d", q.id), What: inc.Title})
		} else if !errors.Is(err, audit.ErrNotFound) {
			failed = append(failed, "incidents")
		}
	}
	if q.kind == "" || q.kind == "pid" {
		b, err := s.jumpBackend(ctx, q.id)
		switch {
		case err != nil:
			failed = append(failed, "sessions")
		case b != nil:
			backend = b
			hits = append(hits, views.JumpChoice{Label: fmt.Sprintf("Session pid %d", q.id), Href: "/jump?q=pid+" + strconv.FormatInt(q.id, 10),
				What: strings.TrimSpace(b.State + " " + b.ApplicationName)})
		}
	}
	if len(hits) == 1 && backend != nil {
		m.Backend = jumpBackendView(*backend, readRole(c), time.Now(), s.backendGuard(ctx))
		return s.renderJump(c, m)
	}
	if len(hits) == 1 {
		return c.Redirect(http.StatusSeeOther, hits[0].Href)
	}
	m.Choices = hits
	switch {
	case len(failed) > 0:
		m.Message = fmt.Sprintf("The database did not answer the lookup of %s in time; try again in a moment.", strings.Join(failed, " and "))
	case len(hits) > 1:
		m.Message = fmt.Sprintf("%d things have the number %d; pick one.", len(hits), q.id)
	case len(hits) == 0:
		m.Message = jumpNothing(q)
	}
	return s.renderJump(c, m)
}

// jumpNothing says why a number matched nothing and where to look instead.
func jumpNothing(q jumpQuery) string {
	switch q.kind {
	case "job":
		return fmt.Sprintf("No job has id %d; it may have been archived. The jobs page lists the newest.", q.id)
	case "incident":
		return fmt.Sprintf("No incident has number %d. The incidents page lists them all.", q.id)
	case "pid":
		return fmt.Sprintf("No active session has pid %d any more; it may have finished (idle sessions are not listed). Activity and locks shows the sessions now.", q.id)
	}
	return fmt.Sprintf("Nothing has the number %d: no job, no incident and no active session.", q.id)
}

// jumpQueue goes to the queue named, or lists the queues whose names
// contain the text.
func (s *Server) jumpQueue(c echo.Context, ctx context.Context, m views.JumpPage, name string) error {
	stats, err := queues.QueueHealth(ctx, s.cfg.Pool, queues.QueueHealthParams{DeadWindow: s.cfg.Diagnostics.Thresholds().DeadLetterWindow})
	if err != nil {
		m.Message = "The database did not answer the lookup of queues in time; try again in a moment, or open Queues."
		return s.renderJump(c, m)
	}
	var names []string
	for _, st := range stats {
		names = append(names, st.Queue)
	}
	exact, near := matchQueue(names, name)
	if exact != "" {
		return c.Redirect(http.StatusSeeOther, queueHref(exact))
	}
	for _, n := range near {
		m.Choices = append(m.Choices, views.JumpChoice{Label: n, Href: queueHref(n), What: "queue"})
	}
	if len(near) == 0 {
		m.Message = fmt.Sprintf("No queue is named %q and no name contains it. A job id, pid 4242 or incident 7 also work here.", name)
	} else {
		m.Message = fmt.Sprintf("No queue is named exactly %q; these contain it.", name)
	}
	return s.renderJump(c, m)
}

// matchQueue finds the queue a name means: the exact name, else the only
// name equal to it ignoring case; otherwise the names that contain it
// (ignoring case), sorted, at most 20.
func matchQueue(names []string, name string) (exact string, near []string) {
	var folded []string
	low := strings.ToLower(name)
	for _, n := range names {
		if n == name {
			return n, nil
		}
		if strings.EqualFold(n, name) {
			folded = append(folded, n)
		}
		if strings.Contains(strings.ToLower(n), low) {
			near = append(near, n)
		}
	}
	if len(folded) == 1 {
		return folded[0], nil
	}
	sort.Strings(near)
	if len(near) > 20 {
		near = near[:20]
	}
	return "", near
}

// jumpBackend finds an active session by pid, or nil.
func (s *Server) jumpBackend(ctx context.Context, pid int64) (*diagnostics.Backend, error) {
	list, err := diagnostics.Activity(ctx, s.cfg.Pool)
	if err != nil {
		return nil, err
	}
	for i := range list {
		if int64(list[i].PID) == pid {
			return &list[i], nil
		}
	}
	return nil, nil
}

// jumpBackendView shows a session found by pid, with the offers the
// blocking tree makes a root like it (rootOffers: "Cancel job #N" first
// when a worker runs a job in it, the signals in the order its state
// suggests), each signal the guard refuses replaced by why.
func jumpBackendView(b diagnostics.Backend, role string, now time.Time, guard backendGuard) *views.JumpBackend {
	pid := strconv.Itoa(int(b.PID))
	facts := []views.Fact{
		{Label: "State", Value: orDash(b.State)},
		{Label: "Application", Value: orDash(b.ApplicationName)},
		{Label: "User", Value: orDash(b.User)},
		{Label: "Client", Value: orDash(b.ClientAddr), Mono: true},
		{Label: "Waits on", Value: orDash(strings.Trim(b.WaitEventType+": "+b.WaitEvent, ": "))},
	}
	if b.XactStart != nil {
		a := age(*b.XactStart, now)
		facts = append(facts, views.Fact{Label: "Transaction started", Value: a.Text, TS: a.UTC})
	}
	if len(b.BlockedBy) > 0 {
		pids := make([]string, len(b.BlockedBy))
		for i, p := range b.BlockedBy {
			pids[i] = strconv.Itoa(int(p))
		}
		facts = append(facts, views.Fact{Label: "Blocked by", Value: strings.Join(pids, ", "), Mono: true})
	}
	facts = append(facts, views.Fact{Label: "Query", Value: truncate(b.Query, 300), Title: b.Query, Mono: true})
	node := diagnostics.BlockingNode{PID: b.PID, State: b.State, ApplicationName: b.ApplicationName,
		JobID: queues.JobOfApplicationName(b.ApplicationName)}
	return &views.JumpBackend{PID: pid, Facts: facts, Actions: guardOffers(rootOffers(node, role), guard)}
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func (s *Server) renderJump(c echo.Context, m views.JumpPage) error {
	return s.render(c, page{Title: "Jump", Model: m, Body: views.JumpBody(m)})
}
