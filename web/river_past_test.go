package web

import (
	"net/url"
	"testing"
	"time"

	riverqueue "github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics/recorder"
	"github.com/pgconsole/console/diagnostics/sampler"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/views"
)

// River's queue pages have a past: the flight recorder keeps River's
// queue rows, and /queues and /queues/{name} at a recorded moment are the
// live pages of that moment's rows. Two samples with more jobs waiting in
// between: the first moment shows the first numbers (as the live page
// showed them then), the second the second.
func TestRiverQueuePagesInThePast(t *testing.T) {
	testdb.SkipShort(t, "a River client working jobs")
	t.Parallel()
	ctx := t.Context()
	e := riverSetup(t)
	c := e.signedIn(t, auth.RoleViewer)
	d := e.srv.cfg.Diagnostics
	d.SetRiver(true)
	rec := recorder.New(d, e.srv.cfg.Pool, recorder.Config{Interval: time.Millisecond, Name: "test-console"})
	e.srv.cfg.Recorder = rec
	smp := sampler.New(d, sampler.Config{Interval: time.Hour})

	first := smp.SampleNow(ctx)
	require.NotEmpty(t, first.RiverQueues, "the sample reads River's queues")
	require.NoError(t, rec.Record(ctx, first))
	liveBefore := sourcePage(t, c, "/queues/billing")
	liveListBefore := sourcePage(t, c, "/queues")

	// Three more jobs wait in the paused queue, inserted by River's client.
	inserter, err := riverqueue.NewClient(riverpgxv5.New(e.owner), &riverqueue.Config{})
	require.NoError(t, err)
	for range 3 {
		_, err := inserter.Insert(ctx, riverOK{}, &riverqueue.InsertOpts{Queue: "billing"})
		require.NoError(t, err)
	}
	second := smp.SampleNow(ctx)
	require.NoError(t, rec.Record(ctx, second))
	liveAfter := sourcePage(t, c, "/queues/billing")
	require.Equal(t, "5", factOf(t, liveAfter, "available"))

	between := first.At.Add(second.At.Sub(first.At) / 2)
	at := func(ts time.Time) string { return "?at=" + url.QueryEscape(ts.Format(time.RFC3339Nano)) }

	pastFirst := sourcePage(t, c, "/queues/billing"+at(between))
	require.Contains(t, pastFirst.History, "History · at")
	require.Empty(t, pastFirst.Missing)
	require.Equal(t, "2", factOf(t, pastFirst, "available"), "the first moment shows the first count")
	require.Equal(t, sameReading(t, liveBefore.Facts), sameReading(t, pastFirst.Facts), "the past page is the live page of that moment")

	pastList := sourcePage(t, c, "/queues"+at(between))
	require.Equal(t, sameReading(t, liveListBefore.Panels[0].Rows), sameReading(t, pastList.Panels[0].Rows))
	p := pastList.Panels[0]
	require.Equal(t, "2", cellOf(t, p, rowOf(t, p, "billing"), "available").Text)

	pastSecond := sourcePage(t, c, "/queues/billing"+at(second.At))
	require.Equal(t, "5", factOf(t, pastSecond, "available"), "the second moment shows the second count")
	require.Equal(t, sameReading(t, liveAfter.Facts), sameReading(t, pastSecond.Facts))

	early := sourcePage(t, c, "/queues/billing"+at(first.At.Add(-time.Hour)))
	require.Contains(t, early.Missing, "No sample of River's queues was recorded")
	html := c.page("/queues/billing" + at(between))
	require.Contains(t, html, `data-testid="history-mark"`)
	require.Contains(t, html, "Not recorded: history keeps", "what history does not keep says so")
}

// factOf is the value of a page's fact labelled label.
func factOf(t *testing.T, p views.SourcePage, label string) string {
	t.Helper()
	for _, f := range p.Facts {
		if f.Label == label {
			return f.Value
		}
	}
	t.Fatalf("no fact %q on %s: %+v", label, p.Title, p.Facts)
	return ""
}
