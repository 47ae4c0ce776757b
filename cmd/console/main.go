// Command console is the incident console for PostgreSQL job queues: it
// embeds the queue and outbox engine and serves the console.
//
// Run `console help` for the subcommands and their flags.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"syscall"
	// The time pickers read typed times in the person's zone: the zone
	// database travels in the binary, whatever the image it runs in has.
	_ "time/tzdata"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	setGCPercent()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(os.Stderr, "console: %v\nRun `console help` for usage.\n", err)
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "console: %v\n", err)
		os.Exit(1)
	}
}

// gcPercent is the garbage collector's target when GOGC is not set: the
// heap may grow to five times what is live before a collection, rather
// than Go's default of twice. A worker's live heap is a few megabytes while
// its claims, decoded jobs and ack batches are garbage within milliseconds,
// so at the default it collected about every 4 MB allocated: 74 times in a
// 200,000-job burn-down, a fifth of the engine's CPU, which a worker takes
// from the database on a small machine. At 400 the engine's CPU per job
// fell by almost a fifth and the burn-down ran about 8 % faster
// (docs/benchmarks-log.md, run 15), for a heap goal of tens of megabytes. GOGC (and
// GOMEMLIMIT, which bounds the heap whatever the target) still decide when
// set.
const gcPercent = 400

// setGCPercent sets the binary's collection target unless GOGC is set.
func setGCPercent() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
}

// usageError is a mistake in the command line (exit code 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// env reads configuration from the environment; tests pass their own.
type env func(string) string

// run dispatches to a subcommand. Only this package reads flags and the
// environment; everything else receives config structs.
func run(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	err := dispatch(ctx, args, getenv, stdin, stdout, stderr)
	if errors.Is(err, errHelp) {
		// `console --help`, `console worker -h`: the whole help, which
		// lists every command's flags.
		fmt.Fprint(stdout, helpText)
		return nil
	}
	return err
}

// errHelp asks run to print the help: `console help`, or -h, -help or
// --help before a command's first argument (dispatch) or among its flags
// (parseFlags).
var errHelp = errors.New("help requested")

func dispatch(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	if len(args) > 0 && slices.Contains([]string{"-h", "-help", "--help"}, args[0]) {
		return errHelp // before a command's own first argument (`console audit --help`)
	}
	switch cmd {
	case "serve":
		return runServe(ctx, args, getenv, stdout, stderr)
	case "worker":
		return runWorker(ctx, args, getenv, stdout, stderr)
	case "demo":
		return runDemo(ctx, args, getenv, stdout, stderr)
	case "bench":
		return runBench(ctx, args, getenv, stdout, stderr)
	case "audit":
		return runAudit(ctx, args, getenv, stdout)
	case "roles":
		return runRoles(args, stdout)
	case "findings":
		return runFindings(ctx, args, getenv, stdout)
	case "migrate":
		return runMigrate(ctx, args, getenv, stdout)
	case "operator":
		return runOperator(ctx, args, getenv, stdin, stdout)
	case "token":
		return runToken(ctx, args, getenv, stdout)
	case "version":
		fmt.Fprintln(stdout, "console", version)
		return nil
	case "help":
		return errHelp
	}
	return usageError{fmt.Sprintf("unknown command %q", cmd)}
}

