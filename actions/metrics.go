package actions

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgconsole/console/audit"
)

// metrics counts action runs by action and outcome. Labels are bounded: an
// unknown action name is counted as "unknown".
type metrics struct {
	runs     *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetrics(cfg RunnerConfig) (*metrics, error) {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "console_actions_runs_total",
			Help: "Operator actions run, by action and outcome (succeeded, failed, refused, dry_run).",
		}, []string{"action", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "console_actions_run_duration_seconds",
			Help:    "Time to preview, execute and audit an operator action.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"action"}),
	}
	if cfg.Registerer == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.runs, m.duration} {
		if err := cfg.Registerer.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, fmt.Errorf("register action metrics: %w", err)
			}
		}
	}
	return m, nil
}

func (m *metrics) observe(action string, dryRun bool, err error, took time.Duration) {
	if _, ok := definitions[action]; !ok {
		action = "unknown"
	}
	m.runs.WithLabelValues(action, outcomeOf(dryRun, err)).Inc()
	m.duration.WithLabelValues(action).Observe(took.Seconds())
}

// Outcomes of a run, the same words in the metrics, the log line and (but
// for dry runs, which are not audited) the audit trail.
const (
	outcomeSucceeded = string(audit.OutcomeSucceeded)
	outcomeFailed    = string(audit.OutcomeFailed)
	outcomeRefused   = string(audit.OutcomeRefused)
	outcomeDryRun    = "dry_run"
)

func outcomeOf(dryRun bool, err error) string {
	switch {
	case err != nil && isRefusal(err):
		return outcomeRefused
	case err != nil:
		return outcomeFailed
	case dryRun:
		return outcomeDryRun
	}
	return outcomeSucceeded
}
