package collector

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
)

// Config configures New. Zero values are defaults.
type Config struct {
	// Registerer takes the collector (and the stats of the diagnostics
	// pool, labelled pool="diagnostics"). Required: the console never uses
	// the global registry.
	Registerer prometheus.Registerer
	// Refresh is how old the shared round (Diagnostics.LatestRound) may be
	// for a scrape; default 15s. Scrapes in between are served from it, so
	// the catalog runs at most once per Refresh whatever the scrape rate
	// (and not at all for a scrape when a page took a round just before).
	Refresh time.Duration
	// Wait bounds how long a scrape waits for a round; default 3s. A scrape
	// that waits longer is served the last good values, and the round ends
	// in the background within Config.Budget.
	Wait time.Duration
}

func (c Config) withDefaults() Config {
	if c.Refresh <= 0 {
		c.Refresh = 15 * time.Second
	}
	if c.Wait <= 0 {
		c.Wait = 3 * time.Second
	}
	return c
}

// Collector exposes the evidence of a findings round as Prometheus gauges:
// blocked backends, transaction ages, replication lag per standby, slot
// retention, WAL rate, the archiver, prepared transactions, dead tuples of
// the queue tables, and queue, outbox and worker health. Labels are bounded
// (queue, table, slot_name, application_name; never a pid or a job id).
//
// Scrapes take the round the overview takes (Diagnostics.LatestRound): a
// scrape never runs the catalog when that round is younger than
// Config.Refresh, and never waits longer than
// Config.Wait: a check that fails or times out keeps its last good
// values, a scrape that gets no round within Wait counts as a failed round,
// and console_diagnostics_last_round_success and
// console_diagnostics_last_success_age_seconds say how fresh they are.
type Collector struct {
	d       *diagnostics.Diagnostics
	cfg     Config
	created time.Time

	mu        sync.Mutex
	values    diagnostics.Round // the last good value of every section
	have      bool              // a round has been merged
	lastAt    time.Time         // start of the last merged round
	lastOK    bool              // every section's check succeeded in the last round
	lastGood  time.Time         // start of the last round in which they all did
	took      time.Duration     // wall time of the last round
	failures  map[string]float64
	roundsRun float64
	known     map[string]bool // sections (checks) that have succeeded once
}

// New creates the diagnostics collector on d and registers it, and
// the diagnostics pool's stats, on cfg.Registerer. It starts nothing: rounds
// run when Prometheus scrapes (or a page asks for one).
func New(d *diagnostics.Diagnostics, cfg Config) (*Collector, error) {
	if cfg.Registerer == nil {
		return nil, errNoRegisterer
	}
	cfg = cfg.withDefaults()
	c := &Collector{d: d, cfg: cfg, created: time.Now(), failures: map[string]float64{}, known: map[string]bool{}}
	if err := cfg.Registerer.Register(c); err != nil {
		return nil, err
	}
	if err := cfg.Registerer.Register(newPool("diagnostics", d.PoolStat)); err != nil {
		return nil, err
	}
	return c, nil
}

var errNoRegisterer = errors.New("diagnostics: Config.Registerer is required")

func gaugeDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	cdBlocked = gaugeDesc("console_diagnostics_blocked_backends",
		"Backends waiting for a lock in the blocking tree.")
	cdBlockedWait = gaugeDesc("console_diagnostics_blocked_max_wait_seconds",
		"Longest lock wait among the blocked backends (0 when none waits).")
	cdOldestXact = gaugeDesc("console_diagnostics_oldest_transaction_seconds",
		"Age of the oldest open transaction of a client backend (0 when none).")
	cdOldestIdle = gaugeDesc("console_diagnostics_oldest_idle_in_transaction_seconds",
		"Longest time a session has been idle inside an open transaction (0 when none).")
	cdReplLagBytes = gaugeDesc("console_diagnostics_replication_lag_bytes",
		"Bytes between the primary's current WAL position and a standby's replay position.", "application_name")
	cdReplLagSeconds = gaugeDesc("console_diagnostics_replication_lag_seconds",
		"A standby's replay_lag from pg_stat_replication (absent while unknown).", "application_name")
	cdSlotRetained = gaugeDesc("console_diagnostics_slot_retained_bytes",
		"WAL kept for a replication slot (current position minus restart_lsn).", "slot_name")
	cdSlotActive = gaugeDesc("console_diagnostics_slot_active",
		"1 when a replication slot has a consumer attached, 0 when not.", "slot_name")
	cdSlotSafe = gaugeDesc("console_diagnostics_slot_safe_wal_size_bytes",
		"WAL that can still be written before max_slot_wal_keep_size invalidates a slot (absent when unlimited).", "slot_name")
	cdSlotExhaustion = gaugeDesc("console_diagnostics_slot_exhaustion_seconds",
		"Estimated seconds until a slot is invalidated at the current WAL rate (absent when unlimited or the rate is unknown).", "slot_name")
	cdWALRate = gaugeDesc("console_diagnostics_wal_bytes_per_second",
		"WAL generated per second between two samples of pg_current_wal_lsn().")
	cdPrepared = gaugeDesc("console_diagnostics_prepared_transactions",
		"Prepared transactions waiting for COMMIT PREPARED or ROLLBACK PREPARED.")
	cdPreparedAge = gaugeDesc("console_diagnostics_oldest_prepared_transaction_seconds",
		"Age of the oldest prepared transaction (0 when none).")
	cdArchiverFailed = prometheus.NewDesc("console_diagnostics_archiver_failed_total",
		"Failed WAL archive attempts (pg_stat_archiver.failed_count, since its stats reset).", nil, nil)
	cdArchiverArchived = prometheus.NewDesc("console_diagnostics_archiver_archived_total",
		"WAL files archived (pg_stat_archiver.archived_count, since its stats reset).", nil, nil)
	cdArchiverFailing = gaugeDesc("console_diagnostics_archiver_failing",
		"1 when the archiver's last failure is newer than its last success.")
	cdDeadTuples = gaugeDesc("console_diagnostics_dead_tuples",
		"Dead tuples of a queue table (pg_stat_user_tables.n_dead_tup).", "table")
	cdQueueReady = gaugeDesc("console_diagnostics_queue_ready_jobs",
		"Ready jobs of a queue (counts stop at 100000).", "queue")
	cdQueueScheduled = gaugeDesc("console_diagnostics_queue_scheduled_jobs",
		"Ready jobs of a queue whose available_at is still in the future.", "queue")
	cdQueueRunning = gaugeDesc("console_diagnostics_queue_running_jobs",
		"Leased (running) jobs of a queue.", "queue")
	cdQueueDead = gaugeDesc("console_diagnostics_queue_dead_jobs",
		"Dead-lettered jobs of a queue.", "queue")
	cdQueueDeadRecent = gaugeDesc("console_diagnostics_queue_recent_dead_jobs",
		"Jobs of a queue that died within the dead-letter window (thresholds, default 15 minutes).", "queue")
	cdQueueExpired = gaugeDesc("console_diagnostics_queue_expired_leases",
		"Running jobs of a queue whose lease has expired.", "queue")
	cdQueueOldest = gaugeDesc("console_diagnostics_queue_oldest_ready_seconds",
		"Time the oldest due ready job of a queue has waited (0 when none).", "queue")
	cdQueuePaused = gaugeDesc("console_diagnostics_queue_paused",
		"1 when an operator paused the queue (queue_settings).", "queue")
	cdTenantOldest = gaugeDesc("console_diagnostics_queue_tenant_oldest_ready_seconds",
		"Time the oldest due ready job of a tenant has waited, for the 10 tenants per queue that waited longest; tenant \"other\" is the rest.", "queue", "tenant")
	cdTenantReady = gaugeDesc("console_diagnostics_queue_tenant_ready_jobs",
		"Ready jobs of a tenant, for the same tenants as the oldest ready gauge; tenant \"other\" is the rest.", "queue", "tenant")
	cdQueueWorkers = gaugeDesc("console_diagnostics_queue_workers_alive",
		"Worker processes serving a queue that heartbeated recently.", "queue")
	cdOutboxPending = gaugeDesc("console_diagnostics_outbox_pending_events",
		"Outbox events due for publishing.")
	cdOutboxOldest = gaugeDesc("console_diagnostics_outbox_oldest_pending_seconds",
		"Time the oldest due outbox event has waited (0 when none).")
	cdOutboxInflight = gaugeDesc("console_diagnostics_outbox_inflight_events",
		"Outbox events claimed by a relay and not yet marked.")
	cdOutboxExpired = gaugeDesc("console_diagnostics_outbox_expired_leases",
		"Claimed outbox events whose relay lease has expired.")
	cdOutboxDead = gaugeDesc("console_diagnostics_outbox_dead_events",
		"Outbox events that exhausted their attempts.")
	cdOutboxPaused = gaugeDesc("console_diagnostics_outbox_relay_paused",
		"1 when an operator paused the outbox relay.")
	cdRoundOK = gaugeDesc("console_diagnostics_last_round_success",
		"1 when every check behind these metrics succeeded in the last diagnostics round, 0 when one failed or timed out (its last good values are served).")
	cdRoundAge = gaugeDesc("console_diagnostics_last_success_age_seconds",
		"Seconds since the start of the last diagnostics round in which every check behind these metrics succeeded (since the console started when none has).")
	cdRoundTook = gaugeDesc("console_diagnostics_round_duration_seconds",
		"Wall time of the last diagnostics round.")
	cdFindings = gaugeDesc("console_diagnostics_findings",
		"Findings of the last round by code (0 for every code without one).", "code")
	cdRounds = prometheus.NewDesc("console_diagnostics_rounds_total",
		"Diagnostics rounds run for scrapes.", nil, nil)
	cdCheckFailures = prometheus.NewDesc("console_diagnostics_check_failures_total",
		"Checks of diagnostics rounds that failed or timed out, by check.", []string{"check"}, nil)
	cdStatements = prometheus.NewDesc("console_diagnostics_statements_total",
		"Statements the console's diagnostics sent to the database, by check (rounds, panels, the sampler; lock_watcher for the lock watcher's polls).", []string{"check"}, nil)
	cdStatementSeconds = prometheus.NewDesc("console_diagnostics_statement_seconds_total",
		"Wall time of those statements, by check: what the console itself costs the database.", []string{"check"}, nil)
)

