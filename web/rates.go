package web

import (
	"slices"
	"time"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/sampler"
	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/views"
)

// A rateView turns a panel of cumulative counters (totals since the last
// reset, useless during an incident) into rates between the sampler's two
// newest samples: the rate columns first, when they were measured, then
// the panel's own columns named in keep, for reference.
type rateView struct {
	rates []rateColumn
	// totals and settings are the panel's columns (catalog names) shown
	// after the rates: counters since the reset (labelled so), then
	// settings and the reset time as they are.
	totals, settings []string
}

// A rateColumn is one of the sampler's series and how the panel shows it.
type rateColumn struct {
	series string
	column views.Column
	format func(float64) string
}

func perSecondBytes(v float64) string { return humanize.Bytes(v) + "/s" }

func perMinute(v float64) string { return humanPer(v, "/min") }

// rateViews are the panels shown as rates.
var rateViews = map[string]rateView{
	diagnostics.CheckWALStats: {
		rates: []rateColumn{
			{"wal.bytes_per_second", views.Column{Label: "WAL per second", Num: true, Hint: "WAL generated per second between the last two samples"}, perSecondBytes},
			{"wal.records_per_second", views.Column{Label: "Records per second", Num: true}, humanRate},
			{"wal.fpi_per_second", views.Column{Label: "Full-page images per second", Num: true, Hint: "full-page images: many right after a checkpoint"}, humanRate},
		},
		totals:   []string{"wal_bytes"},
		settings: []string{"stats_reset"},
	},
	diagnostics.CheckCheckpointer: {
		rates: []rateColumn{
			{"checkpoints.per_minute", views.Column{Label: "Checkpoints per minute", Num: true, Hint: "timed and requested, between the last two samples"}, perMinute},
			{"checkpoints.requested_per_minute", views.Column{Label: "Requested per minute", Num: true, Hint: "checkpoints forced before checkpoint_timeout: WAL reached max_wal_size, or someone asked"}, perMinute},
			{"bgwriter.buffers_alloc_per_second", views.Column{Label: "Buffers allocated per second", Num: true}, humanRate},
		},
		totals:   []string{"checkpoints_timed", "checkpoints_requested"},
		settings: []string{"max_wal_size", "checkpoint_timeout", "stats_reset"},
	},
}

// withRates shows panel name's counters as rates when it is one of
// rateViews. Without two samples (the sampler not running, or just
// started) the panel keeps its totals and says when rates will appear.
func withRates(name string, p views.Panel, smp *sampler.Sampler, now time.Time) views.Panel {
	rv, ok := rateViews[name]
	if !ok || p.Status != "ok" || len(p.Rows) == 0 {
		return p
	}
	rates, from, to, ok := latestRates(smp, rv.rates)
	if !ok {
		p.Note = "These are totals since the counters were last reset, not rates: rates appear once the console has taken two samples (it samples every few seconds while it runs)."
		return p
	}
	cols := make([]views.Column, 0, len(rv.rates)+1+len(rv.totals)+len(rv.settings))
	row := make([]views.Cell, 0, cap(cols))
	for i, r := range rv.rates {
		cols = append(cols, r.column)
		row = append(row, views.Cell{Text: r.format(rates[i])})
	}
	cols = append(cols, views.Column{Label: "Measured", Hint: "the two samples the rates come from"})
	row = append(row, views.Cell{Text: "over " + humanize.Seconds(to.Sub(from).Seconds()) + ", " + humanize.Seconds(now.Sub(to).Seconds()) + " ago",
		Title: utc(from) + " to " + utc(to)})
	for _, k := range slices.Concat(rv.totals, rv.settings) {
		for i, c := range p.Columns {
			if c.Label == views.ColumnLabel(k) {
				if slices.Contains(rv.totals, k) {
					c.Label += " since reset"
				}
				cols = append(cols, c)
				row = append(row, p.Rows[0][i])
				break // before 17 both reset columns read "Counters reset": one is enough
			}
		}
	}
	p.Columns, p.Rows = cols, [][]views.Cell{row}
	return p
}

// latestRates reads each series at the sampler's newest sample that has
// all of them, and the times of the two samples it spans.
func latestRates(smp *sampler.Sampler, cols []rateColumn) (rates []float64, from, to time.Time, ok bool) {
	if smp == nil {
		return nil, from, to, false
	}
	points := make([]map[time.Time]float64, len(cols))
	for i, c := range cols {
		points[i] = map[time.Time]float64{}
		for _, pt := range smp.Series(c.series) {
			points[i][pt.At] = pt.Value
		}
	}
	rates = make([]float64, len(cols))
	samples := smp.Samples()
	for j := len(samples) - 1; j > 0; j-- {
		at := samples[j].At
		found := true
		for i := range cols {
			v, has := points[i][at]
			found = found && has
			rates[i] = v
		}
		if found {
			return rates, samples[j-1].At, at, true
		}
	}
	return nil, from, to, false
}
