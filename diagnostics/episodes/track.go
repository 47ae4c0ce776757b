package episodes

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pgconsole/console/queues"
)

// session is one backend of a look: a row of episode_waits.sql.
type session struct {
	PID             int32      `db:"pid"`
	Waits           bool       `db:"waits"`
	BackendStart    *time.Time `db:"backend_start"`
	ApplicationName string     `db:"application_name"`
	State           string     `db:"state"`
	Query           string     `db:"query"`
	BlockedBy       []int32    `db:"blocked_by"`
	LockType        string     `db:"lock_type"`
	LockMode        string     `db:"lock_mode"`
	Relation        string     `db:"relation"`
	LockTarget      string     `db:"lock_target"`
	WaitStart       *time.Time `db:"wait_start"`
	Held            []string   `db:"held"`
}

// sessionKey names a backend for as long as it lives: a pid is reused, a
// pid with its start time is not. A prepared transaction is pid 0.
type sessionKey struct {
	pid   int32
	start int64 // backend_start in Unix microseconds; 0 when unknown
}

func keyOf(pid int32, start *time.Time) sessionKey {
	k := sessionKey{pid: pid}
	if start != nil {
		k.start = start.UnixMicro()
	}
	return k
}

// tracked is an episode the tracker follows: what was seen of it so far.
type tracked struct {
	// id is the episode's row, 0 until it is written.
	id       int64
	start    time.Time
	lastSeen time.Time
	// end is the first look that found none of its waiters waiting
	// behind its roots; zero while open.
	end   time.Time
	root  sessionKey
	roots map[sessionKey]bool
	// waits maps each waiter's wait (its session and when that wait
	// started) to the roots it waited behind.
	waits        map[sessionKey]waitSeen
	participants []*Participant
	index        map[sessionKey]int
	// fresh counts the participants not written yet (index >= len-fresh).
	fresh int
	// looksUnsaved counts the looks that saw it go on since it was last
	// written.
	looksUnsaved int
	peakWaiting  int
	claims       map[sessionKey]bool
	jobs         map[int64]bool
	tables       []string
	applications []string
	kinds        []string
	queues       []string
}

// waitSeen is one waiter's wait: when it started (zero when pg_locks had
// not set waitstart yet) and the roots it was seen behind.
type waitSeen struct {
	start time.Time
	roots map[sessionKey]bool
}

// tracker joins the looks of consecutive intervals into episodes: the same
// waiter (pid and backend start) in the same wait behind the same root is
// the same episode. It does no I/O.
type tracker struct {
	open []*tracked
	// last is the last full read of who waits on whom, lastDigest the
	// probe's digest of the waits then, and reused how many looks since
	// took it again instead of reading.
	last       []session
	lastDigest int64
	reused     int
}

// fullReadEvery bounds how many looks in a row reuse a full read. The
// probe's digest changes when a waiter comes, goes or starts a new
// statement, and when a session that could be a root ends its transaction;
// what it cannot see (a waiter that waits again in the same statement) is
// read within this many looks (five minutes at the default interval). A
// full read of 300 waiters costs a quarter of a second of server time, so
// reading it every minute was most of the recorder's cost in a storm.
const fullReadEvery = 300

// reuse returns the last full read when the probe found the same waits as
// then (same non-zero digest) and it was read less than fullReadEvery
// looks ago; ok false means read again (or, with waiting 0, nothing
// waits).
func (tr *tracker) reuse(waiting int, digest int64) (sessions []session, ok bool) {
	if waiting == 0 {
		tr.last, tr.lastDigest, tr.reused = nil, 0, 0
		return nil, false
	}
	if digest == 0 || digest != tr.lastDigest || tr.last == nil || tr.reused >= fullReadEvery-1 {
		return nil, false
	}
	tr.reused++
	return tr.last, true
}

// read keeps a full read and the probe's digest for the looks after.
func (tr *tracker) read(digest int64, sessions []session) {
	tr.last, tr.lastDigest, tr.reused = sessions, digest, 0
}

// observe folds one look taken at `at` into the open episodes. It returns
// the episodes first seen in this look, the ones seen again and the ones
// that ended (not seen in it), in that order of importance to a writer.
func (tr *tracker) observe(at time.Time, sessions []session) (started, seen, ended []*tracked) {
	claimed := map[*tracked]bool{}
	for _, comp := range components(sessions) {
		ep := tr.match(comp, claimed)
		if ep == nil {
			ep = newTracked(comp, at)
			started = append(started, ep)
			tr.open = append(tr.open, ep)
		} else {
			seen = append(seen, ep)
		}
		claimed[ep] = true
		ep.add(comp, at)
	}
	kept := tr.open[:0]
	for _, ep := range tr.open {
		if claimed[ep] {
			kept = append(kept, ep)
			continue
		}
		ep.end = at
		ended = append(ended, ep)
	}
	tr.open = kept
	return started, seen, ended
}

