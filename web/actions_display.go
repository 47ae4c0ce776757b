package web

import (
	"strconv"
	"strings"
	"time"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/views"
)

// previewView maps an action's typed preview to what the action page shows:
// labelled values in the order an operator reads them. Every preview type
// has its case; TestActionOutcomeViews checks each registered action's.
func previewView(p actions.Preview, now time.Time) *views.Value {
	switch x := p.(type) {
	case actions.JobPreview:
		return pairs(kv("job", jobView(x.Job)), kv("effect", text(x.Effect)))
	case actions.BulkJobPreview:
		return pairs(kv("effect", text(x.Effect)), kv("jobs", jobTable(x.Jobs)), kv("left alone", skippedTable(x.Skipped)))
	case actions.RequeuePreview:
		return pairs(
			kv("count", integer(x.Count)), kv("cap", integer(x.Cap)), kv("over cap", yesNo(x.OverCap)),
			kv("batches", integer(x.Batches)), kv("error classes", errorClassTable(x.ErrorClasses)),
			kv("sample", deadJobTable(x.Sample)), kv("reset attempts", yesNo(x.ResetAttempts)),
			optional("warning", x.Warning))
	case actions.OutboxRequeuePreview:
		return pairs(
			kv("count", integer(x.Count)), kv("cap", integer(x.Cap)), kv("over cap", yesNo(x.OverCap)),
			kv("sample", outboxEventTable(x.Sample)), optional("warning", x.Warning))
	case actions.QueueSettingsPreview:
		return pairs(kv("before", queueSettingsView(x.Before)), kv("after", queueSettingsView(x.After)),
			kv("fleet", fleetView(x.Fleet)), kv("note", text(x.Note)))
	case actions.TenantLimitsPreview:
		return tenantLimitsPreviewView(x)
	case actions.RelaySettingsPreview:
		return pairs(kv("before", relaySettingsView(x.Before)), kv("after", relaySettingsView(x.After)),
			kv("outbox", outboxBacklogView(x.Outbox)), kv("note", text(x.Note)))
	case actions.BackendPreview:
		return pairs(
			kv("target", fingerprintView(x.Target, now)), kv("effect", text(x.Effect)),
			signalJobPair(x.Job), optional("waiting jobs", x.Waiters), signalJobsPair(x.WaitingJobs),
			kv("is root", yesNo(x.IsRoot)), kv("backends behind", integer(x.BlockedCount)),
			kv("blocking tree", treeView(x.Tree)), optional("warning", x.Warning), optional("next step", x.NextStep))
	case actions.SchedulePreview:
		before := text("")
		if x.Before != nil {
			before = scheduleView(*x.Before)
		}
		runs := make([]*views.Value, 0, len(x.NextRuns))
		for _, t := range x.NextRuns {
			runs = append(runs, timeText(t))
		}
		return pairs(kv("before", before), kv("after", scheduleView(x.After)), kv("next runs", list(runs)))
	case actions.RunNowPreview:
		return pairs(kv("schedule", scheduleView(x.Schedule)), kv("effect", text(x.Effect)))
	case actions.IncidentOpenPreview:
		return pairs(kv("title", text(x.Title)), kv("impact", text(x.Impact)), kv("slo", text(x.SLO)),
			kv("window start", optTime(x.WindowStart)), kv("effect", text(x.Effect)))
	case actions.IncidentClosePreview:
		return pairs(kv("incident", incidentView(x.Incident)), kv("summary", text(x.Summary)))
	case actions.CapturePreview:
		return pairs(kv("incident", integer(x.Incident)), kv("panel", text(x.Panel)), kv("effect", text(x.Effect)))
	case actions.NoteView:
		return noteView(x)
	case actions.PreparedXactPreview:
		return pairs(kv("target", preparedXactView(x.Target)), kv("effect", text(x.Effect)),
			kv("is root", yesNo(x.IsRoot)), kv("backends behind", integer(x.BlockedCount)),
			kv("blocking tree", treeView(x.Tree)), optional("warning", x.Warning))
	case actions.RiverJobsPreview:
		return riverJobsPreviewView(x)
	case actions.RiverQueuePreview:
		return pairs(kv("queue", riverQueueView(x.Queue)), kv("note", text(x.Note)))
	}
	return nil
}

