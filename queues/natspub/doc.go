// Package natspub is the outbox relay's NATS JetStream publisher: a
// queues.Publisher that sends each event with its event id as the
// Nats-Msg-Id header, so JetStream drops a republish inside the stream's
// duplicate window. It lives apart from queues so that a service embedding
// the engine imports the NATS client only when it publishes to NATS.
package natspub
