package bench

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/sqlset"
)

// Config is what every mode runs with. Zero values get the defaults noted.
type Config struct {
	// Pool is the engine's pool, already sized (PoolSize connections). The
	// caller owns and closes it.
	Pool *pgxpool.Pool
	// URL reaches the same database, for sessions outside the pool (the
	// xmin holder of bloat, the diagnostics of scale).
	URL string
	// PoolSize is Pool's MaxConns, reported with the figures.
	PoolSize int
	// Jobs is the burn-down size, the enqueue size and the relay's event
	// count (default 100,000).
	Jobs int
	// Workers is the engine's concurrency: jobs in flight per process
	// (default 2,000, as River's bench); the relay's publishes in flight;
	// the floor's claim loops are PoolSize.
	Workers int
	// Batch is the largest claim: the engine's MaxClaim, the floor's claim
	// size and the relay's batch (default 100).
	Batch int
	// Duration is the measured window of continuous, of each bloat phase
	// and of pressure's clean phase (default 20s).
	Duration time.Duration
	// Hold is the window of pressure's second phase, the one run while a
	// writing transaction holds the xmin horizon (default Duration).
	Hold time.Duration
	// Rate, when positive, makes pressure's load a fixed arrival rate
	// (jobs per second, no prefill, no backlog cap) instead of a backlog
	// kept full, so that engines of different throughput are measured at
	// the same offered load and the same number of dead versions.
	Rate int
	// Small and Large are the table sizes of scale (defaults 100,000 and
	// 10,000,000 job rows; Large at most ScaleMaxRows).
	Small, Large int
	// Requests is how many timed requests scale makes of each page at
	// each size (default ScaleRequests, at most ScaleMaxRequests).
	Requests int
	// Console is a signed-in session on a console serving this database:
	// scale times every page through it. Nil times only the claim.
	Console *Console
	// Diagnostics is the diagnostics of Console's console, whose cost
	// ledger footprint reads; the console's sampler runs as `console
	// serve`'s does.
	Diagnostics *diagnostics.Diagnostics
	// SmallPool and SmallConsole are a second database and its console for
	// scale's small table, so both sizes are measured side by side; nil
	// builds both sizes in Pool, one after the other.
	SmallPool    *pgxpool.Pool
	SmallConsole *Console
	// Keep leaves scale's tables filled at the end, for a later run to
	// measure again (scale rebuilds a table only when it does not hold the
	// size asked for).
	Keep bool
	// Scratch says the database is a scratch one the benchmark owns: scale
	// refuses to fill a database that is not.
	Scratch bool
	// Progress receives one line per phase; nil discards.
	Progress io.Writer
}

func (c Config) withDefaults() Config {
	if c.Jobs <= 0 {
		c.Jobs = 100_000
	}
	if c.Workers <= 0 {
		c.Workers = 2000
	}
	if c.Batch <= 0 {
		c.Batch = 1000
	}
	if c.Duration <= 0 {
		c.Duration = 20 * time.Second
	}
	if c.Hold <= 0 {
		c.Hold = c.Duration
	}
	if c.Small <= 0 {
		c.Small = 100_000
	}
	if c.Large <= 0 {
		c.Large = 10_000_000
	}
	if c.Requests <= 0 {
		c.Requests = ScaleRequests
	}
	if c.PoolSize <= 0 && c.Pool != nil {
		c.PoolSize = int(c.Pool.Config().MaxConns)
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return c
}

func (c Config) logf(format string, args ...any) {
	fmt.Fprintf(c.Progress, "bench: "+format+"\n", args...)
}

//go:embed sql/*.sql
var sqlFiles embed.FS

// queries holds every sql/<name>.sql, read once: the floor's textbook
// phase sends one statement per job.
var queries = sqlset.New("bench", sqlFiles)

// sqlText returns the statement in sql/<name>.sql; it panics on a name
// with no file.
func sqlText(name string) string { return queries.Text(name) }

// mode is one way Run can load the database, and the function that runs it.
type mode struct {
	name string
	run  func(context.Context, Config) (Report, error)
}

// modes are the modes Run knows, in the order `console help` shows them.
var modes = []mode{
	{"burn", Burn}, {"continuous", Continuous}, {"enqueue", Enqueue}, {"relay", Relay},
	{"floor", Floor}, {"scale", Scale}, {"bloat", Bloat}, {"fairness", Fairness},
	{"footprint", Footprint}, {"pressure", Pressure},
}

// Modes lists the modes Run knows, in the order `console help` shows them.
var Modes = func() []string {
	names := make([]string, len(modes))
	for i, m := range modes {
		names[i] = m.name
	}
	return names
}()

// ErrUnknownMode is returned by Run for a mode not in Modes.
var ErrUnknownMode = errors.New("unknown bench mode")

// Run runs one mode. ctx bounds it; every mode also bounds itself.
func Run(ctx context.Context, name string, cfg Config) (Report, error) {
	if cfg.Pool == nil {
		return Report{}, errors.New("bench: nil pool")
	}
	cfg = cfg.withDefaults()
	i := slices.IndexFunc(modes, func(m mode) bool { return m.name == name })
	if i < 0 {
		return Report{}, fmt.Errorf("%w %q (one of %s)", ErrUnknownMode, name, strings.Join(Modes, ", "))
	}
	r, err := modes[i].run(ctx, cfg)
	if err != nil {
		return r, fmt.Errorf("bench %s: %w", name, err)
	}
	r.Mode = name
	var sync string
	_ = cfg.Pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&sync)
	r.Add("pool", "pool connections", cfg.PoolSize, "")
	r.Add("synchronous_commit", "synchronous_commit", sync, "")
	return r, nil
}

