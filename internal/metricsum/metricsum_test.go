package metricsum

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// Counter sums only the named family's series with the label value, over
// every other label; a family nothing counted in yet sums to 0.
func TestCounter(t *testing.T) {
	reg := prometheus.NewRegistry()
	finished := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jobs_finished_total"}, []string{"queue", "result"})
	other := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jobs_claimed_total"}, []string{"result"})
	empty := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jobs_lost_total"}, []string{"result"})
	reg.MustRegister(finished, other, empty)
	finished.WithLabelValues("a", "done").Add(3)
	finished.WithLabelValues("b", "done").Add(4)
	finished.WithLabelValues("a", "dead").Add(5)
	finished.WithLabelValues("done", "retry").Add(6) // "done" as another label's value
	other.WithLabelValues("done").Add(100)

	got, err := Counter(reg, "jobs_finished_total", "result", "done")
	require.NoError(t, err)
	require.Equal(t, 7.0, got)
	got, err = Counter(reg, "jobs_lost_total", "result", "done")
	require.NoError(t, err)
	require.Zero(t, got)
}
