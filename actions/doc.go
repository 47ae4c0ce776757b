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
// Every preview says in one sentence, with its key numbers, what the action
// will do (Outcome.Summary), and every result what it did
// (Outcome.ResultSummary). Outcome.Version names the state a preview saw
// (the count, the paused flag, the backend's fingerprint; not what moves on
// its own): an execution that gives it back in Request.ExpectVersion runs
// only while the state is still that one, and is otherwise refused with
// ErrStale, carrying the new preview. The console's Execute always does.
//
// Every run writes one log line (message "action") with the action, actor,
// outcome (succeeded, failed, refused, dry_run, as in the metrics), the audit
// event's id, the target and, where the action has them, job_id and queue.
//
// Roles are enforced here, not only in the UI: viewer < operator < admin, in
// the one role model of internal/auth that the web layer shows with. Each
// action's Spec (see Registry) says the role it needs, its risk level in the
// words of the production runbook's mitigation table, and its parameters, so
// the web layer can build forms and the API can document itself.
//
// An action is a typed value listed in the registry: a params struct whose
// fields method binds each field to its parameter (name, type, description;
// the schema, the form and the decoder all come from it), a build function
// that checks the decoded values and returns a plan, and the plan's typed
// preview and result (a closed set of types behind Preview and Result, so a
// caller can switch on them). CONTRIBUTING.md walks through adding one.
//
// Errors the caller should map to an HTTP status are the exported sentinels:
// ErrForbidden (403), ErrReasonRequired and ErrInvalid (422), ErrGuard (409:
// the target changed since the preview; ErrStale is one) and ErrNotFound
// (404).
//
// The package imports queues, diagnostics, audit and internal/auth (for the
// roles), never the web layer.
package actions
