package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/queues"
)

// The scale table's shape: jobs spread over scaleQueues queues, dead
// letters over scaleClasses error classes (scaleClasses/scaleQueues a
// queue).
const (
	scaleQueues  = 100
	scaleClasses = 1000
	// scaleChunk is the most rows one build statement inserts, so each
	// statement is bounded and progress shows.
	scaleChunk = 1_000_000
	// ScaleRequests is how many timed requests each page gets at each
	// size after its warm-up unless Config.Requests says otherwise; the
	// report keeps the median and the best. The pages are requested in
	// rounds (every page once, then again), so a burst of load on a shared
	// machine falls on every page alike rather than on the few measured
	// while it lasted; more rounds steady the median of the sub-millisecond
	// pages.
	ScaleRequests = 21
	// ScaleMaxRequests bounds Config.Requests.
	ScaleMaxRequests = 501
)

// scaleMarker is the comment build leaves on a jobs table it filled: a
// later run finds the size there and reuses the table instead of
// rebuilding it.
const scaleMarker = "console bench scale: %d job rows"

// ScaleMaxRows is the largest table scale builds.
const ScaleMaxRows = 50_000_000

// scaleLayout is the jobs table of one scale size. Every part grows with
// the size, as in an incident on a table nobody archived: a tenth of the
// rows are dead letters, a fiftieth a ready backlog, a few hundred running
// (the fleet's concurrency does not grow with history), the rest done.
type scaleLayout struct {
	size, ready, running, dead, done int
}

func layoutFor(size int) scaleLayout {
	l := scaleLayout{size: size, dead: size / 10, ready: size / 50, running: min(500, size/200)}
	l.done = size - l.ready - l.running - l.dead
	return l
}

// builtSize is the size of the scale table in jobs (from scaleMarker): 0
// for an empty table, an error for a table scale did not fill, which it
// never empties.
func builtSize(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var comment string
	var filled bool
	err := pool.QueryRow(ctx, `SELECT coalesce(obj_description('jobs'::regclass, 'pg_class'), ''),
		EXISTS (SELECT FROM jobs)`).Scan(&comment, &filled)
	if err != nil {
		return 0, fmt.Errorf("read the jobs table's scale marker: %w", err)
	}
	var size int
	if _, err := fmt.Sscanf(comment, scaleMarker, &size); err == nil {
		return size, nil
	}
	if filled {
		return 0, errors.New("the jobs table holds rows scale did not write: run scale on a scratch database")
	}
	return 0, nil
}