func preparedXactView(p actions.PreparedXact) *views.Value {
	return pairs(kv("gid", text(p.GID)), kv("prepared at", timeText(p.Prepared)), kv("owner", text(p.Owner)),
		kv("database", text(p.Database)), kv("age", text(humanize.Seconds(p.AgeSeconds))))
}

// resultView maps an action's typed result to what the page shows after it
// ran, like previewView.
func resultView(r actions.Result, now time.Time) *views.Value {
	switch x := r.(type) {
	case actions.JobResult:
		return pairs(kv("job", jobView(x.Job)))
	case actions.RunNowResult:
		return pairs(kv("job", jobView(x.Job)))
	case actions.BulkJobResult:
		return pairs(kv("changed", integer(x.Changed)), kv("jobs", jobTable(x.Jobs)))
	case actions.RequeueResult:
		return pairs(kv("requeued", integer(x.Requeued)), kv("ids", idList(x.IDs)),
			kv("skipped", integer(x.Skipped)), kv("batches", integer(x.Batches)))
	case actions.QueueSettingsResult:
		return pairs(kv("settings", queueSettingsView(x.Settings)), kv("fleet", fleetView(x.Fleet)), kv("note", text(x.Note)))
	case actions.TenantLimitsResult:
		return pairs(kv("limits", tenantLimitsView(x.Limits)), kv("note", text(x.Note)))
	case actions.RelaySettingsResult:
		return pairs(kv("settings", relaySettingsView(x.Settings)), kv("outbox", outboxBacklogView(x.Outbox)),
			kv("note", text(x.Note)))
	case actions.BackendResult:
		return pairs(
			kv("outcome", text(x.Message)), signalJobPair(x.Job), optional("waiting jobs", x.Waiters), signalJobsPair(x.WaitingJobs),
			kv("signalled", yesNo(x.Signalled)), kv("chain cleared", yesNo(x.Cleared)),
			kv("target gone", yesNo(x.TargetGone)), optional("target state", x.TargetState),
			kv("new roots", idList(x.NewRoots)), kv("still waiting", idList(x.StillWaits)),
			kv("watched for", text(humanize.Seconds(float64(x.WaitedMS)/1000))),
			kv("blocking tree now", treeView(x.Tree)), optional("next step", x.NextStep))
	case actions.ScheduleResult:
		return pairs(kv("schedule", storedScheduleView(x.Schedule)))
	case actions.IncidentView:
		return incidentView(x)
	case actions.NoteView:
		return noteView(x)
	case actions.CaptureResult:
		return pairs(kv("evidence id", integer(x.EvidenceID)), kv("incident", integer(x.Incident)),
			kv("panel", text(x.Panel)), kv("rows", integer(x.Rows)), kv("status", text(x.Status)))
	case actions.PreparedXactResult:
		return pairs(kv("outcome", text(x.Message)), kv("rolled back", yesNo(x.RolledBack)),
			kv("chain cleared", yesNo(x.Cleared)), kv("still waiting", idList(x.StillWaits)),
			kv("blocking tree now", treeView(x.Tree)))
	case actions.RiverJobsResult:
		return riverJobsResultView(x)
	case actions.RiverQueueResult:
		return pairs(kv("queue", riverQueueView(x.Queue)))
	}
	return nil
}

