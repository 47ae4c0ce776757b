// Package actions holds every change an operator can make through the
// console, and the Runner that makes them safely.
//
// An action is run in four steps: validate the parameters, preview what
// would change (counts, sample rows, the target backend's fingerprint, the
// next cron runs), re-check the preview's guards and execute in one
// transaction, and record the audit event in that same transaction, so a
// change without its audit row (or the reverse) cannot commit. An attempt the
// Runner refuses (role, missing reason, bad parameters, a guard) or that
// fails is audited in a transaction of its own. A dry run stops after the
// preview and records nothing. Runner.RunTx does the same in a caller's
// transaction, so the change can commit with the caller's own writes (the
// HTTP API stores an idempotent request's answer with it).
//
// Every run writes one log line (message "action") with the action, actor,
// outcome (succeeded, failed, refused, dry_run, as in the metrics), the audit
// event's id, the target and, where the action has them, job_id and queue.
//
// Roles are enforced here, not only in the UI: viewer < operator < admin.
// Each action's Spec (see Registry) says the role it needs, its risk level in
// the words of the seed's mitigation table, and its parameters, so the web
// layer can build forms and the API can document itself.
//
// Errors the caller should map to an HTTP status are the exported sentinels:
// ErrForbidden (403), ErrReasonRequired and ErrInvalid (422), ErrGuard (409:
// the target changed since the preview) and ErrNotFound (404).
//
// The package imports queues, diagnostics and audit, never the web layer.
package actions
