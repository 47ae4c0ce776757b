package diagnostics_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
)

// slotIn returns the slot named name in r.
func slotIn(t *testing.T, r diagnostics.Round, name string) diagnostics.Slot {
	t.Helper()
	for _, s := range r.Slots {
		if s.SlotName == name {
			return s
		}
	}
	t.Fatalf("no slot %s in the round: %+v, unavailable %+v", name, r.Slots, r.Unavailable)
	return diagnostics.Slot{}
}

// With max_slot_wal_keep_size = -1 an inactive slot has no safe_wal_size:
// nothing invalidates it, and only the WAL disk bounds it. Two rounds a
// minute apart on the console's clock, with WAL written between them,
// measure how fast the slot's retained WAL grows, and forecast when pg_wal
// reaches its budget (wal.dir_size=<size>). A role without pg_monitor
// cannot list pg_wal: the forecast then counts the slot's WAL alone and
// says so.
func TestSlotDiskForecastWithoutKeepLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary, conn := primaryWithSlot(t, map[string]string{"max_slot_wal_keep_size": "-1"}, "disk_filler")
	th := diagnostics.DefaultThresholds()
	clock := &fakeClock{now: time.Now().UTC()}
	d := open(t, primary.URL("postgres"), diagnostics.Config{Thresholds: &th, NowFunc: clock.Now})

	first := d.Round(ctx)
	s1 := slotIn(t, first, "disk_filler")
	require.EqualValues(t, -1, s1.MaxSlotWALKeepBytes)
	require.Nil(t, s1.SafeWALSize, "unlimited: nothing to forecast against but the disk")
	require.Nil(t, s1.RetainedGrowth, "one read is no growth")
	require.NotNil(t, s1.PGWALBytes, "the test's role is a superuser")

	writeWAL(t, conn, 16<<20)
	_, err := conn.Exec(ctx, "SELECT pg_switch_wal()")
	require.NoError(t, err)
	// A burst between rounds a few seconds apart is not a trend.
	clock.Advance(10 * time.Second)
	require.Nil(t, slotIn(t, d.Round(ctx), "disk_filler").RetainedGrowth, "measured over a minute at least")
	clock.Advance(50 * time.Second)
	second := d.Round(ctx)
	s2 := slotIn(t, second, "disk_filler")
	require.NotNil(t, s2.RetainedGrowth)
	growth := float64(s2.RetainedBytes-s1.RetainedBytes) / 60
	require.InDelta(t, growth, *s2.RetainedGrowth, 1)
	require.Greater(t, growth, float64(8<<20)/60, "the slot kept what was written")

	// A budget 256 MB above what pg_wal takes: at ~16 MB a minute it is
	// reached well within the hour.
	th.WALDirBudget = *s2.PGWALBytes + 256<<20
	fs := findingsWithin(findings.Evaluate(second, th), findings.CodeSlotDiskForecast)
	require.Len(t, fs, 1, "%+v", fs)
	f := fs[0]
	require.Equal(t, "disk_filler", f.Subject["slot_name"])
	require.Equal(t, findings.SeverityCritical, f.Severity)
	want := float64(256<<20) / growth
	require.InDelta(t, want, f.Subject["seconds_to_budget"].(float64), 1)
	require.Less(t, want, time.Hour.Seconds())
	require.Contains(t, f.Title, "Slot disk_filler fills pg_wal to its budget in ")
	require.Contains(t, f.Evidence, "max_slot_wal_keep_size is unlimited")
	require.Contains(t, f.Evidence, "(threshold wal.dir_size)")
	require.Contains(t, f.Evidence, "pg_wal is ")
	require.Equal(t, "/runbook/rb-b", f.Runbook)

	// The same growth against a budget a day away is no finding, nor is a
	// slot capped by max_slot_wal_keep_size (replication.slot_retention
	// forecasts those from safe_wal_size).
	far := th
	far.WALDirBudget = *s2.PGWALBytes + int64(growth*2*time.Hour.Seconds())
	require.Empty(t, findingsWithin(findings.Evaluate(second, far), findings.CodeSlotDiskForecast))
	capped := second
	capped.Slots = []diagnostics.Slot{s2}
	capped.Slots[0].MaxSlotWALKeepBytes = 1 << 30
	require.Empty(t, findingsWithin(findings.Evaluate(capped, th), findings.CodeSlotDiskForecast))

	// Without pg_monitor the size of pg_wal is unreadable: the forecast
	// counts the slot's retained WAL alone, and says why.
	_, err = conn.Exec(ctx, "CREATE ROLE slot_peeker LOGIN")
	require.NoError(t, err)
	u, err := url.Parse(primary.URL("postgres"))
	require.NoError(t, err)
	u.User = url.User("slot_peeker")
	peek := open(t, u.String(), diagnostics.Config{Thresholds: &th, NowFunc: clock.Now})
	a := slotIn(t, peek.Round(ctx), "disk_filler")
	require.Nil(t, a.PGWALBytes)
	writeWAL(t, conn, 16<<20)
	clock.Advance(time.Minute)
	r := peek.Round(ctx)
	b := slotIn(t, r, "disk_filler")
	th.WALDirBudget = b.RetainedBytes + 256<<20
	fs = findingsWithin(findings.Evaluate(r, th), findings.CodeSlotDiskForecast)
	require.Len(t, fs, 1)
	require.Contains(t, fs[0].Evidence, "needs pg_monitor")
	require.Contains(t, fs[0].Evidence, "a lower bound")
	require.InDelta(t, float64(256<<20)/(*b.RetainedGrowth), fs[0].Subject["seconds_to_budget"].(float64), 1)
}

// findingsWithin returns the findings of code in fs.
func findingsWithin(fs []findings.Finding, code string) []findings.Finding {
	return findingsWith(findings.Report{Findings: fs}, code)
}
