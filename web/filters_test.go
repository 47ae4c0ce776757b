package web

import (
	"errors"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/views"
)

// filterCase is one query string given to a filter parser: the parse fails
// with a 400 whose message contains wantErr, or check inspects the filter.
type filterCase[F any] struct {
	name    string
	query   string
	wantErr string
	check   func(t *testing.T, f F)
}

// runFilterCases runs each case through parse as a parallel subtest.
func runFilterCases[F any](t *testing.T, parse func(queryParams) (F, error), tests []filterCase[F]) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, err := url.ParseQuery(tt.query)
			require.NoError(t, err)
			f, err := parse(q)
			if tt.wantErr != "" {
				var br badRequest
				require.ErrorAs(t, err, &br)
				require.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			tt.check(t, f)
		})
	}
}

func TestParseJobFilter(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	now := time.Date(2026, 12, 3, 12, 30, 0, 0, time.UTC)
	typed := func(want time.Time) func(t *testing.T, f jobListFilter) {
		return func(t *testing.T, f jobListFilter) { require.Equal(t, want, *f.Params.CreatedFrom) }
	}
	tests := []struct {
		name    string
		query   string
		wantErr string
		check   func(t *testing.T, f jobListFilter)
	}{
		{name: "Empty", query: "", check: func(t *testing.T, f jobListFilter) {
			require.Equal(t, jobListDefaultLimit, f.Params.Limit)
			require.Zero(t, f.Params.BeforeID)
			require.Empty(t, f.query())
		}},
		{name: "AllFields", query: "queue=email&kind=send&status=DEAD&error_class=timeout&created_from=2026-12-01T10:00:00Z&created_until=2026-12-02&before=900&limit=20",
			check: func(t *testing.T, f jobListFilter) {
				p := f.Params
				require.Equal(t, "email", p.Queue)
				require.Equal(t, "send", p.Kind)
				require.Equal(t, "dead", p.Status)
				require.Equal(t, "timeout", p.ErrorClass)
				require.Equal(t, from, *p.CreatedFrom)
				require.Equal(t, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), *p.CreatedUntil)
				require.EqualValues(t, 900, p.BeforeID)
				require.Equal(t, 20, p.Limit)
				q := f.query()
				require.Empty(t, q.Get("before"), "the cursor is not part of the filter")
				require.Equal(t, "dead", q.Get("status"))
				require.Equal(t, "20", q.Get("limit"))
			}},
		{name: "DatetimeLocal", query: "created_from=2026-12-01T10:00", check: func(t *testing.T, f jobListFilter) {
			require.Equal(t, from, *f.Params.CreatedFrom)
		}},
		{name: "StatusAny", query: "status=any", check: func(t *testing.T, f jobListFilter) { require.Empty(t, f.Params.Status) }},
		{name: "Jump", query: "id=42", check: func(t *testing.T, f jobListFilter) { require.EqualValues(t, 42, f.JumpID) }},
		{name: "Trimmed", query: "queue=+email+", check: func(t *testing.T, f jobListFilter) { require.Equal(t, "email", f.Params.Queue) }},
		{name: "BadStatus", query: "status=zombie", wantErr: `status "zombie" is not one of running, ready, scheduled, dead, done, all`},
		{name: "SpaceDateTime", query: "created_from=2026-12-01+10:00", check: typed(from)},
		{name: "MinutesAgo", query: "created_from=10m+ago", check: typed(now.Add(-10 * time.Minute))},
		{name: "HoursAgoInWords", query: "created_from=2+hours+ago", check: typed(now.Add(-2 * time.Hour))},
		{name: "DaysAgo", query: "created_from=3d+ago", check: typed(now.Add(-72 * time.Hour))},
		{name: "Yesterday", query: "created_from=Yesterday", check: typed(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))},
		{name: "Offset", query: "created_from=2026-12-01T12:00:00%2B02:00", check: typed(from)},
		{name: "BadTime", query: "created_from=last+tuesday", wantErr: `created_from "last tuesday" is not a time: type 2026-12-03 10:00 (UTC)`},
		{name: "FutureAgo", query: "created_from=10+fortnights+ago", wantErr: `is not a time`},
		{name: "BadUntil", query: "created_until=2026-13-01", wantErr: "created_until"},
		{name: "EmptyRange", query: "created_from=2026-12-02&created_until=2026-12-01", wantErr: "created_from must be before created_until"},
		{name: "NegativeBefore", query: "before=-5", wantErr: `before "-5" is not a positive whole number`},
		{name: "TextBefore", query: "before=abc", wantErr: "before"},
		{name: "NegativeID", query: "id=-1", wantErr: `id "-1" is not a positive whole number`},
		{name: "HugeID", query: "id=99999999999999999999", wantErr: "id"},
		{name: "LimitZero", query: "limit=0", wantErr: "limit \"0\" must be a whole number from 1 to 500"},
		{name: "LimitTooBig", query: "limit=501", wantErr: "limit"},
		{name: "LimitText", query: "limit=lots", wantErr: "limit"},
		{name: "ControlChar", query: "queue=a%00b", wantErr: "queue contains a control character"},
		{name: "InvalidUTF8", query: "kind=%ff", wantErr: "kind contains a control character or invalid UTF-8"},
		{name: "TooLong", query: "error_class=" + strings.Repeat("x", 201), wantErr: "error_class is too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, err := url.ParseQuery(tt.query)
			require.NoError(t, err)
			f, err := parseJobFilter(q, now)
			if tt.wantErr != "" {
				var br badRequest
				require.ErrorAs(t, err, &br)
				require.Contains(t, err.Error(), tt.wantErr)
				require.Len(t, f.Form.Errors, 1, "the message goes next to its field")
				return
			}
			require.Empty(t, f.Form.Errors)
			require.NoError(t, err)
			tt.check(t, f)
		})
	}
}

