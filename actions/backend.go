package actions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/auth"
)

// Fingerprint identifies a backend beyond its pid: pids are reused, so the
// backend actions refuse when backend_start or xact_start differ from what
// the operator previewed (and query_start, when the request carries it).
// The backend is the row the activity panel shows (diagnostics.Backend);
// the guard adds whether it is the connection asking and which database
// that connection is on.
type Fingerprint struct {
	diagnostics.Backend

	isSelf      bool
	ownDatabase string
}

func backendFingerprint(ctx context.Context, db DBTX, pid int32) (*Fingerprint, error) {
	var f Fingerprint
	err := db.QueryRow(ctx, sqlText("backend_fingerprint"), pid).Scan(
		&f.PID, &f.Database, &f.User, &f.ApplicationName, &f.ClientAddr, &f.BackendType, &f.State,
		&f.WaitEventType, &f.WaitEvent, &f.BackendStart, &f.XactStart, &f.QueryStart, &f.StateChange,
		&f.XactAgeSeconds, &f.QueryAgeSeconds, &f.XminAge, &f.BlockedBy, &f.Query,
		&f.isSelf, &f.ownDatabase)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("no session has pid %d any more; it may have finished. Refresh the blocking tree: %w", pid, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("fingerprint backend %d: %w", pid, err)
	}
	return &f, nil
}

// idleInTransaction reports a backend that holds a transaction open without
// running a statement: pg_cancel_backend does nothing to it.
func (f *Fingerprint) idleInTransaction() bool {
	return strings.HasPrefix(f.State, "idle in transaction")
}

// refuseTarget says why a backend may not be signalled at all: not a client
// backend (autovacuum, walsender, checkpointer...), connected to another
// database than the console's (unless RunnerConfig.AnyDatabase), or one of
// the console's own connections, known by pid: RunnerConfig.OwnPIDs, the
// diagnostics pool's (RunnerConfig.Diagnostics) and the connection asking.
// An application_name proves nothing: any client may call itself
// "console-...".
func (r *Runner) refuseTarget(f *Fingerprint) error {
	if f.BackendType != "client backend" {
		return fmt.Errorf("backend %d is a %q, not a client backend; the console only signals client sessions: %w",
			f.PID, f.BackendType, ErrInvalid)
	}
	if !r.cfg.AnyDatabase && f.Database != f.ownDatabase {
		return fmt.Errorf("backend %d is connected to database %q, not to the console's database %q; "+
			"the console signals only backends of its own database unless started with --signal-any-database: %w",
			f.PID, f.Database, f.ownDatabase, ErrInvalid)
	}
	if f.isSelf || r.ownPID(f.PID) {
		return fmt.Errorf("backend %d is the console's own connection: %w", f.PID, ErrInvalid)
	}
	return nil
}

// BackendPreview is the preview of backend.cancel and backend.terminate: the
// target's fingerprint (send it back to guard the execution), its place in
// the blocking tree, the tree itself, and what the action will and will not
// do.
type BackendPreview struct {
	Target       Fingerprint                `json:"target"`
	IsRoot       bool                       `json:"is_root"`
	BlockedCount int                        `json:"blocked_count"`
	Tree         []diagnostics.BlockingNode `json:"tree"`
	Effect       string                     `json:"effect"`
	Warning      string                     `json:"warning,omitempty"`
	// NextStep names the action to offer when this one cannot help.
	NextStep string `json:"next_step,omitempty"`
	// Job is the queue job whose session the target is (nil when it runs
	// none), with what the signal will do to it; WaitingJobs are the jobs
	// waiting in the target's branch, and Waiters says what becomes of
	// them.
	Job         *SignalJob  `json:"job,omitempty"`
	WaitingJobs []SignalJob `json:"waiting_jobs,omitempty"`
	Waiters     string      `json:"waiters,omitempty"`
}

// BackendResult is what happened after the signal: whether the chain the
// target headed cleared within the settle time, which backends are roots of
// what is left, and the tree then.
type BackendResult struct {
	Signalled   bool                       `json:"signalled"`
	Cleared     bool                       `json:"cleared"`
	TargetGone  bool                       `json:"target_gone"`
	TargetState string                     `json:"target_state,omitempty"`
	NewRoots    []int32                    `json:"new_roots"`
	StillWaits  []int32                    `json:"still_waiting"`
	WaitedMS    int64                      `json:"waited_ms"`
	Tree        []diagnostics.BlockingNode `json:"tree"`
	Message     string                     `json:"message"`
	NextStep    string                     `json:"next_step,omitempty"`
	// SettleError is why watching the tree after the signal failed; the
	// signal was sent all the same.
	SettleError string `json:"settle_error,omitempty"`
	// Job, WaitingJobs and Waiters are the preview's jobs read again after
	// the signal: what became of each.
	Job         *SignalJob  `json:"job,omitempty"`
	WaitingJobs []SignalJob `json:"waiting_jobs,omitempty"`
	Waiters     string      `json:"waiters,omitempty"`
}

