package web

import (
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/views"
)

// routes lists every route the console serves, with the role each needs.
// Nothing but /healthz, /readyz, /login and the static assets is served
// without signing in; /metrics follows Config.MetricsAccess.
func (s *Server) routes() {
	e := s.e
	e.Pre(middleware.RemoveTrailingSlashWithConfig(middleware.TrailingSlashConfig{Skipper: pprofIndexPath}))
	e.Use(s.requestID, s.observe, middleware.Recover(), compress, s.securityHeaders, bodyLimit, s.authenticate, s.csrf)

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", s.metricsEndpoint)
	e.GET("/static/:hash/:name", s.asset)
	e.GET("/login", s.loginForm)
	e.POST("/login", s.login, s.needsDatabase)
	e.POST("/logout", s.logout, s.needsDatabase)

	viewer := e.Group("", requireRole(auth.RoleViewer), s.needsDatabase)
	viewer.GET("/status/database", s.databaseStatus)
	viewer.GET("/", s.overview)
	viewer.GET("/api/v1/findings", s.findingsAPI)
	viewer.GET("/runbook", s.runbookIndex)
	viewer.GET("/runbook/:slug", s.runbookPage)
	viewer.GET("/panels/:name", s.panel)
	viewer.GET("/database/:page", s.databasePage)
	q := s.queuePages()
	viewer.GET("/queues", q.queues)
	viewer.GET("/queues/:name", q.queue)
	viewer.GET("/jobs", q.jobs)
	viewer.GET("/jobs/:id", q.job)
	viewer.GET("/jobs/:id/payload", q.payload)
	viewer.GET("/deadletters", q.deadLetters)
	viewer.GET("/workers", q.workers)
	viewer.GET("/outbox", s.outboxPage)
	viewer.GET("/schedules", s.schedulesList)
	viewer.GET("/audit", s.auditLog)
	viewer.GET("/incidents", s.incidentList)
	viewer.GET("/incidents/:id", s.incidentPage)
	viewer.GET("/incidents/:id/export.md", s.incidentExport)
	viewer.GET("/jump", s.jump)
	viewer.GET("/history", s.historyPage)
	viewer.GET("/api/v1/history", s.historyAPI)
	viewer.GET("/lock-episodes", s.lockEpisodesPage)
	viewer.GET("/api/v1/lock-episodes", s.lockEpisodesAPI)
	// Alertmanager's webhook: operator API tokens only (alertsWebhook).
	viewer.POST(alertsPath, s.alertsWebhook)
	// Actions check the role themselves (actions.Runner), so a viewer can
	// preview and is told clearly when it may not execute.
	viewer.GET("/actions", s.actionIndex)
	viewer.GET("/actions/:name", s.actionForm)
	viewer.POST("/actions/:name/preview", s.actionPreview)
	viewer.POST("/actions/:name", s.actionExecute)
	viewer.POST("/api/v1/actions/:name", s.actionAPI,
		IdempotencyMiddleware(s.cfg.Pool, IdempotencyScope(principalScope), idempotencyCounted(s.metrics.idempotency)))
	viewer.POST("/incidents", s.incidentOpen)
	viewer.POST("/incidents/finding", s.incidentFromFinding)
	viewer.POST("/incidents/:id/close", s.incidentClose)
	viewer.POST("/incidents/:id/capture", s.incidentCapture)
	viewer.POST("/incidents/:id/notes", s.incidentNote)

	// Profiling (net/http/pprof) is for admins only.
	pprofGroup := e.Group("/debug/pprof", requireRole(auth.RoleAdmin))
	pprofGroup.GET("", s.pprofPage)
	pprofGroup.GET("/*", s.pprofPage)
}

// queueHandlers are the handlers of the queue pages.
type queueHandlers struct {
	queues, queue, jobs, job, payload, deadLetters, workers echo.HandlerFunc
}

// queuePages are the console's own engine's pages, or, when
// Config.QueueSource reads another engine, the pages that read it (a job's
// payload is then its page, which shows its arguments).
func (s *Server) queuePages() queueHandlers {
	if s.cfg.QueueSource != nil {
		return queueHandlers{s.sourceQueues, s.sourceQueueDetail, s.sourceJobs, s.sourceJobDetail, s.sourceJobDetail,
			s.sourceDeadLetters, s.sourceWorkersList}
	}
	return queueHandlers{s.queuesList, s.queueDetail, s.jobsList, s.jobDetail, s.jobPayload, s.deadLetters, s.workersList}
}

// navEntry is one link of the left navigation, with the role that may see it.
type navEntry struct {
	group, key, label, href, role string
}

// navigation is the left menu, grouped by what an on-call engineer looks at
// first: the overview, the runbook, the queues, the database, then the
// operations (actions, schedules, incidents, the audit log).
// Only pages that exist are listed.
var navigation = []navEntry{
	{"Overview", "overview", "Overview", "/", auth.RoleViewer},
	{"Runbook", "runbook", "Runbook", "/runbook", auth.RoleViewer},
	{"Runbook", "incidents", "Incidents", "/incidents", auth.RoleViewer},
	{"Queues", "queues", "Queues", "/queues", auth.RoleViewer},
	{"Queues", "jobs", "Jobs", "/jobs", auth.RoleViewer},
	{"Queues", "deadletters", "Dead letters", "/deadletters", auth.RoleViewer},
	{"Queues", "outbox", "Outbox", "/outbox", auth.RoleViewer},
	{"Queues", "workers", "Workers", "/workers", auth.RoleViewer},
	{"Database", "db-activity", "Activity and locks", "/database/activity", auth.RoleViewer},
	{"Database", "db-resources", "WAL and I/O", "/database/resources", auth.RoleViewer},
	{"Database", "db-replication", "Replication", "/database/replication", auth.RoleViewer},
	{"Database", "db-maintenance", "Vacuum and indexes", "/database/maintenance", auth.RoleViewer},
	{"Database", "db-statements", "Statements", "/database/statements", auth.RoleViewer},
	{"Database", "history", "History", "/history", auth.RoleViewer},
	{"Database", "lock-episodes", "Lock episodes", "/lock-episodes", auth.RoleViewer},
	{"Operations", "actions", "Actions", "/actions", auth.RoleViewer},
	{"Operations", "schedules", "Schedules", "/schedules", auth.RoleViewer},
	{"Operations", "audit", "Audit", "/audit", auth.RoleViewer},
}

func navFor(active, role string) []views.NavGroup {
	var groups []views.NavGroup
	for _, n := range navigation {
		if auth.RoleRank(role) < auth.RoleRank(n.role) {
			continue
		}
		if len(groups) == 0 || groups[len(groups)-1].Title != n.group {
			groups = append(groups, views.NavGroup{Title: n.group})
		}
		g := &groups[len(groups)-1]
		g.Items = append(g.Items, views.NavItem{Label: n.label, Href: n.href, Active: n.key == active})
	}
	return groups
}