// FuzzParseJobFilter checks that any query string either parses into
// parameters the database accepts or fails as a badRequest (a 400), never
// anything else.
func FuzzParseJobFilter(f *testing.F) {
	for _, seed := range []string{
		"", "queue=email&status=dead", "status=zombie", "created_from=2026-12-01T10:00",
		"created_from=2026-12-02&created_until=2026-12-01", "before=-5", "limit=0", "limit=500",
		"id=42", "queue=a%00b", "kind=%ff", "created_until=9999-12-31T23:59:59Z", "before=9223372036854775807",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		fl, err := parseJobFilter(q, time.Now())
		if err != nil {
			var br badRequest
			if !errors.As(err, &br) {
				t.Fatalf("%q: error is not a badRequest: %v", raw, err)
			}
			return
		}
		p := fl.Params
		if p.Limit < 1 || p.Limit > jobListMaxLimit || p.BeforeID < 0 || fl.JumpID < 0 {
			t.Fatalf("%q: out of range: %+v", raw, p)
		}
		for _, s := range []string{p.Queue, p.Kind, p.ErrorClass, p.Status} {
			if strings.ContainsRune(s, 0) || len(s) > maxFilterText {
				t.Fatalf("%q: unsafe text %q", raw, s)
			}
		}
		// The filter written back into links parses to the same parameters.
		again, err := parseJobFilter(fl.query(), time.Now())
		if err != nil {
			t.Fatalf("%q: round trip failed: %v", raw, err)
		}
		if again.Params.Queue != p.Queue || again.Params.Status != p.Status || again.Params.Limit != p.Limit {
			t.Fatalf("%q: round trip changed the filter: %+v vs %+v", raw, again.Params, p)
		}
	})
}

// TestParseJobFilterKeepsTheForm: every bad value gets its message next to
// its field, and the boxes keep what was typed, good or bad.
func TestParseJobFilterKeepsTheForm(t *testing.T) {
	t.Parallel()
	q, err := url.ParseQuery("queue=emails&created_from=last+tuesday&limit=lots&status=dead")
	require.NoError(t, err)
	f, err := parseJobFilter(q, time.Now())
	require.Error(t, err)
	require.Equal(t, []string{"created_from", "limit"}, slices.Sorted(maps.Keys(f.Form.Errors)))
	require.Contains(t, f.Form.Errors["created_from"], `created_from "last tuesday" is not a time`)
	require.Equal(t, "last tuesday", f.Form.CreatedFrom)
	require.Equal(t, "lots", f.Form.Limit)
	require.Equal(t, "emails", f.Form.Queue)
	require.Equal(t, "dead", f.Form.Status)
}

