package web

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/queues/river"
	"github.com/pgconsole/console/views"
)

// flatten lists a view as path=text lines ("job/id=7",
// "sample[0]/error class=smtp.timeout"), so a test can say what a page
// shows without spelling the whole tree.
func flatten(v *views.Value, path string, out *[]string) {
	switch {
	case v == nil:
		*out = append(*out, path+"=<nil>")
	case len(v.Pairs) > 0:
		for _, p := range v.Pairs {
			flatten(p.Value, join(path, p.Key), out)
		}
	case len(v.Columns) > 0:
		for i, row := range v.Rows {
			for j, cell := range row {
				flatten(cell, fmt.Sprintf("%s[%d]/%s", path, i, v.Columns[j]), out)
			}
		}
	case len(v.List) > 0:
		for i, it := range v.List {
			flatten(it, fmt.Sprintf("%s[%d]", path, i), out)
		}
	default:
		*out = append(*out, path+"="+v.Text)
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "/" + key
}

func lines(v *views.Value) []string {
	var out []string
	flatten(v, "", &out)
	return out
}

// TestActionOutcomeViews maps a preview and a result of every registered
// action to what its page shows. An action added without a case here fails.
func TestActionOutcomeViews(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := now.Add(-90 * time.Second)
	two, rate := 2, 5.5
	olga := "olga"
	job := actions.JobSummary{ID: 7, Queue: "emails", Kind: "email.send", Status: "dead", Attempts: 3, MaxAttempts: 3,
		ErrorClass: "smtp.timeout", LastError: "dial tcp: timeout", LeaseGeneration: 4, AvailableAt: at, FinishedAt: &at}
	queueBefore := actions.QueueSettingsView{Queue: "emails"}
	queueAfter := actions.QueueSettingsView{Queue: "emails", MaxWorkers: &two, RatePerSecond: &rate, UpdatedBy: &olga}
	fleet := actions.FleetInFlight{InFlight: 9, LiveWorkers: 3}
	relay := queues.RelaySettings{Paused: true, UpdatedBy: &olga, UpdatedAt: at}
	backlog := queues.OutboxStat{PendingLater: 12, Dead: 1, OldestPendingSeconds: 61.5}
	parent := int32(100)
	tree := []diagnostics.BlockingNode{
		{PID: 100, RootPID: 100, IsRoot: true, BlockedCount: 1, State: "idle in transaction", ApplicationName: "billing",
			XactAgeSeconds: 125, Query: "UPDATE accounts SET balance = balance - 1 WHERE id = 1"},
		{PID: 101, ParentPID: &parent, RootPID: 100, Depth: 1, State: "active", ApplicationName: "api", Query: "UPDATE accounts"},
	}
	target := actions.Fingerprint{Backend: diagnostics.Backend{PID: 100, State: "idle in transaction", ApplicationName: "billing", User: "app",
		BackendType: "client backend", BackendStart: &at, XactStart: &at, WaitEventType: "Client", WaitEvent: "ClientRead",
		Query: "UPDATE accounts SET balance = balance - 1 WHERE id = 1"}}
	schedule := actions.ScheduleView{Name: "archive-nightly", Spec: "0 3 * * *", Kind: "archive_jobs", Queue: "maintenance",
		Payload: json.RawMessage(`{"older_than":"7d"}`), Enabled: true}
	incident := actions.IncidentView{ID: 3, Title: "orders slow", Status: "open"}

	type outcome struct {
		preview     actions.Preview
		result      actions.Result
		wantPreview []string
		wantResult  []string
	}
	jobOutcome := outcome{
		preview: actions.JobPreview{Job: job, Effect: "the job becomes ready"},
		result:  actions.JobResult{Job: job},
		wantPreview: []string{"job/id=7", "job/error class=smtp.timeout", "job/finished at=2026-03-01T11:58:30Z",
			"effect=the job becomes ready"},
		wantResult: []string{"job/status=dead", "job/attempts=3"},
	}
	bulkOutcome := outcome{
		preview: actions.BulkJobPreview{Count: 1, Jobs: []actions.JobSummary{job}, Effect: "they become ready",
			Skipped: []actions.SkippedJob{{ID: 9, Reason: "is done"}}},
		result:      actions.BulkJobResult{Changed: 1, Jobs: []actions.JobSummary{job}},
		wantPreview: []string{"effect=they become ready", "jobs[0]/id=7", "left alone[0]/why=is done"},
		wantResult:  []string{"changed=1", "jobs[0]/status=dead"},
	}
	riverJob := actions.RiverJob{ID: 12, Queue: "email", Kind: "send", State: "discarded", Attempt: 3, MaxAttempts: 3, ErrorClass: "smtp ?: refused"}
	riverJobsOutcome := outcome{
		preview: actions.RiverJobsPreview{Count: 1, Cap: 1000, Jobs: []actions.RiverJob{riverJob}, Effect: "available now",
			Skipped: []actions.SkippedJob{{ID: 13, Reason: "is completed"}}},
		result: actions.RiverJobsResult{Changed: 1, IDs: []int64{12}, Jobs: []actions.RiverJob{riverJob}},
		wantPreview: []string{"effect=available now", "cap=1000", "jobs[0]/id=12", "jobs[0]/attempt=3 of 3",
			"jobs[0]/error class=smtp ?: refused", "left alone[0]/why=is completed"},
		wantResult: []string{"changed=1", "jobs[0]/state=discarded"},
	}
	riverQueueOutcome := outcome{
		preview:     actions.RiverQueuePreview{Queue: river.QueueState{Name: "email", PausedAt: &at, Available: 4}, Note: "clients stop"},
		result:      actions.RiverQueueResult{Queue: river.QueueState{Name: "email", Available: 4}},
		wantPreview: []string{"queue/queue=email", "queue/paused=yes", "queue/available=4", "note=clients stop"},
		wantResult:  []string{"queue/paused=no"},
	}
	queueOutcome := outcome{
		preview: actions.QueueSettingsPreview{Before: queueBefore, After: queueAfter, Fleet: fleet, Note: "within one poll"},
		result:  actions.QueueSettingsResult{Settings: queueAfter, Fleet: fleet, Note: "within one poll"},
		wantPreview: []string{"before/max workers=—", "after/max workers=2", "after/rate per second=5.5",
			"after/updated by=olga", "fleet/in flight=9", "note=within one poll"},
		wantResult: []string{"settings/paused=no", "settings/max workers=2", "fleet/live workers=3"},
	}
	relayOutcome := outcome{
		preview: actions.RelaySettingsPreview{Before: queues.RelaySettings{UpdatedAt: at}, After: relay, Outbox: backlog, Note: "n"},
		result:  actions.RelaySettingsResult{Settings: relay, Outbox: backlog, Note: "n"},
		wantPreview: []string{"before/paused=no", "after/paused=yes", "after/updated by=olga",
			"outbox/pending=12", "outbox/oldest pending seconds=61.5"},
		wantResult: []string{"settings/paused=yes", "settings/updated at=2026-03-01T11:58:30Z", "outbox/dead=1"},
	}
	backendOutcome := outcome{
		preview: actions.BackendPreview{Target: target, IsRoot: true, BlockedCount: 1, Tree: tree,
			Effect: "pg_cancel_backend does nothing here", Warning: "terminate it", NextStep: "backend.terminate"},
		result: actions.BackendResult{Signalled: true, NewRoots: []int32{100}, StillWaits: []int32{101}, WaitedMS: 3000,
			Tree: tree, Message: "backend 100 still blocks 1 backends", NextStep: "backend.terminate"},
		wantPreview: []string{"target/pid=100", "target/connected=1m30s ago", "target/waits on=Client: ClientRead",
			"is root=yes", "backends behind=1", "blocking tree[0]/pid=100", "blocking tree[0]/role=root",
			"blocking tree[1]/pid=· 101", "warning=terminate it", "next step=backend.terminate"},
		wantResult: []string{"outcome=backend 100 still blocks 1 backends", "chain cleared=no", "new roots[0]=100",
			"still waiting[0]=101", "watched for=3s", "blocking tree now[1]/role=waiting"},
	}
	scheduleOutcome := outcome{
		preview: actions.SchedulePreview{After: schedule, NextRuns: []time.Time{now}},
		result: actions.ScheduleResult{Schedule: queues.Schedule{Name: "archive-nightly", Spec: "0 3 * * *",
			Kind: "archive_jobs", Queue: "maintenance", Payload: schedule.Payload, Enabled: true, CreatedBy: &olga,
			CreatedAt: at, UpdatedAt: at}},
		wantPreview: []string{"before=—", "after/spec=0 3 * * *", `after/payload={"older_than":"7d"}`,
			"next runs[0]=2026-03-01T12:00:00Z"},
		wantResult: []string{"schedule/name=archive-nightly", "schedule/created by=olga", "schedule/enabled=yes"},
	}
	cases := map[string]outcome{
		"deadletters.requeue": {
			preview: actions.RequeuePreview{Count: 2, Cap: 10000, Batches: 1, Sample: []actions.JobSummary{job},
				ErrorClasses: []actions.ErrorClassCount{{ErrorClass: "smtp.timeout", Count: 2}}, Warning: "classify first"},
			result: actions.RequeueResult{Requeued: 2, IDs: []int64{7, 8}, Batches: 1},
			wantPreview: []string{"count=2", "over cap=no", "error classes[0]/error class=smtp.timeout",
				"error classes[0]/count=2", "sample[0]/id=7", "sample[0]/last error=dial tcp: timeout",
				"reset attempts=no", "warning=classify first"},
			wantResult: []string{"requeued=2", "ids[0]=7", "ids[1]=8", "skipped=0"},
		},
		"job.cancel": jobOutcome, "job.retry_now": jobOutcome, "lease.expire": jobOutcome,
		"jobs.cancel": bulkOutcome, "jobs.retry_now": bulkOutcome,
		"queue.pause": queueOutcome, "queue.resume": queueOutcome, "queue.throttle": queueOutcome,
		"river.retry": riverJobsOutcome, "river.cancel": riverJobsOutcome,
		"river.queue_pause": riverQueueOutcome, "river.queue_resume": riverQueueOutcome,
		"tenant.throttle": {
			preview: actions.TenantLimitsPreview{Before: actions.TenantLimitsView{Queue: "emails", TenantID: "acme"},
				After:   actions.TenantLimitsView{Queue: "emails", TenantID: "acme", MaxInFlight: &two},
				Default: actions.TenantLimitsView{Queue: "emails", RatePerSecond: &rate}, Overrides: 1, Note: "falls back"},
			result: actions.TenantLimitsResult{Limits: actions.TenantLimitsView{Queue: "emails", TenantID: "acme", MaxInFlight: &two, UpdatedBy: &olga}},
			wantPreview: []string{"before/max in flight=—", "after/max in flight=2", "queue default/tenant=every tenant (default)",
				"queue default/rate per second=5.5", "tenants with their own limits=1"},
			wantResult: []string{"limits/tenant=acme", "limits/max in flight=2", "limits/updated by=olga"},
		},
		"relay.pause": relayOutcome, "relay.resume": relayOutcome, "relay.throttle": relayOutcome,
		"outbox.requeue": {
			preview: actions.OutboxRequeuePreview{Count: 1, Cap: 10000,
				Sample: []actions.OutboxEventSummary{{ID: 5, Topic: "orders", EventType: "order.created", Attempts: 16, DeadAt: &at}}},
			result:      actions.RequeueResult{Requeued: 0, IDs: []int64{}, Batches: 1},
			wantPreview: []string{"count=1", "sample[0]/topic=orders", "sample[0]/last error=—", "sample[0]/dead at=2026-03-01T11:58:30Z"},
			wantResult:  []string{"requeued=0", "ids=none", "batches=1"},
		},
		"backend.cancel": backendOutcome, "backend.terminate": backendOutcome,
		"schedule.create": scheduleOutcome, "schedule.update": scheduleOutcome,
		"schedule.enable": scheduleOutcome, "schedule.disable": scheduleOutcome,
		"schedule.run_now": {
			preview:     actions.RunNowPreview{Schedule: schedule, Effect: "enqueues one archive_jobs job"},
			result:      actions.RunNowResult{Job: job},
			wantPreview: []string{"schedule/name=archive-nightly", "effect=enqueues one archive_jobs job"},
			wantResult:  []string{"job/id=7", "job/queue=emails"},
		},
		"incident.open": {
			preview:     actions.IncidentOpenPreview{Title: "orders slow", Impact: "p99 8s", Effect: "opens an incident"},
			result:      incident,
			wantPreview: []string{"title=orders slow", "impact=p99 8s", "slo=—", "window start=—"},
			wantResult:  []string{"id=3", "title=orders slow", "status=open"},
		},
		"incident.close": {
			preview:     actions.IncidentClosePreview{Incident: incident, Summary: "fixed"},
			result:      actions.IncidentView{ID: 3, Title: "orders slow", Status: "closed"},
			wantPreview: []string{"incident/id=3", "summary=fixed"},
			wantResult:  []string{"status=closed"},
		},
		"prepared_xact.rollback": {
			preview: actions.PreparedXactPreview{Target: actions.PreparedXact{PreparedXact: diagnostics.PreparedXact{GID: "tx-42", Prepared: now.Add(-time.Hour), Owner: "app", Database: "shop", AgeSeconds: 3600}},
				IsRoot: true, BlockedCount: 3, Effect: "rolls back tx-42"},
			result:      actions.PreparedXactResult{RolledBack: true, Cleared: true, StillWaits: []int32{}, Message: "rolled back"},
			wantPreview: []string{"target/gid=tx-42", "target/owner=app", "target/database=shop", "backends behind=3", "effect=rolls back tx-42"},
			wantResult:  []string{"outcome=rolled back", "rolled back=yes", "chain cleared=yes"},
		},
		"incident.note": {
			preview:     actions.NoteView{Incident: 3, Text: "paused mail"},
			result:      actions.NoteView{Incident: 3, Text: "paused mail"},
			wantPreview: []string{"incident=3", "text=paused mail"},
			wantResult:  []string{"incident=3", "text=paused mail"},
		},
		"incident.capture": {
			preview:     actions.CapturePreview{Incident: 3, Panel: "queue_health", Effect: "runs the panel"},
			result:      actions.CaptureResult{EvidenceID: 11, Incident: 3, Panel: "queue_health", Rows: 4, Status: "ok"},
			wantPreview: []string{"incident=3", "panel=queue_health"},
			wantResult:  []string{"evidence id=11", "rows=4", "status=ok"},
		},
	}
	for _, spec := range actions.Registry() {
		t.Run(spec.Name, func(t *testing.T) {
			c, ok := cases[spec.Name]
			require.True(t, ok, "%s has no case here: give its preview and result a view", spec.Name)
			preview, result := lines(previewView(c.preview, now)), lines(resultView(c.result, now))
			for _, want := range c.wantPreview {
				require.Contains(t, preview, want)
			}
			for _, want := range c.wantResult {
				require.Contains(t, result, want)
			}
		})
	}
}

func TestPreviewParams(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 11, 58, 30, 123456000, time.UTC)
	got := previewParams(actions.BackendPreview{Target: actions.Fingerprint{Backend: diagnostics.Backend{PID: 100, BackendStart: &at, XactStart: &at}}})
	require.Equal(t, map[string]string{"backend_start": "2026-03-01T11:58:30.123456Z", "xact_start": "2026-03-01T11:58:30.123456Z"}, got)
	require.Empty(t, previewParams(actions.JobPreview{}), "only a backend's fingerprint is fixed by its preview")
}