// build empties jobs and fills it in id order (so in age order): the dead
// letters first (they linger while history piles up behind them), then the
// done history, then the running and ready jobs (the newest rows), each in
// statements of at most scaleChunk rows, and records the kind's run times
// as acks would have (scale_kind_runs). It ends with VACUUM ANALYZE (of
// jobs and dead_letter_counts), as autovacuum would have, and marks the
// table with its size (scaleMarker). A table already marked with this size
// is kept as it is.
func (l scaleLayout) build(ctx context.Context, cfg Config) error {
	if size, err := builtSize(ctx, cfg.Pool); err != nil || size == l.size {
		if err == nil {
			cfg.logf("scale: the jobs table already holds the %d rows; reusing it", l.size)
		}
		return err
	}
	cfg.logf("scale: building %d job rows (%d ready, %d running, %d dead in %d classes over %d queues, %d done)",
		l.size, l.ready, l.running, l.dead, scaleClasses, scaleQueues, l.done)
	built := time.Now()
	defer func() { cfg.logf("scale: built in %s", time.Since(built).Round(time.Millisecond)) }()
	// The dead letters are counted once at the end, as migration 013 does,
	// not by the per-row trigger a million times.
	for _, q := range []string{`TRUNCATE jobs`, `COMMENT ON TABLE jobs IS NULL`, `ALTER TABLE jobs DISABLE TRIGGER jobs_dead_count_insert`} {
		if _, err := cfg.Pool.Exec(ctx, q); err != nil {
			return fmt.Errorf("prepare the jobs table: %w", err)
		}
	}
	defer func() {
		ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if _, err := cfg.Pool.Exec(ectx, `ALTER TABLE jobs ENABLE TRIGGER jobs_dead_count_insert`); err != nil {
			cfg.logf("scale: enable the dead-letter counting trigger again: %v", err)
		}
	}()
	for _, part := range []struct {
		name string
		n    int
	}{{"scale_dead", l.dead}, {"scale_done", l.done}, {"scale_running", l.running}, {"scale_ready", l.ready}} {
		for lo := 1; lo <= part.n; lo += scaleChunk {
			hi := min(part.n, lo+scaleChunk-1)
			args := []any{lo, hi}
			if strings.Contains(sqlText(part.name), "$3") {
				args = append(args, part.n)
			}
			if _, err := cfg.Pool.Exec(ctx, sqlText(part.name), args...); err != nil {
				return fmt.Errorf("build %d rows (%s %d-%d): %w", l.size, part.name, lo, hi, err)
			}
			if part.n > scaleChunk {
				cfg.logf("scale: %s %d/%d", part.name, hi, part.n)
			}
		}
	}
	if _, err := cfg.Pool.Exec(ctx, sqlText("scale_dead_counts")); err != nil {
		return fmt.Errorf("count the dead letters: %w", err)
	}
	if _, err := cfg.Pool.Exec(ctx, `TRUNCATE job_kind_runs`); err != nil {
		return fmt.Errorf("prepare the kinds' run times: %w", err)
	}
	if _, err := cfg.Pool.Exec(ctx, sqlText("scale_kind_runs")); err != nil {
		return fmt.Errorf("record the kinds' run times: %w", err)
	}
	if err := vacuumJobs(ctx, cfg); err != nil {
		return err
	}
	// COMMENT takes no parameter; the text is a number in a fixed format.
	if _, err := cfg.Pool.Exec(ctx, "COMMENT ON TABLE jobs IS '"+fmt.Sprintf(scaleMarker, l.size)+"'"); err != nil {
		return fmt.Errorf("mark the scale table: %w", err)
	}
	return nil
}

// buildTimeout bounds one build: generous for a loaded two-core box (about
// 40 s a million rows plus the vacuum), never unbounded.
func buildTimeout(size int) time.Duration {
	return 5*time.Minute + time.Duration(size/1_000_000)*40*time.Second
}

// scaleOp is one measured operation: run returns how long the timed part
// took.
type scaleOp struct {
	key, label string
	run        func(ctx context.Context, i int) (time.Duration, error)
}

func timed(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

// scaleQueue is the queue whose pages scale times: one of the busiest.
const scaleQueue = "scale-0"

// scaleClass is the error class whose requeue preview scale times: the
// largest (scale_dead.sql gives class 0 the biggest share, in scale-0).
const scaleClass = "E0"

// scalePage is one console page scale requests: a GET of path, or a POST of
// form (with the session's CSRF token added) when form is not nil.
type scalePage struct {
	key, label, path string
	form             url.Values
}

// scalePages lists every page and panel of the console an operator opens
// during a dead-letter storm: the lists with every filter, the dead-letter
// views and a whole-class requeue preview, and each diagnostics panel.
func scalePages() []scalePage {
	ps := []scalePage{
		{"overview", "overview /", "/", nil},
		{"findings", "findings round /api/v1/findings", "/api/v1/findings", nil},
		{"queues", "/queues", "/queues", nil},
		{"queue_detail", "/queues/" + scaleQueue, "/queues/" + scaleQueue, nil},
		{"deadletters", "/deadletters", "/deadletters", nil},
		{"deadletters_queue", "/deadletters?queue=" + scaleQueue, "/deadletters?queue=" + scaleQueue, nil},
		{"requeue_preview", "requeue preview of class " + scaleClass, "/actions/deadletters.requeue/preview",
			url.Values{"p.queue": {scaleQueue}, "p.error_class": {scaleClass}, "reason": {"scale bench: time the preview"}}},
		{"jobs", "/jobs", "/jobs", nil},
	}
	for _, f := range []struct{ key, query string }{
		{"jobs_ready", "status=ready"},
		{"jobs_running", "status=running"},
		{"jobs_dead", "status=dead"},
		{"jobs_done", "status=done"},
		{"jobs_queue", "queue=" + scaleQueue},
		{"jobs_queue_dead", "queue=" + scaleQueue + "&status=dead"},
		{"jobs_class", "queue=" + scaleQueue + "&status=dead&error_class=" + scaleClass},
		{"jobs_class_any", "error_class=" + scaleClass},
		{"jobs_kind", "kind=noop"},
		{"jobs_created", "created_from=" + url.QueryEscape(time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))},
	} {
		ps = append(ps, scalePage{f.key, "/jobs?" + f.query, "/jobs?" + f.query, nil})
	}
	for _, p := range []string{"workers", "outbox", "schedules", "audit", "incidents", "history", "actions"} {
		ps = append(ps, scalePage{p, "/" + p, "/" + p, nil})
	}
	for _, p := range []string{"activity", "resources", "replication", "maintenance", "statements"} {
		ps = append(ps, scalePage{"database_" + p, "/database/" + p, "/database/" + p, nil})
	}
	for _, c := range diagnostics.Catalog() {
		ps = append(ps, scalePage{"panel_" + c.Name, "panel " + c.Name, "/panels/" + c.Name, nil})
	}
	return ps
}

