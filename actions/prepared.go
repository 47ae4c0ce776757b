package actions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/sqlset"
)

// PreparedXact is a prepared transaction as the prepared_xact actions see
// it: the diagnostics' row (the one definition of that fact), and the
// database the console is connected to, which ROLLBACK PREPARED must run
// in.
type PreparedXact struct {
	diagnostics.PreparedXact
	ConnectedDatabase string `json:"-" db:"connected_database"`
}

func preparedXactFingerprint(ctx context.Context, db DBTX, gid string) (*PreparedXact, error) {
	p, err := sqlset.One[PreparedXact](ctx, db, sqlText("prepared_xact_fingerprint"), gid)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("no prepared transaction has gid %q: %w", gid, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read prepared transaction %q: %w", gid, err)
	}
	return &p, nil
}

// PreparedXactPreview is the preview of prepared_xact.rollback: the
// transaction (send its prepared_at back to guard the execution), how many
// sessions wait behind it, the blocking tree and what the rollback does.
type PreparedXactPreview struct {
	Target       PreparedXact               `json:"target"`
	IsRoot       bool                       `json:"is_root"`
	BlockedCount int                        `json:"blocked_count"`
	Tree         []diagnostics.BlockingNode `json:"tree"`
	Effect       string                     `json:"effect"`
	Warning      string                     `json:"warning,omitempty"`
}

// PreparedXactResult is what happened after the rollback: whether the
// sessions that waited behind the transaction are free, and the tree then.
type PreparedXactResult struct {
	RolledBack bool                       `json:"rolled_back"`
	Cleared    bool                       `json:"cleared"`
	StillWaits []int32                    `json:"still_waiting"`
	Tree       []diagnostics.BlockingNode `json:"tree"`
	Message    string                     `json:"message"`
}

func (PreparedXactPreview) actionPreview() {}
func (PreparedXactResult) actionResult()   {}

// preparedParams name a prepared transaction, its preview's prepared time
// and the typed confirmation.
type preparedParams struct {
	GID        string
	PreparedAt *time.Time
	ConfirmGID string
}

func (p *preparedParams) fields() []field {
	return []field{
		stringParam(&p.GID, "gid", "The prepared transaction's gid, from the blocking tree or the prepared transactions panel.").required(),
		timeParam(&p.PreparedAt, "prepared_at", "The preview's prepared_at; execution refuses if the gid was prepared again since.").guard(),
		stringParam(&p.ConfirmGID, "confirm_gid", "The gid again, typed by the operator.").required(),
	}
}

type preparedRollback struct {
	gid      string
	prepared *time.Time
}

func (a *preparedRollback) target() string { return "prepared_xact:" + a.gid }

func (a *preparedRollback) preview(ctx context.Context, rc *runContext) (PreparedXactPreview, error) {
	p, err := preparedXactFingerprint(ctx, rc.r.pool, a.gid)
	if errors.Is(err, ErrNotFound) && a.prepared != nil {
		return PreparedXactPreview{}, fmt.Errorf("prepared transaction %q was committed or rolled back since it was previewed: %w", a.gid, ErrGuard)
	}
	if err != nil {
		return PreparedXactPreview{}, err
	}
	if err := a.guard(p); err != nil {
		return PreparedXactPreview{}, err
	}
	tree, err := diagnostics.BlockingTree(ctx, rc.r.pool)
	if err != nil {
		return PreparedXactPreview{}, err
	}
	v := PreparedXactPreview{Target: *p, Tree: nonNilTree(tree),
		Effect: "ROLLBACK PREPARED discards every change the transaction made and releases its locks; " +
			"the application or transaction manager that prepared it will find it gone and cannot commit it"}
	for _, n := range tree {
		if n.IsPrepared() && n.GID == a.gid {
			v.IsRoot, v.BlockedCount = n.IsRoot, n.BlockedCount
		}
	}
	if v.BlockedCount == 0 {
		v.Warning = fmt.Sprintf("prepared transaction %q blocks nobody right now; it still holds back the xmin horizon", a.gid)
	}
	return v, nil
}

// guard refuses a transaction other than the previewed one, or one in
// another database (ROLLBACK PREPARED must run connected to it).
func (a *preparedRollback) guard(p *PreparedXact) error {
	if a.prepared != nil && !p.Prepared.Truncate(time.Microsecond).Equal(a.prepared.Truncate(time.Microsecond)) {
		return fmt.Errorf("prepared transaction %q was prepared at %s, not at %s as previewed: it is another transaction with the same gid: %w",
			a.gid, p.Prepared.UTC().Format(time.RFC3339Nano), a.prepared.UTC().Format(time.RFC3339Nano), ErrGuard)
	}
	if p.Database == "" {
		return fmt.Errorf("the database of prepared transaction %q could not be resolved (it was created after this read began, or is being dropped); try again in a moment: %w",
			a.gid, ErrGuard)
	}
	if p.Database != p.ConnectedDatabase {
		return fmt.Errorf("prepared transaction %q belongs to database %q and the console is connected to %q; run ROLLBACK PREPARED connected to %q: %w",
			a.gid, p.Database, p.ConnectedDatabase, p.Database, ErrInvalid)
	}
	return nil
}