func TestParseAuditFilter(t *testing.T) {
	t.Parallel()
	runFilterCases(t, parseAuditFilter, []filterCase[auditListFilter]{
		{name: "Empty", query: "", check: func(t *testing.T, f auditListFilter) {
			require.Equal(t, auditListDefaultLimit, f.Params.Limit)
			require.Nil(t, f.Params.IncidentID)
		}},
		{name: "All", query: "actor=olga&action=queue.pause&target=email&outcome=Refused&incident=7&before=30&limit=10",
			check: func(t *testing.T, f auditListFilter) {
				require.Equal(t, "olga", f.Params.Actor)
				require.Equal(t, "queue.pause", f.Params.Action)
				require.Equal(t, "email", f.Params.Target)
				require.Equal(t, "refused", f.Params.Outcome)
				require.EqualValues(t, 7, *f.Params.IncidentID)
				require.EqualValues(t, 30, f.Params.BeforeID)
				require.Equal(t, "7", f.query().Get("incident"))
				require.Empty(t, f.query().Get("before"))
			}},
		{name: "BadOutcome", query: "outcome=won", wantErr: `outcome "won" is not one of succeeded, failed, refused`},
		{name: "BadIncident", query: "incident=x", wantErr: `incident "x" is not a positive whole number`},
		{name: "ZeroIncident", query: "incident=0", wantErr: "incident"},
		{name: "BadBefore", query: "before=-1", wantErr: "before"},
		{name: "BadLimit", query: "limit=1000", wantErr: "limit"},
		{name: "ControlChar", query: "actor=%01", wantErr: "actor contains a control character"},
	})
}

func TestOlderHref(t *testing.T) {
	t.Parallel()
	q := url.Values{"queue": {"email"}}
	require.Equal(t, "/jobs?before=51&queue=email", olderHref("/jobs", q, 51, 50, 50))
	require.Empty(t, olderHref("/jobs", q, 51, 49, 50), "a short page is the last")
	require.Empty(t, olderHref("/jobs", q, 1, 50, 50), "nothing is below id 1")
	require.Empty(t, q.Get("before"), "the caller's values are not changed")
	require.Equal(t, "/jobs", listHref("/jobs", url.Values{}))
}

// TestFoldSummaries: a folded picker's summary says what the page shows,
// so a phone need not open it to know.
func TestFoldSummaries(t *testing.T) {
	history := views.HistoryPage{At: "2026-12-06 17:16:42", Zone: "UTC",
		Windows: []views.HistoryWindowLink{{Label: "15m"}, {Label: "1h", Active: true}, {Label: "custom"}}}
	require.Equal(t, "last 1h · at 2026-12-06 17:16:42 UTC", history.ActiveText())
	history.Windows[1].Active, history.Windows[2].Active = false, true
	history.From, history.To = "2026-12-06 16:00:00", ""
	require.Equal(t, "from 2026-12-06 16:00:00 to now · at 2026-12-06 17:16:42 UTC", history.ActiveText())

	episodes := views.LockEpisodeFilter{Since: "6h", MinDuration: "2s", Queue: "email",
		Sinces: []views.LockEpisodeOption{{Value: "1h", Label: "last 1h"}, {Value: "6h", Label: "last 6h", Selected: true}}}
	require.Equal(t, "last 6h · at least 2s · queue email", episodes.ActiveText())

	bar := views.TimeBar{From: "2026-12-06 16:22:18", To: "2026-12-06 17:22:18", Zone: "Europe/Paris"}
	require.Equal(t, "from 2026-12-06 16:22:18 · to 2026-12-06 17:22:18 · in Europe/Paris", bar.ActiveText())
}