const helpText = `console: the incident console for PostgreSQL job queues.

Usage:
  console [serve] [flags]        serve the console (default). Without DATABASE_URL it
                                 starts a private PostgreSQL in --data-dir with a demo workload.
  console worker [--queues a,b] [--concurrency N] [--lease 30s] [--poll 1s]
                 [--drain 15s] [--allow-sql-jobs] [--metrics-addr ADDR]
                                 run only the engine (workers, scheduler, relay with --relay-*),
                                 no web; --metrics-addr serves its /metrics. On SIGTERM running
                                 jobs get --drain to finish; exit 1 if some had to be released
  console demo [--lock-every 3m] generate demo load and lock incidents on a scratch database
  console findings [--json] [--threshold CODE=VALUE ...] [--queue-source auto|console|river]
                                 print the findings (as GET /api/v1/findings with --json); River's
                                 too when its tables hold the jobs, as serve decides
  console migrate up|status [--lock-timeout 2s] [--attempts 5]
                                 apply or show schema migrations (needs DATABASE_URL); a
                                 migration waits at most --lock-timeout for a lock (claims and
                                 acks queue behind its wait), then is rolled back and tried
                                 again; the error names the sessions in its way
  console operator add --name N --role viewer|operator|admin
                                 create or reset an operator; the password is read from stdin;
                                 a reset signs out every session the operator had
  console operator disable --name N
                                 disable an operator and end its sessions (add enables it again)
  console token create --name N --role viewer|operator|admin [--expires 720h] [--scope alerts]
                                 create an API token; prints it once, as the last word;
                                 --scope alerts: it may only post Alertmanager notifications
  console token list             list API tokens: role, live/expired/revoked, last use, expiry
  console token revoke --name N  revoke an API token; it is refused from the next request on
  console bench burn|continuous|enqueue|relay|floor|scale|bloat|fairness|footprint|pressure [--jobs N]
                [--pool P] [--workers W] [--batch B] [--duration D] [--hold D] [--small N] [--large N]
                [--json] [--cpuprofile FILE] [--force] [--keep] [--databases SMALL,LARGE] [--requests N]
                                 measure the engine on a scratch database (DATABASE_URL's server,
                                 or a throwaway embedded one); BENCHMARKS.md has the figures
  console audit verify [--expect-head SEQ:HASH] [--keyed-from SEQ]
                                 recompute the audit trail's hash chain; exits 1 on a break;
                                 prints the head to write down (CONSOLE_AUDIT_KEY_FILE: the key)
  console roles sql              print the least-privilege PostgreSQL roles for production: run
                                 it as a superuser after each "migrate up" (done as the owner)
  console version                print the version
  console help                   this text

Serve flags (each has an environment fallback; the flag wins, and a value that does not
parse stops the start and says what is accepted):
  --addr ADDR           listen address (CONSOLE_ADDR, default 127.0.0.1:8080)
  --data-dir DIR        embedded PostgreSQL's folder (CONSOLE_DATA_DIR, default ./var)
  --pg-bin DIR          PostgreSQL server binaries (CONSOLE_PG_BIN, default: found on PATH,
                        via pg_config --bindir or under /usr/lib/postgresql/*/bin)
  --migrate             apply pending migrations at start (CONSOLE_MIGRATE=1); the embedded
                        default always does
  --metrics MODE        /metrics access: open, token or off (CONSOLE_METRICS, default open)
  --trusted-proxies L   comma list of proxy IPs/CIDRs whose X-Forwarded-User, -Groups, -For,
                        -Proto and -Host are believed (CONSOLE_TRUSTED_PROXIES); a request with
                        one of the identity headers twice is refused
  --proxy-roles L       roles of proxy users, comma list of USER=ROLE and group:NAME=ROLE
                        (X-Forwarded-Groups); a user gets its highest, none is refused
                        (CONSOLE_PROXY_ROLES, e.g. alice=admin,group:sre=operator)
  --proxy-role-header   believe the proxy's X-Forwarded-Role instead of --proxy-roles; only
                        for a proxy that strips it from clients (CONSOLE_PROXY_ROLE_HEADER=1)
  --secure-cookies      always mark cookies Secure (__Host-); they are anyway over TLS or when
                        a trusted proxy says https (CONSOLE_SECURE_COOKIES=1)
  --tls-cert FILE, --tls-key FILE  serve https with HSTS (CONSOLE_TLS_CERT, CONSOLE_TLS_KEY)
  --signal-any-database  let backend.cancel/terminate signal client backends of other databases
                        of the server; by default only the console's own database
                        (CONSOLE_SIGNAL_ANY_DATABASE=1)
  --relay-nats-url URL  run an outbox relay publishing to NATS JetStream (CONSOLE_RELAY_NATS_URL);
                        --relay-nats-subject-prefix, --relay-nats-stream refine it
  --relay-webhook-url URL  run an outbox relay POSTing events there, event id in
                        Idempotency-Key (CONSOLE_RELAY_WEBHOOK_URL); worker takes both too
  --history-interval D  how often the sampler samples and the flight recorder records,
                        1s to 10m (CONSOLE_HISTORY_INTERVAL, default 10s)
  --episode-interval D  how often lock waits are looked for and kept as lock episodes,
                        100ms to 1m, 0 for never (CONSOLE_EPISODE_INTERVAL, default 1s)
  --threshold CODE=VALUE  override a finding's threshold, repeatable (CONSOLE_THRESHOLDS, comma
                        list), e.g. tx.long_running=30s, table.dead_tuples=100000,
                        replication.slot_retention=64MB
  --pooler MODE         none, or transaction when DATABASE_URL is a pooler in transaction mode
                        (PgBouncer pool_mode=transaction) (CONSOLE_POOLER; the other commands
                        read CONSOLE_POOLER); worker takes it too
  --direct-url URL      beside --pooler transaction, PostgreSQL itself for LISTEN, the
                        scheduler's leader session and migrations; without it wake-ups poll,
                        the scheduler is elected per tick and --migrate is refused
                        (CONSOLE_DIRECT_DATABASE_URL); worker takes it too
  --job-retention D     done jobs older than D are deleted by the scheduler leader every hour,
                        in WAL-aware batches, each run on /schedules; dead jobs are kept; 0
                        keeps every done job, else at least 1h (CONSOLE_JOB_RETENTION, default
                        168h); worker takes it too
  --queue-source S      whose queues /queues, /jobs and /deadletters show: auto (River's when
                        its tables hold the jobs and the console's engine has none), console
                        or river (CONSOLE_QUEUE_SOURCE, default auto)

Database:
  DATABASE_URL          PostgreSQL connection URL to attach to
  DATABASE_URL_FILE     a file holding it (for secrets mounted as files)
  STANDBY_URLS          comma list of standby URLs for standby-side views
  CONSOLE_REQUIRE_DATABASE_URL=1  refuse to start the embedded default (set in the image)

Runtime:
  GOGC                  the garbage collector's target; unset, the binary uses 400 (the heap
                        grows to five times what is live between collections); GOMEMLIMIT
                        caps the heap either way
  GOMAXPROCS            threads running Go code at once (default: the CPUs Go sees); a worker
                        of short jobs on a small machine shared with PostgreSQL spends less
                        CPU per job at 1; leave it unset when handlers need the cores

Audit:
  CONSOLE_AUDIT_KEY_FILE  a file holding the audit HMAC key (32+ bytes), never stored in the
                        database; CONSOLE_AUDIT_KEY holds it directly
`