var collectorDescs = []*prometheus.Desc{
	cdBlocked, cdBlockedWait, cdOldestXact, cdOldestIdle, cdReplLagBytes, cdReplLagSeconds,
	cdSlotRetained, cdSlotActive, cdSlotSafe, cdSlotExhaustion, cdWALRate, cdPrepared, cdPreparedAge,
	cdArchiverFailed, cdArchiverArchived, cdArchiverFailing, cdDeadTuples,
	cdQueueReady, cdQueueScheduled, cdQueueRunning, cdQueueDead, cdQueueDeadRecent, cdQueueExpired,
	cdQueueOldest, cdQueuePaused, cdQueueWorkers, cdTenantOldest, cdTenantReady,
	cdOutboxPending, cdOutboxOldest, cdOutboxInflight, cdOutboxExpired, cdOutboxDead, cdOutboxPaused,
	cdRoundOK, cdRoundAge, cdRoundTook, cdRounds, cdCheckFailures, cdFindings, cdStatements, cdStatementSeconds,
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range collectorDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector: it takes the shared round when
// the one it has is older than Refresh (waiting at most Wait), then sends
// the values it holds.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.refresh()
	c.mu.Lock()
	r, have, ok, lastGood, took := c.values, c.have, c.lastOK, c.lastGood, c.took
	rounds := c.roundsRun
	failures := make(map[string]float64, len(c.failures))
	for k, v := range c.failures {
		failures[k] = v
	}
	known := make(map[string]bool, len(c.known))
	for k, v := range c.known {
		known[k] = v
	}
	c.mu.Unlock()

	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge(cdRoundOK, boolValue(have && ok))
	since := c.created
	if !lastGood.IsZero() {
		since = lastGood
	}
	gauge(cdRoundAge, time.Since(since).Seconds())
	counter(cdRounds, rounds)
	for check, n := range failures {
		counter(cdCheckFailures, n, check)
	}
	for check, cost := range c.d.Cost() {
		counter(cdStatements, float64(cost.Statements), check)
		counter(cdStatementSeconds, cost.Seconds, check)
	}
	if !have {
		return
	}
	gauge(cdRoundTook, took.Seconds())
	byCode := map[string]int{}
	for _, f := range findings.Evaluate(r, c.d.Thresholds()) {
		byCode[f.Code]++
	}
	for _, rule := range findings.Rules() {
		gauge(cdFindings, float64(byCode[rule.Code]), rule.Code)
	}

	if known[diagnostics.CheckBlockingTree] {
		blocked, wait := 0, 0.0
		for _, n := range r.Blocking {
			if !n.IsRoot {
				blocked++
			}
			wait = max(wait, n.WaitSeconds, n.MaxWaitSeconds)
		}
		gauge(cdBlocked, float64(blocked))
		gauge(cdBlockedWait, wait)
	}
	if known[diagnostics.CheckActivity] {
		oldest := 0.0
		for _, b := range r.Activity {
			if b.BackendType == "client backend" && b.XactStart != nil {
				oldest = max(oldest, b.XactAgeSeconds)
			}
		}
		gauge(cdOldestXact, oldest)
	}
	if known[diagnostics.CheckIdleInTransaction] {
		idle := 0.0
		for _, it := range r.IdleTx {
			idle = max(idle, it.IdleSeconds)
		}
		gauge(cdOldestIdle, idle)
	}
	seen := map[string]bool{}
	for _, s := range r.Replication {
		if seen[s.ApplicationName] {
			continue
		}
		seen[s.ApplicationName] = true
		gauge(cdReplLagBytes, float64(s.ReplayLagBytes), s.ApplicationName)
		if s.ReplayLagSeconds != nil {
			gauge(cdReplLagSeconds, *s.ReplayLagSeconds, s.ApplicationName)
		}
	}
	for _, s := range r.Slots {
		gauge(cdSlotRetained, float64(s.RetainedBytes), s.SlotName)
		gauge(cdSlotActive, boolValue(s.Active), s.SlotName)
		if s.SafeWALSize != nil {
			gauge(cdSlotSafe, float64(*s.SafeWALSize), s.SlotName)
		}
		if s.SecondsToExhaustion != nil {
			gauge(cdSlotExhaustion, *s.SecondsToExhaustion, s.SlotName)
		}
	}
	if r.WALRate != nil {
		gauge(cdWALRate, *r.WALRate)
	}
	if known[diagnostics.CheckPreparedXacts] {
		oldest := 0.0
		for _, p := range r.Prepared {
			oldest = max(oldest, p.AgeSeconds)
		}
		gauge(cdPrepared, float64(len(r.Prepared)))
		gauge(cdPreparedAge, oldest)
	}
	if a := r.Archiver; a != nil {
		counter(cdArchiverFailed, float64(a.FailedCount))
		counter(cdArchiverArchived, float64(a.ArchivedCount))
		gauge(cdArchiverFailing, boolValue(a.Failing))
	}
	for _, t := range r.Tables {
		if t.Schema == "public" && diagnostics.IsQueueTable(t.Table) {
			gauge(cdDeadTuples, float64(t.DeadTuples), t.Table)
		}
	}
	for _, q := range r.Queues {
		gauge(cdQueueReady, float64(q.Ready), q.Queue)
		gauge(cdQueueScheduled, float64(q.Scheduled), q.Queue)
		gauge(cdQueueRunning, float64(q.Running), q.Queue)
		gauge(cdQueueDead, float64(q.Dead), q.Queue)
		gauge(cdQueueDeadRecent, float64(q.DeadRecent), q.Queue)
		gauge(cdQueueExpired, float64(q.ExpiredLeases), q.Queue)
		gauge(cdQueueOldest, q.OldestReadySeconds, q.Queue)
		gauge(cdQueuePaused, boolValue(q.Paused), q.Queue)
		if known[diagnostics.CheckWorkers] {
			alive := 0
			for _, w := range r.Workers {
				if w.Alive && w.Serves(q.Queue) {
					alive++
				}
			}
			gauge(cdQueueWorkers, float64(alive), q.Queue)
		}
	}
	for _, b := range r.Tenants {
		gauge(cdTenantOldest, b.OldestReadySeconds, b.Queue, diagnostics.TenantLabel(b))
		gauge(cdTenantReady, float64(b.Ready), b.Queue, diagnostics.TenantLabel(b))
	}
	if o := r.Outbox; o != nil {
		gauge(cdOutboxPending, float64(o.Pending))
		gauge(cdOutboxOldest, o.OldestPendingSeconds)
		gauge(cdOutboxInflight, float64(o.Inflight))
		gauge(cdOutboxExpired, float64(o.ExpiredLeases))
		gauge(cdOutboxDead, float64(o.Dead))
		gauge(cdOutboxPaused, boolValue(o.RelayPaused))
	}
}

