package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/collector"
	"github.com/pgconsole/console/diagnostics/episodes"
	"github.com/pgconsole/console/diagnostics/recorder"
	"github.com/pgconsole/console/diagnostics/sampler"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/ownpid"
	"github.com/pgconsole/console/internal/pgserver"
	"github.com/pgconsole/console/queues/webhookpub"
	"github.com/pgconsole/console/web"
)

// embeddedDatabase is the database the embedded default serves.
const embeddedDatabase = "console"

// attach opens the DATABASE_URL pool for the command-line subcommands and
// checks the schema is current; CONSOLE_POOLER says whether DATABASE_URL
// goes through a transaction pooler.
func attach(ctx context.Context, getenv env, appName string) (*pgxpool.Pool, error) {
	pooler, err := envPooler(getenv)
	if err != nil {
		return nil, err
	}
	return attachWith(ctx, getenv, appName, pooler)
}

func runServe(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer) (err error) {
	cfg, err := parseServe(args, getenv)
	if err != nil {
		return err
	}
	// A SIGTERM while the console starts fails the step it interrupts
	// (connecting, migrating, starting the embedded server) with "context
	// canceled". Each such step is one transaction or undoes itself, and
	// the deferred stops below undo the steps before it, so stopping then
	// is a clean exit, not a crash for a supervisor to report.
	serving := false
	defer func() {
		if !serving {
			err = stoppedStarting(ctx, stdout, err, "stopped before the console started serving")
		}
	}()
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg.print(stdout)
	if err := loadAuditKey(getenv); err != nil {
		return err
	}
	if cfg.TLSCert != "" {
		if _, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey); err != nil {
			return fmt.Errorf("cannot use --tls-cert %s and --tls-key %s: %w; give a PEM certificate and its private key", cfg.TLSCert, cfg.TLSKey, err)
		}
	}

	// The listener comes first: a busy port should fail before PostgreSQL
	// is started for nothing.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w; choose another --addr", cfg.Addr, err)
	}
	defer ln.Close()

	// From here on the console answers: the starting page says what it
	// waits on (a full server, one that is starting) until it serves.
	dbURL := cfg.DatabaseURL
	embedded := dbURL == ""
	gate := newStartGate(version)
	hs := web.NewHTTPServer(gate, logger, web.HTTPTimeouts{})
	served := make(chan error, 1)
	scheme := "http"
	if cfg.TLSCert != "" {
		scheme = "https"
		go func() { served <- hs.ServeTLS(ln, cfg.TLSCert, cfg.TLSKey) }()
	} else {
		go func() { served <- hs.Serve(ln) }()
	}
	defer hs.Close()
	fmt.Fprintf(stdout, "listening on %s://%s; the page there says what the console waits on until it serves\n", scheme, ln.Addr())

	if embedded {
		gate.step("starting the embedded PostgreSQL")
		srv, err := startEmbedded(ctx, cfg, stdout)
		if err != nil {
			return err
		}
		defer func() {
			fmt.Fprintln(stdout, "stopping the embedded PostgreSQL")
			if err := srv.Stop(); err != nil {
				logger.Error("stop embedded PostgreSQL", "err", err)
			}
		}()
		dbURL = srv.URL(embeddedDatabase)
	}

	// The backend actions refuse this process's own connections, known by
	// pid: the web pool's and the engine's here, the diagnostics pool's
	// through RunnerConfig.Diagnostics.
	own := &ownpid.Set{}
	gate.step("connecting to the database")
	pool, err := connectPatiently(ctx, dbURL, "console", 10, own, cfg.Pooler, gate, stdout)
	if err != nil {
		return err
	}
	defer pool.Close()
	gate.step("checking the schema and starting the diagnostics")
	diag, err := diagnostics.Open(ctx, dbURL, diagnostics.Config{StandbyURLs: cfg.StandbyURLs, Thresholds: &cfg.Thresholds,
		ServerInfoMaxAge: roleRecheck, TransactionPooler: cfg.Pooler.transaction(), SlowInterval: cfg.SlowInterval})
	if err != nil {
		return fmt.Errorf("open the diagnostics pool: %w", err)
	}
	defer diag.Close()
	standby, err := isStandby(ctx, diag, stdout)
	if err != nil {
		return err
	}
	st, err := ensureSchema(ctx, pool, (embedded || cfg.Migrate) && !standby, cfg.Pooler)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, schemaWords(st))

	queueSource, err := openQueueSource(ctx, pool, cfg.QueueSource, stdout)
	if err != nil {
		return err
	}
	diag.SetRiver(queueSource != nil && queueSource.Engine() == queueSourceRiver)
	notice, err := firstLogin(ctx, pool, embedded, standby, stdout)
	if err != nil {
		return err
	}
	if !standby {
		if err := ensurePruneHistorySchedule(ctx, pool); err != nil {
			return err
		}
	}
	rec := recorder.New(diag, pool, recorder.Config{Interval: cfg.HistoryInterval, Name: recorderName(), Logger: logger})
	fmt.Fprintf(stdout, "history recording: %s\n", rec.Check(ctx))
	smp := sampler.New(diag, sampler.Config{Interval: cfg.HistoryInterval, OnSampleFunc: rec.Record})
	if err := smp.Start(ctx); err != nil {
		return fmt.Errorf("start the diagnostics sampler: %w", err)
	}
	defer smp.Stop()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collector.NewPool("console", pool))
	lockEpisodes, err := startEpisodes(ctx, cfg, dbURL, reg, logger, stdout)
	if err != nil {
		return err
	}
	if lockEpisodes != nil {
		defer lockEpisodes.Stop()
	}
	if _, err := collector.New(diag, collector.Config{Registerer: reg}); err != nil {
		return fmt.Errorf("register the diagnostics metrics: %w", err)
	}

	runner, err := actions.NewRunner(pool, actions.RunnerConfig{Diagnostics: diag, Registerer: reg, Logger: logger,
		OwnPIDs: own.PIDs, AnyDatabase: cfg.SignalAnyDatabase})
	if err != nil {
		return err
	}

	// The embedded default is a demo: the engine works the demo queues
	// (including the sql kind the lock drills use) and a workload feeds it.
	// Attached to a real database, serve runs the scheduler only; workers
	// run with `console worker`.
	pub, closePub, err := cfg.Relay.publisher(stdout, reg, logger)
	if err != nil {
		return err
	}
	defer closePub()
	ecfg := engineConfig{Scheduler: true, Relay: pub, Own: own, Pooler: cfg.Pooler, JobRetention: cfg.JobRetention}
	if embedded {
		ecfg = engineConfig{Queues: demoQueues, Concurrency: 4, AllowSQL: true, Scheduler: true, Relay: pub, Own: own, JobRetention: cfg.JobRetention,
			Lease: demoLease}
		if pub == nil {
			// The demo's events go to a loopback consumer that applies
			// each once through the inbox, counted on /metrics.
			sink, err := startDemoSink(pool, reg, logger)
			if err != nil {
				return err
			}
			defer sink.stop()
			if ecfg.Relay, err = webhookpub.New(webhookpub.Config{URL: sink.URL}); err != nil {
				return err
			}
		}
	}
	eng, err := startEngine(ctx, dbURL, ecfg, reg, logger)
	if err != nil {
		return err
	}
	defer func() { _ = eng.stop() }()
	if embedded {
		go demoWorkload(ctx, pool, logger, 3*time.Minute)
		fmt.Fprintln(stdout, "demo workload started: jobs on the demo queues, some dead letters, a lock chain every 3 minutes")
	}

	ws, err := web.New(web.Config{
		Pool:                 pool,
		Diagnostics:          diag,
		Sampler:              smp,
		Recorder:             rec,
		Episodes:             lockEpisodes,
		Actions:              runner,
		JobRetention:         cfg.JobRetention,
		Database:             target(dbURL),
		Version:              version,
		Gatherer:             reg,
		Registerer:           reg,
		MetricsAccess:        cfg.Metrics,
		Logger:               logger,
		SecureCookies:        cfg.SecureCookies,
		TrustedProxies:       cfg.TrustedProxies,
		ProxyRoles:           cfg.ProxyRoles,
		ProxyTrustRoleHeader: cfg.ProxyRoleHeader,
		LoginNotice:          notice,
		QueueSource:          queueSource,
	})
	if err != nil {
		return err
	}
	gate.open(ws.Handler())
	serving = true
	fmt.Fprintf(stdout, "console is serving on %s://%s\n", scheme, ln.Addr())

	select {
	case <-ctx.Done():
		fmt.Fprintln(stdout, "shutting down")
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("http server: %w", err)
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = hs.Shutdown(sctx)
	// Refusals folded into a window that has not ended yet are written now,
	// so none goes unaudited because the console stopped.
	runner.FlushRefusals(sctx)
	return err
}