// match returns the open episode comp continues: one that saw one of
// comp's waiters in the same wait behind one of the same roots.
func (tr *tracker) match(comp component, claimed map[*tracked]bool) *tracked {
	for _, ep := range tr.open {
		if claimed[ep] {
			continue
		}
		for _, w := range comp.waiters {
			k := keyOf(w.PID, w.BackendStart)
			ws, ok := ep.waits[k]
			if !ok {
				continue
			}
			if w.WaitStart != nil && !ws.start.IsZero() && !w.WaitStart.Equal(ws.start) {
				continue // a new wait of the same session
			}
			for r := range comp.rootsOf[k] {
				if ws.roots[r] {
					return ep
				}
			}
		}
	}
	return nil
}

// component is a root blocker (or several, when waiters wait on more than
// one) and everyone waiting behind it in one look.
type component struct {
	roots   []sessionKey
	rootsOf map[sessionKey]map[sessionKey]bool
	waiters []session
	// others are the non-waiting sessions of the component: its roots.
	others []session
}

// components splits a look's wait-for graph into its connected parts,
// each with its roots: the sessions that wait on nothing (or a prepared
// transaction, pid 0). A cycle (a deadlock before the detector breaks it)
// has no such session; its lowest pid stands for its root.
func components(sessions []session) []component {
	byPID := map[int32]session{}
	for _, s := range sessions {
		byPID[s.PID] = s
	}
	key := func(pid int32) sessionKey {
		if s, ok := byPID[pid]; ok {
			return keyOf(pid, s.BackendStart)
		}
		return sessionKey{pid: pid}
	}
	// A waiter's roots are its blockers' roots, each computed once: in a
	// queue for one row every waiter is blocked by all those ahead of it,
	// and walking every path would take exponential time.
	known := map[int32][]int32{}
	var rootsOf func(pid int32, path map[int32]bool) []int32
	rootsOf = func(pid int32, path map[int32]bool) []int32 {
		s, ok := byPID[pid]
		if pid == 0 || !ok || !s.Waits || len(s.BlockedBy) == 0 {
			return []int32{pid}
		}
		if rs, ok := known[pid]; ok {
			return rs
		}
		if path[pid] {
			return nil
		}
		path[pid] = true
		defer delete(path, pid)
		var out []int32
		for _, b := range s.BlockedBy {
			out = append(out, rootsOf(b, path)...)
		}
		slices.Sort(out)
		out = slices.Compact(out)
		known[pid] = out
		return out
	}
	// Union-find over root pids: a waiter behind two roots joins them.
	parent := map[int32]int32{}
	var find func(int32) int32
	find = func(p int32) int32 {
		if q, ok := parent[p]; ok && q != p {
			r := find(q)
			parent[p] = r
			return r
		}
		parent[p] = p
		return p
	}
	waiterRoots := map[int32][]int32{}
	for _, s := range sessions {
		if !s.Waits {
			continue
		}
		rs := rootsOf(s.PID, map[int32]bool{})
		if len(rs) == 0 { // a cycle: its lowest pid stands for the root
			rs = []int32{cycleRoot(s.PID, byPID)}
		}
		slices.Sort(rs)
		rs = slices.Compact(rs)
		waiterRoots[s.PID] = rs
		for _, r := range rs[1:] {
			parent[find(r)] = find(rs[0])
		}
	}
	comps := map[int32]*component{}
	var order []int32
	for _, s := range sessions {
		rs, ok := waiterRoots[s.PID]
		if !ok {
			continue
		}
		c := find(rs[0])
		comp := comps[c]
		if comp == nil {
			comp = &component{rootsOf: map[sessionKey]map[sessionKey]bool{}}
			comps[c] = comp
			order = append(order, c)
		}
		k := key(s.PID)
		comp.rootsOf[k] = map[sessionKey]bool{}
		for _, r := range rs {
			rk := key(r)
			comp.rootsOf[k][rk] = true
			if !slices.Contains(comp.roots, rk) {
				comp.roots = append(comp.roots, rk)
				if rs, ok := byPID[r]; ok && !rs.Waits {
					comp.others = append(comp.others, rs)
				}
			}
		}
		comp.waiters = append(comp.waiters, s)
	}
	out := make([]component, 0, len(order))
	for _, c := range order {
		comp := comps[c]
		sort.Slice(comp.roots, func(i, j int) bool { return comp.roots[i].pid < comp.roots[j].pid })
		out = append(out, *comp)
	}
	return out
}

// cycleRoot is the lowest pid of the wait cycle pid is in (or leads to).
func cycleRoot(pid int32, byPID map[int32]session) int32 {
	seen := map[int32]bool{}
	low := pid
	for p := pid; !seen[p]; {
		seen[p] = true
		low = min(low, p)
		s, ok := byPID[p]
		if !ok || len(s.BlockedBy) == 0 {
			break
		}
		p = s.BlockedBy[0]
	}
	return low
}

func newTracked(comp component, at time.Time) *tracked {
	ep := &tracked{start: at, root: comp.roots[0], roots: map[sessionKey]bool{}, waits: map[sessionKey]waitSeen{},
		index: map[sessionKey]int{}, claims: map[sessionKey]bool{}, jobs: map[int64]bool{}}
	for _, w := range comp.waiters {
		if w.WaitStart != nil && w.WaitStart.Before(ep.start) {
			ep.start = *w.WaitStart
		}
	}
	return ep
}

