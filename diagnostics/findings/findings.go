package findings

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/humanize"
)

// Severities of a Finding, worst first.
const (
	SeverityCritical = "critical"
	SeverityWarning  = "warning"
	SeverityInfo     = "info"
)

// Finding is one statement about the database, with the evidence it rests
// on, the runbook page that explains it and the actions that fit.
type Finding struct {
	// Code is the finding's kind, e.g. "lock.root_blocker" (the Code
	// constants); diagnostics.unavailable when a check could not run.
	Code string `json:"code"`
	// Severity is critical, warning or info.
	Severity string `json:"severity"`
	Title    string `json:"title"`
	// Subject identifies what the finding is about (pid, queue, slot_name,
	// ...), with the measured values.
	Subject map[string]any `json:"subject"`
	// Evidence says, in one line, what was measured and by which check.
	Evidence string `json:"evidence"`
	// Runbook is the page that explains it: "/runbook/<step>" or
	// "/runbook/rb-<letter>".
	Runbook string `json:"runbook"`
	// Actions are the names of the actions that fit, e.g. "backend.cancel";
	// never nil.
	Actions []string `json:"actions"`
}

// Report is the answer of GET /api/v1/findings and `console findings --json`.
type Report struct {
	GeneratedAt time.Time `json:"generated_at"`
	// SlowChecksAt is when the catalog-wide checks (diagnostics.SlowChecks)
	// were read: the shared rounds read them every Config.SlowInterval and
	// reuse that read in between, so their findings may be older than
	// GeneratedAt by SlowChecksAgeSeconds. Both are omitted from a report
	// not made from a round (NewReport).
	SlowChecksAt         time.Time `json:"slow_checks_at,omitzero"`
	SlowChecksAgeSeconds *float64  `json:"slow_checks_age_seconds,omitempty"`
	SlowChecks           []string  `json:"slow_checks,omitempty"`
	Findings             []Finding `json:"findings"`
}

// NewReport evaluates r against t into the report GET /api/v1/findings and
// `console findings --json` print.
func NewReport(r diagnostics.Round, t diagnostics.Thresholds) Report {
	rep := Report{GeneratedAt: r.At, Findings: Evaluate(r, t)}
	if !r.SlowAt.IsZero() {
		age := r.SlowAge().Seconds()
		rep.SlowChecksAt, rep.SlowChecksAgeSeconds, rep.SlowChecks = r.SlowAt, &age, diagnostics.SlowChecks()
	}
	return rep
}

// Finding codes: each has one Rule, and thresholds are set by code
// (SetThresholdFlag).
const (
	CodeRootBlocker = "lock.root_blocker"
	// CodeEngineStalled: the engine's own claims, acks or renewals wait
	// behind a root blocker.
	CodeEngineStalled         = "lock.engine_stalled"
	CodeIdleInTransaction     = "tx.idle_in_transaction"
	CodeLongRunning           = "tx.long_running"
	CodeQueueBacklog          = "queue.backlog"
	CodeTenantStarvation      = "queue.tenant_starvation"
	CodeExpiredLeases         = "queue.expired_leases"
	CodeDeadLetters           = "queue.dead_letters"
	CodeQueuePaused           = "queue.paused"
	CodeOutboxBacklog         = "outbox.backlog"
	CodeOutboxDead            = "outbox.dead"
	CodeReplicationLag        = "replication.lag"
	CodeSlotRetention         = "replication.slot_retention"
	CodeSlotInactive          = "replication.slot_inactive"
	CodeStandbyReceiver       = "replication.receiver_down"
	CodeReplayPaused          = "replication.replay_paused"
	CodeWALRateHigh           = "wal.rate_high"
	CodeArchiverFailing       = "archiver.failing"
	CodeArchiverBacklog       = "archiver.backlog"
	CodePreparedXactOld       = "prepared_xact.old"
	CodeXminHorizon           = "vacuum.xmin_horizon"
	CodeDeadTuples            = "table.dead_tuples"
	CodeIndexInvalid          = "index.invalid"
	CodeNotifyQueueUsage      = "notify.queue_usage"
	CodeConnections           = "connections.near_max"
	CodeSequence              = "sequence.exhaustion"
	CodeWorkersNoneAlive      = "workers.none_alive"
	CodeUnavailable           = "diagnostics.unavailable"
	CodeWraparound            = "vacuum.wraparound"
	CodeIdempotencyStuck      = "idempotency.stuck"
	CodeLongRunningJob        = "jobs.long_running"
	CodeCheckpoints           = "checkpoint.pressure"
	CodeStandbyConflicts      = "replication.standby_conflicts"
	CodeEngineErrors          = "engine.errors"
	CodeWALDir                = "wal.dir_size"
	CodeSlotDiskForecast      = "replication.slot_disk_forecast"
	CodeDeadlocks             = "lock.deadlocks"
	CodeArchiverNotConfigured = "archiver.not_configured"
	CodeArchiverStalled       = "archiver.stalled"
	// CodeRepeatBlocker: the same root application held up the engine's
	// job claims in several recorded lock episodes within the hour.
	CodeRepeatBlocker = "lock.repeat_blocker"
	// River's findings, read only when the database's jobs are River's
	// (diagnostics.Config.River).
	CodeRiverBacklog      = "river.backlog"
	CodeRiverStuckRunning = "river.stuck_running"
	CodeRiverDiscardBurst = "river.discard_burst"
	CodeRiverNoLeader     = "river.no_leader"
	CodeRiverQueuePaused  = "river.queue_paused"
)

// Run runs a round of its own on d and evaluates it against the current
// thresholds (pages share d.LatestRound's instead). It returns an error only
// when ctx is already done; a database that cannot be reached, or a check
// that times out, is itself a finding.
func Run(ctx context.Context, d *diagnostics.Diagnostics) (Report, error) {
	if err := ctx.Err(); err != nil {
		return Report{}, err
	}
	r := d.Round(ctx)
	return NewReport(r, d.Thresholds()), nil
}

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }
func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// seconds is a duration in a finding's text, in the units the tiles and
// panels beside it use ("1.5s", "4m05s", "2h10m").
func seconds(s float64) string { return humanize.SecondsTenths(s) }

func ageText(s *float64) string {
	if s == nil {
		return ""
	}
	return ", transaction " + seconds(*s) + " old"
}

func lagText(s *float64) string {
	if s == nil {
		return "unknown"
	}
	return seconds(*s)
}

func rateText(bytesPerSecond *float64) string {
	if bytesPerSecond == nil {
		return "an unknown rate"
	}
	return humanize.Bytes(*bytesPerSecond) + "/s"
}

func countText(n *int64) string {
	if n == nil {
		return "unknown"
	}
	return fmt.Sprint(*n)
}

func sizeText(n *int64) string {
	if n == nil {
		return "unlimited"
	}
	return humanize.Bytes(float64(*n))
}

func timeText(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}

// idList renders the first ids of a set of count, "17, 18 and 3 more".
func idList(ids []int64, count int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	out := strings.Join(parts, ", ")
	if more := count - int64(len(ids)); more > 0 {
		out += fmt.Sprintf(" and %d more", more)
	}
	return out
}

func activeText(a bool) string {
	if a {
		return "active"
	}
	return "inactive"
}

func deref(s *string) string {
	if s == nil {
		return "none"
	}
	return *s
}

func nonEmpty(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

func short(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	if len(q) > 160 {
		return q[:157] + "..."
	}
	return q
}
