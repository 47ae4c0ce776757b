// Package migrations holds the console's numbered SQL migrations, embedded in
// the binary and applied with jackc/tern under an advisory lock, each in a
// transaction of its own: a migration that fails (a lock it waited too long
// for, a deadlock, an error) leaves the schema at the version before it.
//
// A binary runs against a range of schema versions (Compatible, Binary):
// from MinSchema to the newest migration it carries, and beyond that while
// every newer migration is an expand (Compat). docs/upgrading.md says how
// to upgrade a running fleet with that.
//
// A released migration is never edited in what it makes of the schema:
// change the schema with a new file. Its lock statements may change (a
// LOCK TABLE taken first, so it takes its locks in the engine's order):
// that changes how it waits, not what it leaves.
//
// Locks: a migration that changes a hot table and what its triggers write
// takes them in the engine's order, the table before its counters (jobs,
// then dead_letter_counts, queue_job_counts, job_kind_runs), and the table
// in the strongest mode it needs at once rather than raising it later.
package migrations
