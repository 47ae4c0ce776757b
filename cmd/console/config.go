package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/auth"
)

// serveConfig is everything `console serve` reads from flags and environment.
type serveConfig struct {
	Addr           string
	DataDir        string
	PGBin          string
	Migrate        bool
	Metrics        string
	TrustedProxies []string
	SecureCookies  bool
	// SignalAnyDatabase lets backend.cancel and backend.terminate signal
	// backends of other databases of the server.
	SignalAnyDatabase bool
	// ProxyRoles maps proxy users and groups ("group:NAME") to roles;
	// ProxyRoleHeader believes the proxy's role header instead.
	ProxyRoles      map[string]string
	ProxyRoleHeader bool
	TLSCert         string
	TLSKey          string
	DatabaseURL     string // empty: the embedded default
	StandbyURLs     []string
	Thresholds      diagnostics.Thresholds
	Relay           relayOptions
	// HistoryInterval is how often the sampler samples and the flight
	// recorder records (--history-interval, default 10s).
	HistoryInterval time.Duration
	// EpisodeInterval is how often the lock-episode recorder looks at the
	// ungranted locks (--episode-interval, default 1s; 0 turns it off).
	EpisodeInterval time.Duration
	// SlowInterval is how often the checks that scan the whole catalog
	// (table statistics, invalid indexes, sequences, wraparound) are read
	// (--slow-interval, default 2m); rounds in between reuse that read.
	SlowInterval time.Duration
	// Pooler says whether DATABASE_URL goes through a transaction pooler.
	Pooler poolerConfig
	// JobRetention is how long done jobs are kept (--job-retention); zero
	// keeps them all.
	JobRetention time.Duration
	// QueueSource is which engine's queues the pages show
	// (--queue-source): auto, console or river.
	QueueSource string
}

// The poolers the console can run behind (--pooler, CONSOLE_POOLER).
const (
	poolerNone        = "none"        // DATABASE_URL reaches PostgreSQL itself
	poolerTransaction = "transaction" // a pooler in transaction mode (PgBouncer pool_mode=transaction)
)

// poolerConfig says how the console's connections reach PostgreSQL. A
// pooler in transaction mode cannot be detected from the client side (it
// answers as PostgreSQL does, and PgBouncer's SHOW commands are for its
// admin console only), so it is declared.
type poolerConfig struct {
	// Mode is poolerNone or poolerTransaction.
	Mode string
	// DirectURL reaches PostgreSQL itself, beside a transaction pooler, for
	// what needs a session that outlives a transaction: LISTEN, the
	// scheduler's lasting leader lock, the worker's proof of life and
	// migrations. Empty: wake-ups come from polling, the scheduler is
	// elected per tick, and migrations are refused through the pooler.
	DirectURL string
}

// transaction reports whether the console runs behind a transaction pooler.
func (p poolerConfig) transaction() bool { return p.Mode == poolerTransaction }

// defaultJobRetention is how long done jobs are kept unless
// --job-retention says otherwise.
const defaultJobRetention = 7 * 24 * time.Hour

// retentionFlag declares --job-retention on fs and its variable
// CONSOLE_JOB_RETENTION in fe; check the result with checkJobRetention
// after parsing.
func retentionFlag(fs *flag.FlagSet, fe flagEnv) *time.Duration {
	fe["job-retention"] = "CONSOLE_JOB_RETENTION"
	return fs.Duration("job-retention", defaultJobRetention,
		"done jobs older than this are deleted by the scheduler leader every hour, in WAL-aware batches (dead jobs are kept); 0 keeps them all")
}

// checkJobRetention refuses a retention that would delete jobs still
// being looked at.
func checkJobRetention(d time.Duration) error {
	if d != 0 && d < time.Hour {
		return usageError{fmt.Sprintf("--job-retention (CONSOLE_JOB_RETENTION) %s: use 0 (keep every done job) or at least 1h", d)}
	}
	return nil
}

// poolerFlags declares --pooler and --direct-url on fs, and their variables
// CONSOLE_POOLER and CONSOLE_DIRECT_DATABASE_URL in fe; check the result
// after parsing.
func poolerFlags(fs *flag.FlagSet, fe flagEnv) *poolerConfig {
	p := &poolerConfig{}
	fe["pooler"], fe["direct-url"] = "CONSOLE_POOLER", "CONSOLE_DIRECT_DATABASE_URL"
	fs.StringVar(&p.Mode, "pooler", poolerNone, "none, or transaction behind a pooler in transaction mode (PgBouncer)")
	fs.StringVar(&p.DirectURL, "direct-url", "", "PostgreSQL itself, beside a transaction pooler, for LISTEN and the scheduler's leader session")
	return p
}