func (BackendPreview) actionPreview() {}
func (BackendResult) actionResult()   {}

type backendSignal struct {
	terminate bool
	pid       int32
	// expected are the fingerprint fields the request carried; nil fields
	// are taken from this run's preview.
	backendStart, xactStart, queryStart *time.Time
	override                            bool

	// Set at execution: the target's state when signalled, and the job it
	// ran as previewed.
	idle                bool
	signalledQueryStart *time.Time
	job                 *SignalJob
}

func (a *backendSignal) target() string { return "backend:" + strconv.Itoa(int(a.pid)) }

// expected is the fingerprint the request confirms: the fields it
// carried, the rest as in seen.
func (a *backendSignal) expected(seen Fingerprint) Fingerprint {
	if a.backendStart != nil {
		seen.BackendStart = a.backendStart
	}
	if a.xactStart != nil {
		seen.XactStart = a.xactStart
	}
	return seen
}

// same refuses a session other than the one the request confirms (want):
// its transaction ended or its pid was reused.
func (a *backendSignal) same(want, got Fingerprint) error {
	if d := fingerprintDiff(want, got, a.queryStart); d != "" {
		return fmt.Errorf("the session with pid %d is not the one previewed (%s): its transaction ended or the pid was reused. Refresh the blocking tree: %w", a.pid, d, ErrGuard)
	}
	return nil
}

// ended is the refusal when the previewed session is gone.
func (a *backendSignal) ended() error {
	return fmt.Errorf("the session with pid %d has ended since the preview; it may have finished. Refresh the blocking tree: %w", a.pid, ErrGuard)
}

func (a *backendSignal) preview(ctx context.Context, rc *runContext) (BackendPreview, error) {
	f, err := backendFingerprint(ctx, rc.r.pool, a.pid)
	if errors.Is(err, ErrNotFound) && a.backendStart != nil {
		return BackendPreview{}, a.ended()
	}
	if err != nil {
		return BackendPreview{}, err
	}
	if a.backendStart != nil || a.xactStart != nil {
		if err := a.same(a.expected(*f), *f); err != nil {
			return BackendPreview{}, err
		}
	}
	if err := rc.r.refuseTarget(f); err != nil {
		return BackendPreview{}, err
	}
	tree, err := diagnostics.BlockingTree(ctx, rc.r.pool)
	if err != nil {
		return BackendPreview{}, err
	}
	p := BackendPreview{Target: *f, Tree: nonNilTree(tree)}
	for _, n := range tree {
		if n.PID == a.pid {
			p.IsRoot, p.BlockedCount = n.IsRoot, n.BlockedCount
		}
	}
	if p.Job, err = signalJobOf(ctx, rc.r.pool, a.pid, f.ApplicationName); err != nil {
		return BackendPreview{}, err
	}
	if p.WaitingJobs, err = waitingJobs(ctx, rc.r.pool, tree, a.pid); err != nil {
		return BackendPreview{}, err
	}
	switch {
	case a.terminate:
		p.Effect = "pg_terminate_backend ends the session: its whole transaction rolls back and the client sees a dropped connection " +
			"(it may retry, or not know whether its commit happened)"
	case f.idleInTransaction():
		p.Effect = "pg_cancel_backend does nothing here: the backend is idle in transaction, with no statement to cancel, " +
			"and keeps its locks until its client ends the transaction"
		p.NextStep = "backend.terminate"
	default:
		p.Effect = "pg_cancel_backend cancels the running statement; in a transaction block the transaction aborts and releases its locks. " +
			"The client may retry the statement"
	}
	if !p.IsRoot && p.BlockedCount == 0 {
		p.Warning = fmt.Sprintf("backend %d blocks nobody right now; check the blocking tree for the root blocker", a.pid)
	} else if !p.IsRoot {
		p.Warning = fmt.Sprintf("backend %d is not a root blocker; signalling the root clears more of the chain", a.pid)
	} else if !a.terminate && f.idleInTransaction() {
		p.Warning = "cancelling the root blocker will not clear this chain; terminate it (admin) after confirming with its owner"
	}
	a.foretell(&p)
	return p, nil
}