// startEmbedded starts the private PostgreSQL in --data-dir and creates the
// console's database.
func startEmbedded(ctx context.Context, cfg serveConfig, stdout io.Writer) (*pgserver.Server, error) {
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "starting the embedded PostgreSQL in %s\n", dir)
	srv, err := pgserver.Start(ctx, pgserver.Config{Dir: dir, BinDir: cfg.PGBin})
	if err != nil {
		return nil, err
	}
	if note := srv.Relocation(); note != "" {
		fmt.Fprintln(stdout, note)
	}
	if err := ensureDatabase(ctx, srv.URL("postgres"), embeddedDatabase); err != nil {
		srv.Stop()
		return nil, fmt.Errorf("create the %s database: %w", embeddedDatabase, err)
	}
	fmt.Fprintf(stdout, "embedded PostgreSQL (from %s) on 127.0.0.1:%d, server log: %s\n", srv.BinDir(), srv.Port(), srv.LogPath())
	fmt.Fprintf(stdout, "its DATABASE_URL (for `console operator add` and psql): %s\n", srv.URL(embeddedDatabase))
	return srv, nil
}

// roleRecheck is how often serve re-reads whether the database is a
// standby (diagnostics' ServerInfo): the console enters read-only mode, and
// leaves it after a promotion, within that time.
const roleRecheck = 5 * time.Second

