package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/collector"
	"github.com/pgconsole/console/diagnostics/episodes"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/queues/webhookpub"
	"github.com/pgconsole/console/web"
)

// metricsCatalogPath is METRICS.md, the documented catalog of every metric.
const metricsCatalogPath = "../../METRICS.md"

// catalogEntry is one metric: its type, the names of its labels and its
// help.
type catalogEntry struct {
	typ    string
	labels []string // sorted
	help   string
}

func (e catalogEntry) row(name string) string {
	labels := "—"
	if len(e.labels) > 0 {
		labels = "`" + strings.Join(e.labels, "`, `") + "`"
	}
	return fmt.Sprintf("| `%s` | %s | %s | %s |", name, e.typ, labels, e.help)
}

// recordingRegisterer remembers what was registered through it, so a test
// can read every metric's description (vectors included, with children or
// not).
type recordingRegisterer struct {
	prometheus.Registerer
	mu         sync.Mutex
	collectors []prometheus.Collector
}

func (r *recordingRegisterer) Register(c prometheus.Collector) error {
	err := r.Registerer.Register(c)
	if err == nil {
		r.mu.Lock()
		r.collectors = append(r.collectors, c)
		r.mu.Unlock()
	}
	return err
}

func (r *recordingRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// descRE reads Desc.String(), the only public view of a description.
var (
	descRE       = regexp.MustCompile(`^Desc\{fqName: "((?:[^"\\]|\\.)*)", help: "((?:[^"\\]|\\.)*)", unit: "(?:[^"\\]|\\.)*", constLabels: \{(.*)\}, variableLabels: \{(.*)\}\}$`)
	constLabelRE = regexp.MustCompile(`(\w+)="`)
)

// described returns every metric the registered collectors describe.
func (r *recordingRegisterer) described(t *testing.T) map[string]catalogEntry {
	t.Helper()
	r.mu.Lock()
	cs := slices.Clone(r.collectors)
	r.mu.Unlock()
	out := map[string]catalogEntry{}
	for _, c := range cs {
		ch := make(chan *prometheus.Desc, 256)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := descRE.FindStringSubmatch(d.String())
			require.NotNil(t, m, "unreadable description %s", d)
			var labels []string
			for _, cl := range constLabelRE.FindAllStringSubmatch(m[3], -1) {
				labels = append(labels, cl[1])
			}
			for _, vl := range strings.Split(m[4], ",") {
				if vl = strings.TrimSuffix(strings.TrimPrefix(vl, "c("), ")"); vl != "" {
					labels = append(labels, vl)
				}
			}
			sort.Strings(labels)
			out[m[1]] = catalogEntry{typ: "?", labels: labels, help: m[2]}
		}
	}
	return out
}

// familyEntries returns the families of a scrape by name.
func familyEntries(mfs []*dto.MetricFamily) map[string]catalogEntry {
	out := map[string]catalogEntry{}
	for _, mf := range mfs {
		set := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				set[lp.GetName()] = true
			}
		}
		var labels []string
		for l := range set {
			labels = append(labels, l)
		}
		sort.Strings(labels)
		out[mf.GetName()] = catalogEntry{typ: strings.ToLower(mf.GetType().String()), labels: labels, help: mf.GetHelp()}
	}
	return out
}

// catalogRowRE is a catalog row: | `name` | type | labels | meaning |
var (
	catalogRowRE = regexp.MustCompile("^\\|\\s*`([a-z_:*]+)`\\s*\\|\\s*([a-z]+)\\s*\\|([^|]*)\\|(.*)\\|\\s*$")
	backtickedRE = regexp.MustCompile("`([a-z_]+)`")
)

// metricsCatalog reads METRICS.md: exact names, and the prefixes of rows
// whose name ends in * (the Go and process collectors, whose metrics belong
// to client_golang and the Go runtime).
func metricsCatalog(t *testing.T) (exact map[string]catalogEntry, prefixes []string) {
	t.Helper()
	f, err := os.Open(metricsCatalogPath)
	require.NoError(t, err)
	defer f.Close()
	exact = map[string]catalogEntry{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := catalogRowRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if p, ok := strings.CutSuffix(m[1], "*"); ok {
			prefixes = append(prefixes, p)
			continue
		}
		_, dup := exact[m[1]]
		require.False(t, dup, "METRICS.md lists %s twice", m[1])
		var labels []string
		for _, l := range backtickedRE.FindAllStringSubmatch(m[3], -1) {
			labels = append(labels, l[1])
		}
		sort.Strings(labels)
		exact[m[1]] = catalogEntry{typ: m[2], labels: labels}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, exact, "no catalog rows found in METRICS.md")
	return exact, prefixes
}

