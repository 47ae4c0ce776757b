package web

import (
	"strconv"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/queues/river"
	"github.com/pgconsole/console/views"
)

// The River actions' previews and results, as previewView and resultView
// lay them out.

func riverJobsPreviewView(x actions.RiverJobsPreview) *views.Value {
	return pairs(kv("effect", text(x.Effect)), kv("count", integer(x.Count)), kv("cap", integer(x.Cap)),
		kv("over cap", yesNo(x.OverCap)), kv("jobs", riverJobTable(x.Jobs)), kv("left alone", skippedTable(x.Skipped)),
		optional("warning", x.Warning))
}

func riverJobsResultView(x actions.RiverJobsResult) *views.Value {
	return pairs(kv("changed", integer(x.Changed)), kv("ids", idList(x.IDs)), kv("jobs", riverJobTable(x.Jobs)))
}

func riverQueueView(q river.QueueState) *views.Value {
	return pairs(kv("queue", text(q.Name)), kv("paused", yesNo(q.PausedAt != nil)), kv("paused at", optTime(q.PausedAt)),
		kv("available", integer(q.Available)))
}

func riverJobTable(jobs []actions.RiverJob) *views.Value {
	rows := make([][]*views.Value, 0, len(jobs))
	for _, j := range jobs {
		rows = append(rows, []*views.Value{
			integer(j.ID), text(j.Queue), text(j.Kind), text(j.State),
			text(strconv.Itoa(j.Attempt) + " of " + strconv.Itoa(j.MaxAttempts)), text(j.ErrorClass),
		})
	}
	return valueTable([]string{"id", "queue", "kind", "state", "attempt", "error class"}, rows)
}