func (a *backendSignal) execute(ctx context.Context, rc *runContext, tx pgx.Tx, pv BackendPreview) (BackendResult, error) {
	// The stats snapshot of this transaction starts here: nothing earlier in
	// it read pg_stat_activity.
	cur, err := backendFingerprint(ctx, tx, a.pid)
	if errors.Is(err, ErrNotFound) {
		return BackendResult{}, a.ended()
	}
	if err != nil {
		return BackendResult{}, err
	}
	if err := a.same(a.expected(pv.Target), *cur); err != nil {
		return BackendResult{}, err
	}
	if err := rc.r.refuseTarget(cur); err != nil {
		return BackendResult{}, err
	}
	if a.terminate && !a.override {
		var attempted bool
		if err := tx.QueryRow(ctx, sqlText("backend_cancel_attempted"), int64(a.pid), cur.BackendStart,
			int64(30*time.Minute/time.Second)).Scan(&attempted); err != nil {
			return BackendResult{}, fmt.Errorf("look for an earlier cancel: %w", err)
		}
		if !attempted {
			return BackendResult{}, fmt.Errorf("terminate backend %d only after a backend.cancel of it (in the last 30 minutes) did not clear the chain, "+
				"or set override with a reason: %w", a.pid, ErrGuard)
		}
	}
	before := chainOf(pv.Tree, a.pid)
	a.idle, a.signalledQueryStart, a.job = cur.State != "active", cur.QueryStart, pv.Job
	stmt := "backend_cancel"
	if a.terminate {
		stmt = "backend_terminate"
	}
	res := BackendResult{NewRoots: []int32{}, StillWaits: []int32{}}
	if err := ctx.Err(); err != nil {
		return BackendResult{}, err
	}
	// Once sent, the signal statement runs to its answer even if the caller
	// goes away meanwhile: cancelled mid-flight, the signal may have been
	// sent with its answer lost, and the run would be audited as failed
	// while the backend was signalled.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	err = tx.QueryRow(sctx, sqlText(stmt), a.pid).Scan(&res.Signalled)
	cancel()
	if err != nil {
		return BackendResult{}, fmt.Errorf("signal backend %d: %w", a.pid, err)
	}
	if !res.Signalled {
		return BackendResult{}, fmt.Errorf("PostgreSQL did not signal the session with pid %d: it ended meanwhile (refresh the blocking tree), or the console's role lacks pg_signal_backend", a.pid)
	}
	// The signal is sent and cannot be taken back: the run is recorded as
	// done even if the caller goes away while the tree settles, and a
	// failure to watch it goes into the result.
	rc.effectSent = true
	if err := rc.r.settle(context.WithoutCancel(ctx), a, *cur, before, &res); err != nil {
		res.SettleError = err.Error()
		res.Message = fmt.Sprintf("backend %d was signalled, but watching the blocking tree afterwards failed (%v): check the tree", a.pid, err)
		return res, nil
	}
	if err := a.recount(context.WithoutCancel(ctx), rc.r.pool, pv, &res); err != nil {
		res.SettleError = err.Error()
		res.Message += fmt.Sprintf("; reading its jobs again failed (%v): check the jobs pages", err)
	}
	return res, nil
}