// Metric is one figure of a Report.
type Metric struct {
	// Key is its JSON key (snake_case, unit-suffixed when it has one).
	Key string
	// Label is what the table shows.
	Label string
	// Value is a number, a string or a bool.
	Value any
	// Unit is shown after the value in the table ("jobs/s", "ms").
	Unit string
}

// Report is what one mode measured, in order.
type Report struct {
	Mode    string
	Metrics []Metric
}

// Add appends a metric.
func (r *Report) Add(key, label string, value any, unit string) {
	r.Metrics = append(r.Metrics, Metric{Key: key, Label: label, Value: value, Unit: unit})
}

// Value returns the metric of key, or nil.
func (r Report) Value(key string) any {
	for _, m := range r.Metrics {
		if m.Key == key {
			return m.Value
		}
	}
	return nil
}

// MarshalJSON is one flat object: {"mode": ..., key: value, ...}.
func (r Report) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteString(`{"mode":`)
	mode, _ := json.Marshal(r.Mode)
	b.Write(mode)
	for _, m := range r.Metrics {
		k, _ := json.Marshal(m.Key)
		v := m.Value
		if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			v = nil
		}
		vb, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("metric %s: %w", m.Key, err)
		}
		b.WriteByte(',')
		b.Write(k)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// WriteTable prints the report as two aligned columns.
func (r Report) WriteTable(w io.Writer) error {
	width := len("mode")
	for _, m := range r.Metrics {
		width = max(width, len(m.Label))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-*s  %s\n", width, "mode", r.Mode)
	for _, m := range r.Metrics {
		fmt.Fprintf(&b, "%-*s  %s", width, m.Label, formatValue(m.Value))
		if m.Unit != "" {
			b.WriteString(" " + m.Unit)
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func formatValue(v any) string {
	switch x := v.(type) {
	case float64:
		switch {
		case math.IsNaN(x) || math.IsInf(x, 0):
			return "n/a"
		case math.Abs(x) >= 100:
			return fmt.Sprintf("%.0f", x)
		case math.Abs(x) >= 1:
			return fmt.Sprintf("%.2f", x)
		default:
			return fmt.Sprintf("%.3f", x)
		}
	default:
		return fmt.Sprint(v)
	}
}

// queueName is a fresh queue for one phase, so phases never see each
// other's jobs (nor anybody else's).
func queueName(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "bench-" + prefix + "-" + hex.EncodeToString(b)
}

// deleteQueue removes a phase's jobs and worker rows; it runs with its own
// deadline so a cancelled run still cleans up.
func deleteQueue(cfg Config, queue string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := cfg.Pool.Exec(ctx, sqlText("delete_queue_jobs"), queue); err != nil {
		cfg.logf("clean up queue %s: %v", queue, err)
	}
	_, _ = cfg.Pool.Exec(ctx, sqlText("delete_queue_workers"), queue)
}

// vacuumJobs lets the next phase start from a table without the previous
// phase's dead tuples.
func vacuumJobs(ctx context.Context, cfg Config) error {
	if _, err := cfg.Pool.Exec(ctx, "VACUUM (ANALYZE) jobs, dead_letter_counts"); err != nil {
		return fmt.Errorf("vacuum jobs: %w", err)
	}
	return nil
}

// freshJobs empties the jobs table (and the run times its acks record) so
// a phase starts on new files, as a burn-down in its fresh database does,
// and returns the size of the table and its indexes then. On a table a
// previous phase filled, emptied and vacuumed (its indexes keep their
// pages) the same statements ran about 15 % faster (docs/benchmarks-log.md, run 12),
// so a floor measured there is not the burn-down's.
func freshJobs(ctx context.Context, cfg Config) (int64, error) {
	if _, err := cfg.Pool.Exec(ctx, "TRUNCATE jobs, job_kind_runs"); err != nil {
		return 0, fmt.Errorf("empty jobs: %w", err)
	}
	var size int64
	if err := cfg.Pool.QueryRow(ctx, "SELECT pg_total_relation_size('jobs')").Scan(&size); err != nil {
		return 0, fmt.Errorf("size of jobs: %w", err)
	}
	return size, nil
}

// percentile returns the q-quantile (0..1) of sorted, nearest rank.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// median of a sample, which it sorts.
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return percentile(ds, 0.5)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// ratio is a/b, NaN when b is zero.
func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}
