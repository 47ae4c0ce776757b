package episodes

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics counts the episodes this console recorded, by the table waited
// on and the root's application. Label values are bounded: past
// metricsLabelMax distinct values of a label, the rest count as "other".
type metrics struct {
	episodes *prometheus.CounterVec
	waited   *prometheus.CounterVec

	mu   sync.Mutex
	seen map[string]map[string]bool
}

// metricsLabelMax bounds the distinct values of each label.
const metricsLabelMax = 50

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		episodes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "console_lock_episodes_total",
			Help: "Lock episodes that ended, recorded by this console: by the table waited on (none for a wait on no table) and the root blocker's application.",
		}, []string{"table", "application"}),
		waited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "console_lock_episode_wait_seconds_total",
			Help: "Seconds sessions waited in lock episodes that ended, summed over every waiter, by the table waited on and the root blocker's application.",
		}, []string{"table", "application"}),
		seen: map[string]map[string]bool{"table": {}, "application": {}},
	}
	for _, c := range []prometheus.Collector{m.episodes, m.waited} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// bounded returns v, or "other" once label has metricsLabelMax values.
func (m *metrics) bounded(label, v string) string {
	if m.seen[label][v] {
		return v
	}
	if len(m.seen[label]) >= metricsLabelMax {
		return "other"
	}
	m.seen[label][v] = true
	return v
}

// count adds an ended episode; a nil *metrics counts nothing.
func (m *metrics) count(ep *tracked) {
	if m == nil {
		return
	}
	table := "none"
	if len(ep.tables) > 0 {
		table = ep.tables[0]
	}
	app := ep.rootParticipant().Application
	m.mu.Lock()
	table, app = m.bounded("table", table), m.bounded("application", app)
	m.mu.Unlock()
	m.episodes.WithLabelValues(table, app).Inc()
	m.waited.WithLabelValues(table, app).Add(ep.waitedSeconds())
}
