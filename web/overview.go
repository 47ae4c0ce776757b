package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/diagnostics/recorder"
	"github.com/pgconsole/console/diagnostics/sampler"
	"github.com/pgconsole/console/internal/humanize"
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
	t, err := parseTravel(c, time.Now().UTC())
	if err != nil {
		return err
	}
	if t.history {
		return s.pastOverview(c, t)
	}
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
		m = overviewModel(round, findings.Evaluate(round, th), th, p.Role, now)
		guard := s.backendGuard(ctx)
		guardFindings(m.Findings, guard)
		if a := m.Story.Action; a != nil {
			if g := guardOffers([]views.ActionLink{*a}, guard); len(g) == 1 {
				m.Story.Action = &g[0]
			}
		}
		withIncidentButtons(m.Findings, s.incidentButton(ctx, c, p.Role))
		addSparklines(m.Tiles, endAtRound(m.Tiles, liveTileTrends(s.cfg.Sampler, now), round.At), th)
	}
	m.RefreshURL = "/"
	return s.render(c, page{Title: "Overview", Nav: "overview", Model: m, Body: views.OverviewBody(m), Travel: &t})
}

// pastOverview is the overview at ?at=: the findings and tiles of the
// newest recorded sample at or before the moment, and the tiles' charts
// over the picked range, from recorded samples. It never refreshes and
// offers no action.
func (s *Server) pastOverview(c echo.Context, t travel) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), overviewWait)
	defer cancel()
	th := s.cfg.Diagnostics.Thresholds()
	doc, e, err := recorder.HistoryDocAt(ctx, s.cfg.Pool, t.q.at)
	if err != nil && !errors.Is(err, recorder.ErrNoHistory) {
		return err
	}
	m := pastOverviewModel(doc, e, err, t.q.at, th, s.historyStatus().Reason)
	trends, err := pastTileTrends(ctx, s.cfg.Pool, t)
	if err != nil {
		return err
	}
	addSparklines(m.Tiles, trends, th)
	return s.render(c, page{Title: "Overview", Nav: "overview", Model: m, Body: views.OverviewBody(m), Travel: &t})
}

// pastOverviewModel maps a recorded sample (or why there is none: err is
// ErrNoHistory) to the overview; no I/O. Ages are counted from the
// sample's time.
func pastOverviewModel(doc recorder.HistoryDoc, e recorder.HistoryEntry, err error, at time.Time, th diagnostics.Thresholds, recording string) views.Overview {
	if err != nil {
		return views.Overview{History: "History · at " + clock(at),
			Missing: "No sample was recorded in the 30 seconds before " + clock(at) + " UTC, so there is nothing to show for that moment. " + recording}
	}
	m := overviewModel(doc.Round(e.At), doc.Findings, th, historyRole, e.At)
	m.History = "History · at " + clock(at) + " (sample " + clock(e.At) + ")"
	m.AsOf = "recorded " + clock(e.At) + " UTC"
	return m
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
	return c.JSON(http.StatusOK, findings.NewReport(round, s.cfg.Diagnostics.Thresholds()))
}

// overviewModel maps a diagnostics round to the overview's view model.
func overviewModel(r diagnostics.Round, list []findings.Finding, th diagnostics.Thresholds, role string, now time.Time) views.Overview {
	m := views.Overview{GeneratedAt: r.At.UTC().Format(time.RFC3339), AsOf: "as of " + r.At.UTC().Format("15:04:05") + " UTC" + slowAsOf(r)}
	m.Story = storyView(list, r.At, role, narrativeOpts)
	m.Findings = findingRows(list, role)
	m.Tiles = overviewTiles(r, list, th)
	return m
}

// slowAsOf says how old the round's catalog-wide checks are when a shared
// round reused the slow clock's read of them; "" when the round read them.
func slowAsOf(r diagnostics.Round) string {
	if r.SlowAt.IsZero() || r.SlowAge() < time.Second {
		return ""
	}
	return "; catalog checks (" + strings.Join(diagnostics.SlowChecks(), ", ") + ") as of " + clock(r.SlowAt) + " UTC, " +
		humanize.Seconds(r.SlowAge().Seconds()) + " old"
}

// narrativeOpts give the narrative each action's title and risk from the
// registry; recordedNarrativeOpts tell a recorded moment, whose action
// fitted then.
var (
	narrativeOpts         = &findings.NarrativeOpts{RiskFunc: actionTitleRisk}
	recordedNarrativeOpts = &findings.NarrativeOpts{RiskFunc: actionTitleRisk, Recorded: true}
)

func actionTitleRisk(name string) (string, string) {
	spec, ok := actions.Lookup(name)
	if !ok {
		return "", ""
	}
	return spec.Title, riskWord(spec.Risk)
}

