package web

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/recorder"
	"github.com/pgconsole/console/diagnostics/sampler"
	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/views"
)

// sparkWindow is how much of the sampler's memory a live sparkline shows.
const sparkWindow = 30 * time.Minute

// trend is one series for a chart: its points, oldest first, the time it
// spans, and the moment to mark (zero for none: live).
type trend struct {
	points   []trendPoint
	from, to time.Time
	mark     time.Time
}

// trendPoint is one value of a trend and when it was sampled.
type trendPoint struct {
	at time.Time
	v  float64
}

// liveTrend is a trend of the last sparkWindow before now.
func liveTrend(points []trendPoint, now time.Time) trend {
	return trend{points: points, from: now.Add(-sparkWindow), to: now}
}

// series reads one sampler series within the sparkline window. A nil
// sampler (tests, CLI) gives nothing.
func series(s *sampler.Sampler, name string, now time.Time) trend {
	if s == nil {
		return liveTrend(nil, now)
	}
	var out []trendPoint
	for _, p := range s.Series(name) {
		if now.Sub(p.At) <= sparkWindow {
			out = append(out, trendPoint{p.At, p.Value})
		}
	}
	return liveTrend(out, now)
}

// combined merges the series whose names match, point by point at equal
// sample times, with sum or max: the total ready jobs over every queue, the
// worst replication lag over every standby.
func combined(s *sampler.Sampler, match func(string) bool, useMax bool, now time.Time) trend {
	if s == nil {
		return liveTrend(nil, now)
	}
	byTime := map[time.Time]float64{}
	for _, name := range s.SeriesNames() {
		if !match(name) {
			continue
		}
		for _, p := range s.Series(name) {
			if now.Sub(p.At) > sparkWindow {
				continue
			}
			cur, seen := byTime[p.At]
			switch {
			case !seen:
				byTime[p.At] = p.Value
			case useMax && p.Value > cur:
				byTime[p.At] = p.Value
			case !useMax:
				byTime[p.At] = cur + p.Value
			}
		}
	}
	times := make([]time.Time, 0, len(byTime))
	for t := range byTime {
		times = append(times, t)
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	out := make([]trendPoint, len(times))
	for i, t := range times {
		out[i] = trendPoint{t, byTime[t]}
	}
	return liveTrend(out, now)
}

// spanText says what time a chart spans: "last 30 minutes" live, or the
// range of the past it shows.
func (tr trend) spanText() string {
	if tr.mark.IsZero() {
		return "last " + strings.TrimSuffix(humanize.Seconds(tr.to.Sub(tr.from).Seconds()), "00s")
	}
	return axisTime(tr.from, tr) + " to " + axisTime(tr.to, tr) + " UTC"
}

// axisTime labels a time on a chart's x axis: the time of day, with the
// date when the chart spans more than a day.
func axisTime(t time.Time, tr trend) string {
	if tr.to.Sub(tr.from) > 24*time.Hour {
		return t.UTC().Format("2 Jan 15:04")
	}
	return t.UTC().Format("15:04")
}

// spark draws a trend in the 100x28 box of views.Sparkline, x by time over
// the trend's span, y from the lower of zero and the least value up to the
// larger of the greatest value and threshold (no line when threshold is 0),
// with the y scale, the x labels and one hover value per point; show
// formats a value. noun names what is drawn ("ready jobs"). The readout
// rests on the last point, or in the past on the moment shown. Fewer than
// two points draw nothing.
func spark(tr trend, threshold float64, noun string, show func(float64) string) views.Spark {
	values := tr.points
	if len(values) < 2 {
		return views.Spark{}
	}
	lo, hi := values[0].v, values[0].v
	for _, p := range values {
		lo, hi = math.Min(lo, p.v), math.Max(hi, p.v)
	}
	if threshold > 0 {
		hi = math.Max(hi, threshold)
	}
	lo = math.Min(lo, 0)
	span := hi - lo
	if span == 0 {
		span = 1
	}
	from, to := tr.from, tr.to
	if !from.Before(to) {
		from, to = values[0].at, values[len(values)-1].at
	}
	width := to.Sub(from).Seconds()
	if width <= 0 {
		width = 1
	}
	x := func(t time.Time) float64 { return math.Max(0, math.Min(100, t.Sub(from).Seconds()/width*100)) }
	y := func(v float64) float64 { return 27 - (v-lo)/span*26 }
	var b strings.Builder
	s := views.Spark{Label: noun + ", " + tr.spanText(), Max: show(hi), Min: show(lo),
		From: axisTime(from, tr), To: axisTime(to, tr)}
	for i, p := range values {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.1f,%.1f", x(p.at), y(p.v))
		// Each point owns the slice of the chart nearest to it.
		left, right := 0.0, 100.0
		if i > 0 {
			left = (x(values[i-1].at) + x(p.at)) / 2
		}
		if i+1 < len(values) {
			right = (x(p.at) + x(values[i+1].at)) / 2
		}
		s.Dots = append(s.Dots, views.SparkDot{X: fmt.Sprintf("%.2f", left), Width: fmt.Sprintf("%.2f", math.Max(right-left, 0.01)),
			Text: p.at.UTC().Format("15:04:05") + " UTC · " + show(p.v) + " " + noun})
	}
	s.Points = b.String()
	s.Latest = s.Dots[len(s.Dots)-1].Text
	if threshold > 0 {
		s.Threshold = fmt.Sprintf("%.1f", y(threshold))
	}
	if !tr.mark.IsZero() && !tr.mark.Before(from) && !tr.mark.After(to) {
		s.Mark = fmt.Sprintf("%.1f", x(tr.mark))
		// In the past the readout rests on the moment shown.
		for i, p := range values {
			if !p.at.After(tr.mark) {
				s.Latest = s.Dots[i].Text
			}
		}
	}
	return s
}

// count shows a count on a chart's scale.
func count(v float64) string { return humanize.Int(int64(math.Round(v))) }

// bytesPerSecond shows a rate of bytes on a chart's scale.
func bytesPerSecond(v float64) string { return humanize.Bytes(v) + "/s" }

// pastTileTrends are the overview tiles' trends over the picked range,
// from recorded samples, with the picked moment marked.
func pastTileTrends(ctx context.Context, db diagnostics.DBTX, t travel) (map[string]trend, error) {
	read := func(check string) ([]recorder.HistoryEntry, error) {
		return recorder.HistorySeries(ctx, db, check, t.q.from, t.q.to, t.q.at, 0)
	}
	out := map[string]trend{}
	qs, err := read(diagnostics.HistoryQueues)
	if err != nil {
		return nil, err
	}
	sum := func(field func(diagnostics.QueueStat) int64) func([]diagnostics.QueueStat) float64 {
		return func(rows []diagnostics.QueueStat) float64 {
			var n int64
			for _, q := range rows {
				n += field(q)
			}
			return float64(n)
		}
	}
	out["queue-ready"] = pastTrend(qs, t, sum(func(q diagnostics.QueueStat) int64 { return q.Ready }))
	out["queue-running"] = pastTrend(qs, t, sum(func(q diagnostics.QueueStat) int64 { return q.Running }))
	out["queue-dead"] = pastTrend(qs, t, sum(func(q diagnostics.QueueStat) int64 { return q.Dead }))
	for _, part := range []struct {
		tile, check string
		value       func(json.RawMessage) (float64, bool)
	}{
		{"outbox", diagnostics.HistoryOutbox, decoded(func(o *diagnostics.OutboxStat) float64 { return float64(o.Pending) })},
		{"blocked", diagnostics.HistoryBlockingTree, decoded(func(nodes []diagnostics.BlockingNode) float64 {
			n := 0
			for _, b := range nodes {
				if !b.IsRoot {
					n++
				}
			}
			return float64(n)
		})},
		{"replication", diagnostics.HistoryReplication, decoded(func(rows []diagnostics.Standby) float64 {
			var worst int64
			for _, r := range rows {
				worst = max(worst, r.ReplayLagBytes)
			}
			return float64(worst)
		})},
		{"slots", diagnostics.HistorySlots, decoded(func(rows []diagnostics.Slot) float64 {
			var worst int64
			for _, r := range rows {
				worst = max(worst, r.RetainedBytes)
			}
			return float64(worst)
		})},
	} {
		entries, err := read(part.check)
		if err != nil {
			return nil, err
		}
		out[part.tile] = pastPoints(entries, t, part.value)
	}
	wal, err := read(diagnostics.HistoryWAL)
	if err != nil {
		return nil, err
	}
	out["wal"] = pastPoints(wal, t, func(data json.RawMessage) (float64, bool) {
		var w diagnostics.HistoryWALPoint
		if json.Unmarshal(data, &w) != nil || w.BytesPerSecond == nil {
			return 0, false
		}
		return *w.BytesPerSecond, true
	})
	return out, nil
}

// decoded reads a recorded value as T and measures it; a value that is
// null (the check failed in that sample) or unreadable is left out.
func decoded[T any](measure func(T) float64) func(json.RawMessage) (float64, bool) {
	return func(data json.RawMessage) (float64, bool) {
		var v T
		if string(data) == "null" || json.Unmarshal(data, &v) != nil {
			return 0, false
		}
		return measure(v), true
	}
}

// pastTrend is pastPoints for a value decoded as T.
func pastTrend[T any](entries []recorder.HistoryEntry, t travel, measure func(T) float64) trend {
	return pastPoints(entries, t, decoded(measure))
}

// pastPoints is the trend of recorded entries over t's range, marking t's
// moment.
func pastPoints(entries []recorder.HistoryEntry, t travel, value func(json.RawMessage) (float64, bool)) trend {
	tr := trend{from: t.q.from, to: t.q.to, mark: t.q.at}
	for _, e := range entries {
		if v, ok := value(e.Data); ok {
			tr.points = append(tr.points, trendPoint{e.At, v})
		}
	}
	return tr
}
