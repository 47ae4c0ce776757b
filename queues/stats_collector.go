package queues

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// StatsCollector exports QueueHealth as per-queue gauges at scrape time
// (ready, running, dead, expired leases, oldest ready age, paused). Register
// it once per fleet view (the console), not in every worker: the numbers
// are the database's, not the process's. Each scrape runs one QueueHealth
// query bounded by Timeout.
type StatsCollector struct {
	DB      DBTX
	Timeout time.Duration // default 5s

	jobs, expired, oldest, paused *prometheus.Desc
}

// NewStatsCollector returns a collector reading through db (a pool).
func NewStatsCollector(db DBTX) *StatsCollector {
	return &StatsCollector{
		DB: db,
		jobs: prometheus.NewDesc("queues_jobs", "Jobs per queue and status (done is not counted).",
			[]string{"queue", "status"}, nil),
		expired: prometheus.NewDesc("queues_expired_leases", "Running jobs whose lease has passed, not yet reaped.",
			[]string{"queue"}, nil),
		oldest: prometheus.NewDesc("queues_oldest_ready_age_seconds", "Age of the oldest due ready job.",
			[]string{"queue"}, nil),
		paused: prometheus.NewDesc("queues_paused", "1 when the queue is paused in queue_settings.",
			[]string{"queue"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (s *StatsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- s.jobs
	ch <- s.expired
	ch <- s.oldest
	ch <- s.paused
}

// Collect implements prometheus.Collector; a failed query exports nothing.
func (s *StatsCollector) Collect(ch chan<- prometheus.Metric) {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	stats, err := QueueHealth(ctx, s.DB, QueueHealthParams{})
	if err != nil {
		ch <- prometheus.NewInvalidMetric(s.jobs, err)
		return
	}
	for _, q := range stats {
		ch <- prometheus.MustNewConstMetric(s.jobs, prometheus.GaugeValue, float64(q.ReadyTotal()), q.Queue, StatusReady)
		ch <- prometheus.MustNewConstMetric(s.jobs, prometheus.GaugeValue, float64(q.Running), q.Queue, StatusRunning)
		ch <- prometheus.MustNewConstMetric(s.jobs, prometheus.GaugeValue, float64(q.Dead), q.Queue, StatusDead)
		ch <- prometheus.MustNewConstMetric(s.expired, prometheus.GaugeValue, float64(q.ExpiredLeases), q.Queue)
		ch <- prometheus.MustNewConstMetric(s.oldest, prometheus.GaugeValue, q.OldestReadySeconds, q.Queue)
		p := 0.0
		if q.Paused {
			p = 1
		}
		ch <- prometheus.MustNewConstMetric(s.paused, prometheus.GaugeValue, p, q.Queue)
	}
}