// Console is a signed-in session on a console serving the scale database:
// scale times its pages end to end through it.
type Console struct {
	// URL is the console's base URL ("http://127.0.0.1:port").
	URL string
	// Client carries the session cookie (a cookie jar) and follows no
	// redirect.
	Client *http.Client
}

var htmlTag = regexp.MustCompile(`(?s)<head>.*?</head>|<nav.*?</nav>|<[^>]*>`)

var csrfField = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// csrf reads the CSRF token from the form page at path.
func (c *Console) csrf(ctx context.Context, path string) (string, error) {
	body, err := c.fetch(ctx, path, nil, http.StatusOK)
	if err != nil {
		return "", err
	}
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		return "", fmt.Errorf("the form at %s carries no CSRF token", path)
	}
	return m[1], nil
}

// SignIn signs the session in through the login form, as a browser does.
func (c *Console) SignIn(ctx context.Context, name, password string) error {
	token, err := c.csrf(ctx, "/login")
	if err != nil {
		return fmt.Errorf("open the console's login page: %w", err)
	}
	form := url.Values{"_csrf": {token}, "name": {name}, "password": {password}, "next": {"/"}}
	if _, err := c.fetch(ctx, "/login", form, http.StatusSeeOther); err != nil {
		return fmt.Errorf("sign in to the console as %s: %w", name, err)
	}
	return nil
}