// TestActionStages: the preview stage hides what the preview fixes and keeps
// what the operator typed; the done stage offers the next step on the new
// root, only to a role that may take it.
func TestActionStages(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := now.Add(-time.Minute)
	spec, ok := actions.Lookup("backend.cancel")
	require.True(t, ok)
	values := map[string]string{"pid": "100"}
	m, sealed := previewStage(views.ActionPage{Name: spec.Name}, spec, values, actions.Outcome{
		Summary: "Cancel the statement of backend 100",
		Preview: actions.BackendPreview{Target: actions.Fingerprint{Backend: diagnostics.Backend{PID: 100, BackendStart: &at, XactStart: &at}}},
	}, now)
	require.Equal(t, "preview", m.Stage)
	require.NotNil(t, m.Preview)
	require.Equal(t, "Cancel the statement of backend 100", m.Summary)
	kinds := map[string]string{}
	for _, f := range m.Fields {
		kinds[f.Name] = fmt.Sprintf("%s:%s:%v", f.Kind, f.Value, f.Locked)
	}
	require.Equal(t, map[string]string{
		"pid": "text:100:true", "backend_start": "hidden:2026-03-01T11:59:00Z:false",
		"xact_start": "hidden:2026-03-01T11:59:00Z:false", "query_start": "hidden::false",
	}, kinds, "the operator's parameters are locked; the guards are hidden")
	require.Equal(t, map[string]string{"pid": "100", "backend_start": "2026-03-01T11:59:00Z", "xact_start": "2026-03-01T11:59:00Z"},
		sealed, "the seal covers what the execution posts")
	require.Equal(t, "/actions/backend.cancel?pid=100", m.ChangeHref, "a new preview takes a new fingerprint")
	require.Equal(t, map[string]string{"pid": "100"}, values, "the caller's values are left alone")

	for _, c := range []struct {
		name, role string
		result     actions.BackendResult
		next       []string
	}{
		{"NewRoot", "operator", actions.BackendResult{NewRoots: []int32{101}, NextStep: "backend.cancel"},
			[]string{"/actions/backend.cancel?pid=101"}},
		{"SameBackend", "admin", actions.BackendResult{NewRoots: []int32{}, NextStep: "backend.terminate"},
			[]string{"/actions/backend.terminate?pid=100"}},
		{"NotForThisRole", "operator", actions.BackendResult{NextStep: "backend.terminate"}, nil},
		{"Cleared", "admin", actions.BackendResult{Cleared: true}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := actions.Outcome{Action: "backend.cancel", Preview: actions.BackendPreview{}, Result: c.result, AuditID: 42}
			m := doneStage(views.ActionPage{Name: "backend.cancel"}, values, c.role, out, now)
			require.Equal(t, "done", m.Stage)
			require.EqualValues(t, 42, m.AuditID)
			require.NotNil(t, m.Result)
			require.Len(t, m.Watch, 1, "the blocking tree is watched live")
			var hrefs []string
			for _, l := range m.Next {
				hrefs = append(hrefs, l.Href)
			}
			require.Equal(t, c.next, hrefs)
		})
	}
}
