// Package episodes records lock waits too short for the flight recorder.
//
// The flight recorder (recorder.Recorder) keeps a sample every 10
// seconds; a lock wait of two seconds between two samples leaves no trace
// there. A Recorder here looks for lock waits every second, which while
// nothing waits is one statement on pg_stat_activity (episode_probe.sql:
// every heavyweight lock wait shows wait_event_type 'Lock'), or on pg_locks
// for a role that cannot read other roles' wait events
// (episode_probe_locks.sql).
// When something waits it reads who waits on whom (episode_waits.sql:
// pg_blocking_pids for the waiters only) and folds the look into
// episodes: a root blocker and everyone waiting behind it. The same waiter
// (pid and backend start) in the same wait (pg_locks.waitstart) behind the
// same root, seen in consecutive looks, is one episode; a new wait of the
// same session is a new one. An episode starts at its first waiter's
// waitstart and ends at the first look that found none of its waiters
// waiting: exact to one interval.
//
// Each episode is a row of lock_episodes (root, lock, tables,
// applications, job kinds and queues held up, peak sessions waiting, jobs
// and job claims delayed, the seconds waited in all) and one row per
// session in lock_episode_participants (pid, backend start, role,
// application, statement and its Fingerprint, lock, what a root held, the
// job, kind and queue of a worker's session). It is written when first
// seen and closed when it ends, so a console that stops mid-episode leaves
// it open; the next recorder closes it with EndSeen false.
//
// One console records per database: the one whose session holds a session
// advisory lock; the others retry every few intervals and take over when
// that session ends. The recorder's session reaches PostgreSQL directly
// (not a pooler in transaction mode, where a session lock would outlive
// the client's use of it). On a standby nothing is recorded, and Status
// says so.
//
// List, RepeatBlockers, Prune and Stats read and prune what was recorded;
// they run on any DBTX.
package episodes