// envPooler is the pooler configuration of the subcommands that take it
// from the environment only (CONSOLE_POOLER, CONSOLE_DIRECT_DATABASE_URL).
func envPooler(getenv env) (poolerConfig, error) {
	p := poolerConfig{Mode: getenv("CONSOLE_POOLER"), DirectURL: getenv("CONSOLE_DIRECT_DATABASE_URL")}
	if p.Mode == "" {
		p.Mode = poolerNone
	}
	return p, p.check()
}

// check refuses a mode the console does not know and a direct URL that
// has nothing to do.
func (p poolerConfig) check() error {
	switch p.Mode {
	case poolerNone:
		if p.DirectURL != "" {
			return usageError{"--direct-url (CONSOLE_DIRECT_DATABASE_URL) is for --pooler transaction only: without a pooler, DATABASE_URL already reaches PostgreSQL; remove it or add --pooler transaction"}
		}
	case poolerTransaction:
		if p.DirectURL != "" {
			if _, err := checkURL("CONSOLE_DIRECT_DATABASE_URL", p.DirectURL); err != nil {
				return err
			}
		}
	default:
		return usageError{fmt.Sprintf("--pooler %q (CONSOLE_POOLER): use none (DATABASE_URL reaches PostgreSQL) or transaction (a pooler in transaction mode, such as PgBouncer with pool_mode=transaction)", p.Mode)}
	}
	return nil
}

// migrationURL is the URL migrations run on: DATABASE_URL, or behind a
// transaction pooler the direct URL, since migrations hold a session
// advisory lock the pooler would leave on a server session it lends to
// others. Behind a pooler without a direct URL it is an error.
func (p poolerConfig) migrationURL(databaseURL string) (string, error) {
	if !p.transaction() {
		return databaseURL, nil
	}
	if p.DirectURL == "" {
		return "", usageError{"migrations cannot run through a transaction pooler (they hold a session advisory lock): " +
			"set CONSOLE_DIRECT_DATABASE_URL (or --direct-url) to PostgreSQL itself, or run `console migrate up` with DATABASE_URL pointing at PostgreSQL"}
	}
	return p.DirectURL, nil
}

// flagSet returns a FlagSet that reports errors instead of exiting.
func flagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}

