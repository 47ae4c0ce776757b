package actions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/diagnostics"
)

// RunnerConfig configures a Runner. The zero value of each field means its
// documented default.
type RunnerConfig struct {
	// RequeueCap is the most dead jobs or outbox events one requeue action
	// may move; a larger match is refused with a message asking for a
	// narrower filter. Default 10,000.
	RequeueCap int
	// RequeueBatch is how many rows one requeue statement moves; a big
	// requeue runs several, in the same transaction. Default 1,000.
	RequeueBatch int
	// SettleTimeout is how long backend.cancel and backend.terminate wait
	// for the blocking chain to clear before reporting the tree as it is.
	// Default 3s.
	SettleTimeout time.Duration
	// LockTimeout bounds how long an action waits for a row or table lock,
	// so an action never queues behind the blocker it is meant to relieve.
	// Default 5s.
	LockTimeout time.Duration
	// OwnPIDs returns the backend pids of this process's own connections
	// (an ownpid.Set's PIDs); backend.cancel and backend.terminate refuse
	// them. The connection running the action and the connections of
	// Diagnostics are refused in any case.
	OwnPIDs func() []int32
	// AnyDatabase lets backend.cancel and backend.terminate signal client
	// backends of other databases than the pool's; by default they refuse.
	AnyDatabase bool
	// Diagnostics runs the panels incident.capture stores; nil refuses
	// captures.
	Diagnostics *diagnostics.Diagnostics
	// Registerer receives the runner's metrics (runs by action and outcome,
	// run duration); nil registers nothing.
	Registerer prometheus.Registerer
	// Logger receives one line per run ("action": the action, actor,
	// outcome, audit id, target and, where the action has them, job_id and
	// queue) and what cannot be returned, such as a failure to audit a
	// refusal. Nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock for schedule previews. Nil means time.Now.
	Now func() time.Time
	// RefusalWindow folds repeated refused (or failed) attempts, so a
	// client looping on a refused request cannot fill the audit table: the
	// first refusal of an actor, action and kind of reason is audited at
	// once, the ones of that kind within the window after it are counted
	// and logged, and one audit row says how many there were when the
	// window ends (FlushRefusals writes the pending rows at shutdown).
	// Default 1 minute; negative audits every refusal.
	RefusalWindow time.Duration
}

// Runner runs actions: it enforces roles and reasons, previews, re-checks
// guards, executes and audits. It is safe for concurrent use.
type Runner struct {
	pool     *pgxpool.Pool
	cfg      RunnerConfig
	log      *slog.Logger
	m        *metrics
	refusals *refusalFolder
}

