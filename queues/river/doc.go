// Package river reads a River database (github.com/riverqueue/river) for
// the console: it owns every statement the console runs on River's tables
// (river_job, river_queue, river_leader, river_migration) and implements
// queues.Source on them, so the pages, the findings and the actions show
// River's queues, jobs and leader in River's own states.
//
// The statements only read, through River's own indexes (the primary key
// for a page of jobs, river_job_prioritized_fetching_index by state and
// queue, river_job_state_and_finalized_at_index for finalized jobs,
// river_job_args_index for an arguments filter). Nothing here writes
// River's tables: a change (retry, cancel, pause) goes through River's
// client, so its state machine, notifications and leadership stay right.
//
// Detect says whether a database holds River's schema and at which
// migration version.
package river
