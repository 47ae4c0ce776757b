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
		"history-interval": "CONSOLE_HISTORY_INTERVAL",
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
	var thresholds thresholdFlags
	fs.Var(&thresholds, "threshold", "CODE=VALUE")
	c.Relay = relayFlags(fs, fe)
	if err := parseFlags(fs, args); err != nil {
		return c, err
	}
	if err := fe.apply(fs, getenv); err != nil {
		return c, err
	}
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
	fmt.Fprintf(w, "config: addr=%s database=%s migrate=%s metrics=%s history-interval=%s", c.Addr, db, migrate, c.Metrics, c.HistoryInterval)
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
