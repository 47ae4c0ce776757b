package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/episodes"
)

// The footprint's staged loads. Each is bounded: the waiters and idle
// sessions are plain connections, closed at the end of their stage.
const (
	// FootprintWaiters wait on one row while viewers watch the blocking
	// step.
	FootprintWaiters = 300
	// FootprintViewers are the engineers with the blocking step open.
	FootprintViewers = 50
	// FootprintTables is the schema size the catalog-wide checks meet
	// (each table with a primary key and a second index).
	FootprintTables = 20_000
	// FootprintIdleMax bounds the idle sessions opened beside the tables.
	FootprintIdleMax = 500
	// FootprintAPIClients poll GET /api/v1/findings back to back.
	FootprintAPIClients = 20
	// footprintRounds is how many fast rounds stage (b) times.
	footprintRounds = 20
	// footprintSteadyReads is how many reads of the catalog-wide checks,
	// after the first, give stage (b) their steady cost.
	footprintSteadyReads = 5
)

// blockingStepPanels are what the runbook's blocking step polls: its panels
// (Check.Step or AlsoSteps is StepBlocking), each at its own address.
func blockingStepPanels() []string {
	var out []string
	for _, c := range diagnostics.Catalog() {
		if c.Step == diagnostics.StepBlocking || slices.Contains(c.AlsoSteps, diagnostics.StepBlocking) {
			out = append(out, c.Name)
		}
	}
	return out
}

// Footprint measures what the console costs the database it watches, each
// load against a baseline measured in the same run, with the console's own
// cost ledger (Diagnostics.Cost: statements its diagnostics sent and their
// wall time, which includes the round trip, so it bounds the server's time
// from above):
//
//   - (a) FootprintWaiters sessions wait on one row; the console idles (its
//     sampler runs) with no viewer, then one viewer, then FootprintViewers
//     viewers poll what the blocking step polls, every panelRefresh. The
//     ratios are console DB time against no viewer and against one.
//   - (b) FootprintTables tables and as many idle sessions as the server
//     has room for (at most FootprintIdleMax): the fast round's time, each
//     catalog-wide check's time against its statement timeout (its first
//     read, and its steady read after), and the idle console's DB time in
//     ms per second by check: the window's fast work (the sampler, the
//     lock watcher), and each slow-clock check's steady read over the
//     clock's interval, each statement counted once; and, when the server
//     loads pg_stat_statements, the server's own execution time of the
//     window.
//   - (c) FootprintAPIClients clients poll GET /api/v1/findings back to
//     back: the diagnostics statements per request.
//
// It needs cfg.Console and cfg.Diagnostics (the console's), and a scratch
// database: it creates tables it does not drop.
func Footprint(ctx context.Context, cfg Config) (Report, error) {
	cfg = cfg.withDefaults()
	var r Report
	if !cfg.Scratch {
		return r, errors.New("footprint creates 20,000 tables: run it on a scratch database (not with --force)")
	}
	if cfg.Console == nil || cfg.Diagnostics == nil {
		return r, errors.New("footprint needs a console serving the database and its diagnostics")
	}
	if err := footprintLockStorm(ctx, cfg, &r); err != nil {
		return r, fmt.Errorf("stage (a), lock storm: %w", err)
	}
	if err := footprintCatalog(ctx, cfg, &r); err != nil {
		return r, fmt.Errorf("stage (b), large catalog: %w", err)
	}
	if err := footprintAPI(ctx, cfg, &r); err != nil {
		return r, fmt.Errorf("stage (c), API clients: %w", err)
	}
	r.Add("window_s", "measured window of each load", cfg.Duration.Seconds(), "s")
	return r, nil
}

// panelRefresh is how often an open panel polls while its query is cheap
// (the page's data-refresh-seconds).
const panelRefresh = 10 * time.Second

// consoleCost is the console's diagnostics cost so far: statements and
// seconds, summed over every check.
func consoleCost(d *diagnostics.Diagnostics) (statements int64, seconds float64) {
	for _, c := range d.Cost() {
		statements += c.Statements
		seconds += c.Seconds
	}
	return statements, seconds
}

