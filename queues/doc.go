// Package queues is the job queue and transactional-outbox engine the console
// embeds, usable as a library by any Go service on PostgreSQL.
//
// Jobs are claimed in batches with FOR UPDATE SKIP LOCKED under a lease fenced
// by (lease_owner, lease_generation): every transition out of running names
// the generation it was claimed with, so a worker whose lease expired and was
// taken over cannot ack, fail or renew the newer attempt.
package queues