func hasAnyPrefix(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// exposedUndocumented lists the families of a scrape that METRICS.md lacks
// or describes with another type or label set.
func exposedUndocumented(exposed, exact map[string]catalogEntry, prefixes []string) []string {
	var problems []string
	for name, g := range exposed {
		d, ok := exact[name]
		switch {
		case !ok && hasAnyPrefix(name, prefixes):
		case !ok:
			problems = append(problems, "undocumented: "+g.row(name))
		case d.typ != g.typ:
			problems = append(problems, fmt.Sprintf("%s is a %s, METRICS.md says %s", name, g.typ, d.typ))
		case !slices.Equal(d.labels, g.labels):
			problems = append(problems, fmt.Sprintf("%s has labels %v, METRICS.md says %v", name, g.labels, d.labels))
		}
	}
	return problems
}

// catalogRegistry builds the registry as `console serve` does (serve.go,
// engine.go) on a test database, with the relay on and publishing to the
// embedded default's demo sink, and exercises it so vectors have children:
// requests, an action, jobs done, dead and panicked, an outbox event
// published, applied and redelivered, a diagnostics round.
func catalogRegistry(t *testing.T) (*prometheus.Registry, *recordingRegisterer) {
	t.Helper()
	ctx := context.Background()
	url := testdb.URL(t)
	pool := testdb.Pool(t, url)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	reg := prometheus.NewRegistry()
	rec := &recordingRegisterer{Registerer: reg}
	rec.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collector.NewPool("console", pool))
	diag, err := diagnostics.Open(ctx, url, diagnostics.Config{})
	require.NoError(t, err)
	t.Cleanup(diag.Close)
	_, err = collector.New(diag, collector.Config{Registerer: rec, Wait: 30 * time.Second})
	require.NoError(t, err)
	runner, err := actions.NewRunner(pool, actions.RunnerConfig{Diagnostics: diag, Registerer: rec, Logger: logger})
	require.NoError(t, err)
	sink, err := startDemoSink(pool, rec, logger)
	require.NoError(t, err)
	t.Cleanup(sink.stop)
	webhook, err := webhookpub.New(webhookpub.Config{URL: sink.URL})
	require.NoError(t, err)
	published := make(chan *queues.OutboxMessage, 16)
	publisher := queues.PublisherFunc(func(ctx context.Context, m *queues.OutboxMessage) error {
		if err := webhook.Publish(ctx, m); err != nil {
			return err
		}
		select {
		case published <- m:
		default:
		}
		return nil
	})
	eng, err := startEngine(ctx, url, engineConfig{Queues: []string{"catalog"}, Concurrency: 2, Scheduler: true, Relay: publisher}, rec, logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.stop() })
	// The lock-episode counters, registered as serve does when it records.
	_, err = episodes.New(episodes.Config{URL: url, Registerer: rec})
	require.NoError(t, err)
	// The NATS relay's broker gauge, registered as serve and worker do when
	// given --relay-nats-url; the broker need not be up.
	natsURL, none := "nats://127.0.0.1:1", ""
	_, closeNATS, err := relayOptions{natsURL: &natsURL, natsPrefix: &none, natsStream: &none, webhookURL: &none}.publisher(io.Discard, rec, logger)
	require.NoError(t, err)
	t.Cleanup(closeNATS)
	ws, err := web.New(web.Config{Pool: pool, Diagnostics: diag, Actions: runner, Database: "test", Version: "test",
		Gatherer: reg, Registerer: rec, Logger: logger})
	require.NoError(t, err)
	scrape := func() string {
		w := httptest.NewRecorder()
		ws.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		require.Equal(t, http.StatusOK, w.Code)
		return w.Body.String()
	}
	// Alerts over the inbox and the idempotent API must not wait for
	// traffic: their series exist at zero before any.
	for _, series := range []string{
		`queues_inbox_applied_total{consumer="demo-consumer"} 0`,
		`queues_inbox_duplicates_total{consumer="demo-consumer"} 0`,
		`console_idempotency_requests_total{outcome="replayed"} 0`,
		`console_idempotency_requests_total{outcome="mismatch"} 0`,
	} {
		require.Contains(t, scrape(), series+"\n")
	}

	for _, p := range []queues.EnqueueParams{
		{Queue: "catalog", Kind: "noop"},
		{Queue: "catalog", Kind: "fail", Payload: map[string]int{"times": -1}, MaxAttempts: 2},
		{Queue: "catalog", Kind: "panic", MaxAttempts: 1},
	} {
		_, err := eng.client.Enqueue(ctx, p)
		require.NoError(t, err)
	}
	_, err = queues.EnqueueEventTx(ctx, pool, queues.OutboxEvent{Topic: "catalog", EventType: "catalog.tested", Payload: map[string]int{"n": 1}})
	require.NoError(t, err)
	for _, path := range []string{"/healthz", "/metrics", "/nowhere"} {
		ws.Handler().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path, nil))
	}
	_, err = runner.Run(ctx, actions.Actor{Name: "catalog", Role: "admin"}, "queue.pause",
		actions.Request{Params: map[string]any{"queue": "catalog"}, DryRun: true})
	require.NoError(t, err)
	select {
	case m := <-published:
		// A redelivery (the relay lost the broker's answer) is skipped by
		// the inbox and counted as a duplicate.
		require.NoError(t, webhook.Publish(ctx, m))
	case <-time.After(30 * time.Second):
		t.Fatal("the relay did not publish within 30s")
	}
	metrics := scrape()
	require.Contains(t, metrics, `queues_inbox_applied_total{consumer="demo-consumer"} 1`+"\n")
	require.Contains(t, metrics, `queues_inbox_duplicates_total{consumer="demo-consumer"} 1`+"\n")
	deadline := time.Now().Add(30 * time.Second)
	for {
		var done, dead int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'done'), count(*) FILTER (WHERE status = 'dead')
			FROM jobs WHERE queue = 'catalog'`).Scan(&done, &dead))
		if done == 1 && dead == 2 {
			break
		}
		require.True(t, time.Now().Before(deadline), "jobs not finished within 30s: %d done, %d dead", done, dead)
		time.Sleep(20 * time.Millisecond)
	}
	return reg, rec
}

// TestMetricsCatalog fails when a metric serve registers or exposes is
// missing from METRICS.md, has another type or other labels there, or when
// METRICS.md documents a metric that is gone. The failure prints the rows
// to paste.
func TestMetricsCatalog(t *testing.T) {
	t.Parallel()
	reg, rec := catalogRegistry(t)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	exposed := familyEntries(mfs)
	described := rec.described(t)
	exact, prefixes := metricsCatalog(t)

	problems := exposedUndocumented(exposed, exact, prefixes)
	for name, ds := range described {
		if _, seen := exposed[name]; seen || hasAnyPrefix(name, prefixes) {
			continue
		}
		d, ok := exact[name]
		switch {
		case !ok:
			problems = append(problems, "undocumented (registered, no series yet): "+ds.row(name))
		case !slices.Equal(d.labels, ds.labels):
			problems = append(problems, fmt.Sprintf("%s has labels %v, METRICS.md says %v", name, ds.labels, d.labels))
		}
	}
	for name := range exact {
		_, e := exposed[name]
		_, d := described[name]
		if !e && !d {
			problems = append(problems, "documented but not exposed: "+name)
		}
	}
	for _, p := range prefixes {
		if !slices.ContainsFunc(mfs, func(mf *dto.MetricFamily) bool { return strings.HasPrefix(mf.GetName(), p) }) {
			problems = append(problems, "documented prefix matches nothing: "+p+"*")
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		t.Fatalf("METRICS.md and the registry disagree:\n%s", strings.Join(problems, "\n"))
	}

	// Bounded labels only: none names one job, event, backend or request.
	for name, e := range exposed {
		for _, l := range e.labels {
			require.NotContains(t, []string{"job_id", "id", "pid", "event_id", "request_id", "gid", "actor"}, l, "%s: unbounded label %s", name, l)
		}
	}

	// The console's own metrics follow the Prometheus naming conventions.
	var ours []*dto.MetricFamily
	for _, mf := range mfs {
		if !hasAnyPrefix(mf.GetName(), prefixes) {
			ours = append(ours, mf)
		}
	}
	lint, err := promlint.NewWithMetricFamilies(ours).Lint()
	require.NoError(t, err)
	require.Empty(t, lint, "promlint")
}
