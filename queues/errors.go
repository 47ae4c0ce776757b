package queues

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

var (
	// ErrNotFound reports that no job (or row) has the given id.
	ErrNotFound = errors.New("not found")
	// ErrLeaseLost reports that a fenced transition (ack, fail, renew,
	// release) matched no row: the job is no longer running under this
	// owner and generation, because its lease expired and was reaped or
	// taken over, or an operator cancelled or expired it. The caller must
	// stop working on the job; its result is discarded.
	ErrLeaseLost = errors.New("lease was lost")
	// ErrLeaseDeadline is the cause (context.Cause) of a handler's context
	// cancelled because the job's lease ran out on the worker's own clock:
	// no renewal reached the database for a lease duration less a margin
	// (see LeaseDeadline), so the database, unreachable or not, may give
	// the job to another worker at any moment. It wraps ErrLeaseLost:
	// errors.Is(cause, ErrLeaseLost) holds for both ways of losing a lease.
	ErrLeaseDeadline = fmt.Errorf("%w: no renewal reached the database before the local lease deadline", ErrLeaseLost)
	// ErrDuplicate reports that an enqueue carried a dedupe key already held
	// by an unfinished job of the same queue; nothing was inserted.
	ErrDuplicate = errors.New("duplicate dedupe key")
	// ErrInvalidState reports an operator mutation on a job whose status does
	// not allow it (for example cancelling a done job).
	ErrInvalidState = errors.New("job is not in a state that allows this")
	// ErrNoConnection reports that JobConn could not get the job a database
	// connection (the server refused a new one: every slot taken, a
	// restart). It is the engine's problem, not the job's: a handler that
	// returns it (wrapped or not) has its job handed back without spending
	// an attempt, to run again a moment later.
	ErrNoConnection = errors.New("the engine could not give the job a database connection")
)

// permanentError marks an error that must not be retried.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent wraps err so that the job that returned it is dead-lettered at
// once instead of retried: use it for errors no retry can fix (bad payload,
// missing entity). Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err was wrapped by Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// panicError is a handler panic turned into an error of class "panic".
type panicError struct {
	value any
	stack string
}

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v\n%s", e.value, e.stack) }

var (
	uuidRe   = regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	hexRe    = regexp.MustCompile(`(?i)\b(0x[0-9a-f]+|[0-9a-f]*[0-9][0-9a-f]*[a-f][0-9a-f]*|[0-9a-f]*[a-f][0-9a-f]*[0-9][0-9a-f]*)\b`)
	numberRe = regexp.MustCompile(`\d+([.:]\d+)*`)
	sqlstRe  = regexp.MustCompile(`\s*\(SQLSTATE [0-9A-Z]{5}\)`)
	spaceRe  = regexp.MustCompile(`\s+`)
)

// genericErrorTypes are error types that say nothing about the cause.
var genericErrorTypes = map[string]bool{
	"*errors.errorString": true, "*fmt.wrapError": true, "*fmt.wrapErrors": true,
	"*errors.joinError": true, "*queues.permanentError": true,
}

// ErrorClass returns the fingerprint the engine stores in jobs.error_class to
// group dead letters: the most specific error type in err's chain (plus the
// SQLSTATE for PostgreSQL errors), then the message with numbers, UUIDs and
// hex strings replaced by "?", whitespace collapsed, cut to 96 characters.
// Errors that differ only in ids group together.
func ErrorClass(err error) string {
	if err == nil {
		return ""
	}
	var pe *panicError
	if errors.As(err, &pe) {
		return "panic"
	}
	typ := ""
	for e := err; e != nil; e = errors.Unwrap(e) {
		t := reflect.TypeOf(e).String()
		if !genericErrorTypes[t] {
			typ = t
		}
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		typ = "pg " + pg.Code
	}
	msg := ErrorTextClass(err.Error())
	if typ == "" {
		return msg
	}
	return typ + ": " + msg
}

// ErrorTextClass is the message part of ErrorClass for an error known only
// by its text (another engine's recorded error): its first line with
// numbers, UUIDs and hex strings replaced by "?", whitespace collapsed,
// cut to 96 characters.
func ErrorTextClass(msg string) string {
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	msg = sqlstRe.ReplaceAllString(msg, "")
	msg = uuidRe.ReplaceAllString(msg, "?")
	msg = hexRe.ReplaceAllString(msg, "?")
	msg = numberRe.ReplaceAllString(msg, "?")
	msg = strings.TrimSpace(spaceRe.ReplaceAllString(msg, " "))
	if len(msg) > 96 {
		msg = msg[:96]
	}
	return msg
}