// NewRunner returns a Runner that runs every action on pool. The pool must
// reach the console's database with a role allowed to change the queue
// tables and, for the backend actions, to signal backends (see RolesSQL).
func NewRunner(pool *pgxpool.Pool, cfg RunnerConfig) (*Runner, error) {
	if cfg.RequeueCap <= 0 {
		cfg.RequeueCap = 10000
	}
	if cfg.RequeueBatch <= 0 {
		cfg.RequeueBatch = 1000
	}
	if cfg.SettleTimeout <= 0 {
		cfg.SettleTimeout = 3 * time.Second
	}
	if cfg.LockTimeout <= 0 {
		cfg.LockTimeout = 5 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RefusalWindow == 0 {
		cfg.RefusalWindow = time.Minute
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	m, err := newMetrics(cfg)
	if err != nil {
		return nil, err
	}
	r := &Runner{pool: pool, cfg: cfg, log: log, m: m}
	r.refusals = newRefusalFolder(cfg.RefusalWindow, r.recordFolded)
	return r, nil
}

// FlushRefusals audits now the refusals RefusalWindow is still folding, one
// row per kind, so none is lost when the process stops. ctx bounds the
// writes.
func (r *Runner) FlushRefusals(ctx context.Context) { r.refusals.flush(ctx) }

// recordFolded audits the row of a window of folded refusals.
func (r *Runner) recordFolded(ctx context.Context, ev audit.Event) {
	if _, err := audit.RecordTx(ctx, r.pool, ev); err != nil {
		r.log.Error("audit folded refusals", "action", ev.Action, "actor", ev.Actor, "refusal", ev.Error, "err", err)
	}
}

// Request is one attempt to run an action.
type Request struct {
	// Params are the action's parameters: a json.RawMessage (an API body's
	// "params"), a []byte of JSON, or a map such as map[string]any or
	// map[string]string (form values); nil means none.
	Params any
	// Reason is why the operator acts; required unless DryRun.
	Reason string
	// DryRun returns the preview without changing or auditing anything.
	DryRun bool
	// IncidentID links the audit event to an open incident.
	IncidentID *int64
	// RequestID is the caller's correlation id (the HTTP request id); it
	// goes into the run's log line only. Empty leaves it out.
	RequestID string
	// ExpectVersion, when set, is the Version of the preview the operator
	// confirmed: the run re-previews and refuses with ErrStale, changing
	// nothing, if the state it would act on has changed since (the count
	// differs, the queue is already paused, the backend is another one).
	// The refusal's Outcome carries the new preview. Empty skips the check
	// (automation that executes directly).
	ExpectVersion string
}

// Outcome is what Run returns: the preview always, the result and the audit
// event's id when the action ran.
type Outcome struct {
	Action string `json:"action"`
	DryRun bool   `json:"dry_run"`
	// Summary says in one sentence what the previewed action will do.
	Summary string `json:"summary,omitempty"`
	// Version names the state the preview saw (see Request.ExpectVersion):
	// equal versions, same decision.
	Version string  `json:"version,omitempty"`
	Preview Preview `json:"preview"`
	Result  Result  `json:"result,omitempty"`
	// ResultSummary says in one sentence what the action did.
	ResultSummary string `json:"result_summary,omitempty"`
	AuditID       int64  `json:"audit_id,omitempty"`
}

type runContext struct {
	r      *Runner
	actor  Actor
	spec   Spec
	req    Request
	params json.RawMessage
	// tx is the caller's transaction (RunTx), nil for Run.
	tx pgx.Tx
	// plan is the parsed request, once parsing succeeded.
	plan runPlan
	// recorded is the audit event the run committed: the change's, or that
	// of a refused or failed attempt.
	recorded audit.Recorded
	// effectSent is set by an execute that did something no rollback
	// undoes (a signal to a backend): the run then finishes and is audited
	// even if ctx is cancelled.
	effectSent bool
}

// Run validates, previews and (unless req.DryRun) executes the action name
// for actor, and audits the attempt. The change and its audit event commit in
// one transaction; a refused or failed attempt is audited in its own
// transaction and its error returned (see the package's sentinel errors). A
// dry run needs no reason and is not audited. ctx bounds the whole run,
// including the wait after backend.cancel.
func (r *Runner) Run(ctx context.Context, actor Actor, name string, req Request) (Outcome, error) {
	return r.runLogged(ctx, nil, actor, name, req)
}

// RunTx is Run with the change and its audit event written in the caller's
// transaction tx (under a savepoint), so they commit when the caller commits
// tx, together with whatever else the caller wrote there (the stored answer
// of an idempotent request), or not at all. Out.AuditID is the id the event
// will have once tx commits. Refused and failed attempts are still audited
// in a transaction of their own, and a failure leaves tx usable. Signals to
// backends (backend.cancel, backend.terminate) take effect when sent, not at
// commit. A dry run does not touch tx. The caller owns tx: RunTx neither
// commits nor rolls it back, and the run's log line and metrics say
// succeeded when RunTx returns; whether it took effect is tx's commit.
func (r *Runner) RunTx(ctx context.Context, tx pgx.Tx, actor Actor, name string, req Request) (Outcome, error) {
	if tx == nil {
		return Outcome{}, errors.New("RunTx needs a transaction")
	}
	return r.runLogged(ctx, tx, actor, name, req)
}

// runLogged runs the action, counts it and writes its log line.
func (r *Runner) runLogged(ctx context.Context, tx pgx.Tx, actor Actor, name string, req Request) (Outcome, error) {
	started := time.Now()
	rc := &runContext{r: r, actor: actor, req: req, tx: tx}
	out, err := r.run(ctx, rc, name)
	took := time.Since(started)
	r.m.observe(name, req.DryRun, err, took)
	r.logRun(ctx, rc, name, out, err, took)
	return out, err
}

// logRun writes the one line every run gets: succeeded and dry runs at
// info, refused and failed attempts at warn with their cause. audit_id is
// the event of the change, or of the refusal (0 when a dry run, or when the
// refusal could not be audited).
func (r *Runner) logRun(ctx context.Context, rc *runContext, name string, out Outcome, err error, took time.Duration) {
	outcome := outcomeOf(rc.req.DryRun, err)
	auditID := rc.recorded.ID
	attrs := []slog.Attr{
		slog.String("action", name), slog.String("actor", rc.actor.Name), slog.String("role", rc.actor.Role),
		slog.String("outcome", outcome), slog.Int64("audit_id", auditID),
	}
	attrs = append(attrs, rc.recorded.LogAttrs()...)
	if rc.req.RequestID != "" {
		attrs = append(attrs, slog.String("request_id", rc.req.RequestID))
	}
	if rc.plan != nil {
		attrs = append(attrs, slog.String("target", rc.plan.target()))
		attrs = append(attrs, rc.plan.logFields()...)
	}
	if rc.req.IncidentID != nil {
		attrs = append(attrs, slog.Int64("incident_id", *rc.req.IncidentID))
	}
	if reason := strings.TrimSpace(rc.req.Reason); reason != "" {
		attrs = append(attrs, slog.String("reason", reason))
	}
	attrs = append(attrs, slog.Int64("ms", took.Milliseconds()))
	level := slog.LevelInfo
	switch outcome {
	case outcomeRefused:
		level = slog.LevelWarn
		attrs = append(attrs, slog.String("refusal", err.Error()))
	case outcomeFailed:
		level = slog.LevelWarn
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	r.log.LogAttrs(context.WithoutCancel(ctx), level, "action", clipLogAttrs(attrs)...)
}

func (r *Runner) run(ctx context.Context, rc *runContext, name string) (Outcome, error) {
	req := rc.req
	out := Outcome{Action: name, DryRun: req.DryRun}
	rawParams, perr := marshalParams(req.Params)
	rc.params = rawParams
	d, ok := definitions[name]
	if !ok {
		err := fmt.Errorf("no action %q: %w", name, ErrNotFound)
		return out, r.refuse(ctx, rc, name, "", nil, err)
	}
	rc.spec = d.spec
	if !req.DryRun {
		if err := r.checkWritable(ctx); err != nil {
			return out, err
		}
	}
	if err := checkRole(rc.actor, d.spec); err != nil {
		return out, r.refuse(ctx, rc, name, "", nil, err)
	}
	if !req.DryRun && strings.TrimSpace(req.Reason) == "" {
		err := fmt.Errorf("%s changes production state: say why (%w)", name, ErrReasonRequired)
		return out, r.refuse(ctx, rc, name, "", nil, err)
	}
	if cleanText(req.Reason) != req.Reason {
		err := invalid("reason", "must be UTF-8 text without NUL characters")
		return out, r.refuse(ctx, rc, name, "", nil, err)
	}
	if perr != nil {
		return out, r.refuse(ctx, rc, name, "", nil, perr)
	}
	if err := r.checkIncident(ctx, rc); err != nil {
		return out, r.refuse(ctx, rc, name, "", nil, err)
	}
	pl, err := d.parse(rawParams)
	if err != nil {
		return out, r.refuse(ctx, rc, name, "", nil, err)
	}
	rc.plan = pl
	preview, err := pl.preview(ctx, rc)
	if err != nil && !req.DryRun && req.ExpectVersion != "" && errors.Is(err, ErrNotFound) {
		// What the operator previewed is gone: a stale preview too.
		err = fmt.Errorf("%w; what was previewed is gone: %w", err, ErrStale)
	}
	if err != nil {
		return out, r.refuse(ctx, rc, name, pl.target(), nil, fmt.Errorf("preview %s: %w", name, err))
	}
	out.Preview, out.Summary = preview, pl.sentence(preview)
	if out.Version, err = stateVersion(pl.state(preview)); err != nil {
		return out, r.refuse(ctx, rc, name, pl.target(), preview, fmt.Errorf("preview %s: %w", name, err))
	}
	if req.DryRun {
		return out, nil
	}
	if req.ExpectVersion != "" && req.ExpectVersion != out.Version {
		err := fmt.Errorf("%s: what it would act on changed since the preview; nothing was done. Now: %s: %w", name, out.Summary, ErrStale)
		return out, r.refuse(ctx, rc, name, pl.target(), preview, err)
	}
	result, auditID, err := r.execute(ctx, rc, pl, preview)
	if err != nil {
		err = readOnly(err)
		return out, r.refuse(ctx, rc, name, pl.target(), preview, fmt.Errorf("%s: %w", name, err))
	}
	out.Result, out.AuditID, out.ResultSummary = result, auditID, pl.done(result)
	return out, nil
}

// checkWritable refuses a run, before it starts, while the database is a
// standby, as far as Diagnostics.ServerInfo (cached) knows; a run that
// races a demotion is refused by the server instead, with the same error.
// Without Diagnostics, or when ServerInfo fails, the run goes ahead.
func (r *Runner) checkWritable(ctx context.Context) error {
	if r.cfg.Diagnostics == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if info, err := r.cfg.Diagnostics.ServerInfo(ctx); err == nil && info.InRecovery {
		return ErrReadOnly
	}
	return nil
}

// checkIncident refuses a link to an incident that does not exist or is
// closed (the refusal is then audited without the link).
func (r *Runner) checkIncident(ctx context.Context, rc *runContext) error {
	if rc.req.IncidentID == nil {
		return nil
	}
	id := *rc.req.IncidentID
	inc, err := audit.IncidentGet(ctx, r.pool, id)
	if errors.Is(err, audit.ErrNotFound) {
		rc.req.IncidentID = nil
		return fmt.Errorf("incident %d does not exist: %w", id, ErrInvalid)
	}
	if err != nil {
		return err
	}
	if inc.Status != audit.IncidentStatusOpen {
		rc.req.IncidentID = nil
		return fmt.Errorf("incident %d is closed; link the action to an open incident: %w", id, ErrInvalid)
	}
	return nil
}

// execute applies the change and records its audit event in one
// transaction: the Runner's own, or a savepoint in the caller's (RunTx),
// which a failure rolls back so the refusal can be audited without waiting
// on the audit chain's lock the caller's transaction would otherwise hold.
func (r *Runner) execute(ctx context.Context, rc *runContext, pl runPlan, preview Preview) (Result, int64, error) {
	var tx pgx.Tx
	var err error
	if rc.tx != nil {
		tx, err = rc.tx.Begin(ctx)
	} else {
		tx, err = r.pool.BeginTx(ctx, pgx.TxOptions{})
	}
	if err != nil {
		return nil, 0, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, "SELECT set_config('lock_timeout', $1, true)",
		fmt.Sprintf("%dms", r.cfg.LockTimeout.Milliseconds())); err != nil {
		return nil, 0, fmt.Errorf("set lock_timeout: %w", err)
	}
	result, err := pl.execute(ctx, rc, tx, preview)
	if err != nil {
		return nil, 0, err
	}
	if rc.effectSent {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
	}
	ev, err := rc.event(pl.target(), preview, result, audit.OutcomeSucceeded, nil)
	if err != nil {
		return nil, 0, err
	}
	rec, err := audit.RecordTx(ctx, tx, ev)
	if err != nil {
		return nil, 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, 0, fmt.Errorf("commit: %w", err)
	}
	rc.recorded = rec
	return result, rec.ID, nil
}

// refuse audits a refused or failed attempt in its own transaction and
// returns err. A dry run is not audited, nor a refusal because the database
// is read-only (nothing can be written there). The audit write outlives a
// cancelled ctx (the operator closing the page must not erase the record).
func (r *Runner) refuse(ctx context.Context, rc *runContext, name, target string, preview Preview, err error) error {
	if rc.req.DryRun || errors.Is(err, ErrReadOnly) {
		return err
	}
	outcome := audit.OutcomeFailed
	if isRefusal(err) {
		outcome = audit.OutcomeRefused
	}
	if rc.spec.Name == "" {
		rc.spec.Name = name
	}
	ev, eerr := rc.event(target, preview, nil, outcome, err)
	ev.Params = refusalParams(rc.params)
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	auditNow, ended := r.refusals.fold(refusalKindOf(ev, err), ev, time.Now())
	if ended != nil {
		r.recordFolded(actx, *ended)
	}
	if !auditNow {
		r.log.Warn("refused action folded into its window's audit row: the same refusal was audited within the refusal window",
			"action", name, "actor", rc.actor.Name, "refusal", err)
		return err
	}
	if eerr == nil {
		rc.recorded, eerr = audit.RecordTx(actx, r.pool, ev)
	}
	if eerr != nil {
		r.log.Error("audit a refused action", "action", name, "actor", rc.actor.Name, "refusal", err, "err", eerr)
	}
	return err
}

func (rc *runContext) event(target string, preview Preview, result Result, outcome audit.Outcome, cause error) (audit.Event, error) {
	ev := audit.Event{
		Actor: cleanText(rc.actor.Name), Role: cleanText(rc.actor.Role), Action: cleanText(rc.spec.Name),
		Target: cleanText(target), Params: rc.params, Reason: cleanText(strings.TrimSpace(rc.req.Reason)),
		Outcome: outcome, IncidentID: rc.req.IncidentID,
	}
	if ev.Actor == "" {
		ev.Actor = "(anonymous)"
	}
	if ev.Role == "" {
		ev.Role = "(none)"
	}
	if len(ev.Params) > 0 && !json.Valid(ev.Params) {
		ev.Params = nil
	}
	if cause != nil {
		ev.Error = cleanText(cause.Error())
	}
	var err error
	if ev.Preview, err = marshalObject(preview); err != nil {
		return ev, fmt.Errorf("encode preview: %w", err)
	}
	if ev.Result, err = marshalObject(result); err != nil {
		return ev, fmt.Errorf("encode result: %w", err)
	}
	return ev, nil
}

// stateVersion names a preview's state: a short hash of its JSON.
func stateVersion(state any) (string, error) {
	b, err := json.Marshal(state)
	if err != nil {
		return "", fmt.Errorf("encode the preview's state: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12]), nil
}

// marshalObject encodes v for a jsonb object column; a non-object value is
// wrapped as {"value": v}.
func marshalObject(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 || b[0] != '{' {
		return json.Marshal(map[string]json.RawMessage{"value": b})
	}
	return b, nil
}

func marshalParams(v any) (json.RawMessage, error) {
	switch p := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return p, nil
	case []byte:
		return p, nil
	case string:
		return json.RawMessage(p), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("params cannot be encoded as JSON: %w", ErrInvalid)
	}
	return b, nil
}

// wrapNotFound turns another package's not-found error into ours, so the
// web layer maps one sentinel.
func wrapNotFound(err error, notFound error, format string, args ...any) error {
	if errors.Is(err, notFound) {
		return fmt.Errorf(format+": %w", append(args, ErrNotFound)...)
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}
