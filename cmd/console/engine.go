package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pgconsole/console/diagnostics/collector"
	"github.com/pgconsole/console/internal/ownpid"
	"github.com/pgconsole/console/queues"
)

// engineConfig says which parts of the engine a process runs.
type engineConfig struct {
	Queues      []string
	Concurrency int
	AllowSQL    bool // register the "sql" kind (demo and drills only)
	Scheduler   bool
	Relay       queues.Publisher // nil: no relay in this process
	// Lease and Poll override the engine's lease duration and poll
	// interval (zero keeps its defaults, 30s and 1s).
	Lease, Poll time.Duration
	// Drain is how long stop lets running jobs finish before it releases
	// them (zero: defaultDrain).
	Drain time.Duration
	// JobRetention is how long done jobs are kept when this process's
	// scheduler leads (zero: all of them).
	JobRetention time.Duration
	// Own, when set, gets the pids of the engine's connections.
	Own *ownpid.Set
	// Pooler says whether the database URL goes through a transaction
	// pooler, and the direct URL for the sessions that need one.
	Pooler poolerConfig
}

// defaultDrain is how long a stopping engine lets running jobs finish.
const defaultDrain = 15 * time.Second

// engine is the queue engine of one process: workers, scheduler, relay.
type engine struct {
	drain     time.Duration
	pool      *pgxpool.Pool
	client    *queues.Client
	scheduler *queues.Scheduler
	relay     *queues.Relay
}