// previewParams are the parameters a preview fixes for the execution: a
// backend's fingerprint, so execution refuses if the pid now names another
// session or its transaction ended. They go into the confirmation as hidden
// inputs.
func previewParams(p actions.Preview) map[string]string {
	if x, ok := p.(actions.PreparedXactPreview); ok {
		return map[string]string{"prepared_at": x.Target.Prepared.Format(time.RFC3339Nano)}
	}
	b, ok := p.(actions.BackendPreview)
	if !ok {
		return nil
	}
	out := map[string]string{}
	for name, t := range map[string]*time.Time{
		"backend_start": b.Target.BackendStart, "xact_start": b.Target.XactStart, "query_start": b.Target.QueryStart,
	} {
		if t != nil {
			out[name] = t.Format(time.RFC3339Nano)
		}
	}
	return out
}

// signalJobPair is what a backend signal does (or did) to the job whose
// session the backend is; nothing when it runs none.
func signalJobPair(j *actions.SignalJob) views.Pair {
	if j == nil {
		return views.Pair{}
	}
	return kv("job", text(j.Fate))
}

// signalJobsPair lists the jobs waiting behind a signalled backend, each
// with its fate; nothing when none waits.
func signalJobsPair(jobs []actions.SignalJob) views.Pair {
	if len(jobs) == 0 {
		return views.Pair{}
	}
	rows := make([][]*views.Value, 0, len(jobs))
	for _, j := range jobs {
		rows = append(rows, []*views.Value{integer(j.ID), text(j.Queue), text(j.Kind), integer(j.PID), text(j.Status), text(j.Fate)})
	}
	return kv("jobs behind it", valueTable([]string{"id", "queue", "kind", "pid", "status", "fate"}, rows))
}

func jobView(j actions.JobSummary) *views.Value {
	return pairs(
		kv("id", integer(j.ID)), kv("queue", text(j.Queue)), kv("kind", text(j.Kind)), kv("status", text(j.Status)),
		kv("attempts", integer(j.Attempts)), kv("max attempts", integer(j.MaxAttempts)),
		optional("error class", j.ErrorClass), optional("last error", j.LastError), optional("lease owner", j.LeaseOwner),
		optionalTime("lease until", j.LeaseUntil),
		kv("available at", timeText(j.AvailableAt)), optionalTime("finished at", j.FinishedAt))
}

// deadJobTable is the sample of a dead-letter requeue; dead jobs hold no
// lease, so the lease columns are left out.
func deadJobTable(jobs []actions.JobSummary) *views.Value {
	rows := make([][]*views.Value, 0, len(jobs))
	for _, j := range jobs {
		rows = append(rows, []*views.Value{
			integer(j.ID), text(j.Queue), text(j.Kind), text(j.Status), integer(j.Attempts), integer(j.MaxAttempts),
			text(j.ErrorClass), text(j.LastError), timeText(j.AvailableAt), optTime(j.FinishedAt),
		})
	}
	return valueTable([]string{"id", "queue", "kind", "status", "attempts", "max attempts", "error class", "last error",
		"available at", "finished at"}, rows)
}

// jobTable is the jobs a bulk job action changes, as a table.
func jobTable(jobs []actions.JobSummary) *views.Value {
	rows := make([][]*views.Value, 0, len(jobs))
	for _, j := range jobs {
		rows = append(rows, []*views.Value{
			integer(j.ID), text(j.Queue), text(j.Kind), text(j.Status),
			text(strconv.Itoa(j.Attempts) + " of " + strconv.Itoa(j.MaxAttempts)), text(j.ErrorClass),
		})
	}
	return valueTable([]string{"id", "queue", "kind", "status", "attempts", "error class"}, rows)
}

func skippedTable(skipped []actions.SkippedJob) *views.Value {
	rows := make([][]*views.Value, 0, len(skipped))
	for _, s := range skipped {
		rows = append(rows, []*views.Value{integer(s.ID), text(s.Reason)})
	}
	return valueTable([]string{"id", "why"}, rows)
}

func errorClassTable(classes []actions.ErrorClassCount) *views.Value {
	rows := make([][]*views.Value, 0, len(classes))
	for _, c := range classes {
		rows = append(rows, []*views.Value{text(c.ErrorClass), integer(c.Count)})
	}
	return valueTable([]string{"error class", "count"}, rows)
}

