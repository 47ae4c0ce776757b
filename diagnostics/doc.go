// Package diagnostics is the console's read-only evidence: the catalog of
// checks an operator runs during an incident (one embedded .sql file and
// one Go function per query), the runner that reads them safely, the
// blocking tree, and the evidence of a findings round (Round).
//
// The catalog (Catalog, CheckNamed) has one entry per check: its name,
// title, runbook step, the tables it reads, its files per server version,
// what an empty result means, its panel's columns, and where its rows land
// in a findings round, a sample and the flight recorder's document. Panel,
// Round, TakeSample and the console's pages all walk it.
//
// The rooms below read this package and are never read by it:
// diagnostics/findings turns a Round into findings (the rules, their
// thresholds by code, the report), diagnostics/sampler keeps a ring of
// samples for rates and sparklines, diagnostics/recorder keeps samples in
// history_samples and reads them back, and diagnostics/collector exposes a
// round as Prometheus metrics. Thresholds live here because checks read
// them as parameters (the worker heartbeat, the dead-letter window), and
// so do the runbook steps a check names (StepBlocking).
//
// Every query has two forms. The package-level function (BlockingTree,
// ReplicationSlots, ...) takes a DBTX and runs the statement as is, on a
// pool, a transaction or a test transaction. The method of the same name on
// Diagnostics runs it the way the console must during an incident: on a
// small pool of its own (application_name console-diagnostics), inside a
// READ ONLY transaction with SET LOCAL statement_timeout and lock_timeout,
// and returns a Result that says "timed out" or "locked by pid N" instead of
// hanging the page. Queries whose catalog differs between PostgreSQL 14 and
// 18 have one file per variant (wal_stats.sql, wal_stats_v18.sql) chosen by
// server_version_num; SQL returns the exact text a panel ran.
//
// Round runs one consistent round (one REPEATABLE READ, READ ONLY
// transaction, one savepoint per check) within a time budget. A check that
// fails or times out is listed in Round.Unavailable, which the findings
// package turns into a diagnostics.unavailable finding naming the check,
// never a silent gap.
//
// Queue and outbox counts never scan finished history or the backlog: each
// queue's ready and running totals are summed from the engine's counters
// (queue_job_counts, kept exact by triggers on jobs), its priorities are
// found with loose scans of the partial indexes and its oldest ready job is
// one probe per priority, the jobs scheduled for later stop at a cap
// (QueueParams.CountCap), and dead letters are read through the queues
// package from its per-class counters, so a round's cost follows the queues
// and the classes, not the history, the backlog or the dead-letter pile.
//
// Pages that many engineers keep open share one round: LatestRound serves
// the round of the last few seconds (Config.RoundMaxAge) to the overview,
// the findings API and the Prometheus collector alike, and runs at most one
// round at a time; Cache is that mechanism, reusable for other reads every
// page makes. ServerInfo is cached the same way for Config.ServerInfoMaxAge,
// so the role follows a failover.
//
// Some evidence is only measurable between rounds, so the Diagnostics
// keeps a little state from one round to the next (rounds are dated with
// Config.NowFunc): the WAL position for the WAL rate, the checkpointer's
// and each standby's conflict counters, when each slot or standby was
// first seen holding its xmin (they carry no time of their own, so that
// first sight dates them), and each slot's retained WAL, whose growth
// forecasts when pg_wal reaches its budget for slots that
// max_slot_wal_keep_size does not cap.
//
// The outbox relay records the broker's acceptance of an event
// (accepted_at) before it marks it published. An undelivered event with
// accepted_at set is the relay's crash window made visible: the broker has
// it, the mark failed or its relay died, and it will be published again.
// OutboxHealth counts those events through their own partial index and the
// outbox backlog finding names them.
//
// A sampler (diagnostics/sampler) reads a Sample with TakeSample at each
// interval and lends its fresh WAL rate to rounds (UseWALRate). A check
// the flight recorder keeps names the document key in Check.History, and
// Check.RecordedRows shows a recorded value as the check's panel.
//
// The package imports only the standard library, pgx, the shared internal
// packages and, for the tenant backlog and dead letters, the queues
// package's readers of its own counters.
package diagnostics