// isStandby reads whether the database is a standby and, when it is, says
// what the console does there. The embedded default never is one.
func isStandby(ctx context.Context, diag *diagnostics.Diagnostics, stdout io.Writer) (bool, error) {
	info, err := diag.ServerInfo(ctx)
	if err != nil {
		return false, fmt.Errorf("read whether the database is a primary or a standby: %w", err)
	}
	if info.InRecovery {
		fmt.Fprintln(stdout, "the database is a standby (read-only): pages and evidence are served; migrations, actions, "+
			"incidents and schedule changes are off until it is promoted")
	}
	return info.InRecovery, nil
}

// firstLogin makes sure someone can sign in. The embedded default resets an
// "admin" account to a fresh password at every start and prints it; an
// attached database gets one only when it has no operator at all, unless
// it is a standby, where nothing can be written: it then says so.
func firstLogin(ctx context.Context, pool *pgxpool.Pool, embedded, standby bool, stdout io.Writer) (string, error) {
	if !embedded {
		n, err := auth.OperatorCount(ctx, pool)
		if err != nil {
			return "", fmt.Errorf("count operators: %w", err)
		}
		if n > 0 {
			return "", nil
		}
		if standby {
			const msg = "No operator exists, and this database is a standby: sign-in needs an operator created on the primary " +
				"(`console operator add` with the primary's DATABASE_URL)."
			fmt.Fprintln(stdout, msg)
			return msg, nil
		}
	}
	password := auth.NewSecret()[:20]
	if _, err := auth.OperatorAdd(ctx, pool, "admin", auth.RoleAdmin, password); err != nil {
		return "", err
	}
	fmt.Fprintf(stdout, "sign in as admin with the one-time password %s\n", password)
	return "The admin password is printed in the terminal that started the console.", nil
}

// startEpisodes starts the lock-episode recorder on a session of its own,
// or says why it does not run: --episode-interval 0, or a transaction
// pooler without --direct-url (the recorder's lock is a session's). Nil
// means it does not run.
func startEpisodes(ctx context.Context, cfg serveConfig, dbURL string, reg prometheus.Registerer, logger *slog.Logger, stdout io.Writer) (*episodes.Recorder, error) {
	switch {
	case cfg.EpisodeInterval == 0:
		fmt.Fprintln(stdout, "lock episodes: off (--episode-interval 0)")
		return nil, nil
	case cfg.Pooler.transaction() && cfg.Pooler.DirectURL == "":
		fmt.Fprintln(stdout, "lock episodes: off: behind a transaction pooler the recorder needs --direct-url (its lock is a session's)")
		return nil, nil
	case cfg.Pooler.transaction():
		dbURL = cfg.Pooler.DirectURL
	}
	rec, err := episodes.New(episodes.Config{URL: dbURL, Interval: cfg.EpisodeInterval, Name: recorderName(), Logger: logger, Registerer: reg})
	if err != nil {
		return nil, err
	}
	if err := rec.Start(ctx); err != nil {
		return nil, fmt.Errorf("start the lock-episode recorder: %w", err)
	}
	fmt.Fprintf(stdout, "lock episodes: looking for lock waits every %s\n", cfg.EpisodeInterval)
	return rec, nil
}
