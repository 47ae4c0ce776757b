package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/cmd/console/bench"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/sampler"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/pgserver"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/web"
)

// benchConfig is `console bench MODE` with its flags.
type benchConfig struct {
	mode       string
	jobs       int
	pool       int
	workers    int
	batch      int
	duration   time.Duration
	hold       time.Duration
	rate       int
	small      int
	large      int
	asJSON     bool
	force      bool
	keep       bool
	databases  string
	requests   int
	cpuProfile string
}

// pressurePhase is the default length of each phase of bench pressure:
// long enough for the dead tuples of a pinned horizon to pile up as they do
// behind a forgotten transaction.
const pressurePhase = 10 * time.Minute

var benchUsage = "bench needs a mode: " + strings.Join(bench.Modes, ", ") + " (see `console help`)"

// runBench is `console bench`: it measures the engine on a scratch database
// it creates next to DATABASE_URL's (or on a throwaway embedded server when
// DATABASE_URL is unset) and drops afterwards; --force runs in DATABASE_URL's
// own database instead. The modes live in internal/bench.
func runBench(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return usageError{benchUsage}
	}
	bc := benchConfig{mode: args[0]}
	if !slices.Contains(bench.Modes, bc.mode) {
		return usageError{fmt.Sprintf("bench %s: %s", bc.mode, benchUsage)}
	}
	fs := flagSet("bench")
	fs.IntVar(&bc.jobs, "jobs", 100000, "jobs of burn and floor, rows per enqueue phase, events of relay")
	fs.IntVar(&bc.pool, "pool", 4, "database connections of the engine's pool")
	fs.IntVar(&bc.workers, "workers", 2000, "jobs in flight (the engine's concurrency, as River's bench); publishes in flight for relay")
	fs.IntVar(&bc.batch, "batch", 1000, "largest claim: the engine's, the floor's and the relay's")
	fs.DurationVar(&bc.duration, "duration", 20*time.Second, "measured window of continuous, of each bloat phase and of pressure's clean phase (pressure: default 10m)")
	fs.DurationVar(&bc.hold, "hold", pressurePhase, "pressure: the phase run while a writing transaction holds the xmin horizon")
	fs.IntVar(&bc.rate, "rate", 0, "pressure: jobs arriving per second, in both phases (0: an inserter keeps the backlog full)")
	fs.IntVar(&bc.small, "small", 100_000, "small table of scale, in job rows")
	fs.IntVar(&bc.large, "large", 10_000_000, "large table of scale, in job rows (at most 50,000,000)")
	fs.BoolVar(&bc.asJSON, "json", false, "print one JSON object")
	fs.BoolVar(&bc.force, "force", false, "run in DATABASE_URL's database itself instead of a scratch one")
	fs.BoolVar(&bc.keep, "keep", false, "keep the scratch databases (and scale's tables)")
	fs.StringVar(&bc.databases, "databases", "", "scale: SMALL,LARGE databases on DATABASE_URL's server kept by an earlier --keep run, to measure again without a rebuild")
	fs.IntVar(&bc.requests, "requests", bench.ScaleRequests, "scale: timed requests of each page at each size (the median is reported)")
	fs.StringVar(&bc.cpuProfile, "cpuprofile", "", "write a CPU profile of the measured mode to this file")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if bc.mode == "pressure" && !set["duration"] {
		bc.duration = pressurePhase
	}
	if set["hold"] && bc.mode != "pressure" {
		return usageError{"--hold is for bench pressure only"}
	}
	if set["rate"] && bc.mode != "pressure" {
		return usageError{"--rate is for bench pressure only"}
	}
	if bc.rate < 0 || bc.rate > 1_000_000 {
		return usageError{"--rate is jobs arriving per second: 1 to 1,000,000, or 0 to keep the backlog full instead"}
	}
	if bc.jobs < 1 || bc.pool < 1 || bc.batch < 1 || bc.workers < 1 || bc.duration <= 0 || bc.hold <= 0 {
		return usageError{"--jobs, --pool, --workers, --batch, --duration and --hold must be positive"}
	}
	if bc.requests < 1 {
		return usageError{"--requests must be positive"}
	}
	if bc.duration > time.Hour || bc.hold > time.Hour || bc.jobs > 10_000_000 || bc.large > bench.ScaleMaxRows || bc.requests > bench.ScaleMaxRequests {
		return usageError{fmt.Sprintf("bench is bounded: --duration and --hold at most 1h, --jobs at most 10,000,000, --large at most 50,000,000, --requests at most %d", bench.ScaleMaxRequests)}
	}
	raw, err := databaseURL(getenv)
	if err != nil {
		return err
	}
	if raw == "" {
		dir, err := pgserver.TempDir("console-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		srv, err := pgserver.Start(ctx, pgserver.Config{Dir: filepath.Join(dir, "pg"), BinDir: getenv("CONSOLE_PG_BIN"), Trust: true,
			Settings: benchSettings(bc.mode)})
		if err != nil {
			return err
		}
		defer srv.Stop()
		raw = srv.URL("postgres")
		fmt.Fprintf(stderr, "bench: no DATABASE_URL, using a throwaway PostgreSQL on port %d\n", srv.Port())
	}
	// scale measures its small and its large table side by side, each in a
	// database of its own.
	database, smallDatabase := raw, ""
	switch {
	case bc.mode == "scale" && bc.databases != "":
		small, large, ok := strings.Cut(bc.databases, ",")
		if !ok || small == "" || large == "" || small == large {
			return usageError{"--databases takes two names, SMALL,LARGE: the databases an earlier `bench scale --keep` printed"}
		}
		if smallDatabase, err = databaseOn(raw, small); err != nil {
			return err
		}
		if database, err = databaseOn(raw, large); err != nil {
			return err
		}
	case bc.databases != "":
		return usageError{"--databases is for bench scale only"}
	case !bc.force:
		dbs := []*string{&database}
		if bc.mode == "scale" {
			dbs = append(dbs, &smallDatabase)
		}
		for _, db := range dbs {
			scratch, drop, err := scratchDatabase(ctx, raw, bc.keep)
			if err != nil {
				return err
			}
			defer drop()
			*db = scratch
		}
		if bc.keep && bc.mode == "scale" {
			fmt.Fprintf(stderr, "bench: keeping the scratch databases; measure them again with --databases %s,%s\n",
				dbName(smallDatabase), dbName(database))
		} else if bc.keep {
			fmt.Fprintf(stderr, "bench: keeping the scratch database %s\n", dbName(database))
		}
	}
	pool, err := benchPool(ctx, database, bc.pool)
	if err != nil {
		return err
	}
	defer pool.Close()
	var smallPool *pgxpool.Pool
	if smallDatabase != "" {
		if smallPool, err = benchPool(ctx, smallDatabase, bc.pool); err != nil {
			return err
		}
		defer smallPool.Close()
	}
	if bc.cpuProfile != "" {
		f, err := os.Create(bc.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var console, smallConsole *bench.Console
	var diag *diagnostics.Diagnostics
	switch bc.mode {
	case "scale":
		// Every request of the overview and the findings API runs a round
		// of its own: scale times the round, not the cache in front of it.
		c, _, stop, err := benchConsole(ctx, database, diagnostics.Config{RoundMaxAge: time.Nanosecond}, 0)
		if err != nil {
			return err
		}
		defer stop()
		console = c
		if smallPool != nil {
			c, _, stop, err := benchConsole(ctx, smallDatabase, diagnostics.Config{RoundMaxAge: time.Nanosecond}, 0)
			if err != nil {
				return err
			}
			defer stop()
			smallConsole = c
		}
	case "footprint":
		// The console as `console serve` runs it: default caches and
		// clocks, and the sampler every --history-interval's default.
		c, d, stop, err := benchConsole(ctx, database, diagnostics.Config{}, 10*time.Second)
		if err != nil {
			return err
		}
		defer stop()
		console, diag = c, d
	}
	rep, err := bench.Run(ctx, bc.mode, bench.Config{
		Pool: pool, URL: database, PoolSize: bc.pool,
		Jobs: bc.jobs, Workers: bc.workers, Batch: bc.batch, Duration: bc.duration, Hold: bc.hold, Rate: bc.rate,
		Small: bc.small, Large: bc.large, Requests: bc.requests, Scratch: !bc.force, Keep: bc.keep, Progress: stderr, Console: console,
		SmallPool: smallPool, SmallConsole: smallConsole, Diagnostics: diag,
	})
	if err != nil {
		return err
	}
	if bc.asJSON {
		return json.NewEncoder(stdout).Encode(rep)
	}
	return rep.WriteTable(stdout)
}

// benchPool opens a pool of size connections on database and migrates its
// schema.
func benchPool(ctx context.Context, database string, size int) (*pgxpool.Pool, error) {
	pcfg, err := queues.PoolConfig(database)
	if err != nil {
		return nil, err
	}
	pcfg.MaxConns = int32(size)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, connectError(database, err)
	}
	if _, err := ensureSchema(ctx, pool, true, poolerConfig{}); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// databaseOn is raw's URL with its database replaced by name.
func databaseOn(raw, name string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || !strings.Contains(raw, "://") {
		return "", fmt.Errorf("--databases needs DATABASE_URL as a postgres:// URL naming the server of %s", name)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// dbName is the database a postgres:// URL names.
func dbName(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return strings.TrimPrefix(u.Path, "/")
	}
	return raw
}

// scratchDatabase creates a fresh database on the server of raw, so the
// benchmark never touches existing data; drop removes it.
func scratchDatabase(ctx context.Context, raw string, keep bool) (string, func(), error) {
	u, err := url.Parse(raw)
	if err != nil || !strings.Contains(raw, "://") {
		return "", nil, fmt.Errorf("bench needs DATABASE_URL as a postgres:// URL to create its scratch database (or pass --force)")
	}
	name := fmt.Sprintf("console_bench_%d", time.Now().UnixNano())
	conn, err := pgx.Connect(ctx, raw)
	if err != nil {
		return "", nil, connectError(raw, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, fmt.Errorf("create the scratch database %s: %w (the role needs CREATEDB; or pass --force to run in DATABASE_URL's database)", name, err)
	}
	u.Path = "/" + name
	drop := func() {
		if keep {
			return
		}
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := pgx.Connect(dctx, raw); err == nil {
			c.Exec(dctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
			c.Close(dctx)
		}
	}
	return u.String(), drop, nil
}

// benchSettings are the throwaway server's settings for a mode: scale's
// tables reach tens of millions of rows, so it gets the buffers and the WAL
// room a server holding them would have (and its bulk load no checkpoint
// storm).
func benchSettings(mode string) map[string]string {
	if mode == "footprint" {
		// 300 waiters and 500 idle sessions beside the console.
		return map[string]string{"max_connections": "900"}
	}
	if mode != "scale" {
		return nil
	}
	return map[string]string{"shared_buffers": "1GB", "max_wal_size": "8GB", "checkpoint_timeout": "30min"}
}

// benchConsole serves the console over database on 127.0.0.1 (its own
// pool and diagnostics with dcfg, as `console serve` has, without the
// engine; a sampler every sample when it is positive) and signs an operator
// in, so scale and footprint reach every page end to end. stop shuts the
// server down and closes what it opened.
func benchConsole(ctx context.Context, database string, dcfg diagnostics.Config, sample time.Duration) (c *bench.Console, diag *diagnostics.Diagnostics, stop func(), err error) {
	var closers []func()
	stop = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	pool, err := openPool(ctx, database, "console", 10, nil, poolerConfig{})
	if err != nil {
		return nil, nil, nil, err
	}
	closers = append(closers, pool.Close)
	diag, err = diagnostics.Open(ctx, database, dcfg)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open the diagnostics pool: %w", err)
	}
	closers = append(closers, diag.Close)
	var smp *sampler.Sampler
	if sample > 0 {
		smp = sampler.New(diag, sampler.Config{Interval: sample})
		if err := smp.Start(ctx); err != nil {
			return nil, nil, nil, fmt.Errorf("start the diagnostics sampler: %w", err)
		}
		closers = append(closers, smp.Stop)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	runner, err := actions.NewRunner(pool, actions.RunnerConfig{Diagnostics: diag, Logger: quiet})
	if err != nil {
		return nil, nil, nil, err
	}
	ws, err := web.New(web.Config{Pool: pool, Diagnostics: diag, Actions: runner, Database: target(database),
		Version: version, Logger: quiet})
	if err != nil {
		return nil, nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("listen for the bench console: %w", err)
	}
	hs := ws.HTTPServer(web.HTTPTimeouts{})
	go func() { _ = hs.Serve(ln) }()
	closers = append(closers, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	})
	password := auth.NewSecret()
	if _, err := auth.OperatorAdd(ctx, pool, "bench", auth.RoleOperator, password); err != nil {
		return nil, nil, nil, fmt.Errorf("add the bench operator: %w", err)
	}
	jar, _ := cookiejar.New(nil)
	c = &bench.Console{URL: "http://" + ln.Addr().String(), Client: &http.Client{
		Jar: jar, Timeout: 2 * time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	if err := c.SignIn(ctx, "bench", password); err != nil {
		return nil, nil, nil, err
	}
	return c, diag, stop, nil
}