// refresh takes the shared round, waiting for a new one at most Wait, and
// merges it when it is newer than the one last merged (concurrent scrapes
// may return out of order).
func (c *Collector) refresh() {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Wait)
	defer cancel()
	r, err := c.d.LatestRound(ctx, c.cfg.Refresh)
	if err != nil {
		// No round within Wait: the database is stalled or overloaded.
		// The last good values are still served, but the round did not
		// succeed, so last_round_success says 0 until one does. The round
		// lands in the shared cache for a later scrape.
		c.mu.Lock()
		c.lastOK = false
		c.mu.Unlock()
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.have && !r.At.After(c.lastAt) {
		return
	}
	c.roundsRun++
	for _, u := range r.Unavailable {
		name, _, _ := strings.Cut(u.Check, " ")
		c.failures[name]++
	}
	c.values = diagnostics.KeepLastGood(c.values, r)
	c.lastOK = true
	for _, check := range diagnostics.MetricChecks() {
		if r.Failed(check) {
			c.lastOK = false
		} else {
			c.known[check] = true
		}
	}
	c.have = true
	c.lastAt = r.At
	c.took = r.Took
	if c.lastOK {
		c.lastGood = r.At
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// poolMetrics are the pgxpool.Stat series: name, help, and whether it is a
// counter.
var poolMetrics = []struct {
	name, help string
	counter    bool
	value      func(*pgxpool.Stat) float64
}{
	{"console_pool_acquired_connections", "Connections of a pgx pool currently checked out.", false,
		func(s *pgxpool.Stat) float64 { return float64(s.AcquiredConns()) }},
	{"console_pool_idle_connections", "Idle connections of a pgx pool.", false,
		func(s *pgxpool.Stat) float64 { return float64(s.IdleConns()) }},
	{"console_pool_total_connections", "Open connections of a pgx pool (acquired, idle and being constructed).", false,
		func(s *pgxpool.Stat) float64 { return float64(s.TotalConns()) }},
	{"console_pool_max_connections", "The MaxConns of a pgx pool.", false,
		func(s *pgxpool.Stat) float64 { return float64(s.MaxConns()) }},
	{"console_pool_acquires_total", "Successful acquires from a pgx pool.", true,
		func(s *pgxpool.Stat) float64 { return float64(s.AcquireCount()) }},
	{"console_pool_empty_acquires_total", "Acquires from a pgx pool that had to wait because the pool was empty.", true,
		func(s *pgxpool.Stat) float64 { return float64(s.EmptyAcquireCount()) }},
	{"console_pool_canceled_acquires_total", "Acquires from a pgx pool canceled by their context before a connection was available.", true,
		func(s *pgxpool.Stat) float64 { return float64(s.CanceledAcquireCount()) }},
	{"console_pool_acquire_wait_seconds_total", "Time successful acquires from a pgx pool waited because the pool was empty.", true,
		func(s *pgxpool.Stat) float64 { return s.EmptyAcquireWaitTime().Seconds() }},
	{"console_pool_acquire_duration_seconds_total", "Total time of successful acquires from a pgx pool, waiting or not.", true,
		func(s *pgxpool.Stat) float64 { return s.AcquireDuration().Seconds() }},
	{"console_pool_new_connections_total", "Connections a pgx pool has opened.", true,
		func(s *pgxpool.Stat) float64 { return float64(s.NewConnsCount()) }},
}

// poolCollector reads pgxpool.Stat at every scrape (no I/O).
type poolCollector struct {
	stat  func() *pgxpool.Stat
	descs []*prometheus.Desc
}

// NewPool exposes the statistics of pool (pgxpool.Stat: acquired,
// idle, total and max connections, acquire counts and the time spent waiting
// on an empty pool) with the constant label pool=name. Each pool registered
// on one registry needs its own name ("console", "engine", "diagnostics");
// registering a name twice fails. Reading the stats does no I/O.
func NewPool(name string, pool *pgxpool.Pool) prometheus.Collector {
	return newPool(name, pool.Stat)
}

// newPool is NewPool on a pool's Stat method, for a pool the caller does
// not hand out (the diagnostics pool).
func newPool(name string, stat func() *pgxpool.Stat) prometheus.Collector {
	p := &poolCollector{stat: stat}
	for _, m := range poolMetrics {
		p.descs = append(p.descs, prometheus.NewDesc(m.name, m.help, nil, prometheus.Labels{"pool": name}))
	}
	return p
}

// Describe implements prometheus.Collector.
func (p *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range p.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (p *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := p.stat()
	for i, m := range poolMetrics {
		t := prometheus.GaugeValue
		if m.counter {
			t = prometheus.CounterValue
		}
		ch <- prometheus.MustNewConstMetric(p.descs[i], t, m.value(s))
	}
}
