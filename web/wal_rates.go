package web

import (
	"time"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/views"
)

// walRateSeries are the sampler's WAL rates the WAL statistics panel shows,
// with their column labels; bytes are shown as a size per second.
var walRateSeries = []struct{ series, label string }{
	{"wal.bytes_per_second", "WAL per second"},
	{"wal.records_per_second", "Records per second"},
	{"wal.fpi_per_second", "Full-page images per second"},
}

// walRates turns the WAL statistics panel, cumulative counters since the
// last reset, into what an operator can read during an incident: WAL bytes,
// records and full-page images per second between the sampler's two newest
// samples, when they were measured, and the total since the reset last.
// Without two samples (the sampler not running, or just started) the panel
// keeps the totals and says when rates will appear.
func walRates(p views.Panel, smp *diagnostics.Sampler, now time.Time) views.Panel {
	if p.Status != "ok" || len(p.Rows) == 0 {
		return p
	}
	rates, from, to, ok := latestWALRates(smp)
	if !ok {
		p.Note = "These are totals since the counters were last reset, not rates: rates per second appear once the console has taken two samples (it samples every few seconds while it runs)."
		return p
	}
	total, reset := views.Cell{Text: "—"}, views.Cell{Text: "—"}
	for i, c := range p.Columns {
		switch c.Label {
		case views.ColumnLabel("wal_bytes"):
			total = p.Rows[0][i]
		case views.ColumnLabel("stats_reset"):
			reset = p.Rows[0][i]
		}
	}
	p.Columns = []views.Column{
		{Label: walRateSeries[0].label, Num: true, Hint: "WAL generated per second between the last two samples"},
		{Label: walRateSeries[1].label, Num: true},
		{Label: walRateSeries[2].label, Num: true, Hint: "full-page images: many right after a checkpoint"},
		{Label: "Measured", Hint: "the two samples the rates come from"},
		{Label: "WAL since reset", Num: true, Hint: "cumulative, for reference"},
		{Label: views.ColumnLabel("stats_reset")},
	}
	measured := views.Cell{Text: "over " + humanSeconds(to.Sub(from).Seconds()) + ", " + humanSeconds(now.Sub(to).Seconds()) + " ago",
		Title: utc(from) + " to " + utc(to)}
	p.Rows = [][]views.Cell{{
		{Text: humanBytes(rates[0]) + "/s"},
		{Text: humanRate(rates[1])},
		{Text: humanRate(rates[2])},
		measured, total, reset,
	}}
	return p
}

// latestWALRates reads each WAL rate at the sampler's newest sample that
// has all of them, and the times of the two samples it spans.
func latestWALRates(smp *diagnostics.Sampler) (rates [3]float64, from, to time.Time, ok bool) {
	if smp == nil {
		return rates, from, to, false
	}
	points := make([]map[time.Time]float64, len(walRateSeries))
	for i, s := range walRateSeries {
		points[i] = map[time.Time]float64{}
		for _, pt := range smp.Series(s.series) {
			points[i][pt.At] = pt.Value
		}
	}
	samples := smp.Samples()
	for j := len(samples) - 1; j > 0; j-- {
		at := samples[j].At
		found := true
		for i := range walRateSeries {
			v, has := points[i][at]
			found = found && has
			rates[i] = v
		}
		if found {
			return rates, samples[j-1].At, at, true
		}
	}
	return rates, from, to, false
}
