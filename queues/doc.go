// Package queues is the job queue and transactional-outbox engine the console
// embeds, usable as a library by any Go service on PostgreSQL.
//
// Jobs are claimed in batches with FOR UPDATE SKIP LOCKED under a lease fenced
// by (lease_owner, lease_generation): every transition out of running names
// the generation it was claimed with, so a worker whose lease expired and was
// taken over cannot ack, fail or renew the newer attempt.
//
// # Job engine
//
// Enqueue with EnqueueTx (in the caller's transaction), EnqueueManyTx (one
// statement per batch) or EnqueueCopy (COPY, for backfills). Each statement
// sends one NOTIFY per queue on NotifyChannel; it is only a wake-up hint, and
// workers poll every ClientConfig.PollInterval anyway.
//
// A Client works queues: per queue, one fetcher claims only as many jobs as
// the queue has free slots (QueueConfig.Concurrency, resizable with
// SetConcurrency), growing its claim size while claims come back full and
// fast and halving it when they are slow or fail; claim errors back off
// exponentially. While a queue has a backlog up to ClaimConcurrency claims
// run side by side: the next starts as soon as the handlers free a batch's
// worth of slots (half the queue's, at most MaxClaim), not when the claim
// in flight returns. Each resumes after the last job claimed (and from the
// head of the queue again after a short claim, unless the head has grown
// costly to walk, or after ClaimRescan, one such rescan at a time, spaced by
// its cost). A claim's
// jobs are run in claim order by one runner goroutine per GOMAXPROCS, each
// running job after job, which spares a goroutine's start per job. A job
// that has waited 5ms for a runner (its claim's handlers block) gets a
// goroutine of its own, as do the jobs of the queue's claims in the next
// second and a claim of one job. A handler that succeeded hands its ack to
// the ack pipeline, which folds the acks that arrive while a statement
// runs into the next one (up to AckConcurrency statements in flight). One
// heartbeat statement renews every running job's lease each third of
// LeaseDuration and cancels the handlers of jobs whose lease was lost; a
// lease watch cancels them at the lease's local deadline when no renewal
// gets through (see "The lease when the database cannot be reached").
// Every process runs the reaper (bounded batches) every tenth of
// LeaseDuration, between one poll interval and 5s, and at least 20 times
// as long as its last run took; its scans start where its last complete
// one began, less a LeaseDuration, with a scan from the start every ten
// runs or more.
//
// A busy Client allocates about 800 bytes per job (the claim's decoded
// jobs, their contexts, the ack batches), all garbage within milliseconds,
// against a live heap of a few megabytes: at Go's default GOGC of 100 the
// collector runs every few megabytes and takes about a fifth of the
// engine's CPU. The console binary runs at GOGC=400, which cut its CPU per
// job by almost a fifth; an application embedding a Client with a small heap of
// its own gains the same from a higher GOGC (with GOMEMLIMIT as the bound).
//
// A dead worker's jobs do not wait for their leases. Each worker records the
// backend of its long-lived LISTEN session in its workers row; once per
// poll interval every process looks for workers whose heartbeat is stale
// (three of their heartbeat intervals, at least 2s) and whose recorded
// session is gone from pg_stat_activity, looks again 250ms later (a
// shutting-down server ends its sessions one by one, so one look can see a
// live worker's session gone before its own), marks those that still look
// dead on a server that has not restarted in between stopped and reclaimed
// (workers.reclaimed_at) and returns their running jobs to ready at once,
// fenced like the reaper (error class "worker_died"). A heartbeat the dead
// worker sent before it died and the server ran late leaves its row
// stopped; a worker taken for dead that was alive after all comes back
// with its first heartbeat after its LISTEN session reconnects (only a live
// process records a new session). A slow or paused
// process keeps its session, so its leases run their course; a session
// recorded before a server restart proves nothing and is ignored until the
// worker records its new one. Without LISTEN (DisableListen) no session is
// recorded and leases expire as before.
//
// Each statement of EnqueueTx notifies a queue at most once per
// NotifyInterval from one process (a notifying commit takes a cluster-wide
// lock); a worker whose claim found jobs claims again every BusyRepoll for
// a NotifyInterval, which finds the jobs enqueued without a notification.
//
// After a claim error or a LISTEN reconnect a worker releases the jobs the
// database says it holds but it is not running (a claim that committed
// while its reply was lost); an ack whose retry matches nothing is checked
// against the generation it held, so a commit whose reply was lost counts
// as done. Workers report their last engine errors, with SQLSTATE, in
// workers.recent_errors (Worker.RecentErrors).
//
// Failures are retried with capped exponential backoff and full jitter
// (Backoff) until max_attempts, then dead-lettered; Permanent errors go dead
// at once; a panic is a failed attempt of class "panic"; a queue Timeout
// cancels the handler's context and fails the attempt with class "timeout".
// Every failed attempt is appended to the job's bounded errors history and
// sets error_class, a fingerprint (ErrorClass) that groups dead letters.
//
// # The lease when the database cannot be reached
//
// The heartbeat cannot tell a handler its lease is lost when the database
// does not answer (a silent partition: the worker's packets dropped, no
// reset), and the reaper gives the job to another worker as soon as the
// lease ends in the database. So each running job also has a local lease
// deadline on the worker's monotonic clock: when the last claim or renewal
// that held it was sent, plus LeaseDuration, less a tenth of it
// (LeaseDeadline). The database sets lease_until from its own clock when
// it runs the statement, never before the worker sent it, so counting from
// the send covers the statement's time in flight; the tenth covers clock
// rates, the watch's own lateness and the handler's time to return. When
// the deadline passes, the handler's context is cancelled with cause
// ErrLeaseDeadline (errors.Is it ErrLeaseLost too), counted in
// queues_lease_lost_total{reason="local_deadline"}; a handler that still
// returns nil has its ack written, fenced, and one that returns an error
// is left to the reaper. The heartbeat's own finding, a renewal the
// database refused, counts as reason="renew_refused", and a handler that
// returns nil after it is treated as one whose ack was refused (its ack,
// fenced, is refused: ack_failed), whichever saw the loss first.
//
// # A job may run twice: completing it in the handler's transaction
//
// A job runs again after a lost lease, and after a handler that succeeded
// but whose ack was not written: the ack failed, timed out, or was refused
// because the lease was lost meanwhile. Such an attempt is counted as
// ack_failed in queues_jobs_finished_total (lease_lost says a handler's
// result was discarded). Its effects must therefore be idempotent, in one
// of three ways:
//
//   - Transactional completion: the handler writes its effects and calls
//     JobCompleteTx in one transaction, which marks the job done fenced by
//     its owner, generation and lease; the effects and the completion
//     commit together or not at all, and the engine acks nothing after.
//     It fits effects in the same database.
//   - An inbox entry or an idempotency key (InboxProcessTx,
//     IdempotencyBeginTx and IdempotencyCompleteTx) keyed by the job's id
//     or the request's own key, so that a second run finds the first
//     one's mark and does nothing.
//   - An external system's own idempotency key (the job id in a payment
//     request, say) for effects outside the database.
//
// JobCompleteTx locks the job's row until the transaction ends, and the
// heartbeat's renewal waits for that lock, so it is the last statement
// before COMMIT. It also sets idle_in_transaction_session_timeout to the
// lease's remaining time: a worker cut off between it and its COMMIT
// leaves the row locked only until the server ends the session, and the
// reaper then gives the job, with none of the transaction's writes, to
// another worker.
//
// # Dead letters at scale
//
// The console is opened during a dead-letter storm, so its dead-letter views
// must not cost one index entry per dead job. The table dead_letter_counts
// holds one row per (queue, error class) with its exact count, its first and
// last death and its newest dead job with that job's error as a sample, kept
// by triggers on jobs in the same transaction as the change (a job dying,
// being requeued, retried, cancelled, re-classed, archived or deleted;
// TRUNCATE empties it). A death moves the first, last and sample by
// comparison; a job leaving a class that keeps dead jobs makes the trigger
// read the class's first and last death and its sample again in three index
// probes (jobs_dead_idx, jobs_dead_finished_idx), after it has locked the
// class's row. DeadLetterGroups,
// DeadLetterTotals, DeadLetterClassStats, DeadLetterQueueCounts and
// QueueHealth read all of it there and no dead job (the recent deaths of
// every group are one range scan of the window over
// jobs_dead_finished_idx), so their cost follows the number of groups and
// of recent deaths, not of dead jobs nor the depth of the jobs indexes.
//
// Two other designs were measured first, on 10 million jobs with a million
// dead in 1,000 classes: grouping the dead jobs (the old DeadLetterGroups)
// took over five seconds; a loose index scan over (queue, error_class) with
// per-class counts capped at 10,000 (the old DeadLetterClassStats) took
// 0.6-0.8 s, because a cap that keeps counts useful still reads almost every
// entry when a storm spreads over many classes, and a cap low enough to be
// cheap ranks nothing. The counters give exact ranks at any size. Their cost
// is on the dying side only: the triggers' WHEN clauses skip claims, acks
// and renewals without a function call; a transaction that kills or requeues
// jobs of a class holds that class's counter row until it commits, so deaths
// within one class commit one at a time, and two bulk statements moving the
// same classes in opposite orders can deadlock (PostgreSQL fails one; the
// reaper retries on its next tick, an operator's requeue can be run again).
// The whole-class requeue preview (DeadLetterCount and friends) stays an
// exact count over jobs_dead_idx, bounded by the size of the class: it is
// what the operator signs.
//
// # Queue counts at scale
//
// QueueHealth (the /queues pages, the queue health check, the per-queue
// gauges, the flight recorder) must not cost one index entry per ready job either: a backlog of
// 200,000 took 0.2-0.3 s to count on a loaded machine. Three designs were
// weighed. Counting up to a cap keeps the cost at the cap times the
// queues (a million entries at 10,000 a queue over 100 queues) and turns
// the figure operators compare into "10,000+"; the sampler's latest
// snapshot is cheap to read but up to its interval old, and is only as
// fast as the count it runs. The counters were chosen: queue_job_counts
// holds each queue's ready and running counts, exact and in the same
// transaction as the jobs' change, written by statement triggers with
// transition tables (one call per INSERT, UPDATE or DELETE on jobs,
// aggregating the rows it changed; a lease renewal writes nothing). A
// single row per queue would be a hot row that every claim and ack holds
// until commit, so claims of a queue would commit one at a time; the table
// is instead append-only for writers (one row per statement and queue, its
// net change), summed by readers, and folded into one row per queue by
// about one statement in 64 under a non-blocking advisory lock (the fold
// deletes the rows it sees and inserts their sums in one statement, so a
// reader sees before or after it, and a fold that loses the lock just
// skips). The oldest due job stays one index probe per queue and priority;
// only the jobs scheduled for later are counted from jobs, up to
// QueueHealthParams.CountCap, and QueueStat.ReadyExact says when Ready (due
// now) is an upper bound. The write cost, measured with `console bench floor` and `burn`
// against the previous schema, is in docs/benchmarks-log.md. The fold runs only
// under READ COMMITTED: inside a caller's REPEATABLE READ transaction (an
// EnqueueTx) its snapshot may predate another fold's commit, and deleting
// the rows that fold deleted would fail the caller with 40001.
//
// # Run times per kind
//
// Nothing in jobs is indexed for done jobs by kind: an index there would
// cost every ack an entry. Instead a statement trigger on UPDATE records,
// from the same transition table, the run times of the jobs a statement
// finishes, a row per kind in job_kind_runs with up to 200 of them, and
// about one statement in 64 prunes the kinds it touched to their newest
// 200 (under READ COMMITTED only, for the same reason). The long-running-jobs
// check reads a kind's usual run time from there in one index descent.
//
// # Fleet-wide settings
//
// queue_settings is re-read by every process once per poll interval, and the
// claim statement itself reads paused and max_workers, so both take effect on
// the next claim anywhere. max_workers is enforced at claim time against the
// number of jobs running in the queue across the fleet (not divided among
// processes): when it is set, claims of that queue first take a transaction
// advisory lock (sql/job_claim_lock.sql) so concurrent claimers count one at a time.
// A claim without the lock (its process has not yet re-read the settings)
// takes nothing from a queue with max_workers, so the limit holds from the
// moment it is set, not one poll interval later.
// Lowering it never cancels running jobs; claims simply stop until the
// running count drops below the limit. rate_per_second is divided equally
// among the live processes serving the queue (workers rows seen recently),
// each running a token bucket.
//
// # Tenant fairness
//
// FOR UPDATE SKIP LOCKED with an ORDER BY favours throughput, not fairness:
// one tenant's burst of 100,000 jobs at the head of a queue is claimed
// before anything enqueued after it. A queue whose jobs carry a tenant
// (EnqueueParams.TenantID) is therefore claimed by a layered claim
// (sql/job_claim_fair.sql): a skip scan of jobs_ready_tenant_idx lists the
// tenants with ready work (up to one claim's size of them, resuming after
// the tenant the last claim served, so claims go round when there are more
// tenants than slots); each tenant's allowance is computed from its
// tenant_limits (max in flight against its running jobs, a rate as a token
// bucket in tenant_rate_tokens); the claim is split evenly between the
// tenants that may take any, and the slots a small tenant cannot fill go to
// the others. Every tenant with work thus gets an equal part of every claim
// whatever its backlog, and the claim stays work-conserving.
//
// Why layered rather than the alternatives: per-tenant virtual time (each
// job stamped with its tenant's next finish time at enqueue) makes the
// claim as cheap as the plain one, but needs per-tenant state updated in
// every enqueue transaction (a hot row per tenant, serialising a tenant's
// enqueuers) and cannot skip a tenant at its max in flight without walking
// its whole backlog. Token buckets alone limit a tenant but do not share
// what is left fairly. The layered claim reads a few index entries per
// tenant, keeps enqueue untouched, and enforces limits where the jobs are
// picked.
//
// Queues without tenants pay nothing: the tenant indexes are partial (only
// rows with a tenant enter them), and a fetcher runs the plain claim until
// it claims a job that has a tenant or the queue gets tenant limits; it
// returns to the plain claim after a fair claim that took no job with a
// tenant (and no limits are set). Jobs without a tenant in a queue shared
// by tenants are only seen within the queue's first claim-size of jobs in
// claim order: give every job of such a queue a tenant. The fair claim
// runs its cached generic plan (sql/job_claim_generic.sql): planning it per
// call cost more than running it. Tenant limits are fleet-wide: when a
// queue has any, its claims take the queue's claim lock like max_workers,
// so running counts and rate buckets are read and spent one claim at a
// time. tenant_limits' row with tenant "" is the queue's default, a
// tenant's own row overrides it field by field; operators set both with
// the console's tenant.throttle action.
//
// # The engine's pool is READ COMMITTED
//
// Claims, acks, the relay and the scheduler run single statements and short
// transactions that name no isolation level, and they are written for READ
// COMMITTED: a SKIP LOCKED claim or a fenced ack re-checks a row another
// session just changed, where REPEATABLE READ and SERIALIZABLE fail with
// serialization errors under any concurrency. A database or role whose
// default_transaction_isolation is stricter suits many applications, so
// PoolConfig pins the engine's connections to READ COMMITTED, and
// Client.Start, Relay.Start and Scheduler.Start refuse a pool whose
// transactions default to anything else (RequireReadCommitted), with what
// to change. The caller's own transactions (EnqueueTx, EnqueueEventTx)
// keep whatever level the caller chose.
//
// The sessions the engine keeps open and mostly idle beside the pool (each
// Client's and Relay's LISTEN session, the Scheduler leader's) set
// idle_session_timeout to 0 whatever the pool's setting: a server that ends
// idle sessions would otherwise take the notifications or the leadership
// with them every time. PoolConfig sets it for the pool too. The setting
// exists from PostgreSQL 14, the oldest version the engine and the
// console support.
//
// # Identifying a job's backend
//
// Engine connections are named "console-worker" (PoolConfig sets
// application_name; the LISTEN connection too). A handler that needs the
// database calls JobConn(ctx): the session it gets is renamed
// "console-worker job=<id>" for as long as the job runs, then reset. The
// console joins a stuck job to its backend (and to what blocks it) with
//
//	SELECT pid, state, wait_event_type, pg_blocking_pids(pid)
//	FROM pg_stat_activity
//	WHERE application_name = 'console-worker job=' || $1
//
// When the server refuses JobConn a connection (every slot taken by other
// clients, a restart), JobConn returns an error wrapping ErrNoConnection; a
// handler that returns it (wrapped or not) has its job handed back due a
// second later with its attempt taken back, counted as no_connection in
// queues_jobs_finished_total. Waiting for a connection is the engine's
// problem and never spends a job's retries.
//
// # Behind a transaction pooler
//
// A pool that reaches PostgreSQL through a pooler in transaction mode
// (PgBouncer pool_mode=transaction) is built with ForTransactionPooler,
// and ClientConfig.TransactionPooler and SchedulerConfig.TransactionPooler
// say so. No session outlives a transaction there, so what needs one
// changes: JobConn's connection is a transaction, committed when the
// handler returns nil, whose tag is SET LOCAL; LISTEN, and with it the
// worker's recorded session, takes SessionConnConfig, a direct connection
// (without one, wake-ups poll and a dead worker's jobs wait for their
// leases); the scheduler keeps a leader on SessionConnConfig, or without
// one elects it per tick with a transaction-level lock. Settings the pool
// cannot send at connect (default_transaction_isolation) belong to the
// role: RequireReadCommitted still checks them.
//
// # Outbox
//
// EnqueueEventTx writes an event in the caller's transaction; a Relay
// publishes committed events through a Publisher: queues/natspub for NATS
// JetStream, queues/webhookpub for an HTTP webhook, or any PublisherFunc.
// The engine itself imports no broker client.
//
// A relay owns the events it claims for a lease. It starts a publish only
// while the lease left covers the publish's timeout, renews the lease
// (fenced by owner and generation) when a batch outlasts it, and leaves
// what it cannot start for the next claim, so no other relay delivers an
// event this one may still be delivering. Every publish started is one of
// the event's attempts (outbox_events.attempts, the outbox page's delivery
// attempts, queues_relay_publish_attempts_total), answered or not;
// publish_count counts only the broker's acceptances.
//
// # One definition of each engine fact
//
// The package owns every statement on its tables, also the reads of a
// console: QueueHealth, OutboxHealth, WorkerList, LongRunningJobs and
// IdempotencyStuck return the rows the console's pages, findings, metrics
// and flight recorder all use, and the operator actions lock through
// QueueSettingsLockTx, RelaySettingsLockTx, ScheduleLockTx and
// TenantLimitsLockTx. Each notion is decided once: a worker is Alive when
// it is not stopped and heartbeated within the window its caller passes
// (its session is evidence shown beside it, not part of it); the outbox
// backlog's age is that of the oldest undelivered event, in flight or in
// retry backoff included; the counts taken from the rows themselves stop
// at a cap (DefaultCountCap) that the row carries, so "at least" is never
// lost. The rows' JSON names are stable: a sample recorded months ago
// decodes into today's type.
//
// # Shutdown
//
// Client.Stop stops claiming, lets running jobs finish until its context is
// done, then cancels the rest and releases them back to ready (jobs claimed
// but not yet started are released with their attempt taken back), marks
// the workers row stopped, and returns; when the deadline interrupted jobs
// it logs their ids in one line and returns a *DrainError. The caller closes the pool last.
package queues
