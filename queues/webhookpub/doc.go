// Package webhookpub is the outbox relay's HTTP webhook publisher: a
// queues.Publisher that POSTs each event's payload with the event id in the
// Idempotency-Key header, so the receiver can drop a republish.
package webhookpub
