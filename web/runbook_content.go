package web

import "github.com/pgconsole/console/diagnostics"

// The runbook's content: the twelve steps of the evidence chain, from the
// first look at the time window to verifying the fix, and the targeted
// runbooks for the failures a queue on PostgreSQL runs into. Each step names
// the diagnostics panels that are its live evidence and the actions that fit
// it; the panels' SQL is shown next to their results. Slugs of pages that
// checks and findings link to are diagnostics' constants, and the panels a
// step shows come from the catalog (diagnostics.StepPanels).

// runbookStep is one step of the evidence chain.
type runbookStep struct {
	Slug    string
	Number  int
	Title   string
	Short   string // the title in a word or two, for the step navigation
	Purpose string
	LookFor []string
	Traps   []string
	Actions []string // action names that fit this step
	Safety  string   // the step's own risk: "safe", "safe for reads" or "decide"
}

// runbookTarget is a targeted runbook: one known failure, its symptoms,
// diagnosis and mitigations, and what not to do.
type runbookTarget struct {
	Slug      string // "rb-a"
	Title     string
	Symptoms  string
	Diagnosis []string
	Mitigate  []string
	Dont      []string
	Steps     []string // evidence-chain steps to open
	Actions   []string
}

var runbookSteps = []runbookStep{
	{
		Slug: diagnostics.StepWindow, Number: 1, Short: "Time window", Title: "Fix the time window, blast radius and SLO", Safety: "safe",
		Purpose: "Write down when it started, what is affected and how badly, before touching anything. Without a time window you cannot line up application, database, OS and broker evidence.",
		LookFor: []string{
			"The absolute start time and timezone, the release or change that preceded it.",
			"The symptom type: latency, errors, throughput drop, data-loss risk or duplicate side effects.",
			"The scope: all tenants or one, one key, one queue, one instance.",
			"Whether clients time out sooner than the database's statement_timeout: then commit outcomes become unknown.",
		},
		Traps: []string{
			"\"The database is slow\" is not a symptom: the entry point may be the application queue, the pool, locks, WAL, vacuum, storage, replication or the broker.",
		},
		Actions: nil,
	},
	{
		Slug: diagnostics.StepEntry, Number: 2, Short: "Entry and pool", Title: "Application entry, backpressure and the connection pool", Safety: "safe",
		Purpose: "Look at the entry and the pools before any SQL: if pool acquire time rises before query time, the application holds connections or has more concurrency than the pool.",
		LookFor: []string{
			"Pool acquired, idle and total connections; empty-acquire count and wait, as increments over the window.",
			"Queue depth and oldest ready age per queue: age finds starvation better than length.",
			"Idempotency conflicts and commit-unknown counts.",
		},
		Traps: []string{
			"Few total connections does not mean no queueing: check empty acquires.",
			"Cumulative acquire durations are not the current p99; take deltas.",
			"Do not just enlarge the pool: that moves the queue into the database.",
		},
		Actions: []string{"queue.throttle", "queue.pause"},
	},
	{
		Slug: diagnostics.StepActivity, Number: 3, Short: "Activity", Title: "Current activity and the oldest transactions", Safety: "safe",
		Purpose: "Find transactions that run far past the SLO, sessions idle in transaction, and many backends waiting on the same lock.",
		LookFor: []string{
			"idle in transaction sessions and their transaction age.",
			"Write transactions far older than the SLO.",
			"Many backends waiting on the same transactionid, tuple or relation lock.",
			"Many backends waiting on ClientRead/ClientWrite: the client or network is not keeping up.",
		},
		Traps: []string{
			"Active does not mean using CPU: it may be waiting.",
			"A long transaction can have an idle statement: query age alone misses it; read xact_start.",
			"A wait event is a symptom at sampling time, not the root cause.",
		},
		Actions: []string{"backend.cancel"},
	},
	{
		Slug: diagnostics.StepBlocking, Number: 4, Short: "Blocking chain", Title: "Build the blocking chain and find the root blocker", Safety: "safe",
		Purpose: "Follow pg_blocking_pids to the root. Handle the root blocker first; never terminate the leaf waiters one by one.",
		LookFor: []string{
			"The root blocker: its state, transaction age, application and query.",
			"How many backends wait behind it, and for how long.",
			"A queue worker at the root: the job it runs is shown with it.",
			"What is locked and how (the Lock column): a table, a row, a transaction, an advisory key; the mode each waiter wants and the mode its blocker holds.",
			"A lock queue: a waiter that others queue behind while it waits itself. The root finding names its head (\"20 sessions queue behind pid N's ALTER TABLE x (wants AccessExclusiveLock), which waits for pid M\").",
			"The jobs waiting in the chain, linked to their pages, and lock.engine_stalled when the engine's own claims and acks wait (a backfill that locked the jobs table): every queue its workers serve stops.",
		},
		Traps: []string{
			"An ALTER TABLE (or any DDL) waiting for ACCESS EXCLUSIVE holds nothing yet, but every later read and write of the table queues behind its request: one idle reader stalls the whole table. Cancelling the reader at the root or the DDL both clear the queue; migrations that set lock_timeout (console migrate up does) give up instead of stalling it.",
			"Act on the root, not on a waiting job: cancelling a waiter releases nothing and retries its work.",
			"pg_cancel_backend only cancels the current statement; a root that is idle in transaction has none, so cancel does nothing there.",
			"Cancelling the root often promotes the next transaction in the chain to root: look again after acting.",
			"pg_terminate_backend rolls back the whole transaction and can cause retry storms and commit-unknowns (high risk).",
		},
		Actions: []string{"backend.cancel", "backend.terminate"},
	},
	{
		Slug: diagnostics.StepResources, Number: 5, Short: "CPU, I/O, WAL", Title: "Separate CPU, I/O and WAL", Safety: "safe",
		Purpose: "Cumulative statistics only mean something as deltas: compare two samples to see WAL bytes per second, I/O by context and checkpoint pressure now, not since boot.",
		LookFor: []string{
			"WAL bytes per second and full-page images against the usual rate.",
			"bulkwrite writes and waits high: COPY or bulk load at its ceiling.",
			"Requested checkpoints outnumbering timed ones; high fsync time with low CPU points at storage.",
		},
		Traps: []string{
			"Lots of WAL does not mean a slow disk: batch size and index amplification produce it.",
			"pg_stat_io time columns depend on track_io_timing; some context combinations are NULL.",
			"Check stats_reset before trusting a delta.",
		},
		Actions: []string{"queue.throttle"},
	},
	{
		Slug: diagnostics.StepCopy, Number: 6, Short: "Batches", Title: "COPY, long batches and transaction boundaries", Safety: "safe",
		Purpose: "Big transactions look fast to execute and slow to commit; they stretch lock holding, replication catch-up and crash recovery.",
		LookFor: []string{
			"Running COPY commands and their progress.",
			"The oldest transactions together with WAL growth.",
		},
		Traps: []string{
			"A failed COPY leaves dead tuples whose space does not come back at once: schedule a normal VACUUM later; never VACUUM FULL during an incident.",
		},
		Actions: []string{"queue.throttle", "queue.pause"},
	},
	{
		Slug: diagnostics.StepQueues, Number: 7, Short: "Queues", Title: "Queues, leases and dead letters", Safety: "safe",
		Purpose: "Tell a stuck claim path from crashed workers from poison messages: ready growth with idle workers, expired leases, or a dead-letter spike.",
		LookFor: []string{
			"Ready growing while workers are idle: the claim path, the pool, a rate limit or a downstream dependency.",
			"Expired running leases: workers crashed, the lease is too short or not renewed.",
			"One tenant's jobs waiting long: ORDER BY with SKIP LOCKED can be unfair.",
			"Dead letters by error class.",
		},
		Traps: []string{
			"More attempts does not mean more side effects: correlate with the job id.",
			"Looking only at the lease owner accepts stale acks: the generation fences them.",
			"Classify a dead-letter spike before replaying it; never replay poison messages in bulk.",
		},
		Actions: []string{"deadletters.requeue", "lease.expire", "queue.pause", "queue.resume", "queue.throttle"},
	},
	{
		Slug: diagnostics.StepOutbox, Number: 8, Short: "Outbox", Title: "Outbox, relay and the broker boundary", Safety: "safe",
		Purpose: "Separate the four timestamps: business commit, relay claim, broker accept, mark published. They tell apart \"not produced\", \"not claimed\", \"broker slow\" and \"published but mark failed\" (duplicates possible).",
		LookFor: []string{
			"Pending count and oldest pending age.",
			"Events accepted by the broker but not marked published.",
			"Dead events and their last error.",
		},
		Traps: []string{
			"Pausing the relay only grows the backlog; if the relay overloads the database, lower its batch and rate first.",
			"Never delete outbox rows (extremely high risk).",
		},
		Actions: []string{"relay.throttle", "relay.pause", "relay.resume", "outbox.requeue"},
	},
	{
		Slug: diagnostics.StepReplication, Number: 9, Short: "Replication", Title: "Replication, archiving and WAL headroom", Safety: "safe",
		Purpose: "A slow synchronous standby shows up directly as commit latency; an inactive slot keeps WAL until the disk fills. Report the RPO exposure.",
		LookFor: []string{
			"Per standby: sent, write, flush and replay lag in bytes and time.",
			"Slots: retained WAL, wal_status, safe_wal_size and the time left at the current WAL rate.",
			"Archiver failures and the last failed WAL file.",
		},
		Traps: []string{
			"Byte lag is not time lag; cascaded standbys do not show in the primary's view.",
			"A NULL replay_lag is not zero lag: it may not update when idle.",
			"Dropping a slot to free space loses the consumer's position (dangerous).",
			"Adding connections speeds up WAL-disk exhaustion.",
		},
		Actions: []string{"queue.throttle", "relay.throttle"},
	},
	{
		Slug: diagnostics.StepPlans, Number: 10, Short: "Plans", Title: "Find the earliest plan mis-estimate", Safety: "safe for reads",
		Purpose: "Look for the statements whose time changed, then for the earliest node where actual rows differ from estimated rows by an order of magnitude.",
		LookFor: []string{
			"Top statements by total and mean time (pg_stat_statements).",
			"Invalid indexes left by a failed CREATE INDEX CONCURRENTLY.",
			"Dead tuples and last vacuum of the queue tables.",
		},
		Traps: []string{
			"EXPLAIN ANALYZE on a write really writes: run it in a rolled-back transaction or on a copy.",
		},
		Actions: nil,
	},
	{
		Slug: diagnostics.StepMitigations, Number: 11, Short: "Mitigations", Title: "Safe mitigations and dangerous actions", Safety: "decide",
		Purpose: "Prefer the lowest-risk action that restores backpressure. Every action here is previewed, guarded, given a reason and audited.",
		LookFor: []string{
			"Lower entry concurrency, batch size or worker count: low risk, usually first.",
			"Pause new claims for a backfill or the relay: low to medium; the backlog grows, watch the oldest age.",
			"pg_cancel_backend on the root blocker: medium; verify the pid and the business first.",
			"pg_terminate_backend: high; whole-transaction rollback, retry storms, commit-unknowns.",
		},
		Traps: []string{
			"Enlarging the pool, turning off synchronous commit or disabling autovacuum: high risk, often turns a local fault into data risk.",
			"VACUUM FULL, plain REINDEX, restarting the primary: extremely high; never a first response. The console offers none of them.",
			"Deleting outbox or job rows or prepared transactions: extremely high; may lose business facts for good.",
		},
		Actions: []string{"queue.throttle", "queue.pause", "relay.throttle", "relay.pause", "backend.cancel", "backend.terminate"},
	},
	{
		Slug: diagnostics.StepVerification, Number: 12, Short: "Verify", Title: "Verify for two full cycles, then write it down", Safety: "safe",
		Purpose: "Recovery is when the oldest ages fall, not when counts dip. Verify for at least two business cycles, then separate trigger, amplifiers, detection gaps, mitigations and the permanent fix.",
		LookFor: []string{
			"Oldest ready and oldest pending ages falling.",
			"No expired leases, long transactions, prepared transactions or invalid indexes left.",
			"Dead letters classified; duplicates caused no duplicate side effects.",
			"WAL rate and replication lag no longer growing.",
		},
		Traps: []string{
			"\"Too much traffic\" is not a root cause: name a verifiable mechanism.",
		},
		Actions: nil,
	},
}

