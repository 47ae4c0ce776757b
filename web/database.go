package web

import (
	"fmt"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/views"
)

// databasePage is one page of the Database menu: a group of diagnostics
// panels.
type databasePage struct {
	slug, title, intro, runbook string
	panels                      []string
}

var databasePages = []databasePage{
	{"activity", "Activity and locks", "Sessions by age of their transaction, sessions idle in a transaction, and who blocks whom.",
		diagnostics.RunbookURL(diagnostics.StepBlocking), []string{diagnostics.CheckBlockingTree, diagnostics.CheckActivity, diagnostics.CheckIdleInTransaction, diagnostics.CheckLockWaits, diagnostics.CheckConnections}},
	{"resources", "WAL, I/O and checkpoints", "Rates from the difference of two samples, not totals since the server started.",
		diagnostics.RunbookURL(diagnostics.StepResources), []string{diagnostics.CheckWALStats, diagnostics.CheckWALPosition, diagnostics.CheckIOStats, diagnostics.CheckCheckpointer, diagnostics.CheckCopyProgress}},
	{"replication", "Replication, slots and archiving", "Lag per standby in bytes and time, WAL kept by slots, and archiver failures.",
		diagnostics.RunbookURL(diagnostics.StepReplication), []string{diagnostics.CheckReplication, diagnostics.CheckStandbyStatus, diagnostics.CheckReplicationSlots, diagnostics.CheckArchiver}},
	{"maintenance", "Vacuum, xmin horizon and indexes", "What holds back vacuum, dead tuples of the queue tables, invalid indexes, prepared transactions and the NOTIFY queue.",
		diagnostics.RunbookURL(diagnostics.StepVerification), []string{diagnostics.CheckXminHorizon, diagnostics.CheckPreparedXacts, diagnostics.CheckTableVacuum, diagnostics.CheckInvalidIndexes, diagnostics.CheckNotifyQueue}},
	{"statements", "Top statements", "The statements that cost the most time, from pg_stat_statements.",
		diagnostics.RunbookURL(diagnostics.StepPlans), []string{diagnostics.CheckStatementsTop, diagnostics.CheckServerInfo}},
}

func (s *Server) databasePage(c echo.Context) error {
	slug := c.Param("page")
	for _, dp := range databasePages {
		if dp.slug == slug {
			t, err := parseTravel(c, time.Now().UTC())
			if err != nil {
				return err
			}
			m := views.DatabasePage{Slug: dp.slug, Title: dp.title, Intro: dp.intro, Runbook: dp.runbook, Panels: panelSlots(dp.panels, t)}
			return s.render(c, page{Title: dp.title, Nav: "db-" + dp.slug, Model: m, Body: views.DatabaseBody(m), Travel: &t})
		}
	}
	return fmt.Errorf("%w: no database page %q", errNotFound, slug)
}

// panelSlots are the placeholders that load the named checks' panels.
func panelSlots(names []string, t travel) []views.PanelSlot {
	var out []views.PanelSlot
	for _, name := range names {
		ck, _ := diagnostics.CheckNamed(name)
		out = append(out, views.PanelSlot{ID: name, Title: ck.Title, URL: t.with("/panels/" + name)})
	}
	return out
}

// catalogCheck looks a check of the diagnostics catalog up by name.
func catalogCheck(name string) (diagnostics.Check, bool) { return diagnostics.CheckNamed(name) }