// fetch requests one page and reads all of it; a status other than want
// is an error carrying the start of the page's text.
func (c *Console) fetch(ctx context.Context, path string, form url.Values, want int) (string, error) {
	method, body := http.MethodGet, io.Reader(nil)
	if form != nil {
		method, body = http.MethodPost, strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, body)
	if err != nil {
		return "", err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.Client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != want {
		text := strings.Join(strings.Fields(htmlTag.ReplaceAllString(string(b), " ")), " ")
		return "", fmt.Errorf("%s %s: status %d: %.600s", method, path, resp.StatusCode, text)
	}
	return string(b), nil
}

func scaleOps(cfg Config, l scaleLayout) []scaleOp {
	// The first 20 queues (after scale-0) hold ready jobs at every size.
	claimLimit := max(1, min(10, l.ready/(4*scaleQueues)))
	ops := []scaleOp{
		{"claim", fmt.Sprintf("claim of %d (JobClaim)", claimLimit), func(ctx context.Context, i int) (time.Duration, error) {
			var jobs []queues.Job
			d, err := timed(func() (err error) {
				jobs, err = queues.JobClaim(ctx, cfg.Pool, queues.JobClaimParams{
					Queue: fmt.Sprintf("scale-%d", 1+i%min(20, scaleQueues-1)), Limit: claimLimit, Owner: "scale-bench", Lease: time.Minute,
				})
				return err
			})
			if err != nil {
				return d, err
			}
			if len(jobs) == 0 {
				return d, errors.New("claim found no ready job")
			}
			// Handed back untimed, unstarted: the backlog keeps its size
			// through every round, and a kept table through later runs.
			for _, j := range jobs {
				if err := queues.JobRelease(ctx, cfg.Pool, j.ID, "scale-bench", j.LeaseGeneration, true); err != nil {
					return d, err
				}
			}
			return d, nil
		}},
	}
	if cfg.Console == nil {
		return ops
	}
	var token string
	for _, p := range scalePages() {
		ops = append(ops, scaleOp{p.key, p.label, func(ctx context.Context, _ int) (time.Duration, error) {
			form := p.form
			if form != nil {
				if token == "" {
					var err error
					if token, err = cfg.Console.csrf(ctx, "/actions/deadletters.requeue"); err != nil {
						return 0, err
					}
				}
				form = url.Values{"_csrf": {token}}
				for k, v := range p.form {
					form[k] = v
				}
			}
			return timed(func() error { _, err := cfg.Console.fetch(ctx, p.path, form, http.StatusOK); return err })
		}})
	}
	return ops
}

// scaleTiming is one op's figures at one size, or why it has none.
type scaleTiming struct {
	median, best time.Duration
	failed       error
}

// ms is the median in milliseconds, NaN when the op failed.
func (t scaleTiming) ms() float64 {
	if t.failed != nil {
		return math.NaN()
	}
	return ms(t.median)
}

// scaleSide is one size of scale: its table's layout, the database and
// console it is measured through, and its operations.
type scaleSide struct {
	name   string
	layout scaleLayout
	cfg    Config
	ops    []scaleOp
}

// Scale builds the jobs table at cfg.Small and at cfg.Large rows (see
// scaleLayout; a table a kept earlier run built at that size is reused),
// VACUUM ANALYZEs it, and times the engine's claim and every console page
// and panel (through the console, end to end over HTTP): one warm-up
// request, then cfg.Requests timed ones, in rounds over every page. With
// cfg.SmallPool the two tables live side by side and each request of a page
// at one size is followed by the same request at the other (the first of
// the two alternating), so both sizes meet the same load and the same
// server; without it the small table is built and measured first, then
// replaced by the large one. It reports each page's median and best at both
// sizes and the ratio of the medians. It rebuilds the jobs tables, so it
// only runs on scratch databases, and empties them at the end unless
// cfg.Keep.
func Scale(ctx context.Context, cfg Config) (Report, error) {
	cfg = cfg.withDefaults()
	var r Report
	if !cfg.Scratch {
		return r, errors.New("scale empties and refills the jobs table: run it on a scratch database (not with --force)")
	}
	if cfg.Large <= cfg.Small {
		return r, fmt.Errorf("the large size (%d) must exceed the small one (%d)", cfg.Large, cfg.Small)
	}
	if cfg.Small < 1000 {
		return r, fmt.Errorf("the small size must be at least 1,000 rows, not %d", cfg.Small)
	}
	if cfg.Requests > ScaleMaxRequests {
		return r, fmt.Errorf("scale times at most %d requests a page, not %d", ScaleMaxRequests, cfg.Requests)
	}
	if cfg.Large > ScaleMaxRows {
		return r, fmt.Errorf("the large size is at most %d rows, not %d", ScaleMaxRows, cfg.Large)
	}

	small, large := cfg, cfg
	if cfg.SmallPool != nil {
		small.Pool, small.Console = cfg.SmallPool, cfg.SmallConsole
	}
	sides := []*scaleSide{{name: "small", layout: layoutFor(cfg.Small), cfg: small}, {name: "large", layout: layoutFor(cfg.Large), cfg: large}}
	timings := map[string][2]scaleTiming{}
	run := func(sides ...*scaleSide) error {
		for _, sd := range sides {
			bctx, cancel := context.WithTimeout(ctx, buildTimeout(sd.layout.size))
			err := sd.layout.build(bctx, sd.cfg)
			cancel()
			if err != nil {
				return err
			}
			sd.ops = scaleOps(sd.cfg, sd.layout)
		}
		cfg.logf("scale: measuring %d requests of each page at each size", cfg.Requests)
		return measureSides(ctx, cfg, sides, timings)
	}
	if cfg.SmallPool != nil {
		if err := run(sides...); err != nil {
			return r, err
		}
	} else {
		for _, sd := range sides {
			if err := run(sd); err != nil {
				return r, err
			}
		}
	}
	if !cfg.Keep {
		for _, sd := range sides {
			if _, err := sd.cfg.Pool.Exec(ctx, "TRUNCATE jobs"); err != nil {
				return r, err
			}
		}
	}
	ops := sides[1].ops
	r.Add("small_rows", "small table", cfg.Small, "job rows")
	r.Add("large_rows", "large table", cfg.Large, "job rows")
	r.Add("requests", "timed requests per page and size", cfg.Requests, "")
	r.Add("side_by_side", "both sizes measured side by side", cfg.SmallPool != nil, "")
	worst, worstKey, slowest, slowestKey := 0.0, "", 0.0, ""
	var failed []string
	for _, op := range ops {
		m := timings[op.key]
		q := ratio(m[1].ms(), m[0].ms())
		if q > worst {
			worst, worstKey = q, op.key
		}
		if m[1].ms() > slowest {
			slowest, slowestKey = m[1].ms(), op.key
		}
		for s, size := range []string{"small", "large"} {
			if m[s].failed != nil {
				failed = append(failed, op.key+" at "+size)
				r.Add(op.key+"_"+size+"_error", op.label+", "+size+", failed", fmt.Sprintf("%.200v", m[s].failed), "")
			}
		}
		r.Add(op.key+"_small_ms", op.label+", small", m[0].ms(), "ms")
		r.Add(op.key+"_large_ms", op.label+", large", m[1].ms(), "ms")
		r.Add(op.key+"_small_best_ms", op.label+", small, best", ms(m[0].best), "ms")
		r.Add(op.key+"_large_best_ms", op.label+", large, best", ms(m[1].best), "ms")
		r.Add(op.key+"_ratio", op.label+", large/small", q, "")
	}
	r.Add("failed", "failed", strings.Join(failed, ", "), "")
	r.Add("worst_ratio", "worst large/small", worst, "")
	r.Add("worst_ratio_op", "worst large/small is", worstKey, "")
	r.Add("slowest_large_ms", "slowest at large", slowest, "ms")
	r.Add("slowest_large_op", "slowest at large is", slowestKey, "")
	return r, nil
}

// measureSides times every op of sides (their ops lists are of the same
// pages, in the same order) in cfg.Requests+1 rounds, the first a warm-up
// (caches, plans, the findings round's WAL anchor): in each round every op
// runs once at each side, the sides in turn first. A page that fails (a
// timeout, most often) is a result: it is reported as such, is not
// requested again at that size, and the other pages are still timed.
// Timings go to timings[key][side index], side 0 being the small table.
func measureSides(ctx context.Context, cfg Config, sides []*scaleSide, timings map[string][2]scaleTiming) error {
	slot := func(sd *scaleSide) int {
		if sd.name == "small" {
			return 0
		}
		return 1
	}
	ds := map[string][2][]time.Duration{}
	failed := map[string][2]error{}
	for round := range cfg.Requests + 1 {
		for k := range sides[0].ops {
			for j := range sides {
				sd := sides[(j+round)%len(sides)]
				op, i := sd.ops[k], slot(sd)
				if failed[op.key][i] != nil {
					continue
				}
				octx, cancel := context.WithTimeout(ctx, 2*time.Minute)
				d, err := op.run(octx, round)
				cancel()
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if err != nil {
					cfg.logf("scale: %-45s %s failed: %.200v", op.label, sd.name, err)
					f := failed[op.key]
					f[i] = err
					failed[op.key] = f
					continue
				}
				if round > 0 {
					m := ds[op.key]
					m[i] = append(m[i], d)
					ds[op.key] = m
				}
			}
		}
	}
	for _, sd := range sides {
		i := slot(sd)
		for _, op := range sd.ops {
			m := timings[op.key]
			if err := failed[op.key][i]; err != nil {
				m[i] = scaleTiming{failed: err}
			} else {
				d := ds[op.key][i]
				m[i] = scaleTiming{median: median(d), best: slices.Min(d)}
				cfg.logf("scale: %-45s %s %8.1f ms (best %.1f)", op.label, sd.name, ms(m[i].median), ms(m[i].best))
			}
			timings[op.key] = m
		}
	}
	return nil
}