var runbookTargets = []runbookTarget{
	{
		Slug: diagnostics.RunbookPoolWait, Title: "Pool acquire time high, few active backends",
		Symptoms:  "Many goroutines waiting on a small pool, acquire p99 in seconds, a handful of active backends and low database CPU.",
		Diagnosis: []string{"Connections held on the application side: unclosed rows, batches or pipelines; handlers that acquire and then call out over the network.", "Sessions idle in transaction.", "Unbounded worker creation all waiting on one pool."},
		Mitigate:  []string{"Limit workers (low risk).", "Cancel the root long query (medium risk)."},
		Dont:      []string{"Raise the pool from 50 to 500: the wait moves into the database and magnifies locks and memory."},
		Steps:     []string{diagnostics.StepEntry, diagnostics.StepActivity}, Actions: []string{"queue.throttle", "backend.cancel"},
	},
	{
		Slug: diagnostics.RunbookSlotRetention, Title: "Outbox backlog while a slot fills the WAL disk",
		Symptoms:  "Oldest pending event ages for tens of minutes while a replication slot retains a large amount of WAL.",
		Diagnosis: []string{"Polling relay or CDC? A logical slot with a lagging consumer stops WAL recycling.", "Time until the WAL disk is exhausted at the current rate.", "The slot's restart_lsn and confirmed_flush_lsn against the consumer's progress."},
		Mitigate:  []string{"Rate-limit non-critical writes.", "Fix or scale the consumer; raise catch-up concurrency in a controlled way."},
		Dont:      []string{"Drop the slot to free space, unless a rebuild from a new snapshot and the event gap are accepted (dangerous)."},
		Steps:     []string{diagnostics.StepReplication, diagnostics.StepOutbox}, Actions: []string{"queue.throttle", "relay.throttle"},
	},
	{
		Slug: diagnostics.RunbookWALStorm, Title: "Backfill batches causing a WAL storm",
		Symptoms:  "WAL bytes per second many times the baseline, standby flush lag rising with commit latency, pool acquire waits growing; CPU not full.",
		Diagnosis: []string{"WAL rate delta against the baseline.", "Long batch transactions in activity.", "Standby flush lag next to commit latency."},
		Mitigate:  []string{"Stop claiming new backfill work; do not kill transactions already committing.", "Lower backfill workers and batch size."},
		Dont:      []string{"Add connections so the backfill finishes sooner."},
		Steps:     []string{diagnostics.StepResources, diagnostics.StepReplication, diagnostics.StepCopy}, Actions: []string{"queue.pause", "queue.throttle"},
	},
	{
		Slug: "rb-d", Title: "Relay published, mark failed: duplicate delivery",
		Symptoms:  "A consumer applied an event twice; the relay's attempts went from 1 to 2 after the broker had accepted the first publish.",
		Diagnosis: []string{"Events accepted by the broker but not marked published.", "Whether the consumer has an inbox and a business unique key."},
		Mitigate:  []string{"Pause the affected consumer without deleting broker messages; add the inbox and the unique key; replay-verify."},
		Dont:      []string{"Stop relay retries after a broker ack: that silently drops events whose mark is unknown."},
		Steps:     []string{diagnostics.StepOutbox}, Actions: []string{"relay.pause"},
	},
	{
		Slug: diagnostics.RunbookExpiredLeases, Title: "Expired leases and stuck running jobs",
		Symptoms: "Running jobs whose lease is in the past, or jobs that restarted because their worker was found dead.",
		Diagnosis: []string{"Workers crashed, the lease is too short, handlers do not renew, or a process paused.",
			"A worker whose heartbeat is stale and whose session left the server is dead: another worker takes its running jobs back at once, without waiting for the leases, and the finding says which worker and when (info). A paused or stalled process keeps its session and its leases; the workers page shows both pieces of evidence.",
			"Is a stuck job's backend blocked by someone? The blocking tree joins them."},
		Mitigate: []string{"Let the reaper return them in batches.", "Force one stuck job back with lease.expire: its old worker's ack is then refused."},
		Dont:     []string{"Reset large numbers of running rows by hand: a duplicate-execution storm."},
		Steps:    []string{diagnostics.StepQueues, diagnostics.StepBlocking}, Actions: []string{"lease.expire"},
	},
	{
		Slug: diagnostics.RunbookDeadLetters, Title: "Dead-letter spike",
		Symptoms:  "Dead letters rising quickly in one queue.",
		Diagnosis: []string{"Group by error class first.", "Permanent business errors belong in dead early; transient ones get backoff."},
		Mitigate:  []string{"Fix the cause, then requeue one error class with a reason, capped and audited."},
		Dont:      []string{"Replay poison messages in bulk."},
		Steps:     []string{diagnostics.StepQueues}, Actions: []string{"deadletters.requeue"},
	},
	{
		Slug: diagnostics.RunbookOutboxLag, Title: "Outbox and relay lag",
		Symptoms:  "Oldest pending event age growing.",
		Diagnosis: []string{"The four timestamps: commit, claim, broker accept, mark published."},
		Mitigate:  []string{"If the relay overloads the database, lower its batch and rate (low risk).", "Pausing the relay grows the backlog (low to medium risk)."},
		Dont:      []string{"Delete outbox rows (extremely high risk)."},
		Steps:     []string{diagnostics.StepOutbox}, Actions: []string{"relay.throttle", "relay.pause"},
	},
	{
		Slug: "rb-i", Title: "COPY failures and long batches",
		Symptoms:  "Long COPY commands, old transactions, dead tuples after failed loads.",
		Diagnosis: []string{"COPY progress and the oldest transactions."},
		Mitigate:  []string{"Schedule a normal VACUUM later.", "Long-term: COPY into staging, validate as a set, merge in one transaction."},
		Dont:      []string{"VACUUM FULL during the incident."},
		Steps:     []string{diagnostics.StepCopy, diagnostics.StepActivity}, Actions: []string{"queue.throttle"},
	},
	{
		Slug: diagnostics.RunbookReplication, Title: "Replication lag or archive failure",
		Symptoms:  "Standby replay lag growing; archiver failures.",
		Diagnosis: []string{"Per-stage lag per standby; slot retention; archiver failed count and last failed WAL."},
		Mitigate:  []string{"Lower write pressure (throttle queues and the relay); report the RPO exposure."},
		Dont:      []string{"Add connections."},
		Steps:     []string{diagnostics.StepReplication}, Actions: []string{"queue.throttle", "relay.throttle"},
	},
	{
		Slug: "rb-k", Title: "Plan regression",
		Symptoms:  "One statement's time changed after a release or a statistics change.",
		Diagnosis: []string{"Top statements; EXPLAIN with representative parameters; the earliest mis-estimate."},
		Mitigate:  []string{"Refresh statistics; fix the query or index in a planned change."},
		Dont:      []string{"EXPLAIN ANALYZE a write outside a rolled-back transaction."},
		Steps:     []string{diagnostics.StepPlans},
	},
	{
		Slug: diagnostics.RunbookPreparedXact, Title: "A dangling prepared transaction",
		Symptoms:  "An old entry in pg_prepared_xacts holding locks and the xmin horizon.",
		Diagnosis: []string{"Its age, owner and database; what holds the xmin horizon."},
		Mitigate:  []string{"Decide commit or rollback from the global transaction log and every participant, with the business owner."},
		Dont:      []string{"Roll it back just because it is old (extremely high risk); the console offers no action for it."},
		Steps:     []string{diagnostics.StepVerification},
	},
	{
		Slug: "rb-m", Title: "Commit outcome unknown",
		Symptoms:  "Clients saw a network error during COMMIT.",
		Diagnosis: []string{"The idempotency key of each such request."},
		Mitigate:  []string{"Retry or query with the same key: a committed request returns its stored result; an uncommitted one runs once."},
		Dont:      []string{"Retry with a new key."},
		Steps:     []string{diagnostics.StepEntry},
	},
	{
		Slug: "rb-n", Title: "Failover and switchover",
		Symptoms:  "The primary changed.",
		Diagnosis: []string{"Old connections still writing; leases taken on the old node; relay marks not visible on the new primary."},
		Mitigate:  []string{"Reconnect to the new primary; let leases expire; allow republishes and rely on event-id dedupe."},
		Dont:      []string{"Run two primaries: a unique constraint cannot arbitrate across them."},
		Steps:     []string{diagnostics.StepReplication, diagnostics.StepQueues, diagnostics.StepOutbox},
	},
	{
		Slug: diagnostics.RunbookNotify, Title: "LISTEN/NOTIFY problems",
		Symptoms:  "Wake-ups missed or late; the notification queue filling.",
		Diagnosis: []string{"pg_notification_queue_usage(); a listener stuck in a long transaction."},
		Mitigate:  []string{"The table is the truth: workers and the relay poll on a timer as well as on a wake-up."},
		Steps:     []string{diagnostics.StepActivity},
	},
	{
		Slug: "rb-q", Title: "Retry storms and deadlocks",
		Symptoms:  "Errors multiplying after a slowdown; deadlock errors.",
		Diagnosis: []string{"Which errors are retried; whether keys are locked in a consistent order."},
		Mitigate:  []string{"Retry whole transactions only for serialization failures and deadlocks, with capped backoff, jitter and a global budget."},
		Dont:      []string{"Retry unique violations, or retry blindly after a COMMIT error."},
		Steps:     []string{diagnostics.StepQueues, diagnostics.StepBlocking}, Actions: []string{"queue.throttle"},
	},
	{
		Slug: "rb-r", Title: "Tenant starvation",
		Symptoms: "One tenant's jobs wait long while others flow.",
		Diagnosis: []string{
			"Oldest ready age per tenant: the queue page's tenants table and the tenant_backlog panel (finding queue.tenant_starvation: a tenant waited the backlog age with none of its jobs running while others run).",
			"The tenant's limits on the queue page: a max in flight of 0 or a tiny rate stops its claims by design.",
			"Whether the workers run fair claims: the engine switches a queue to them after its first claim of a job with a tenant, or when the queue has tenant limits.",
		},
		Mitigate: []string{
			"Cap the tenant that floods the queue with tenant.throttle (max in flight, rate); fair claims then give the freed slots to the others.",
			"Set a queue default with tenant.throttle and no tenant, and raise it for the tenants that pay for more.",
			"Give every job of a shared queue a tenant: jobs without one are only claimed when they reach the head of the queue.",
		},
		Dont:  []string{"Give each tenant its own pool.", "Raise the queue's concurrency to drown the burst: the burst grows into it."},
		Steps: []string{diagnostics.StepQueues}, Actions: []string{"tenant.throttle", "queue.throttle"},
	},
	{
		Slug: "rb-s", Title: "River: backlog, stuck jobs, discards, no leader",
		Symptoms: "A River database's jobs wait, run for hours, or are discarded in bursts; scheduled and retrying jobs never come due.",
		Diagnosis: []string{
			"Leadership first (finding river.no_leader, the workers page): one started River client is elected in river_leader and runs the maintenance services. Without a leader no scheduled or retryable job becomes available, no stuck job is rescued and nothing is cleaned.",
			"Backlog (river.backlog): only available jobs are fetched, and only by clients whose Config.Queues names the queue, up to each one's MaxWorkers. Snoozed jobs (river.JobSnooze) and jobs waiting to retry are scheduled or retryable, not a backlog.",
			"Stuck running jobs (river.stuck_running): the leader's rescuer sets a job running past RescueStuckJobsAfter (1 h by default) back to retryable, or discards it when its attempts are used up. A worker that ignores its context keeps running after the rescue, so the job runs twice; the blocking tree says whether it waits on a lock.",
			"Discard bursts (river.discard_burst): the jobs of one queue, kind and error class (the last entry of errors; class panic when the attempt panicked). River discards a job after max_attempts, when its worker returns river.JobCancel, or when it panicked on its last attempt.",
			"A paused queue (river.queue_paused): river_queue.paused_at is set; clients fetch nothing from it until it is resumed.",
		},
		Mitigate: []string{
			"Start (or reach) a client that works the queue; a client with no queues inserts only and is never elected.",
			"Fix the cause of a discard burst, then retry the class: a retry makes each job available now and gives a job with no attempt left one more.",
			"Cancel a job stuck running: River cancels its context, and the worker must return for the attempt to end.",
			"Resume a paused queue once the reason for the pause is gone.",
		},
		Dont: []string{
			"Edit River's job rows with SQL by hand: River's client keeps its state machine, unique states and notifications right, SQL does not.",
			"Retry a unique kind's discarded jobs without looking: River's default unique states leave out discarded, so a new job with the same key may have been inserted since.",
		},
		Steps: []string{diagnostics.StepQueues, diagnostics.StepBlocking}, Actions: []string{"river.retry", "river.cancel", "river.queue_resume", "river.queue_pause"},
	},
}

// runbookStepBySlug and runbookTargetBySlug look content up by its URL slug.
func runbookStepBySlug(slug string) (int, bool) {
	for i, s := range runbookSteps {
		if s.Slug == slug {
			return i, true
		}
	}
	return 0, false
}

func runbookTargetBySlug(slug string) (runbookTarget, bool) {
	for _, t := range runbookTargets {
		if t.Slug == slug {
			return t, true
		}
	}
	return runbookTarget{}, false
}
