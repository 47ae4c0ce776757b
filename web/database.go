package web

import (
	"fmt"

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
		"/runbook/blocking", []string{"blocking_tree", "activity", "idle_in_transaction", "lock_waits", "connections"}},
	{"resources", "WAL, I/O and checkpoints", "Rates from the difference of two samples, not totals since the server started.",
		"/runbook/resources", []string{"wal_stats", "wal_position", "io_stats", "checkpointer", "copy_progress"}},
	{"replication", "Replication, slots and archiving", "Lag per standby in bytes and time, WAL kept by slots, and archiver failures.",
		"/runbook/replication", []string{"replication", "standby_status", "replication_slots", "archiver"}},
	{"maintenance", "Vacuum, xmin horizon and indexes", "What holds back vacuum, dead tuples of the queue tables, invalid indexes, prepared transactions and the NOTIFY queue.",
		"/runbook/verification", []string{"xmin_horizon", "prepared_xacts", "table_vacuum", "invalid_indexes", "notify_queue"}},
	{"statements", "Top statements", "The statements that cost the most time, from pg_stat_statements.",
		"/runbook/plans", []string{"statements_top", "server_info"}},
}

func (s *Server) databasePage(c echo.Context) error {
	slug := c.Param("page")
	for _, dp := range databasePages {
		if dp.slug != slug {
			continue
		}
		m := views.DatabasePage{Slug: dp.slug, Title: dp.title, Intro: dp.intro, Runbook: dp.runbook}
		for _, name := range dp.panels {
			ck, _ := catalogCheck(name)
			m.Panels = append(m.Panels, views.PanelSlot{ID: name, Title: ck.Title, URL: "/panels/" + name})
		}
		return s.render(c, page{Title: dp.title, Nav: "db-" + dp.slug, Model: m, Body: views.DatabaseBody(m)})
	}
	return fmt.Errorf("%w: no database page %q", errNotFound, slug)
}

func catalogCheck(name string) (diagnostics.Check, bool) {
	for _, c := range diagnostics.Catalog() {
		if c.Name == name {
			return c, true
		}
	}
	return diagnostics.Check{}, false
}
