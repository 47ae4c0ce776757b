package web

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/pgconsole/console/diagnostics/episodes"
	"github.com/pgconsole/console/diagnostics/recorder"
	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/views"
)

// historyStrips are the scrubber's ranges: the hour or the day up to the
// window's end.
var historyStrips = []struct {
	key, label string
	d          time.Duration
}{{"1h", "1 hour", time.Hour}, {"24h", "1 day", 24 * time.Hour}}

// historyStripMoments bounds the samples the strip reads (a day of samples
// every 10 seconds is 8,640; the newest are kept).
const historyStripMoments = 2000

// stripRange is the scrubber's range for q: its span up to the window's end.
func stripRange(q historyQuery) (from, to time.Time) {
	for _, s := range historyStrips {
		if s.key == q.strip {
			return q.to.Add(-s.d), q.to
		}
	}
	return q.to.Add(-time.Hour), q.to
}

// stripEvidence is what the scrubber read: the episodes that started in
// its range (most waited first, Limited when there were more) and the
// samples that found backends blocked.
type stripEvidence struct {
	Episodes []episodes.Episode
	Limited  bool
	Moments  []recorder.HistoryMoment
}

// historyStrip lays out the scrubber: each episode and each chain of
// blocked samples at its place in the range, as a fraction of it, and the
// moment shown. What falls outside the range is not drawn. No I/O.
func historyStrip(q historyQuery, ev stripEvidence) views.HistoryStrip {
	from, to := stripRange(q)
	span := to.Sub(from).Seconds()
	frac := func(t time.Time) float64 { return t.Sub(from).Seconds() / span * 100 }
	st := views.HistoryStrip{From: inputTime(from, q.loc), To: inputTime(to, q.loc), Limited: ev.Limited}
	for _, s := range historyStrips {
		v := q
		v.strip = s.key
		st.Spans = append(st.Spans, views.HistoryWindowLink{Label: s.label, Href: v.href(q.window, q.at), Active: q.strip == s.key})
	}
	for _, e := range ev.Episodes {
		end := e.Start.Add(e.Duration())
		if end.Before(from) || e.Start.After(to) {
			continue
		}
		x, w := stripPlace(frac(e.Start), frac(end))
		level := "low"
		switch {
		case e.WaitedSeconds >= 30:
			level = "high"
		case e.WaitedSeconds >= 5:
			level = "mid"
		}
		st.Episodes = append(st.Episodes, views.HistoryStripMark{X: x, W: w, Level: level, Href: episodeHref(e),
			Label: fmt.Sprintf("Lock episode at %s: %s, %d waiting at most, %s waited in all, root %s", inputTime(e.Start, q.loc),
				humanize.SecondsTenths(e.Duration().Seconds()), e.PeakWaiting, humanize.SecondsTenths(e.WaitedSeconds), orDash(e.RootApplication))})
	}
	// A sample stands for the interval after it; a chain of them from its
	// first to its last sample.
	const sampleEvery = 10 * time.Second
	for _, ch := range recorder.HistoryChains(ev.Moments) {
		if ch.Last.Before(from) || ch.First.After(to) {
			continue
		}
		x, w := stripPlace(frac(ch.First), frac(ch.Last.Add(sampleEvery)))
		level := "low"
		switch {
		case ch.Worst.Blocked >= 10:
			level = "high"
		case ch.Worst.Blocked >= 3:
			level = "mid"
		}
		st.Samples = append(st.Samples, views.HistoryStripMark{X: x, W: w, Level: level, Href: q.href(q.window, ch.Worst.At),
			Label: fmt.Sprintf("Sample at %s: %d blocked behind %s (%d %s in a row)", inputTime(ch.Worst.At, q.loc),
				ch.Worst.Blocked, ch.Worst.Root(), ch.Samples, plural(ch.Samples, "sample", "samples"))})
	}
	if !q.at.Before(from) && !q.at.After(to) {
		st.AtShown, st.AtX = true, strconv.FormatFloat(frac(q.at), 'f', 2, 64)
	}
	return st
}

// stripPlace is a mark from percent a to percent b of the strip, clipped
// to it and at least half a percent wide, so a blip can be seen and
// clicked.
func stripPlace(a, b float64) (x, w string) {
	a, b = max(a, 0), min(b, 100)
	width := max(b-a, 0.5)
	a = min(a, 100-width)
	return strconv.FormatFloat(a, 'f', 2, 64), strconv.FormatFloat(width, 'f', 2, 64)
}

// historyStripEvidence reads what the scrubber marks: the most waited
// episodes that started in its range and the samples that found backends
// blocked.
func (s *Server) historyStripEvidence(ctx context.Context, q historyQuery) (stripEvidence, error) {
	from, to := stripRange(q)
	var ev stripEvidence
	eps, err := episodes.List(ctx, s.cfg.Pool, episodes.ListParams{Since: from, Until: to, Limit: episodes.ListMax + 1, Bare: true})
	if err != nil {
		return ev, err
	}
	if len(eps) > episodes.ListMax {
		eps, ev.Limited = eps[:episodes.ListMax], true
	}
	ev.Episodes = eps
	if ev.Moments, err = recorder.HistoryMoments(ctx, s.cfg.Pool, from, to, historyStripMoments); err != nil {
		return ev, err
	}
	return ev, nil
}