// startEngine opens the engine's own pool (connections named console-worker)
// and starts what cfg asks for. Stop it with stop.
//
// When ctx ends after the workers started but before the scheduler or the
// relay did (a SIGTERM while the process starts), it returns the engine as
// far as it got, not an error: the workers may already run jobs, and the
// caller's stop path, which follows ctx, drains them and reports the drain
// as on any stop.
func startEngine(ctx context.Context, dbURL string, cfg engineConfig, reg prometheus.Registerer, logger *slog.Logger) (*engine, error) {
	pcfg, err := queues.PoolConfig(dbURL)
	if err != nil {
		return nil, err
	}
	pcfg.MaxConns = int32(len(cfg.Queues) + cfg.Concurrency*len(cfg.Queues)/2 + 6)
	pooled := cfg.Pooler.transaction()
	var session *pgx.ConnConfig // LISTEN and the scheduler leader's: the pool's when nil
	if pooled {
		queues.ForTransactionPooler(pcfg.ConnConfig)
		if cfg.Pooler.DirectURL != "" {
			dcfg, err := queues.PoolConfig(cfg.Pooler.DirectURL)
			if err != nil {
				return nil, fmt.Errorf("CONSOLE_DIRECT_DATABASE_URL: %w", err)
			}
			session = dcfg.ConnConfig
		}
	}
	if cfg.Own != nil {
		cfg.Own.Track(pcfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, connectError(dbURL, err)
	}
	e := &engine{pool: pool, drain: cmp.Or(cfg.Drain, defaultDrain)}
	if err := reg.Register(collector.NewPool("engine", pool)); err != nil {
		pool.Close()
		return nil, fmt.Errorf("register the engine pool metrics: %w", err)
	}
	qc := map[string]queues.QueueConfig{}
	for _, q := range cfg.Queues {
		qc[q] = queues.QueueConfig{Concurrency: cfg.Concurrency, Timeout: 5 * time.Minute}
	}
	e.client, err = queues.NewClient(pool, queues.ClientConfig{Queues: qc, Version: version, Registerer: reg, Logger: logger,
		LeaseDuration: cfg.Lease, PollInterval: cfg.Poll, TransactionPooler: pooled, SessionConnConfig: session})
	if err != nil {
		pool.Close()
		return nil, err
	}
	registerDemoKinds(e.client, cfg.AllowSQL)
	queues.RegisterMaintenance(e.client, queues.MaintenanceConfig{Logger: logger})
	registerPruneHistory(e.client, pool, logger)
	if err := e.client.Start(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("start workers: %w", err)
	}
	if cfg.Scheduler {
		e.scheduler, err = queues.NewScheduler(pool, queues.SchedulerConfig{Registerer: reg, Logger: logger,
			TransactionPooler: pooled, SessionConnConfig: session, JobRetention: cfg.JobRetention})
		if err == nil {
			err = e.scheduler.Start(ctx)
		}
		if err != nil {
			e.scheduler = nil
			if ctx.Err() != nil {
				return e, nil // stopping already: see above
			}
			_ = e.stop()
			return nil, fmt.Errorf("start scheduler: %w", err)
		}
	}
	if cfg.Relay != nil {
		e.relay, err = queues.NewRelay(pool, queues.RelayConfig{Publisher: cfg.Relay, Registerer: reg, Logger: logger,
			DisableListen: pooled && session == nil, SessionConnConfig: session})
		if err == nil {
			err = e.relay.Start(ctx)
		}
		if err != nil {
			e.relay = nil
			if ctx.Err() != nil {
				return e, nil // stopping already: see above
			}
			_ = e.stop()
			return nil, fmt.Errorf("start outbox relay: %w", err)
		}
	}
	return e, nil
}

// stop shuts the engine down in order: stop claiming, drain running jobs
// for up to the engine's drain time, release what did not start, close the
// pool last.
// It returns the client's *queues.DrainError when the drain was cut short.
func (e *engine) stop() error {
	if e.relay != nil {
		e.relay.Stop()
	}
	if e.scheduler != nil {
		e.scheduler.Stop()
	}
	var err error
	if e.client != nil {
		ctx, cancel := context.WithTimeout(context.Background(), e.drain)
		err = e.client.Stop(ctx)
		cancel()
	}
	e.pool.Close()
	return err
}

// runWorker is `console worker`: only the engine, no web.
func runWorker(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer) error {
	fs := flagSet("worker")
	fe := flagEnv{"queues": "CONSOLE_QUEUES", "concurrency": "CONSOLE_CONCURRENCY", "allow-sql-jobs": "CONSOLE_ALLOW_SQL_JOBS",
		"metrics-addr": "CONSOLE_METRICS_ADDR", "lease": "CONSOLE_LEASE", "poll": "CONSOLE_POLL", "drain": "CONSOLE_DRAIN"}
	queueList := fs.String("queues", "default", "queues")
	concurrency := fs.Int("concurrency", 10, "jobs at once per queue")
	allowSQL := fs.Bool("allow-sql-jobs", false, "register the sql kind")
	rf := relayFlags(fs, fe)
	metricsAddr := fs.String("metrics-addr", "", "serve the engine's /metrics here")
	lease := fs.Duration("lease", 30*time.Second, "how long a claim holds a job before others may take it over")
	poll := fs.Duration("poll", time.Second, "poll interval: how soon settings changes and new jobs are seen")
	drain := fs.Duration("drain", defaultDrain,
		"on SIGTERM, how long running jobs may finish before they are released to run again elsewhere")
	pooler := poolerFlags(fs, fe)
	retention := retentionFlag(fs, fe)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := fe.apply(fs, getenv); err != nil {
		return err
	}
	if err := pooler.check(); err != nil {
		return err
	}
	if err := checkJobRetention(*retention); err != nil {
		return err
	}
	if *lease < time.Second || *poll < 10*time.Millisecond || *poll > time.Minute {
		return usageError{fmt.Sprintf("--lease (CONSOLE_LEASE) %s and --poll (CONSOLE_POLL) %s: the lease must be at least 1s and the poll between 10ms and 1m", *lease, *poll)}
	}
	if *drain < 100*time.Millisecond || *drain > time.Hour {
		return usageError{fmt.Sprintf("--drain (CONSOLE_DRAIN) %s: use 100ms to 1h (keep it below the supervisor's kill timeout)", *drain)}
	}
	if *concurrency < 1 || *concurrency > 10000 {
		return usageError{fmt.Sprintf("--concurrency (CONSOLE_CONCURRENCY) %d: use 1 to 10000", *concurrency)}
	}
	qs := splitList(*queueList)
	if len(qs) == 0 {
		return usageError{"--queues needs at least one queue name"}
	}
	raw, err := requiredDatabaseURL(getenv, "worker needs DATABASE_URL (or DATABASE_URL_FILE)")
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(stderr, nil))
	check, err := attachWith(ctx, getenv, "console-cli", *pooler)
	if err != nil {
		return stoppedStarting(ctx, stdout, err, workerStopped)
	}
	check.Close()
	if *allowSQL {
		fmt.Fprintln(stdout, "warning: --allow-sql-jobs registers the sql kind, which runs arbitrary SQL from job payloads")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	pub, closePub, err := rf.publisher(stdout, reg, logger)
	if err != nil {
		return err
	}
	defer closePub()
	if *metricsAddr != "" {
		ln, err := net.Listen("tcp", *metricsAddr)
		if err != nil {
			return fmt.Errorf("cannot listen on --metrics-addr %s: %w", *metricsAddr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		ms := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go ms.Serve(ln)
		defer ms.Close()
		fmt.Fprintf(stdout, "engine metrics on http://%s/metrics\n", ln.Addr())
	}
	e, err := startEngine(ctx, raw, engineConfig{Queues: qs, Concurrency: *concurrency, AllowSQL: *allowSQL, Scheduler: true, Relay: pub,
		Lease: *lease, Poll: *poll, Drain: *drain, Pooler: *pooler, JobRetention: *retention}, reg, logger)
	if err != nil {
		return stoppedStarting(ctx, stdout, err, workerStopped)
	}
	fmt.Fprintf(stdout, "worker %s working queues %s with concurrency %d\n", e.client.ID(), strings.Join(qs, ","), *concurrency)
	<-ctx.Done()
	fmt.Fprintln(stdout, "draining")
	if err := e.stop(); err != nil {
		// A non-zero exit tells the supervisor the drain was incomplete.
		return fmt.Errorf("worker stopped before its jobs finished; the released ones run again elsewhere: %w", err)
	}
	return nil
}

// stoppedStarting returns err, the failure of a step of a command's start,
// unless ctx ended (SIGTERM) during it: then it prints line on stdout and
// returns nil, since stopping is what the supervisor asked for and the
// command has undone what it started. For the worker every such step fails
// only while no worker runs (startEngine returns the engine, not an error,
// once one does), so no job was claimed.
func stoppedStarting(ctx context.Context, stdout io.Writer, err error, line string) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	fmt.Fprintln(stdout, line)
	return nil
}

// workerStopped is the line of a worker stopped while starting.
const workerStopped = "stopped before the workers started; no job was claimed"
