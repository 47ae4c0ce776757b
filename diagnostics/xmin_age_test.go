package diagnostics_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/internal/testdb"
)

// xminAgeThresholds find a holder by age only: no test consumes 2^40
// transactions.
func xminAgeThresholds() diagnostics.Thresholds {
	th := diagnostics.DefaultThresholds()
	th.XminHorizonXIDs = 1 << 40
	th.XminHorizonAge = 30 * time.Minute
	return th
}

// holderIn returns the holder of kind named id in r.
func holderIn(r diagnostics.Round, kind, id string) (diagnostics.XminHolder, bool) {
	for _, h := range r.Xmin {
		if h.Kind == kind && h.Holder == id {
			return h, true
		}
	}
	return diagnostics.XminHolder{}, false
}

// A logical slot holds catalog_xmin with no transaction behind it: its age
// is how long the console has seen it hold that xmin. Two rounds half an
// hour apart on the console's clock find it by age, with the time it was
// first seen as evidence.
func TestXminHolderWithoutTransactionGetsAnAge(t *testing.T) {
	ctx, url := freshDB(t)
	c := connect(t, url, "slot-maker")
	slot := fmt.Sprintf("xmin_age_%d", time.Now().UnixNano())
	_, err := c.Exec(ctx, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", slot)
	require.NoError(t, err)
	t.Cleanup(func() { c.Exec(context.Background(), "SELECT pg_drop_replication_slot($1)", slot) })
	th := xminAgeThresholds()
	clock := &fakeClock{now: time.Now().UTC().Truncate(time.Second)}
	d := open(t, url, diagnostics.Config{Thresholds: &th, NowFunc: clock.Now})
	firstAt := clock.Now()

	first := d.Round(ctx)
	h, ok := holderIn(first, "slot_catalog", slot)
	require.True(t, ok, "%+v %+v", first.Xmin, first.Unavailable)
	require.NotNil(t, h.AgeSeconds)
	require.Zero(t, *h.AgeSeconds, "first sight: no age yet")
	_, found := findingFor(findings.Report{Findings: findings.Evaluate(first, th)}, findings.CodeXminHorizon, "holder_id", slot)
	require.False(t, found, "just seen")

	clock.Advance(31 * time.Minute)
	rep, err := findings.Run(ctx, d)
	require.NoError(t, err)
	f, ok := findingFor(rep, findings.CodeXminHorizon, "holder_id", slot)
	require.True(t, ok, "held 31m on the console's clock: %v", codes(rep))
	require.Equal(t, "slot_catalog", f.Subject["holder_kind"])
	require.EqualValues(t, 1860, f.Subject["age_seconds"])
	require.Contains(t, f.Evidence, fmt.Sprintf("held since first seen at %s (age at least 1860 s)", firstAt.Format(time.TimeOnly)))
}

// A standby with hot_standby_feedback running a long report query holds
// the primary's xmin horizon through its walsender: pg_stat_replication's
// backend_xmin, which carries no time. Two rounds 31 minutes apart on the
// console's clock name the standby by application_name with its age; once
// the query ends and the standby's xmin moves on, the clock restarts.
func TestStandbyFeedbackHeldByLongQueryIsFoundByAge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary := primaryWithSchema(t, nil)
	const app = "report-standby"
	standby := testdb.Standby(t, primary, map[string]string{"hot_standby_feedback": "on"}, app)
	writer := connect(t, primary.URL("postgres"), "writer")
	report := connect(t, standby.URL("postgres"), "long-report")

	// The report: a REPEATABLE READ transaction keeps its snapshot, so the
	// standby's feedback pins the primary's xmin at the snapshot's.
	_, err := report.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ")
	require.NoError(t, err)
	var pinned string
	_, err = report.Exec(ctx, "SELECT count(*) FROM jobs")
	require.NoError(t, err)
	require.NoError(t, report.QueryRow(ctx, "SELECT backend_xmin::text FROM pg_stat_activity WHERE pid = pg_backend_pid()").Scan(&pinned))
	feedback := func() string {
		var x *string
		require.NoError(t, writer.QueryRow(ctx, "SELECT backend_xmin::text FROM pg_stat_replication WHERE application_name = $1", app).Scan(&x))
		if x == nil {
			return ""
		}
		return *x
	}
	eventually(t, 30*time.Second, func() (bool, string) {
		burnXIDs(t, writer, 3)
		got := feedback()
		return got == pinned, fmt.Sprintf("feedback xmin %q, report's %q", got, pinned)
	})

	th := xminAgeThresholds()
	clock := &fakeClock{now: time.Now().UTC().Truncate(time.Second)}
	d := open(t, primary.URL("postgres"), diagnostics.Config{Thresholds: &th, NowFunc: clock.Now})
	firstAt := clock.Now()
	rep, err := findings.Run(ctx, d)
	require.NoError(t, err)
	_, found := findingFor(rep, findings.CodeXminHorizon, "holder_id", app)
	require.False(t, found, "just seen: %v", codes(rep))

	// The primary moves on; the report does not.
	burnXIDs(t, writer, 5)
	clock.Advance(31 * time.Minute)
	rep, err = findings.Run(ctx, d)
	require.NoError(t, err)
	f, ok := findingFor(rep, findings.CodeXminHorizon, "holder_id", app)
	require.True(t, ok, "standby held its xmin 31m on the console's clock: %v", codes(rep))
	require.Equal(t, "standby", f.Subject["holder_kind"])
	require.EqualValues(t, 1860, f.Subject["age_seconds"])
	require.Contains(t, f.Title, "standby "+app)
	require.Contains(t, f.Evidence, "holds xmin "+pinned)
	require.Contains(t, f.Evidence, fmt.Sprintf("held since first seen at %s (age at least 1860 s)", firstAt.Format(time.TimeOnly)))

	// The report ends: the feedback xmin advances and its clock restarts.
	_, err = report.Exec(ctx, "COMMIT")
	require.NoError(t, err)
	eventually(t, 30*time.Second, func() (bool, string) {
		burnXIDs(t, writer, 3)
		got := feedback()
		return got != "" && got != pinned, fmt.Sprintf("feedback xmin still %q", got)
	})
	clock.Advance(time.Minute)
	r := d.Round(ctx)
	h, ok := holderIn(r, "standby", app)
	require.True(t, ok, "an idle standby still reports an xmin: %+v", r.Xmin)
	require.NotEqual(t, pinned, h.Xmin)
	require.Less(t, *h.AgeSeconds, 60.0, "a new xmin is a new clock")
	_, found = findingFor(findings.Report{Findings: findings.Evaluate(r, th)}, findings.CodeXminHorizon, "holder_id", app)
	require.False(t, found, "the horizon moved: %+v", r.Xmin)
}