// add records one look of the episode.
func (ep *tracked) add(comp component, at time.Time) {
	ep.lastSeen = at
	ep.peakWaiting = max(ep.peakWaiting, len(comp.waiters))
	for _, r := range comp.roots {
		ep.roots[r] = true
	}
	for _, s := range comp.others {
		ep.participant(s, "root", at)
	}
	for _, r := range comp.roots {
		if r.pid == 0 {
			ep.participant(session{Query: "prepared transaction"}, "root", at)
		}
	}
	blocks := map[int32]bool{}
	for _, w := range comp.waiters {
		for _, b := range w.BlockedBy {
			blocks[b] = true
		}
	}
	for _, w := range comp.waiters {
		k := keyOf(w.PID, w.BackendStart)
		ws := ep.waits[k]
		if ws.roots == nil {
			ws.roots = map[sessionKey]bool{}
		}
		if ws.start.IsZero() && w.WaitStart != nil {
			ws.start = *w.WaitStart
		}
		for r := range comp.rootsOf[k] {
			ws.roots[r] = true
		}
		ep.waits[k] = ws
		role := "waiter"
		if blocks[w.PID] {
			role = "blocker"
		}
		p := ep.participant(w, role, at)
		if w.Relation != "" && !slices.Contains(ep.tables, w.Relation) {
			ep.tables = append(ep.tables, w.Relation)
		}
		if p.JobID != nil {
			ep.jobs[*p.JobID] = true
		}
		if isClaim(w) {
			ep.claims[k] = true
		}
	}
}

// participant adds s to the episode, or updates it, and returns it.
func (ep *tracked) participant(s session, role string, at time.Time) *Participant {
	k := keyOf(s.PID, s.BackendStart)
	if i, ok := ep.index[k]; ok {
		p := ep.participants[i]
		p.LastSeenAt = at
		if role != "waiter" || p.Role == "waiter" {
			p.Role = role
		}
		if len(s.BlockedBy) > 0 {
			p.BlockedBy = s.BlockedBy
		}
		if len(s.Held) > 0 {
			p.Held = s.Held
		}
		if p.WaitStart == nil {
			p.WaitStart = s.WaitStart
		}
		return p
	}
	p := &Participant{Seq: int16(len(ep.participants) + 1), PID: s.PID, BackendStart: s.BackendStart, Role: role,
		BlockedBy: s.BlockedBy, Application: s.ApplicationName, Fingerprint: Fingerprint(s.Query),
		Query: truncate(statementText(s.Query), queryChars), LockType: s.LockType, LockMode: s.LockMode, LockTarget: s.LockTarget,
		Held: s.Held, JobID: queues.JobOfApplicationName(s.ApplicationName), WaitStart: s.WaitStart, FirstSeenAt: at, LastSeenAt: at}
	if p.BlockedBy == nil {
		p.BlockedBy = []int32{}
	}
	if p.Held == nil {
		p.Held = []string{}
	}
	ep.index[k] = len(ep.participants)
	ep.participants = append(ep.participants, p)
	ep.fresh++
	if p.Application != "" && !slices.Contains(ep.applications, p.Application) {
		ep.applications = append(ep.applications, p.Application)
	}
	return p
}

// rootParticipant is the episode's root as recorded.
func (ep *tracked) rootParticipant() *Participant {
	if i, ok := ep.index[ep.root]; ok {
		return ep.participants[i]
	}
	return &Participant{PID: ep.root.pid}
}

// firstWaiter is the waiter that waited longest: its lock names the
// episode's.
func (ep *tracked) firstWaiter() *Participant {
	var first *Participant
	for _, p := range ep.participants {
		if p.Role == "root" {
			continue
		}
		if first == nil || (p.WaitStart != nil && (first.WaitStart == nil || p.WaitStart.Before(*first.WaitStart))) {
			first = p
		}
	}
	if first == nil {
		return &Participant{}
	}
	return first
}

// waitedSeconds is every waiter's wait within the episode, up to its end
// (or last sighting while open).
func (ep *tracked) waitedSeconds() float64 {
	to := ep.end
	if to.IsZero() {
		to = ep.lastSeen
	}
	var total float64
	for _, p := range ep.participants {
		if p.Role == "root" {
			continue
		}
		from := p.FirstSeenAt
		if p.WaitStart != nil && p.WaitStart.Before(from) {
			from = *p.WaitStart
		}
		until := to
		if p.LastSeenAt.Before(ep.lastSeen) {
			// It got its lock before the episode ended: between its last
			// sighting and the next look, counted to its last sighting.
			until = p.LastSeenAt
		}
		total += max(until.Sub(from).Seconds(), 0)
	}
	return total
}

// queryChars bounds each recorded statement.
const queryChars = 300

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary.
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// isClaim reports whether s is one of the engine's job claims: an engine
// session running a statement whose header names a JobClaim query.
func isClaim(s session) bool {
	return s.ApplicationName == queues.ApplicationName && strings.HasPrefix(statementName(s.Query), "JobClaim")
}