func (a *preparedRollback) execute(ctx context.Context, rc *runContext, tx pgx.Tx, pv PreparedXactPreview) (PreparedXactResult, error) {
	if a.prepared == nil {
		prepared := pv.Target.Prepared
		a.prepared = &prepared
	}
	cur, err := preparedXactFingerprint(ctx, tx, a.gid)
	if errors.Is(err, ErrNotFound) {
		return PreparedXactResult{}, fmt.Errorf("prepared transaction %q was committed or rolled back since the preview: %w", a.gid, ErrGuard)
	}
	if err != nil {
		return PreparedXactResult{}, err
	}
	if err := a.guard(cur); err != nil {
		return PreparedXactResult{}, err
	}
	// ROLLBACK PREPARED cannot run in tx: like a signal to a backend, it
	// takes effect when sent, and the audit event commits after it.
	if _, err := rc.r.pool.Exec(ctx, sqlText("prepared_xact_rollback")+" "+quoteLiteral(a.gid)); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42501" {
			return PreparedXactResult{}, fmt.Errorf("roll back prepared transaction %q: PostgreSQL lets only a superuser or the role that prepared it (%s) finish it; "+
				"ask a DBA to run ROLLBACK PREPARED as one of them (%s): %w", a.gid, cur.Owner, pgErr.Message, ErrForbidden)
		}
		return PreparedXactResult{}, fmt.Errorf("roll back prepared transaction %q: %w", a.gid, err)
	}
	res := PreparedXactResult{RolledBack: true, StillWaits: []int32{}}
	tree, err := diagnostics.BlockingTree(ctx, rc.r.pool)
	if err != nil {
		return PreparedXactResult{}, fmt.Errorf("read the blocking tree after the rollback: %w", err)
	}
	res.Tree = nonNilTree(tree)
	for _, n := range tree {
		if n.RootGID == a.gid && !n.IsRoot {
			res.StillWaits = append(res.StillWaits, n.PID)
		}
	}
	res.Cleared = len(res.StillWaits) == 0
	res.Message = fmt.Sprintf("prepared transaction %q was rolled back; %d sessions waited behind it", a.gid, pv.BlockedCount)
	if !res.Cleared {
		res.Message += fmt.Sprintf("; %d still wait: check the blocking tree", len(res.StillWaits))
	}
	return res, nil
}

func (a *preparedRollback) sentence(p PreparedXactPreview) string {
	s := fmt.Sprintf("Roll back prepared transaction %s (owner %s, database %s, prepared %s)",
		code(a.gid), code(p.Target.Owner), code(p.Target.Database), when(p.Target.Prepared))
	if p.BlockedCount > 0 {
		return s + ", which blocks " + counted(p.BlockedCount, "session", "sessions")
	}
	return s + ", which blocks nobody right now"
}

func (a *preparedRollback) done(r PreparedXactResult) string { return r.Message }

func (a *preparedRollback) state(p PreparedXactPreview) any {
	return struct {
		GID      string    `json:"gid"`
		Prepared time.Time `json:"prepared"`
	}{p.Target.GID, p.Target.Prepared}
}

// quoteLiteral quotes s as an SQL string literal, whatever
// standard_conforming_strings says.
func quoteLiteral(s string) string {
	q := "'" + strings.ReplaceAll(s, "'", "''") + "'"
	if strings.Contains(s, `\`) {
		q = "E" + strings.ReplaceAll(q, `\`, `\\`)
	}
	return q
}

var preparedXactRollback = action(Spec{
	Name: "prepared_xact.rollback", Title: "Roll back a prepared transaction", Role: auth.RoleAdmin, Risk: RiskHigh,
	Description: "ROLLBACK PREPARED of one prepared transaction: discards its changes and releases the locks it " +
		"holds with no session behind it. The application or transaction manager that prepared it loses the " +
		"transaction: confirm with its owner first. The gid must be typed again in confirm_gid; execution " +
		"refuses if the gid no longer exists or was prepared at another time than previewed.",
	Confirm: "confirm_gid",
}, func(p *preparedParams) (plan[PreparedXactPreview, PreparedXactResult], error) {
	if p.GID == "" {
		return nil, invalid("gid", "name the prepared transaction")
	}
	if p.ConfirmGID != p.GID {
		return nil, invalid("confirm_gid", "type the gid (%q) again to confirm the rollback", p.GID)
	}
	return &preparedRollback{gid: p.GID, prepared: p.PreparedAt}, nil
})
