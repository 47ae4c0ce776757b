// Package audit is the console's tamper-evident record of what operators did
// and of the incidents they did it in.
//
// Every operator change (see package actions) writes one Event in the same
// transaction as the change itself, and every refused or failed attempt
// writes one in a transaction of its own. The audit_events table is
// append-only (a trigger refuses UPDATE, DELETE and TRUNCATE) and
// hash-chained: a BEFORE INSERT trigger serialises writers on a one-row chain
// head, numbers the event (seq) and stores
//
//	hash = sha256(prev_hash || canonical JSON of the event)
//
// so Verify can show that no row was edited, inserted or removed behind the
// console's back, even by a superuser who disabled the triggers.
//
// Incidents group the evidence captured from runbook steps and the actions
// taken while they were open; IncidentMarkdown renders both as one timeline
// for the post-mortem.
//
// The package imports only the standard library and pgx; it never imports
// the web layer or the engine.
package audit
