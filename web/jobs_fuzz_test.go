package web

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
)

// FuzzJobFilters feeds the /jobs filters: a filter is refused as a 4xx, or
// its list statement runs (never an error the page would show as a 5xx).
// Run as a normal test it checks its seed corpus.
func FuzzJobFilters(f *testing.F) {
	hostile := []string{"", "emails", "a\x00b", "\xff\xfe", "%00", strings.Repeat("q", 300), "dead", "DEAD",
		"2999-01-01T00:00:00Z", "0001-01-01", "1e19", "-1", "0", "9223372036854775808", "NaN", "500", "501"}
	for field := range 8 { // each filter hostile in turn, the others empty
		for _, v := range hostile {
			in := make([]string, 8)
			in[field] = v
			f.Add(in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7])
		}
	}
	f.Add("emails", "send", "dead", "smtp", "2026-01-01", "2026-02-01", "100", "10")
	pool := testdb.New(f)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, queue, kind, status, class, from, until, before, limit string) {
		q := url.Values{"queue": {queue}, "kind": {kind}, "status": {status}, "error_class": {class},
			"created_from": {from}, "created_until": {until}, "before": {before}, "limit": {limit}}
		fl, err := parseJobFilter(q, time.Now())
		if err != nil {
			code, msg := statusOf(err)
			require.Less(t, code, 500, "a filter is refused as the caller's error: %s", msg)
			require.GreaterOrEqual(t, code, 400)
			return
		}
		jobs, err := queues.JobList(ctx, pool, fl.Params)
		require.NoError(t, err, "an accepted filter %v runs", q)
		jobsModel(jobs, fl, time.Now())
	})
}