func parseServe(args []string, getenv env) (serveConfig, error) {
	c := serveConfig{}
	fs := flagSet("serve")
	fe := flagEnv{
		"addr": "CONSOLE_ADDR", "data-dir": "CONSOLE_DATA_DIR", "pg-bin": "CONSOLE_PG_BIN", "migrate": "CONSOLE_MIGRATE",
		"metrics": "CONSOLE_METRICS", "trusted-proxies": "CONSOLE_TRUSTED_PROXIES", "secure-cookies": "CONSOLE_SECURE_COOKIES",
		"proxy-roles": "CONSOLE_PROXY_ROLES", "proxy-role-header": "CONSOLE_PROXY_ROLE_HEADER",
		"signal-any-database": "CONSOLE_SIGNAL_ANY_DATABASE", "tls-cert": "CONSOLE_TLS_CERT", "tls-key": "CONSOLE_TLS_KEY",
		"history-interval": "CONSOLE_HISTORY_INTERVAL", "episode-interval": "CONSOLE_EPISODE_INTERVAL", "slow-interval": "CONSOLE_SLOW_INTERVAL",
		"queue-source": "CONSOLE_QUEUE_SOURCE",
	}
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:8080", "listen address")
	fs.StringVar(&c.DataDir, "data-dir", "./var", "embedded PostgreSQL folder")
	fs.StringVar(&c.PGBin, "pg-bin", "", "PostgreSQL server binaries")
	fs.BoolVar(&c.Migrate, "migrate", false, "apply pending migrations")
	fs.StringVar(&c.Metrics, "metrics", "open", "metrics access")
	proxies := fs.String("trusted-proxies", "", "trusted proxies")
	fs.BoolVar(&c.SecureCookies, "secure-cookies", false, "Secure cookies")
	proxyRoles := fs.String("proxy-roles", "", "proxy user/group to role mapping")
	fs.BoolVar(&c.ProxyRoleHeader, "proxy-role-header", false, "believe the proxy's role header")
	fs.BoolVar(&c.SignalAnyDatabase, "signal-any-database", false, "signal backends of any database")
	fs.StringVar(&c.TLSCert, "tls-cert", "", "TLS certificate (PEM)")
	fs.StringVar(&c.TLSKey, "tls-key", "", "TLS private key (PEM)")
	fs.DurationVar(&c.HistoryInterval, "history-interval", 10*time.Second, "how often the flight recorder samples")
	fs.DurationVar(&c.EpisodeInterval, "episode-interval", time.Second, "how often the lock-episode recorder looks at the ungranted locks; 0 turns it off")
	fs.DurationVar(&c.SlowInterval, "slow-interval", 2*time.Minute, "how often the catalog-wide checks run")
	fs.StringVar(&c.QueueSource, "queue-source", queueSourceAuto, "auto, console or river: whose queues the pages show")
	var thresholds thresholdFlags
	fs.Var(&thresholds, "threshold", "CODE=VALUE")
	c.Relay = relayFlags(fs, fe)
	pooler := poolerFlags(fs, fe)
	retention := retentionFlag(fs, fe)
	if err := parseFlags(fs, args); err != nil {
		return c, err
	}
	if err := fe.apply(fs, getenv); err != nil {
		return c, err
	}
	if err := pooler.check(); err != nil {
		return c, err
	}
	if err := checkJobRetention(*retention); err != nil {
		return c, err
	}
	if err := checkQueueSource(c.QueueSource); err != nil {
		return c, err
	}
	c.JobRetention = *retention
	c.Pooler = *pooler
	th, err := parseThresholds(getenv, thresholds)
	if err != nil {
		return c, err
	}
	c.Thresholds = th
	switch c.Metrics {
	case "open", "token", "off":
	default:
		return c, usageError{fmt.Sprintf("--metrics (CONSOLE_METRICS) %q: use open, token or off", c.Metrics)}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return c, usageError{"--tls-cert and --tls-key go together: give both to serve https, or neither"}
	}
	if c.HistoryInterval < time.Second || c.HistoryInterval > 10*time.Minute {
		return c, usageError{fmt.Sprintf("--history-interval (CONSOLE_HISTORY_INTERVAL) %s: use 1s to 10m", c.HistoryInterval)}
	}
	if c.EpisodeInterval != 0 && (c.EpisodeInterval < 100*time.Millisecond || c.EpisodeInterval > time.Minute) {
		return c, usageError{fmt.Sprintf("--episode-interval (CONSOLE_EPISODE_INTERVAL) %s: use 100ms to 1m, or 0 to record no lock episodes", c.EpisodeInterval)}
	}
	if c.SlowInterval < 10*time.Second || c.SlowInterval > time.Hour {
		return c, usageError{fmt.Sprintf("--slow-interval (CONSOLE_SLOW_INTERVAL) %s: use 10s to 1h", c.SlowInterval)}
	}
	c.TrustedProxies = splitList(*proxies)
	if c.ProxyRoles, err = parseProxyRoles(*proxyRoles); err != nil {
		return c, err
	}
	u, err := databaseURL(getenv)
	if err != nil {
		return c, err
	}
	c.DatabaseURL = u
	required, err := envBool(getenv, "CONSOLE_REQUIRE_DATABASE_URL")
	if err != nil {
		return c, err
	}
	if u == "" && required {
		return c, fmt.Errorf("DATABASE_URL is required here (CONSOLE_REQUIRE_DATABASE_URL is set, as in the container image, which has no embedded PostgreSQL); set DATABASE_URL or DATABASE_URL_FILE")
	}
	if c.Pooler.transaction() {
		if u == "" {
			return c, usageError{"--pooler transaction needs DATABASE_URL pointing at the pooler; the embedded PostgreSQL has none"}
		}
		if c.Migrate && c.Pooler.DirectURL == "" {
			_, err := c.Pooler.migrationURL(u)
			return c, err
		}
	}
	c.StandbyURLs = splitList(getenv("STANDBY_URLS"))
	for _, s := range c.StandbyURLs {
		if _, err := checkURL("STANDBY_URLS", s); err != nil {
			return c, err
		}
	}
	return c, nil
}

// databaseURL reads DATABASE_URL or the file DATABASE_URL_FILE names. Empty
// means "not set".
func databaseURL(getenv env) (string, error) {
	u := strings.TrimSpace(getenv("DATABASE_URL"))
	if f := getenv("DATABASE_URL_FILE"); f != "" {
		if u != "" {
			return "", usageError{"set DATABASE_URL or DATABASE_URL_FILE, not both"}
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("DATABASE_URL_FILE: %w", err)
		}
		u = strings.TrimSpace(string(b))
		if u == "" {
			return "", fmt.Errorf("DATABASE_URL_FILE %s is empty", f)
		}
	}
	if u == "" {
		return "", nil
	}
	return checkURL("DATABASE_URL", u)
}

