// Package metricsum reads one figure back out of a Prometheus registry: a
// counter family summed over the series that carry one label value. The
// benchmarks read the engine's counters this way (the registry is how a
// queues.Client reports them), and so do tests.
package metricsum

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Counter sums the counter family named family over its series whose label
// has value. A family with no series yet (a vector nothing has counted in)
// is not gathered at all, and sums to 0.
func Counter(g prometheus.Gatherer, family, label, value string) (float64, error) {
	families, err := g.Gather()
	if err != nil {
		return 0, fmt.Errorf("gather the metrics for %s: %w", family, err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != family {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum, nil
}
