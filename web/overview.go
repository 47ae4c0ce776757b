package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/views"
)

// overviewWait bounds how long the overview and the findings API wait for
// a diagnostics round (a round itself ends within diagnostics'
// Config.Budget).
const overviewWait = 10 * time.Second

// overview shows the findings, worst first, and the tiles, from the shared
// diagnostics round: every open tab polls it, so it is the round of the
// last few seconds (diagnostics.Config.RoundMaxAge), not one per request.
func (s *Server) overview(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), overviewWait)
	defer cancel()
	p, _ := principalFrom(c)
	var m views.Overview
	if err := s.db.check(ctx); err != nil {
		m.Error = "Database not answering"
		if since, down := s.db.down(); down {
			m.Error += notAnsweringFor(since, time.Now())
		}
		m.Error += ": no findings until it answers. This panel retries by itself."
	} else if round, err := s.cfg.Diagnostics.LatestRound(ctx, 0); err != nil {
		m.Error = "No diagnostics round finished within " + overviewWait.String() + "; the next refresh tries again."
	} else {
		th := s.cfg.Diagnostics.Thresholds()
		now := time.Now()
		m = overviewModel(round, diagnostics.Evaluate(round, th), th, p.Role, now)
		addSparklines(m.Tiles, s.cfg.Sampler, th, now)
	}
	m.RefreshURL = "/"
	return s.render(c, page{Title: "Overview", Nav: "overview", Model: m, Body: views.OverviewBody(m)})
}

// findingsAPI serves GET /api/v1/findings: the same findings as the
// overview, from the same shared round.
func (s *Server) findingsAPI(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), overviewWait)
	defer cancel()
	round, err := s.cfg.Diagnostics.LatestRound(ctx, 0)
	if err != nil {
		return fmt.Errorf("wait for a diagnostics round: %w", err)
	}
	return c.JSON(http.StatusOK, diagnostics.Report{GeneratedAt: round.At,
		Findings: diagnostics.Evaluate(round, s.cfg.Diagnostics.Thresholds())})
}

// overviewModel maps a diagnostics round to the overview's view model.
func overviewModel(r diagnostics.Round, findings []diagnostics.Finding, th diagnostics.Thresholds, role string, now time.Time) views.Overview {
	m := views.Overview{GeneratedAt: r.At.UTC().Format(time.RFC3339), AsOf: "as of " + r.At.UTC().Format("15:04:05") + " UTC"}
	m.Findings = findingRows(findings, role)
	m.Tiles = overviewTiles(r, findings, th)
	return m
}