// requiredDatabaseURL is databaseURL for a command that cannot run without
// a database: unset is a usage error saying missing.
func requiredDatabaseURL(getenv env, missing string) (string, error) {
	u, err := databaseURL(getenv)
	if err == nil && u == "" {
		err = usageError{missing}
	}
	return u, err
}

// checkURL rejects what is clearly not a PostgreSQL URL, with a message that
// shows the expected shape; key=value connection strings pass through.
func checkURL(name, raw string) (string, error) {
	if strings.Contains(raw, "://") {
		u, err := url.Parse(raw)
		if err != nil {
			return "", fmt.Errorf("%s is not a valid URL (%v); expected postgres://user:password@host:5432/dbname", name, redactErr(err, raw))
		}
		if u.Scheme != "postgres" && u.Scheme != "postgresql" {
			return "", fmt.Errorf("%s has scheme %q; expected postgres://user:password@host:5432/dbname", name, u.Scheme)
		}
	}
	return raw, nil
}

// redactErr keeps a password inside a URL parse error from reaching the
// terminal.
func redactErr(err error, raw string) string {
	msg := err.Error()
	if u, perr := url.Parse(raw); perr == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	if i := strings.Index(raw, "@"); i > 0 {
		if j := strings.Index(raw, "://"); j > 0 && j < i {
			msg = strings.ReplaceAll(msg, raw[j+3:i], "xxxxx")
		}
	}
	return msg
}

// Redact returns the URL with its password replaced, for logs and the top bar.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || !strings.Contains(raw, "://") {
		if strings.Contains(raw, "password=") {
			return "(connection string with password)"
		}
		return raw
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// target is the short form shown in the top bar: user@host:port/db.
func target(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || !strings.Contains(raw, "://") {
		return redact(raw)
	}
	s := u.Host + u.Path
	if u.User != nil {
		s = u.User.Username() + "@" + s
	}
	return s
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// print shows the effective configuration with secrets redacted.
func (c serveConfig) print(w io.Writer) {
	db := "embedded (private PostgreSQL in " + c.DataDir + ")"
	if c.DatabaseURL != "" {
		db = redact(c.DatabaseURL)
	}
	migrate := fmt.Sprint(c.Migrate)
	if c.DatabaseURL == "" {
		migrate = "always (embedded)"
	}
	fmt.Fprintf(w, "config: addr=%s database=%s migrate=%s metrics=%s history-interval=%s episode-interval=%s slow-interval=%s", c.Addr, db, migrate, c.Metrics, c.HistoryInterval, c.EpisodeInterval, c.SlowInterval)
	if c.TLSCert != "" {
		fmt.Fprintf(w, " tls-cert=%s", c.TLSCert)
	}
	if len(c.StandbyURLs) > 0 {
		red := make([]string, len(c.StandbyURLs))
		for i, s := range c.StandbyURLs {
			red[i] = redact(s)
		}
		fmt.Fprintf(w, " standbys=%s", strings.Join(red, ","))
	}
	if len(c.TrustedProxies) > 0 {
		fmt.Fprintf(w, " trusted-proxies=%s", strings.Join(c.TrustedProxies, ","))
	}
	if c.SignalAnyDatabase {
		fmt.Fprint(w, " signal-any-database=true")
	}
	if c.Pooler.transaction() {
		fmt.Fprintf(w, " pooler=%s", c.Pooler.Mode)
		if c.Pooler.DirectURL != "" {
			fmt.Fprintf(w, " direct-url=%s", redact(c.Pooler.DirectURL))
		}
	}
	fmt.Fprintln(w)
}

// parseProxyRoles reads --proxy-roles: a comma list of WHO=ROLE, WHO a proxy
// user name or group:NAME.
func parseProxyRoles(list string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range splitList(list) {
		who, role, ok := strings.Cut(item, "=")
		who, role = strings.TrimSpace(who), strings.TrimSpace(role)
		if !ok || who == "" || who == "group:" || !auth.ValidRole(role) {
			return nil, usageError{fmt.Sprintf("--proxy-roles (CONSOLE_PROXY_ROLES) %q: give USER=ROLE or group:NAME=ROLE, ROLE one of viewer, operator, admin", item)}
		}
		out[who] = role
	}
	return out, nil
}
