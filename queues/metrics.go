package queues

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the engine's Prometheus series, labelled by queue (bounded by
// configuration; never by job id).
type metrics struct {
	enqueued     *prometheus.CounterVec
	queueWait    *prometheus.HistogramVec
	claimed      *prometheus.CounterVec
	finished     *prometheus.CounterVec // result: done, retried, dead, released
	retries      *prometheus.CounterVec
	deadLetters  *prometheus.CounterVec
	staleAcks    *prometheus.CounterVec
	leaseLost    *prometheus.CounterVec // reason: local_deadline, renew_refused
	panics       *prometheus.CounterVec
	claimErrors  *prometheus.CounterVec
	engineErrors *prometheus.CounterVec // op, sqlstate_class
	expired      *prometheus.CounterVec // result: ready, dead
	inFlight     *prometheus.GaugeVec
	claimSeconds *prometheus.HistogramVec
	ackSeconds   *prometheus.HistogramVec
	runSeconds   *prometheus.HistogramVec
}

// queueMetrics are one queue's series that every job touches, resolved
// once: looking a child up by label values hashes them under a lock, and
// per job that showed in the engine's profile.
type queueMetrics struct {
	inFlight   prometheus.Gauge
	runSeconds prometheus.Observer
	ackSeconds prometheus.Observer
	queueWait  prometheus.Observer
	claimed    prometheus.Counter
	done       prometheus.Counter
}

func (m *metrics) forQueue(queue string) queueMetrics {
	return queueMetrics{
		inFlight:   m.inFlight.WithLabelValues(queue),
		runSeconds: m.runSeconds.WithLabelValues(queue),
		ackSeconds: m.ackSeconds.WithLabelValues(queue),
		queueWait:  m.queueWait.WithLabelValues(queue),
		claimed:    m.claimed.WithLabelValues(queue),
		done:       m.finished.WithLabelValues(queue, StatusDone),
	}
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		enqueued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queues_jobs_enqueued_total", Help: "Jobs enqueued through this process's Client (Enqueue, EnqueueMany).",
		}, []string{"queue"}),
		queueWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "queues_job_queue_wait_seconds",
			Help:    "Time a job waited between becoming available and being claimed (database clock), per claim.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 16),
		}, []string{"queue"}),
		claimed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queues_jobs_claimed_total", Help: "Jobs leased to this process.",
		}, []string{"queue"}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queues_jobs_finished_total", Help: "Attempts ended, by result (done, retried, dead, released, lease_lost: the lease was lost while the handler ran and its result was discarded, ack_failed: the handler succeeded but its ack was not written (refused because the lease was lost meanwhile, failed, or of unknown outcome), so the job may run again, no_connection: handed back without spending an attempt).",
		}, []string{"queue", "result"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queues_job_retries_total", Help: "Failed attempts scheduled for a retry.",
		}, []string{"queue"}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queues_dead_letters_total", Help: "Jobs this process sent to dead.",
		}, []string{"queue"}),
		staleAcks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queues_stale_acks_total", Help: "Acks, fails or releases refused because the lease was lost (fencing).",
		}, []string{"queue"}),
		leaseLost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queues_lease_lost_total",
			Help: "Handlers cancelled because their job's lease was lost, by reason (local_deadline: no renewal reached the database before the worker's own lease deadline, as when it is unreachable; renew_refused: the database no longer holds the job for this worker).",
		}, []string{"queue", "reason"}),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queues_handler_panics_total", Help: "Handler panics turned into failed attempts.",
		}, []string{"queue"}),
		claimErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queues_claim_errors_total", Help: "Claims that failed (the fetcher backs off).",
		}, []string{"queue"}),
		engineErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queues_engine_errors_total",
			Help: "Errors the engine met talking to the database, by operation (claim, ack, fail, renew, heartbeat, settings, reap, reconcile, listen) and SQLSTATE class (53: insufficient resources such as a full disk; 08: connection; 57: operator intervention; none: not from the server).",
		}, []string{"op", "sqlstate_class"}),
		expired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queues_expired_leases_total", Help: "Expired leases returned by this process's reaper, by new status.",
		}, []string{"queue", "status"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "queues_jobs_in_flight", Help: "Jobs this process is running.",
		}, []string{"queue"}),
		claimSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "queues_claim_duration_seconds", Help: "Latency of claim statements.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}, []string{"queue"}),
		ackSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "queues_ack_duration_seconds", Help: "Latency from handler return to committed ack.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}, []string{"queue"}),
		runSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "queues_job_run_duration_seconds", Help: "Handler run time per attempt.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14),
		}, []string{"queue"}),
	}
	if reg == nil {
		return m
	}
	m.enqueued = register(reg, m.enqueued)
	m.queueWait = register(reg, m.queueWait)
	m.claimed = register(reg, m.claimed)
	m.finished = register(reg, m.finished)
	m.retries = register(reg, m.retries)
	m.deadLetters = register(reg, m.deadLetters)
	m.staleAcks = register(reg, m.staleAcks)
	m.leaseLost = register(reg, m.leaseLost)
	m.panics = register(reg, m.panics)
	m.claimErrors = register(reg, m.claimErrors)
	m.engineErrors = register(reg, m.engineErrors)
	m.expired = register(reg, m.expired)
	m.inFlight = register(reg, m.inFlight)
	m.claimSeconds = register(reg, m.claimSeconds)
	m.ackSeconds = register(reg, m.ackSeconds)
	m.runSeconds = register(reg, m.runSeconds)
	return m
}

// register registers c, or returns the collector already registered under
// the same description, so that a second Client on one registry shares the
// series.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}
