package actions

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrForbidden reports that the actor's role may not run the action (403).
var ErrForbidden = errors.New("forbidden")

// ErrReasonRequired reports an action attempted without a reason (422).
var ErrReasonRequired = errors.New("a reason is required")

// ErrInvalid reports a parameter the action refuses, or a request over a
// safety cap; the wrapped message says which and what to do (422).
var ErrInvalid = errors.New("invalid parameters")

// ErrGuard reports that a guard refused at execution time: the target changed
// since the preview (a backend's fingerprint, a job's state), so the action
// was not applied (409).
var ErrGuard = errors.New("target changed")

// ErrStale reports an execution refused because the state it would act on
// is no longer the one the operator previewed (Request.ExpectVersion); the
// refusal's Outcome holds the new preview to confirm instead. It wraps
// ErrGuard (409).
var ErrStale = fmt.Errorf("%w: the preview is stale", ErrGuard)

// ErrNotFound reports an unknown action or a target that does not exist
// (404).
var ErrNotFound = errors.New("not found")

// ErrReadOnly reports that the database is a standby (or otherwise refuses
// writes): the action was refused before it started, or its write was
// refused by the server (SQLSTATE 25006), and nothing was changed. Such a
// refusal is not audited: the audit log cannot be written there (409).
var ErrReadOnly = errors.New("the database is read-only (a standby); actions are off until it is promoted")

// readOnly wraps err in ErrReadOnly when the server refused a write because
// the database is read-only (SQLSTATE 25006).
func readOnly(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "25006" {
		return fmt.Errorf("%w: %w", ErrReadOnly, err)
	}
	return err
}

// isRefusal reports whether err stopped the action before it changed
// anything on purpose (audited as refused rather than failed).
func isRefusal(err error) bool {
	return errors.Is(err, ErrForbidden) || errors.Is(err, ErrReasonRequired) ||
		errors.Is(err, ErrInvalid) || errors.Is(err, ErrGuard) || errors.Is(err, ErrNotFound) ||
		errors.Is(err, ErrReadOnly)
}