// settle watches the blocking tree on the pool (a transaction would see one
// stats snapshot) until the chain the target headed has cleared, or the
// settle time is up, and fills res with what it saw last.
func (r *Runner) settle(ctx context.Context, a *backendSignal, target Fingerprint, before []int32, res *BackendResult) error {
	start := time.Now()
	deadline := start.Add(r.cfg.SettleTimeout)
	for {
		tree, err := diagnostics.BlockingTree(ctx, r.pool)
		if err != nil {
			return fmt.Errorf("read the blocking tree after the signal: %w", err)
		}
		f, ferr := backendFingerprint(ctx, r.pool, a.pid)
		switch {
		case errors.Is(ferr, ErrNotFound):
			res.TargetGone, res.TargetState, f = true, "", nil
		case ferr != nil:
			return ferr
		case !sameTime(f.BackendStart, target.BackendStart):
			res.TargetGone, res.TargetState, f = true, "", nil // the pid was reused already
		default:
			res.TargetGone, res.TargetState = false, f.State
		}
		res.Tree = nonNilTree(tree)
		res.StillWaits, res.NewRoots = []int32{}, []int32{}
		roots := map[int32]bool{}
		for _, n := range tree {
			if n.Depth > 0 && slices.Contains(before, n.PID) {
				res.StillWaits = append(res.StillWaits, n.PID)
				roots[n.RootPID] = true
			}
		}
		for pid := range roots {
			res.NewRoots = append(res.NewRoots, pid)
		}
		slices.Sort(res.NewRoots)
		res.Cleared = len(res.StillWaits) == 0
		res.WaitedMS = time.Since(start).Milliseconds()
		if !time.Now().Before(deadline) {
			break
		}
		if res.Cleared && a.tookEffect(res, f) {
			settled, err := a.attemptSettled(ctx, r.pool)
			if err != nil {
				return err
			}
			if settled {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	switch {
	case res.Cleared && len(before) == 0:
		res.Message = fmt.Sprintf("backend %d was signalled; it blocked nobody when previewed", a.pid)
	case res.Cleared:
		res.Message = fmt.Sprintf("the chain cleared: the %d backends that waited behind %d are no longer blocked", len(before), a.pid)
	case slices.Contains(res.NewRoots, a.pid):
		res.Message = fmt.Sprintf("backend %d still blocks %d backends after %s", a.pid, len(res.StillWaits), time.Duration(res.WaitedMS)*time.Millisecond)
		if !a.terminate {
			res.Message += "; a backend idle in transaction ignores a cancel"
			res.NextStep = "backend.terminate"
		}
	default:
		res.Message = fmt.Sprintf("backend %d no longer blocks, but %d backends still wait: the new root is %v (cancelling a root often promotes the next transaction in the chain)",
			a.pid, len(res.StillWaits), res.NewRoots)
		res.NextStep = "backend.cancel"
	}
	return nil
}

// tookEffect reports whether the signal visibly landed: the session is gone
// (terminate), or its previewed statement stopped (cancel). A cancel of a
// backend idle in transaction has no effect to wait for.
func (a *backendSignal) tookEffect(res *BackendResult, now *Fingerprint) bool {
	if res.TargetGone {
		return true
	}
	if a.terminate {
		return false
	}
	return a.idle || now.State != "active" || !sameTime(now.QueryStart, a.signalledQueryStart)
}

// chainOf returns the pids waiting below pid in tree.
func chainOf(tree []diagnostics.BlockingNode, pid int32) []int32 {
	parent := map[int32]int32{}
	for _, n := range tree {
		if n.ParentPID != nil {
			parent[n.PID] = *n.ParentPID
		}
	}
	var out []int32
	for _, n := range tree {
		p, seen := n.PID, 0
		for seen <= len(tree) {
			pp, ok := parent[p]
			if !ok {
				break
			}
			if pp == pid {
				out = append(out, n.PID)
				break
			}
			p = pp
			seen++
		}
	}
	return out
}

func nonNilTree(t []diagnostics.BlockingNode) []diagnostics.BlockingNode {
	if t == nil {
		return []diagnostics.BlockingNode{}
	}
	return t
}

func fingerprintDiff(want, got Fingerprint, queryStart *time.Time) string {
	var diffs []string
	if !sameTime(want.BackendStart, got.BackendStart) {
		diffs = append(diffs, fmt.Sprintf("backend_start %s, previewed %s", fmtTime(got.BackendStart), fmtTime(want.BackendStart)))
	}
	if !sameTime(want.XactStart, got.XactStart) {
		diffs = append(diffs, fmt.Sprintf("xact_start %s, previewed %s", fmtTime(got.XactStart), fmtTime(want.XactStart)))
	}
	if queryStart != nil && !sameTime(queryStart, got.QueryStart) {
		diffs = append(diffs, fmt.Sprintf("query_start %s, previewed %s", fmtTime(got.QueryStart), fmtTime(queryStart)))
	}
	return strings.Join(diffs, "; ")
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Truncate(time.Microsecond).Equal(b.Truncate(time.Microsecond))
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "none"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func (a *backendSignal) sentence(p BackendPreview) string {
	f := p.Target
	verb := "Cancel the statement of backend"
	if a.terminate {
		verb = "Terminate backend"
	}
	who := code(f.ApplicationName)
	if f.ApplicationName == "" {
		who = "no application name"
	}
	s := fmt.Sprintf("%s %d (%s, user %s, %s)", verb, f.PID, who, code(f.User), f.State)
	switch {
	case p.IsRoot:
		s += ", the root blocker of " + counted(p.BlockedCount, "waiting session", "waiting sessions")
	case p.BlockedCount > 0:
		s += ", which blocks " + counted(p.BlockedCount, "session", "sessions") + " but is not the root blocker"
	default:
		s += ", which blocks nobody right now"
	}
	if p.NextStep != "" {
		s += "; a cancel does nothing to a session idle in transaction"
	}
	if p.Job != nil {
		s += "; " + p.Job.Fate
	}
	if p.Waiters != "" {
		s += "; " + p.Waiters
	}
	return s
}

func (a *backendSignal) done(r BackendResult) string {
	s := r.Message
	if r.Job != nil {
		s += "; " + r.Job.Fate
	}
	if r.Waiters != "" {
		s += "; waiting jobs: " + r.Waiters
	}
	return s
}

// backendState is what a signal's decision rests on: which session the pid
// names (pids are reused) and which transaction it is in.
type backendState struct {
	PID          int32      `json:"pid"`
	BackendStart *time.Time `json:"backend_start"`
	XactStart    *time.Time `json:"xact_start"`
}

func (a *backendSignal) state(p BackendPreview) any {
	return backendState{PID: p.Target.PID, BackendStart: p.Target.BackendStart, XactStart: p.Target.XactStart}
}

type backendPlan = plan[BackendPreview, BackendResult]

// fingerprintParams name a backend and, from its preview, the fingerprint
// execution checks.
type fingerprintParams struct {
	PID                                 int64
	BackendStart, XactStart, QueryStart *time.Time
}

func (p *fingerprintParams) fields() []field {
	return []field{
		intParam(&p.PID, "pid", "The backend's process id, from the blocking tree.").required(),
		timeParam(&p.BackendStart, "backend_start", "The preview's backend_start; execution refuses if it changed (pid reuse).").guard(),
		timeParam(&p.XactStart, "xact_start", "The preview's xact_start; execution refuses if it changed (the transaction ended).").guard(),
		timeParam(&p.QueryStart, "query_start", "The preview's query_start; when given, execution refuses if another statement started.").guard(),
	}
}

func (p *fingerprintParams) signal(terminate bool) (*backendSignal, error) {
	if p.PID <= 0 || p.PID > 1<<31-1 {
		return nil, invalid("pid", "%d is not a process id", p.PID)
	}
	return &backendSignal{terminate: terminate, pid: int32(p.PID),
		backendStart: p.BackendStart, xactStart: p.XactStart, queryStart: p.QueryStart}, nil
}

// terminateParams add the typed confirmation and the override.
type terminateParams struct {
	fingerprintParams
	ConfirmPID int64
	Override   bool
}

func (p *terminateParams) fields() []field {
	return append(p.fingerprintParams.fields(),
		intParam(&p.ConfirmPID, "confirm_pid", "The pid again, typed by the operator.").required(),
		boolParam(&p.Override, "override", "Terminate without an earlier cancel attempt (say why in the reason)."),
	)
}

var backendCancel = action(Spec{
	Name: "backend.cancel", Title: "Cancel the root blocker's statement", Role: auth.RoleOperator, Risk: RiskMedium,
	Description: "pg_cancel_backend on one backend, normally the root of the blocking tree. The preview " +
		"fingerprints it (pid, backend_start, xact_start, query_start, application name); execution refuses " +
		"if the fingerprint changed, if it is not a client backend, or if it is the console's own. Afterwards " +
		"the action watches the tree briefly and reports whether the chain cleared or which backend is the new " +
		"root. A backend idle in transaction ignores a cancel. The statement may be retried by its client: " +
		"verify the PID and the business first.",
}, func(p *fingerprintParams) (backendPlan, error) { return p.signal(false) })

var backendTerminate = action(Spec{
	Name: "backend.terminate", Title: "Terminate a backend", Role: auth.RoleAdmin, Risk: RiskHigh,
	Description: "pg_terminate_backend: ends the session and rolls back its whole transaction, which may " +
		"cause retry storms and commit-unknown outcomes for its client. Offered after a backend.cancel of the " +
		"same backend did not clear the chain (or with override); the pid must be typed again in confirm_pid. " +
		"Same fingerprint guards as backend.cancel.",
	Confirm: "confirm_pid",
}, func(p *terminateParams) (backendPlan, error) {
	a, err := p.signal(true)
	if err != nil {
		return nil, err
	}
	if p.ConfirmPID != p.PID {
		return nil, invalid("confirm_pid", "type the pid (%d) again to confirm the termination", p.PID)
	}
	a.override = p.Override
	return a, nil
})

// ownPID reports whether pid is one of the console's own connections other
// than the one asking: the runner's configured ones and the diagnostics'.
func (r *Runner) ownPID(pid int32) bool {
	if r.cfg.OwnPIDs != nil && slices.Contains(r.cfg.OwnPIDs(), pid) {
		return true
	}
	return r.cfg.Diagnostics != nil && slices.Contains(r.cfg.Diagnostics.OwnPIDs(), pid)
}
