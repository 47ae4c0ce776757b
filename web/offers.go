package web

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/views"
)

// backendGuard runs the cheap part of the backend actions' guards on a pid
// for a page about to offer them (actions.Runner.BackendRefusal): nil when
// they may be offered. A nil backendGuard offers without asking (a recorded
// past offers nothing anyway).
type backendGuard func(pid int32) error

// backendGuard asks the runner about a pid at most once per
// offerGuardMaxAge, whoever is looking (refusalCache).
func (s *Server) backendGuard(ctx context.Context) backendGuard {
	return func(pid int32) error {
		return s.refusals.get(ctx, pid, s.cfg.Actions.BackendRefusal)
	}
}

// offerGuardMaxAge is how long an offer's guard answer is shared: the age
// of the shared panels it decorates. Execution checks the guards again in
// full, so an answer a few seconds old can only show or hide a button.
const offerGuardMaxAge = 5 * time.Second

// refusalCache keeps each pid's guard answer for offerGuardMaxAge, so that
// fifty people watching one blocking chain cost the database one lookup
// per pid, not one per page view. A lookup that failed (not a refusal) is
// not kept.
type refusalCache struct {
	now  func() time.Time
	mu   sync.Mutex
	seen map[int32]refusalEntry
}

type refusalEntry struct {
	err error
	at  time.Time
}

func newRefusalCache() *refusalCache {
	return &refusalCache{now: time.Now, seen: map[int32]refusalEntry{}}
}

func (rc *refusalCache) get(ctx context.Context, pid int32, lookup func(context.Context, int32) error) error {
	now := rc.now()
	rc.mu.Lock()
	e, ok := rc.seen[pid]
	rc.mu.Unlock()
	if ok && now.Sub(e.at) < offerGuardMaxAge {
		return e.err
	}
	err := lookup(ctx, pid)
	if err != nil && !errors.Is(err, actions.ErrInvalid) && !errors.Is(err, actions.ErrNotFound) {
		return err
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for p, old := range rc.seen {
		if now.Sub(old.at) >= offerGuardMaxAge {
			delete(rc.seen, p)
		}
	}
	rc.seen[pid] = refusalEntry{err: err, at: now}
	return err
}

// isSignal reports the actions that signal a backend.
func isSignal(name string) bool {
	return name == findings.ActionBackendCancel || name == findings.ActionBackendTerminate
}

// rootOffers are the buttons of a blocking tree's root for role: when the
// root is a queue job's session, cancelling the job through the engine
// comes first (its worker stops the handler and fails the attempt, and
// the session lets go), then what findings.RootActions offers on the
// backend itself.
func rootOffers(n diagnostics.BlockingNode, role string) []views.ActionLink {
	var out []views.ActionLink
	if n.JobID != nil && !n.IsPrepared() {
		if l, ok := actionLink("job.cancel", role, map[string]string{"id": itoa64(*n.JobID)}); ok {
			l.Label = "Cancel job #" + itoa64(*n.JobID)
			out = append(out, l)
		}
	}
	return append(out, actionLinks(findings.RootActions(n), role, rootParams(n))...)
}

// guardOffers never offers a signal the guards would refuse: the signal
// buttons of a pid that guard refuses (gone, not a client backend, the
// console's own connection) give way to one entry saying why. Other
// buttons pass as they are.
func guardOffers(links []views.ActionLink, guard backendGuard) []views.ActionLink {
	if guard == nil {
		return links
	}
	out := make([]views.ActionLink, 0, len(links))
	refused := map[int32]bool{}
	for _, l := range links {
		pid, ok := signalPID(l)
		if !ok {
			out = append(out, l)
			continue
		}
		err := guard(pid)
		switch {
		case err == nil || !errors.Is(err, actions.ErrInvalid) && !errors.Is(err, actions.ErrNotFound):
			// A failed lookup is no refusal: execution checks again.
			out = append(out, l)
		case !refused[pid]:
			refused[pid] = true
			l.Href, l.Refused = "", refusalText(err)
			out = append(out, l)
		}
	}
	return out
}

// signalPID is the pid a signal button names.
func signalPID(l views.ActionLink) (int32, bool) {
	if !isSignal(l.Name) {
		return 0, false
	}
	u, err := url.Parse(l.Href)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.ParseInt(u.Query().Get("pid"), 10, 32)
	return int32(pid), err == nil
}

// refusalText is a guard's refusal as a page shows it, without the
// sentinel the API maps to a status.
func refusalText(err error) string {
	s := err.Error()
	for _, sentinel := range []error{actions.ErrInvalid, actions.ErrNotFound, actions.ErrGuard} {
		if errors.Is(err, sentinel) {
			s = strings.TrimSuffix(s, ": "+sentinel.Error())
		}
	}
	return "Not offered: " + s + "."
}

// guardFindings runs guardOffers on the buttons of each finding.
func guardFindings(rows []views.FindingRow, guard backendGuard) {
	for i := range rows {
		rows[i].Actions = guardOffers(rows[i].Actions, guard)
	}
}
