package web

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFormat(t *testing.T) {
	require.Equal(t, "2.5/s", humanRate(2.5))
	require.Equal(t, "1,235/s", humanRate(1234.6))

	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	a := age(now.Add(-252*time.Second), now)
	require.Equal(t, "4m12s ago", a.Text)
	require.Equal(t, "2026-12-02T11:55:48Z", a.UTC)
	require.Equal(t, "in 10s", age(now.Add(10*time.Second), now).Text)
	require.Equal(t, "never", agePtr(nil, now).Text)
	require.Equal(t, "abc…", truncate("abc   def", 4))

	s := spark(trendOf(0, 5, 10), 5, "jobs", count)
	require.Equal(t, "0.0,27.0 50.0,14.0 100.0,1.0", s.Points)
	require.Equal(t, "14.0", s.Threshold)
	require.Equal(t, "10", s.Max)
	require.Equal(t, "0", s.Min)
	require.Equal(t, "11:58", s.From)
	require.Equal(t, "12:00", s.To)
	require.Len(t, s.Dots, 3)
	require.Equal(t, "11:59:00 UTC · 5 jobs", s.Dots[1].Text)
	require.Equal(t, "25.00", s.Dots[1].X, "the middle point owns the chart from halfway to its neighbours")
	require.Equal(t, "50.00", s.Dots[1].Width)
	require.Equal(t, "12:00:00 UTC · 10 jobs", s.Latest)
	require.Empty(t, s.Mark, "live: no moment marked")
	require.Empty(t, spark(trendOf(1), 0, "x", count).Points, "one point is no trend")

	past := trendOf(0, 5, 10)
	past.mark = past.points[1].at
	require.Equal(t, "50.0", spark(past, 0, "jobs", count).Mark)
	require.Equal(t, "11:59:00 UTC · 5 jobs", spark(past, 0, "jobs", count).Latest, "the readout rests on the moment")
	require.Equal(t, "jobs, 11:58 to 12:00 UTC", spark(past, 0, "jobs", count).Label)
}

// trendOf is a trend of values sampled a minute apart, the last at noon.
func trendOf(values ...float64) trend {
	end := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	tr := trend{from: end.Add(-time.Duration(len(values)-1) * time.Minute), to: end}
	for i, v := range values {
		tr.points = append(tr.points, trendPoint{tr.from.Add(time.Duration(i) * time.Minute), v})
	}
	return tr
}