func outboxEventTable(events []actions.OutboxEventSummary) *views.Value {
	rows := make([][]*views.Value, 0, len(events))
	for _, e := range events {
		rows = append(rows, []*views.Value{
			integer(e.ID), text(e.Topic), text(e.EventType), integer(e.Attempts), text(e.LastError), optTime(e.DeadAt),
		})
	}
	return valueTable([]string{"id", "topic", "event type", "attempts", "last error", "dead at"}, rows)
}

func queueSettingsView(s actions.QueueSettingsView) *views.Value {
	return pairs(kv("queue", text(s.Queue)), kv("paused", yesNo(s.Paused)), kv("max workers", optInteger(s.MaxWorkers)),
		kv("rate per second", optFloat(s.RatePerSecond)), optional("updated by", deref(s.UpdatedBy, "")))
}

func fleetView(f actions.FleetInFlight) *views.Value {
	return pairs(kv("in flight", integer(f.InFlight)), kv("live workers", integer(f.LiveWorkers)))
}

func relaySettingsView(s queues.RelaySettings) *views.Value {
	return pairs(kv("paused", yesNo(s.Paused)), optionalPtr("batch size", s.BatchSize, optInteger),
		optionalPtr("rate per second", s.RatePerSecond, optFloat), optionalPtr("updated by", s.UpdatedBy, textPtr),
		kv("updated at", timeText(s.UpdatedAt)))
}

func outboxBacklogView(s queues.OutboxStat) *views.Value {
	return pairs(
		kv("pending", integer(s.PendingTotal())), kv("due", integer(s.Pending)), kv("inflight", integer(s.Inflight)),
		kv("expired leases", integer(s.ExpiredLeases)), kv("dead", integer(s.Dead)),
		kv("rows estimate", integer(s.RowsEstimate)), kv("accepted unmarked", integer(s.AcceptedUnmarked)),
		kv("oldest pending seconds", number(s.OldestPendingSeconds)))
}

func scheduleView(s actions.ScheduleView) *views.Value {
	return pairs(kv("name", text(s.Name)), kv("spec", text(s.Spec)), kv("kind", text(s.Kind)),
		kv("queue", text(s.Queue)), kv("payload", text(string(s.Payload))), kv("enabled", yesNo(s.Enabled)))
}

func storedScheduleView(s queues.Schedule) *views.Value {
	return pairs(
		kv("name", text(s.Name)), kv("spec", text(s.Spec)), kv("kind", text(s.Kind)), kv("queue", text(s.Queue)),
		kv("payload", text(string(s.Payload))), kv("enabled", yesNo(s.Enabled)),
		optionalTime("next run at", s.NextRunAt), optionalTime("last run at", s.LastRunAt),
		optionalPtr("last job id", s.LastJobID, optInteger), optionalPtr("created by", s.CreatedBy, textPtr),
		kv("created at", timeText(s.CreatedAt)), optionalPtr("updated by", s.UpdatedBy, textPtr),
		kv("updated at", timeText(s.UpdatedAt)))
}

func incidentView(i actions.IncidentView) *views.Value {
	return pairs(kv("id", integer(i.ID)), kv("title", text(i.Title)), kv("status", text(i.Status)))
}

// fingerprintView is the target backend as an operator checks it before
// signalling: who it is, how long it has been connected and in its
// transaction, what it waits on, what it runs.
func fingerprintView(f actions.Fingerprint, now time.Time) *views.Value {
	age := func(label string, t *time.Time) views.Pair {
		if t == nil {
			return views.Pair{}
		}
		return kv(label, text(agePtr(t, now).Text))
	}
	return pairs(
		kv("pid", integer(f.PID)), kv("state", text(f.State)), kv("application", text(f.ApplicationName)),
		kv("user", text(f.User)), kv("client", text(f.ClientAddr)), kv("backend type", text(f.BackendType)),
		age("connected", f.BackendStart), age("transaction started", f.XactStart),
		optional("waits on", strings.Trim(f.WaitEventType+": "+f.WaitEvent, ": ")),
		kv("query", text(truncate(f.Query, 200))))
}