// storyView is the paragraph that opens the overview and an incident's
// page, told with opts, with the button of the action it recommends when
// role may run it.
func storyView(list []findings.Finding, at time.Time, role string, opts *findings.NarrativeOpts) views.Story {
	n := findings.NewNarrative(list, at, opts)
	st := views.Story{Text: n.Text}
	if n.Action != "" {
		if l, ok := actionLink(n.Action, role, subjectParams(n.Subject)); ok {
			st.Action = &l
		}
	}
	return st
}

// overviewTiles are the numbers that matter, each with its state taken from
// the findings about it (so a tile and a finding never disagree).
func overviewTiles(r diagnostics.Round, list []findings.Finding, th diagnostics.Thresholds) []views.Tile {
	worst := func(prefixes ...string) string {
		state := "ok"
		for _, f := range list {
			for _, p := range prefixes {
				if f.Code == p {
					if f.Severity == findings.SeverityCritical {
						return "critical"
					}
					if f.Severity == findings.SeverityWarning {
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
		{ID: "queue-ready", Label: "Ready jobs", Value: humanize.Int(ready), Number: num(ready), Meta: oldestText(ready, oldest),
			State: worst(findings.CodeQueueBacklog, findings.CodeQueuePaused, findings.CodeWorkersNoneAlive), Href: "/queues",
			Threshold: "alert at " + humanize.Seconds(th.QueueBacklogAge.Seconds())},
		{ID: "queue-running", Label: "Running jobs", Value: humanize.Int(running), Number: num(running), Meta: humanize.Int(expired) + " expired leases",
			State: worst(findings.CodeExpiredLeases), Href: "/queues", Threshold: fmt.Sprintf("alert at %d expired", th.ExpiredLeases)},
		{ID: "queue-dead", Label: "Dead letters", Value: humanize.Int(dead), Number: num(dead),
			State: worst(findings.CodeDeadLetters), Href: "/deadletters",
			Threshold: fmt.Sprintf("alert at %d in %s", th.DeadLetters, humanize.Seconds(th.DeadLetterWindow.Seconds()))},
	}
	if unavailable(diagnostics.CheckQueueHealth) {
		for i := range tiles {
			tiles[i].State, tiles[i].Value, tiles[i].Number = "unknown", "?", nil
		}
	}
	if r.River != nil {
		tiles = riverQueueTiles(r.River, worst, th)
	}

	outbox := views.Tile{ID: "outbox", Label: "Outbox pending", Value: "?", State: "unknown", Href: "/outbox"}
	if r.Outbox != nil {
		outbox.Value, outbox.Number = humanize.Int(r.Outbox.Pending), num(r.Outbox.Pending)
		outbox.Meta = oldestText(r.Outbox.Pending, r.Outbox.OldestPendingSeconds)
		outbox.State = worst(findings.CodeOutboxBacklog, findings.CodeOutboxDead)
		outbox.Threshold = "alert at " + humanize.Seconds(th.OutboxBacklogAge.Seconds())
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
	locks := views.Tile{ID: "blocked", Label: "Blocked backends", Value: fmt.Sprint(blocked), Number: num(blocked),
		Meta: "oldest transaction " + humanize.Seconds(oldestTx), Href: diagnostics.RunbookURL(diagnostics.StepBlocking),
		State:     worst(findings.CodeRootBlocker, findings.CodeLongRunning, findings.CodeIdleInTransaction),
		Threshold: "alert at " + humanize.Seconds(th.RootBlockerWait.Seconds()) + " wait"}
	if unavailable(diagnostics.CheckBlockingTree) {
		locks.State, locks.Value, locks.Number = "unknown", "?", nil
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
	repl := views.Tile{ID: "replication", Label: "Replication lag", Value: humanize.Bytes(float64(lagBytes)), Number: num(lagBytes),
		Meta: fmt.Sprintf("%d standbys, %s", len(r.Replication), humanize.Seconds(lagSeconds)), Href: diagnostics.RunbookURL(diagnostics.StepReplication),
		State:     worst(findings.CodeReplicationLag),
		Threshold: "alert at " + humanize.Bytes(float64(th.ReplicationLagBytes))}
	if len(r.Replication) == 0 {
		repl.Value, repl.Meta = "none", "no standby attached"
	}

	var retained int64
	for _, sl := range r.Slots {
		if sl.RetainedBytes > retained {
			retained = sl.RetainedBytes
		}
	}
	slots := views.Tile{ID: "slots", Label: "Slot retention", Value: humanize.Bytes(float64(retained)), Number: num(retained),
		Meta: fmt.Sprintf("%d slots", len(r.Slots)), Href: diagnostics.RunbookURL(diagnostics.StepReplication),
		State:     worst(findings.CodeSlotRetention, findings.CodeSlotInactive),
		Threshold: "alert at " + humanize.Bytes(float64(th.SlotRetentionBytes))}

	wal := views.Tile{ID: "wal", Label: "WAL rate", Value: "measuring", State: "unknown", Href: diagnostics.RunbookURL(diagnostics.StepResources)}
	if r.WALRate != nil {
		wal.Value, wal.Number = humanize.Bytes(*r.WALRate)+"/s", num(*r.WALRate)
		wal.State = worst(findings.CodeWALRateHigh)
		wal.Threshold = "alert at " + humanize.Bytes(float64(th.WALRate)) + "/s"
	}
	return append(tiles, outbox, locks, repl, slots, wal)
}

// num is a tile's value as its Number.
func num[T int | int64 | float64](v T) *float64 {
	f := float64(v)
	return &f
}

// oldestText says how long the oldest item has waited, or that none waits.
func oldestText(n int64, seconds float64) string {
	if n == 0 {
		return "none waiting"
	}
	return "oldest waited " + humanize.Seconds(seconds)
}

// tileCharts says, for each tile with a chart, what it draws: the noun,
// the threshold line and the value format.
var tileCharts = map[string]struct {
	noun      string
	threshold func(diagnostics.Thresholds) float64
	show      func(float64) string
}{
	"queue-ready":   {"ready jobs", nil, count},
	"queue-running": {"running jobs", nil, count},
	"queue-dead":    {"dead letters", nil, count},
	"outbox":        {"pending outbox events", nil, count},
	"blocked":       {"blocked backends", nil, count},
	"replication":   {"worst replay lag", func(th diagnostics.Thresholds) float64 { return float64(th.ReplicationLagBytes) }, humanize.Bytes},
	"slots":         {"largest slot retention", func(th diagnostics.Thresholds) float64 { return float64(th.SlotRetentionBytes) }, humanize.Bytes},
	"wal":           {"WAL bytes per second", func(th diagnostics.Thresholds) float64 { return th.WALRate }, bytesPerSecond},
}

// addSparklines puts each tile's trend beside its number, with its scale
// and the threshold line where the tile has one.
func addSparklines(tiles []views.Tile, trends map[string]trend, th diagnostics.Thresholds) {
	for i := range tiles {
		t := &tiles[i]
		ch, ok := tileCharts[t.ID]
		if !ok {
			continue
		}
		var threshold float64
		if ch.threshold != nil {
			threshold = ch.threshold(th)
		}
		t.Spark = spark(trends[t.ID], threshold, ch.noun, ch.show)
	}
}

// endAtRound ends each tile's live trend with the tile's own number at the
// round's time, so the big number and the line's last point (and the
// readout under it, which names its time) are the same moment: the
// sampler's newest point can be seconds older than the round.
func endAtRound(tiles []views.Tile, trends map[string]trend, at time.Time) map[string]trend {
	for _, t := range tiles {
		tr, ok := trends[t.ID]
		if !ok || t.Number == nil {
			continue
		}
		pts := tr.points
		for len(pts) > 0 && !pts[len(pts)-1].at.Before(at) {
			pts = pts[:len(pts)-1] // samples taken with or after the round give way to it
		}
		tr.points = append(slices.Clip(pts), trendPoint{at: at, v: *t.Number})
		if tr.to.Before(at) {
			tr.to = at
		}
		trends[t.ID] = tr
	}
	return trends
}

// liveTileTrends are the tiles' trends from the sampler's memory.
func liveTileTrends(smp *sampler.Sampler, now time.Time) map[string]trend {
	queueField := func(field string) func(string) bool {
		return func(n string) bool { return strings.HasPrefix(n, "queue.") && strings.HasSuffix(n, "."+field) }
	}
	return map[string]trend{
		"queue-ready":   combined(smp, queueField("ready"), false, now),
		"queue-running": combined(smp, queueField("running"), false, now),
		"queue-dead":    combined(smp, queueField("dead"), false, now),
		"outbox":        series(smp, "outbox.pending", now),
		"blocked":       series(smp, "blocked_backends", now),
		"replication": combined(smp, func(n string) bool {
			return strings.HasPrefix(n, "replication.") && strings.HasSuffix(n, ".replay_lag_bytes")
		}, true, now),
		"slots": combined(smp, func(n string) bool {
			return strings.HasPrefix(n, "slot.") && strings.HasSuffix(n, ".retained_bytes")
		}, true, now),
		"wal": series(smp, "wal.bytes_per_second", now),
	}
}