// measureCost runs load for cfg.Duration and returns the console's DB time
// in ms per second of the window, and the statements it sent.
func measureCost(ctx context.Context, cfg Config, load func(ctx context.Context)) (msPerSecond float64, statements int64) {
	n0, s0 := consoleCost(cfg.Diagnostics)
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	if load != nil {
		load(wctx)
	} else {
		<-wctx.Done()
	}
	n1, s1 := consoleCost(cfg.Diagnostics)
	return (s1 - s0) * 1000 / time.Since(start).Seconds(), n1 - n0
}

// costSince is the DB time of each check since before (a Cost of d), in
// ms per second of window; checks that cost nothing are left out.
func costSince(d *diagnostics.Diagnostics, before map[string]diagnostics.CheckCost, window time.Duration) map[string]float64 {
	out := map[string]float64{}
	for name, c := range d.Cost() {
		if spent := c.Seconds - before[name].Seconds; spent > 0 {
			out[name] = spent * 1000 / window.Seconds()
		}
	}
	return out
}

// footprintLockStorm is stage (a).
func footprintLockStorm(ctx context.Context, cfg Config, r *Report) error {
	if _, err := cfg.Pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS footprint_row (id int PRIMARY KEY, n int NOT NULL);
		INSERT INTO footprint_row VALUES (1, 0) ON CONFLICT DO NOTHING`); err != nil {
		return err
	}
	holder, err := pgx.Connect(ctx, cfg.URL)
	if err != nil {
		return err
	}
	defer holder.Close(context.Background())
	if _, err := holder.Exec(ctx, "BEGIN; SELECT n FROM footprint_row WHERE id = 1 FOR UPDATE"); err != nil {
		return err
	}
	cfg.logf("footprint: %d sessions wait on one row", FootprintWaiters)
	waiters, err := openSessions(ctx, cfg.URL, FootprintWaiters, "footprint-waiter")
	defer closeSessions(waiters)
	// Each waiter's UPDATE returns once the holder rolls back, at the end.
	var updates sync.WaitGroup
	defer updates.Wait()
	defer holder.Exec(context.Background(), "ROLLBACK")
	if err != nil {
		return err
	}
	for _, w := range waiters {
		updates.Go(func() { _, _ = w.Exec(context.Background(), "UPDATE footprint_row SET n = n + 1 WHERE id = 1") })
	}
	if err := waitFor(ctx, cfg, FootprintWaiters); err != nil {
		return err
	}

	panels := blockingStepPanels()
	var mu sync.Mutex
	var treeTimes []time.Duration
	viewers := func(n int) func(context.Context) {
		return func(ctx context.Context) {
			var wg sync.WaitGroup
			for v := range n {
				wg.Go(func() {
					// Viewers opened the page at different moments.
					offset := time.Duration(v) * panelRefresh / time.Duration(n)
					t := time.NewTimer(offset)
					defer t.Stop()
					for {
						select {
						case <-ctx.Done():
							return
						case <-t.C:
						}
						for _, p := range panels {
							start := time.Now()
							if err := cfg.Console.poll(ctx, "/panels/"+p); err == nil && p == diagnostics.CheckBlockingTree {
								mu.Lock()
								treeTimes = append(treeTimes, time.Since(start))
								mu.Unlock()
							}
						}
						t.Reset(panelRefresh)
					}
				})
			}
			wg.Wait()
		}
	}
	// The lock-episode recorder runs beside the console, as serve runs
	// it: its share of the console's DB time in the storm is measured
	// over the no-viewer window, where it is largest, once it has
	// recorded the storm's episode (its first full read is a one-off).
	rec, err := episodes.New(episodes.Config{URL: cfg.URL, Name: "footprint"})
	if err != nil {
		return err
	}
	if err := rec.Start(ctx); err != nil {
		return fmt.Errorf("start the lock-episode recorder: %w", err)
	}
	defer rec.Stop()
	if err := waitForEpisode(ctx, cfg, FootprintWaiters); err != nil {
		return err
	}
	cfg.logf("footprint: the console idles, no viewer")
	byCheck0 := cfg.Diagnostics.Cost()
	rec0 := rec.Cost()
	none, noneN := measureCost(ctx, cfg, nil)
	rec1 := rec.Cost()
	noneBy := costSince(cfg.Diagnostics, byCheck0, cfg.Duration)
	recorder := (rec1.Seconds - rec0.Seconds) * 1000 / cfg.Duration.Seconds()
	cfg.logf("footprint: one viewer on the blocking step")
	one, oneN := measureCost(ctx, cfg, viewers(1))
	treeTimes = nil
	cfg.logf("footprint: %d viewers on the blocking step", FootprintViewers)
	byCheck0 = cfg.Diagnostics.Cost()
	many, manyN := measureCost(ctx, cfg, viewers(FootprintViewers))
	manyBy := costSince(cfg.Diagnostics, byCheck0, cfg.Duration)
	slices.Sort(treeTimes)

	r.Add("storm_waiters", "(a) sessions waiting on one row", FootprintWaiters, "")
	r.Add("storm_panels", "(a) panels each viewer polls every 10s", fmt.Sprint(panels), "")
	r.Add("storm_idle_db_ms_per_s", "(a) console DB time, no viewer", none, "ms/s")
	r.Add("storm_idle_statements", "(a) console statements, no viewer", noneN, "")
	r.Add("storm_one_db_ms_per_s", "(a) console DB time, 1 viewer", one, "ms/s")
	r.Add("storm_one_statements", "(a) console statements, 1 viewer", oneN, "")
	r.Add("storm_many_db_ms_per_s", fmt.Sprintf("(a) console DB time, %d viewers", FootprintViewers), many, "ms/s")
	r.Add("storm_many_statements", fmt.Sprintf("(a) console statements, %d viewers", FootprintViewers), manyN, "")
	r.Add("storm_recorder_ms_per_s", "(a) lock-episode recorder's DB time, no viewer", recorder, "ms/s")
	r.Add("storm_recorder_statements", "(a) lock-episode recorder's statements, no viewer", rec1.Statements-rec0.Statements, "")
	r.Add("storm_recorder_share_percent", "(a) recorder's share of the console's DB time, no viewer (target <= 10)", 100*recorder/(none+recorder), "%")
	r.Add("storm_ratio_vs_none", fmt.Sprintf("(a) DB time %d viewers / no viewer (target <= 1.5)", FootprintViewers), ratio(many, none), "x")
	r.Add("storm_ratio_vs_one", fmt.Sprintf("(a) DB time %d viewers / 1 viewer", FootprintViewers), ratio(many, one), "x")
	// Where the console's DB time goes, by check (the lock watcher's polls
	// included): what a viewer causes beyond the sampler.
	for _, w := range []struct {
		key, label string
		by         map[string]float64
	}{{"none", "no viewer", noneBy}, {"many", fmt.Sprintf("%d viewers", FootprintViewers), manyBy}} {
		names := slices.Collect(maps.Keys(w.by))
		slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(w.by[b], w.by[a]), cmp.Compare(a, b)) })
		for _, name := range names[:min(5, len(names))] {
			r.Add("storm_"+w.key+"_"+name+"_ms_per_s", "(a) "+w.label+": "+name, w.by[name], "ms/s")
		}
	}
	r.Add("storm_tree_requests", fmt.Sprintf("(a) blocking tree requests, %d viewers", FootprintViewers), len(treeTimes), "")
	if len(treeTimes) > 0 {
		r.Add("storm_tree_p50_ms", "(a) blocking tree panel p50", ms(percentile(treeTimes, 0.50)), "ms")
		r.Add("storm_tree_p99_ms", "(a) blocking tree panel p99 (target <= 300)", ms(percentile(treeTimes, 0.99)), "ms")
	}
	return nil
}

// waitFor waits until n backends of the database wait for a lock.
func waitFor(ctx context.Context, cfg Config, n int) error {
	deadline := time.Now().Add(time.Minute)
	for {
		var waiting int
		if err := cfg.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			return err
		}
		if waiting >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d sessions wait for the row after a minute", waiting, n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitForEpisode waits until the recorder has written the storm's episode
// with its n waiters.
func waitForEpisode(ctx context.Context, cfg Config, n int) error {
	deadline := time.Now().Add(time.Minute)
	for {
		var seen bool
		if err := cfg.Pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM lock_episodes WHERE peak_waiting >= $1)", n).Scan(&seen); err != nil {
			return err
		}
		if seen {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the lock-episode recorder wrote no episode of %d waiters within a minute", n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// footprintCatalog is stage (b).
func footprintCatalog(ctx context.Context, cfg Config, r *Report) error {
	cfg.logf("footprint: creating %d tables with two indexes each", FootprintTables)
	start := time.Now()
	const batch = 250
	for from := 0; from < FootprintTables; from += batch {
		if _, err := cfg.Pool.Exec(ctx, `DO $$ BEGIN
			FOR i IN `+fmt.Sprint(from)+`..`+fmt.Sprint(min(from+batch, FootprintTables)-1)+` LOOP
				EXECUTE format('CREATE TABLE IF NOT EXISTS footprint_t%s (id bigint PRIMARY KEY, v int NOT NULL)', i);
				EXECUTE format('CREATE INDEX IF NOT EXISTS footprint_t%s_v ON footprint_t%s (v)', i, i);
			END LOOP; END $$`); err != nil {
			return err
		}
	}
	built := time.Now()
	r.Add("catalog_tables", "(b) tables (primary key + one index each)", FootprintTables, "")
	r.Add("catalog_build_s", "(b) time to create them", built.Sub(start).Seconds(), "s")

	var room int
	if err := cfg.Pool.QueryRow(ctx, `SELECT current_setting('max_connections')::int
		- current_setting('superuser_reserved_connections')::int
		- (SELECT count(*) FROM pg_stat_activity)`).Scan(&room); err != nil {
		return err
	}
	// Leave the console and the bench room for their own connections.
	idleN := max(min(room-30, FootprintIdleMax), 0)
	cfg.logf("footprint: %d idle sessions", idleN)
	idle, err := openSessions(ctx, cfg.URL, idleN, "footprint-idle")
	defer closeSessions(idle)
	if err != nil {
		return err
	}
	r.Add("catalog_idle_sessions", "(b) idle sessions", len(idle), "")

	// The slow clock's first read of this catalog, waited for: each
	// catalog-wide check's time against its statement timeout. The slow
	// clock read last before the tables were made, so the first rounds
	// serve that read while a new one runs beside them.
	first, err := slowReadSince(ctx, cfg, built)
	if err != nil {
		return err
	}
	slowRead := map[string]time.Duration{}
	for _, name := range diagnostics.SlowChecks() {
		took, ok := first.Timings[name]
		if !ok {
			continue // not read on this server (a River-only check, say)
		}
		slowRead[name] = took
		r.Add("catalog_check_"+name+"_ms", "(b) "+name+" (budget "+fmt.Sprint(cfg.Diagnostics.Config().StatementTimeout.Milliseconds())+" ms)", ms(took), "ms")
	}
	for _, u := range first.Unavailable {
		r.Add("catalog_unavailable_"+u.Check, "(b) unavailable: "+u.Check, u.Status, "")
	}

	// A round's wall time includes its wait for a second WAL position when
	// no recent one is known; its checks' time is what the server spends.
	var rounds, checks []time.Duration
	byCheck := map[string][]time.Duration{}
	for range footprintRounds {
		rd, err := cfg.Diagnostics.LatestRound(ctx, time.Nanosecond)
		if err != nil {
			return err
		}
		rounds = append(rounds, rd.Took)
		var sum time.Duration
		for name, took := range rd.Timings {
			if _, slow := slowRead[name]; !slow {
				byCheck[name] = append(byCheck[name], took)
				sum += took
			}
		}
		checks = append(checks, sum)
	}
	slices.Sort(rounds)
	slices.Sort(checks)
	r.Add("catalog_fast_round_checks_p50_ms", "(b) fast round, its checks' time p50", ms(percentile(checks, 0.5)), "ms")
	r.Add("catalog_fast_round_checks_max_ms", "(b) fast round, its checks' time max (target <= 30)", ms(checks[len(checks)-1]), "ms")
	r.Add("catalog_fast_round_p50_ms", "(b) fast round wall time p50", ms(percentile(rounds, 0.5)), "ms")
	r.Add("catalog_fast_round_max_ms", "(b) fast round wall time max", ms(rounds[len(rounds)-1]), "ms")
	// Where the fast round's time goes: its three costliest checks by
	// median.
	names := slices.Collect(maps.Keys(byCheck))
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(median(byCheck[b]), median(byCheck[a])) })
	for _, name := range names[:min(3, len(names))] {
		r.Add("catalog_fast_"+name+"_p50_ms", "(b) fast round: "+name+" p50", ms(median(byCheck[name])), "ms")
	}

	// The first read of the catalog after it was made is a one-off (each
	// connection's first statistics lookups and plans): what the slow clock
	// costs on average is a read on connections that have read it before.
	// Full rounds read the catalog-wide checks in the shared rounds' way;
	// the median of a few is the steady cost of one read.
	steady := map[string][]time.Duration{}
	for range footprintSteadyReads {
		rd := cfg.Diagnostics.Round(ctx)
		for name := range slowRead {
			if took, ok := rd.Timings[name]; ok {
				steady[name] = append(steady[name], took)
			}
		}
	}
	for name, took := range steady {
		slowRead[name] = median(took)
	}
	for _, name := range diagnostics.SlowChecks() {
		if took, ok := steady[name]; ok {
			r.Add("catalog_check_"+name+"_steady_ms", "(b) "+name+", steady read (median of later reads)", ms(median(took)), "ms")
		}
	}

	cfg.logf("footprint: the console idles beside them")
	// Nothing but the console runs statements in the database during the
	// window, so pg_stat_statements' account of it is the console's.
	var spent map[string]diagnostics.CheckCost
	var window time.Duration
	server, serverOK := withStatementTimes(ctx, cfg.Pool, func() {
		idle0 := cfg.Diagnostics.Cost()
		start := time.Now()
		measureCost(ctx, cfg, nil)
		window = time.Since(start)
		spent = costDelta(idle0, cfg.Diagnostics.Cost())
	})
	total, by := idleCost(spent, window, slowRead, cfg.Diagnostics.Config().SlowInterval)
	var fast, spread float64
	var statements int64
	for _, s := range by {
		if s.Slow {
			spread += s.MsPerSecond
			r.Add("catalog_idle_"+s.Check+"_ms_per_s", fmt.Sprintf("(b) idle: %s (slow clock: a steady read of %.1f ms every %s)",
				s.Check, ms(slowRead[s.Check]), cfg.Diagnostics.Config().SlowInterval), s.MsPerSecond, "ms/s")
			continue
		}
		fast += s.MsPerSecond
		statements += spent[s.Check].Statements
		r.Add("catalog_idle_"+s.Check+"_ms_per_s", fmt.Sprintf("(b) idle: %s (%d statements in the window)", s.Check, spent[s.Check].Statements), s.MsPerSecond, "ms/s")
	}
	r.Add("catalog_idle_statements_per_s", "(b) idle console statements, slow clock apart", float64(statements)/window.Seconds(), "/s")
	r.Add("catalog_idle_sampler_ms_per_s", "(b) idle console DB time: the window's fast work (sampler, lock watcher)", fast, "ms/s")
	r.Add("catalog_idle_slow_ms_per_s", "(b) idle console DB time: the slow clock's read over its interval", spread, "ms/s")
	r.Add("catalog_idle_ms_per_s", "(b) idle console DB time (target <= 1)", total, "ms/s")
	if !serverOK {
		r.Add("catalog_idle_server", "(b) idle: the server's own account", "not measured: the server does not load pg_stat_statements", "")
		return nil
	}
	// The server's execution time, round trips and the client's waits
	// apart: what the console's statements cost the server itself.
	serverTotal, shares := serverShares(server, window)
	r.Add("catalog_idle_server_ms_per_s", "(b) idle: server execution time (pg_stat_statements), slow clock in the window included", serverTotal, "ms/s")
	for _, s := range shares[:min(8, len(shares))] {
		r.Add("catalog_idle_server_"+metricKey(s.Label)+"_ms_per_s", fmt.Sprintf("(b) idle server time: %s, %d calls, %.3f ms a call", s.Label, s.Calls, s.MsPerSecond*window.Seconds()/float64(s.Calls)), s.MsPerSecond, "ms/s")
	}
	return nil
}

// slowReadSince returns a shared round whose catalog-wide rows were read
// after since, waiting for the slow clock's read in progress (or the next
// one) for at most an interval and a budget.
func slowReadSince(ctx context.Context, cfg Config, since time.Time) (diagnostics.Round, error) {
	dc := cfg.Diagnostics.Config()
	deadline := time.Now().Add(dc.SlowInterval + dc.SlowBudget + 10*time.Second)
	for {
		rd, err := cfg.Diagnostics.LatestRound(ctx, time.Nanosecond)
		if err != nil {
			return rd, err
		}
		if !rd.SlowAt.Before(since) {
			return rd, nil
		}
		if time.Now().After(deadline) {
			return rd, fmt.Errorf("the slow clock read nothing after the tables were made (its last read is of %s)", rd.SlowAt.Format(time.RFC3339))
		}
		select {
		case <-ctx.Done():
			return rd, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// footprintAPI is stage (c).
func footprintAPI(ctx context.Context, cfg Config, r *Report) error {
	cfg.logf("footprint: %d clients poll /api/v1/findings", FootprintAPIClients)
	var requests, failures atomic.Int64
	_, statements := measureCost(ctx, cfg, func(ctx context.Context) {
		var wg sync.WaitGroup
		for range FootprintAPIClients {
			wg.Go(func() {
				for ctx.Err() == nil {
					if err := cfg.Console.poll(ctx, "/api/v1/findings"); err != nil {
						if ctx.Err() == nil {
							failures.Add(1)
						}
						continue
					}
					requests.Add(1)
				}
			})
		}
		wg.Wait()
	})
	if requests.Load() == 0 {
		return fmt.Errorf("no request succeeded (%d failed)", failures.Load())
	}
	r.Add("api_clients", "(c) API clients", FootprintAPIClients, "")
	r.Add("api_requests_per_s", "(c) requests", float64(requests.Load())/cfg.Duration.Seconds(), "req/s")
	r.Add("api_failures", "(c) failed requests", failures.Load(), "")
	r.Add("api_statements_per_request", "(c) DB statements per request (target <= 0.05)", float64(statements)/float64(requests.Load()), "")
	return nil
}

// openSessions opens n plain sessions named app, 20 at a time; on error it
// returns those it opened, for the caller to close.
func openSessions(ctx context.Context, url string, n int, app string) ([]*pgx.Conn, error) {
	cc, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cc.RuntimeParams["application_name"] = app
	out := make([]*pgx.Conn, n)
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 20)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c, err := pgx.ConnectConfig(ctx, cc)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("open session %d of %d: %w", i+1, n, err)
			}
			out[i] = c
		})
	}
	wg.Wait()
	return slices.DeleteFunc(out, func(c *pgx.Conn) bool { return c == nil }), firstErr
}

// closeSessions closes what openSessions opened.
func closeSessions(conns []*pgx.Conn) {
	for _, c := range conns {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c.Close(cctx)
		cancel()
	}
}

// poll requests path as a page's refresh does (an htmx request) and reads
// the answer; a status other than 200 is an error.
func (c *Console) poll(ctx context.Context, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("HX-Request", "true")
	resp, err := c.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d", path, resp.StatusCode)
	}
	return nil
}