// treeView is the blocking tree as a small table, each pid indented by its
// depth.
func treeView(nodes []diagnostics.BlockingNode) *views.Value {
	rows := make([][]*views.Value, 0, len(nodes))
	for _, n := range nodes {
		role := "waiting"
		if n.IsRoot {
			role = "root"
		}
		rows = append(rows, []*views.Value{
			text(strings.Repeat("· ", n.Depth) + strconv.Itoa(int(n.PID))), text(role), text(n.State),
			integer(n.BlockedCount), text(humanize.Seconds(n.XactAgeSeconds)), text(n.ApplicationName), text(truncate(n.Query, 60)),
		})
	}
	return valueTable([]string{"pid", "role", "state", "blocks", "transaction", "application", "query"}, rows)
}

// The building blocks below make the generic shapes ValueView draws: a
// key-value list, a table, a list and a text.

func kv(key string, v *views.Value) views.Pair { return views.Pair{Key: key, Value: v} }

// pairs is a key-value list; zero pairs (an optional value left out) are
// skipped.
func pairs(ps ...views.Pair) *views.Value {
	out := &views.Value{}
	for _, p := range ps {
		if p.Value != nil {
			out.Pairs = append(out.Pairs, p)
		}
	}
	if len(out.Pairs) == 0 {
		return text("")
	}
	return out
}

// optional is a pair shown only when s is not empty.
func optional(key, s string) views.Pair {
	if s == "" {
		return views.Pair{}
	}
	return kv(key, text(s))
}

func optionalTime(key string, t *time.Time) views.Pair {
	if t == nil {
		return views.Pair{}
	}
	return kv(key, timeText(*t))
}

func optionalPtr[T any](key string, p *T, view func(*T) *views.Value) views.Pair {
	if p == nil {
		return views.Pair{}
	}
	return kv(key, view(p))
}

func valueTable(columns []string, rows [][]*views.Value) *views.Value {
	if len(rows) == 0 {
		return &views.Value{Text: "none"}
	}
	return &views.Value{Columns: columns, Rows: rows}
}

func list(items []*views.Value) *views.Value {
	if len(items) == 0 {
		return &views.Value{Text: "none"}
	}
	return &views.Value{List: items}
}

func idList[T int32 | int64](ids []T) *views.Value {
	items := make([]*views.Value, 0, len(ids))
	for _, id := range ids {
		items = append(items, integer(id))
	}
	return list(items)
}

// text is a string, or a dash for an empty one.
func text(s string) *views.Value {
	if s == "" {
		return &views.Value{Text: "—"}
	}
	return &views.Value{Text: s}
}

func integer[T int | int32 | int64](n T) *views.Value {
	return &views.Value{Text: strconv.FormatInt(int64(n), 10)}
}

func number(f float64) *views.Value { return &views.Value{Text: strconv.FormatFloat(f, 'f', -1, 64)} }

func optInteger[T int | int64](n *T) *views.Value {
	if n == nil {
		return text("")
	}
	return integer(*n)
}

func textPtr(s *string) *views.Value {
	if s == nil {
		return text("")
	}
	return text(*s)
}

func optFloat(f *float64) *views.Value {
	if f == nil {
		return text("")
	}
	return number(*f)
}

func yesNo(b bool) *views.Value {
	if b {
		return &views.Value{Text: "yes"}
	}
	return &views.Value{Text: "no"}
}

func timeText(t time.Time) *views.Value { return &views.Value{Text: t.Format(time.RFC3339Nano)} }

func optTime(t *time.Time) *views.Value {
	if t == nil {
		return text("")
	}
	return timeText(*t)
}

func noteView(x actions.NoteView) *views.Value {
	return pairs(kv("incident", integer(x.Incident)), kv("text", text(x.Text)))
}