// overviewTiles are the numbers that matter, each with its state taken from
// the findings about it (so a tile and a finding never disagree).
func overviewTiles(r diagnostics.Round, findings []diagnostics.Finding, th diagnostics.Thresholds) []views.Tile {
	worst := func(prefixes ...string) string {
		state := "ok"
		for _, f := range findings {
			for _, p := range prefixes {
				if f.Code == p {
					if f.Severity == diagnostics.SeverityCritical {
						return "critical"
					}
					if f.Severity == diagnostics.SeverityWarning {
						state = "warning"
					}
				}
			}
		}
		return state
	}
	unavailable := func(check string) bool {
		for _, u := range r.Unavailable {
			if u.Check == check {
				return true
			}
		}
		return false
	}

	var ready, running, dead, expired int64
	var oldest float64
	for _, q := range r.Queues {
		ready += q.Ready
		running += q.Running
		dead += q.Dead
		expired += q.ExpiredLeases
		if q.OldestReadySeconds > oldest {
			oldest = q.OldestReadySeconds
		}
	}
	tiles := []views.Tile{
		{ID: "queue-ready", Label: "Ready jobs", Value: humanInt(ready), Meta: oldestText(ready, oldest),
			State: worst(diagnostics.CodeQueueBacklog, diagnostics.CodeQueuePaused, diagnostics.CodeWorkersNoneAlive), Href: "/queues",
			Threshold: "alert at " + humanSeconds(th.QueueBacklogAge.Seconds())},
		{ID: "queue-running", Label: "Running jobs", Value: humanInt(running), Meta: humanInt(expired) + " expired leases",
			State: worst(diagnostics.CodeExpiredLeases), Href: "/queues", Threshold: fmt.Sprintf("alert at %d expired", th.ExpiredLeases)},
		{ID: "queue-dead", Label: "Dead letters", Value: humanInt(dead),
			State: worst(diagnostics.CodeDeadLetters), Href: "/deadletters",
			Threshold: fmt.Sprintf("alert at %d in %s", th.DeadLetters, humanSeconds(th.DeadLetterWindow.Seconds()))},
	}
	if unavailable(diagnostics.CheckQueueHealth) {
		for i := range tiles {
			tiles[i].State, tiles[i].Value = "unknown", "?"
		}
	}

	outbox := views.Tile{ID: "outbox", Label: "Outbox pending", Value: "?", State: "unknown", Href: "/outbox"}
	if r.Outbox != nil {
		outbox.Value = humanInt(r.Outbox.Pending)
		outbox.Meta = oldestText(r.Outbox.Pending, r.Outbox.OldestPendingSeconds)
		outbox.State = worst(diagnostics.CodeOutboxBacklog, diagnostics.CodeOutboxDead)
		outbox.Threshold = "alert at " + humanSeconds(th.OutboxBacklogAge.Seconds())
	}

	blocked := 0
	for _, n := range r.Blocking {
		if !n.IsRoot {
			blocked++
		}
	}
	var oldestTx float64
	for _, b := range r.Activity {
		if b.XactAgeSeconds > oldestTx {
			oldestTx = b.XactAgeSeconds
		}
	}
	locks := views.Tile{ID: "blocked", Label: "Blocked backends", Value: fmt.Sprint(blocked),
		Meta: "oldest transaction " + humanSeconds(oldestTx), Href: diagnostics.RunbookURL(diagnostics.StepBlocking),
		State:     worst(diagnostics.CodeRootBlocker, diagnostics.CodeLongRunning, diagnostics.CodeIdleInTransaction),
		Threshold: "alert at " + humanSeconds(th.RootBlockerWait.Seconds()) + " wait"}
	if unavailable(diagnostics.CheckBlockingTree) {
		locks.State, locks.Value = "unknown", "?"
	}

	var lagBytes int64
	var lagSeconds float64
	for _, st := range r.Replication {
		if st.ReplayLagBytes > lagBytes {
			lagBytes = st.ReplayLagBytes
		}
		if st.ReplayLagSeconds != nil && *st.ReplayLagSeconds > lagSeconds {
			lagSeconds = *st.ReplayLagSeconds
		}
	}
	repl := views.Tile{ID: "replication", Label: "Replication lag", Value: humanBytes(float64(lagBytes)),
		Meta: fmt.Sprintf("%d standbys, %s", len(r.Replication), humanSeconds(lagSeconds)), Href: diagnostics.RunbookURL(diagnostics.StepReplication),
		State:     worst(diagnostics.CodeReplicationLag),
		Threshold: "alert at " + humanBytes(float64(th.ReplicationLagBytes))}
	if len(r.Replication) == 0 {
		repl.Value, repl.Meta = "none", "no standby attached"
	}

	var retained int64
	for _, sl := range r.Slots {
		if sl.RetainedBytes > retained {
			retained = sl.RetainedBytes
		}
	}
	slots := views.Tile{ID: "slots", Label: "Slot retention", Value: humanBytes(float64(retained)),
		Meta: fmt.Sprintf("%d slots", len(r.Slots)), Href: diagnostics.RunbookURL(diagnostics.StepReplication),
		State:     worst(diagnostics.CodeSlotRetention, diagnostics.CodeSlotInactive),
		Threshold: "alert at " + humanBytes(float64(th.SlotRetentionBytes))}

	wal := views.Tile{ID: "wal", Label: "WAL rate", Value: "measuring", State: "unknown", Href: diagnostics.RunbookURL(diagnostics.StepResources)}
	if r.WALRate != nil {
		wal.Value = humanBytes(*r.WALRate) + "/s"
		wal.State = worst(diagnostics.CodeWALRateHigh)
		wal.Threshold = "alert at " + humanBytes(float64(th.WALRate)) + "/s"
	}
	return append(tiles, outbox, locks, repl, slots, wal)
}

// oldestText says how long the oldest item has waited, or that none waits.
func oldestText(n int64, seconds float64) string {
	if n == 0 {
		return "none waiting"
	}
	return "oldest waited " + humanSeconds(seconds)
}

// addSparklines puts each tile's trend from the sampler beside its number,
// with the threshold line where the tile has one.
func addSparklines(tiles []views.Tile, smp *diagnostics.Sampler, th diagnostics.Thresholds, now time.Time) {
	queueField := func(field string) func(string) bool {
		return func(n string) bool { return strings.HasPrefix(n, "queue.") && strings.HasSuffix(n, "."+field) }
	}
	for i := range tiles {
		t := &tiles[i]
		switch t.ID {
		case "queue-ready":
			t.Spark = spark(combined(smp, queueField("ready"), false, now), 0, "ready jobs, last 30 minutes")
		case "queue-running":
			t.Spark = spark(combined(smp, queueField("running"), false, now), 0, "running jobs, last 30 minutes")
		case "queue-dead":
			t.Spark = spark(combined(smp, queueField("dead"), false, now), 0, "dead letters, last 30 minutes")
		case "outbox":
			t.Spark = spark(series(smp, "outbox.pending", now), 0, "pending outbox events, last 30 minutes")
		case "blocked":
			t.Spark = spark(series(smp, "blocked_backends", now), 0, "blocked backends, last 30 minutes")
		case "replication":
			t.Spark = spark(combined(smp, func(n string) bool {
				return strings.HasPrefix(n, "replication.") && strings.HasSuffix(n, ".replay_lag_bytes")
			}, true, now), float64(th.ReplicationLagBytes), "worst replay lag, last 30 minutes")
		case "slots":
			t.Spark = spark(combined(smp, func(n string) bool {
				return strings.HasPrefix(n, "slot.") && strings.HasSuffix(n, ".retained_bytes")
			}, true, now), float64(th.SlotRetentionBytes), "largest slot retention, last 30 minutes")
		case "wal":
			t.Spark = spark(series(smp, "wal.bytes_per_second", now), th.WALRate, "WAL bytes per second, last 30 minutes")
		}
	}
}
