package queues

import (
	"context"
	"fmt"
	"time"

	"github.com/pgconsole/console/internal/sqlset"
)

// QueueSettings are an operator's fleet-wide controls for one queue, stored
// in queue_settings. Every engine process obeys them within one poll
// interval: Paused stops claims; MaxWorkers caps the jobs running in the
// queue across all processes (checked at claim time against the running
// count, so lowering it never kills running jobs and raising it needs no
// restart); RatePerSecond caps claims per second across the fleet (each
// live process takes an equal share). nil means no limit.
type QueueSettings struct {
	Queue         string    `db:"queue" json:"queue"`
	Paused        bool      `db:"paused" json:"paused"`
	MaxWorkers    *int      `db:"max_workers" json:"max_workers"`
	RatePerSecond *float64  `db:"rate_per_second" json:"rate_per_second"`
	UpdatedBy     *string   `db:"updated_by" json:"updated_by,omitempty"`
	UpdatedAt     time.Time `db:"updated_at" json:"updated_at,omitzero"`
}

// QueueSettingsGet returns the settings of queue, or the defaults (not
// paused, no limits, zero UpdatedAt) when it has none.
func QueueSettingsGet(ctx context.Context, db DBTX, queue string) (QueueSettings, error) {
	type row struct {
		QueueSettings
		UpdatedAt *time.Time `db:"updated_at"`
	}
	r, err := sqlset.One[row](ctx, db, sqlText("queue_settings_get"), queue)
	if err != nil {
		return QueueSettings{}, fmt.Errorf("get settings of %q: %w", queue, err)
	}
	s := r.QueueSettings
	if r.UpdatedAt != nil {
		s.UpdatedAt = *r.UpdatedAt
	}
	return s, nil
}

// QueueSettingsSetTx writes the settings of s.Queue in the caller's
// transaction and returns them as stored (UpdatedAt from the database).
func QueueSettingsSetTx(ctx context.Context, db DBTX, s QueueSettings) (QueueSettings, error) {
	if s.Queue == "" {
		return QueueSettings{}, fmt.Errorf("set queue settings: queue is required")
	}
	out, err := sqlset.One[QueueSettings](ctx, db, sqlText("queue_settings_set"), s.Queue, s.Paused, s.MaxWorkers, s.RatePerSecond, s.UpdatedBy)
	if err != nil {
		return QueueSettings{}, fmt.Errorf("set settings of %q: %w", s.Queue, err)
	}
	return out, nil
}

// liveSettings is what a Client re-reads every poll interval.
type liveSettings struct {
	Queue         string   `db:"queue"`
	Paused        bool     `db:"paused"`
	MaxWorkers    *int     `db:"max_workers"`
	RatePerSecond *float64 `db:"rate_per_second"`
	LiveWorkers   int64    `db:"live_workers"`
	TenantLimited bool     `db:"tenant_limited"`
}

func queueSettingsList(ctx context.Context, db DBTX, queues []string, liveWithin time.Duration) ([]liveSettings, error) {
	return collectRows[liveSettings](ctx, db, "queue_settings_list", "read queue settings", queues, liveWithin.Milliseconds())
}

// QueueSettingsLockTx makes sure queue has a settings row (the defaults
// when it had none) and locks it until tx ends, so two operators changing
// the same queue apply their changes one after the other: lock, then read
// with QueueSettingsGet, then write.
func QueueSettingsLockTx(ctx context.Context, tx DBTX, queue string) error {
	if _, err := tx.Exec(ctx, sqlText("queue_settings_lock"), queue); err != nil {
		return fmt.Errorf("lock settings of queue %q: %w", queue, err)
	}
	return nil
}
