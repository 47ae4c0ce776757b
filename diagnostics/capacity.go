package diagnostics

import (
	"context"

	"github.com/pgconsole/console/queues"
)

// ConnectionGroup is one group of client backends of ConnectionPressure,
// with the server-wide figures every row carries.
type ConnectionGroup struct {
	Database string `db:"database" json:"database"`
	User     string `db:"user_name" json:"user"`
	// Application is the backends' application_name; empty when they set
	// none.
	Application string `db:"application_name" json:"application_name"`
	State       string `db:"state" json:"state"`
	Connections int64  `db:"connections" json:"connections"`
	// ClientAddr is where the group connects from: one address, "local"
	// (a Unix socket), or "N addresses" when it comes from several hosts.
	ClientAddr string `db:"client_addr" json:"client_addr"`
	// Used counts every backend that takes a connection slot (clients,
	// walsenders, background workers).
	Used           int64 `db:"used" json:"used"`
	MaxConnections int64 `db:"max_connections" json:"max_connections"`
	// Reserved is the slots ordinary roles cannot take
	// (superuser_reserved_connections plus reserved_connections).
	Reserved int64 `db:"reserved" json:"reserved"`
}

// Available is the number of slots ordinary roles may use.
func (g ConnectionGroup) Available() int64 { return g.MaxConnections - g.Reserved }

// ConnectionPressure returns client backends grouped by database, user,
// application and state, most first, with the server's slot figures
// (connection_pressure.sql).
func ConnectionPressure(ctx context.Context, db DBTX) ([]ConnectionGroup, error) {
	return collect[ConnectionGroup](ctx, db, CheckConnectionUse, 0)
}

// ConnectionPressure runs connection_pressure.sql as a panel.
func (d *Diagnostics) ConnectionPressure(ctx context.Context) Result[ConnectionGroup] {
	return panel(ctx, d, CheckConnectionUse, many(ConnectionPressure))
}

// WraparoundAge is one database, or one of the oldest tables of the
// console's database, with its transaction ID and multixact ages.
type WraparoundAge struct {
	// Kind is "database" or "table".
	Kind string `db:"kind" json:"kind"`
	// Database is the database's name, or the database a table is in.
	Database string `db:"database_name" json:"database"`
	Name     string `db:"name" json:"name"`
	XIDAge   int64  `db:"xid_age" json:"xid_age"`
	MXIDAge  int64  `db:"mxid_age" json:"mxid_age"`
	// FreezeMaxAge and MultixactFreezeMaxAge are the ages at which
	// autovacuum forces an anti-wraparound vacuum.
	FreezeMaxAge          int64 `db:"freeze_max_age" json:"freeze_max_age"`
	MultixactFreezeMaxAge int64 `db:"multixact_freeze_max_age" json:"multixact_freeze_max_age"`
}

// WraparoundLimit is about the age at which PostgreSQL stops assigning
// transaction IDs (or multixacts) to protect itself: 2^31 less the three
// million it keeps in reserve.
const WraparoundLimit = 1<<31 - 3_000_000

// Fraction is how far the older of the two ages has gone towards
// WraparoundLimit (0 to about 1).
func (w WraparoundAge) Fraction() float64 {
	return float64(max(w.XIDAge, w.MXIDAge)) / WraparoundLimit
}

// Wraparound returns every database and, once this one's age has reached
// tablesFrom (or half of autovacuum_freeze_max_age, if lower), the five
// oldest tables of this one by transaction ID or multixact age, oldest
// first (wraparound.sql). A young database's tables are not read: its age
// bounds theirs. tablesFrom 0 lists them always.
func Wraparound(ctx context.Context, db DBTX, tablesFrom int64) ([]WraparoundAge, error) {
	return collect[WraparoundAge](ctx, db, CheckWraparound, 0, max(tablesFrom, 0))
}

// WraparoundTablesFrom is the database age from which the wraparound check
// names the oldest tables under thresholds t: half the age at which the
// vacuum.wraparound finding fires (the default's when it is off), so a
// finding always names them.
func WraparoundTablesFrom(t Thresholds) int64 {
	frac := t.Wraparound
	if frac <= 0 {
		frac = DefaultThresholds().Wraparound
	}
	return int64(frac * WraparoundLimit / 2)
}

// Wraparound runs wraparound.sql as a panel, with the tables named from
// the age WraparoundTablesFrom gives under d's thresholds.
func (d *Diagnostics) Wraparound(ctx context.Context) Result[WraparoundAge] {
	from := WraparoundTablesFrom(d.Thresholds())
	return panel(ctx, d, CheckWraparound, many(func(ctx context.Context, db DBTX) ([]WraparoundAge, error) {
		return Wraparound(ctx, db, from)
	}))
}

// readWraparound is the wraparound check of a round, under the round's
// thresholds.
func readWraparound(ctx context.Context, db DBTX, s *roundState) ([]WraparoundAge, error) {
	return Wraparound(ctx, db, WraparoundTablesFrom(s.thresholds))
}

// SequenceUse is a sequence and how much of its range is used, the range
// ending at the smaller of the sequence's own limit and the limit of the
// integer column it feeds.
type SequenceUse struct {
	Sequence string `db:"sequence_name" json:"sequence"`
	// DataType is the sequence's own type (smallint, integer, bigint).
	DataType string `db:"data_type" json:"data_type"`
	// Table, Column and ColumnType name the column the sequence feeds;
	// empty when no column owns it or names it in its default.
	Table        string  `db:"table_name" json:"table"`
	Column       string  `db:"column_name" json:"column"`
	ColumnType   string  `db:"column_type" json:"column_type"`
	LastValue    int64   `db:"last_value" json:"last_value"`
	Limit        int64   `db:"limit_value" json:"limit"`
	UsedFraction float64 `db:"used_fraction" json:"used_fraction"`
}

// SequenceExhaustion returns the twenty sequences closest to their limit,
// most used first (sequence_exhaustion.sql).
func SequenceExhaustion(ctx context.Context, db DBTX) ([]SequenceUse, error) {
	return collect[SequenceUse](ctx, db, CheckSequenceUse, 0)
}

// SequenceExhaustion runs sequence_exhaustion.sql as a panel.
func (d *Diagnostics) SequenceExhaustion(ctx context.Context) Result[SequenceUse] {
	return panel(ctx, d, CheckSequenceUse, many(SequenceExhaustion))
}

// StuckIdempotencyKey is an idempotency key claimed longer ago than the
// threshold and never completed, the engine's row
// (queues.IdempotencyStuck).
type StuckIdempotencyKey = queues.StuckIdempotencyKey

// IdempotencyStuck runs the engine's stuck keys (queues.IdempotencyStuck)
// as a panel, with the
// threshold of idempotency.stuck as the age that counts as stuck.
func (d *Diagnostics) IdempotencyStuck(ctx context.Context) Result[StuckIdempotencyKey] {
	return panel(ctx, d, CheckIdempotencyStuck, func(ctx context.Context, db DBTX, _ int) ([]StuckIdempotencyKey, error) {
		return queues.IdempotencyStuck(ctx, db, d.Thresholds().IdempotencyStuck, 0)
	})
}
