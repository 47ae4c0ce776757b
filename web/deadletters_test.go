package web

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/queues"
)

func TestDeadLettersModel(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	groups := []queues.DeadLetterGroup{
		{Queue: "email", ErrorClass: "timeout", Count: 1200, FirstSeen: now.Add(-time.Hour), LastSeen: now.Add(-time.Minute),
			SampleError: "context deadline exceeded", SampleJobID: 77},
		{Queue: "email", ErrorClass: "", Count: 3, FirstSeen: now, LastSeen: now},
	}
	m := deadLettersModel(groups, queues.DeadLetterTotal{Dead: 1203, Groups: 2}, "", "operator", now)
	require.Equal(t, "1,203", m.Total)
	require.Contains(t, m.Groups.Note, "exact")
	require.NotContains(t, m.Groups.Note, "largest", "every group is shown")
	require.Contains(t, deadLettersModel(groups, queues.DeadLetterTotal{Dead: 5000, Groups: 300}, "", "operator", now).Groups.Note,
		"The 2 largest of 300 groups.")
	require.Len(t, m.Groups.Rows, 2)
	row := m.Groups.Rows[0]
	require.Equal(t, "email", row[0].Text)
	require.Equal(t, "/jobs?error_class=timeout&queue=email&status=dead", row[1].Href)
	require.Equal(t, "1,200", row[2].Text)
	require.Equal(t, "2026-12-02T11:00:00Z", row[3].TS)
	require.Equal(t, "/jobs/77", row[5].Href)
	require.Equal(t, "/actions/deadletters.requeue?error_class=timeout&queue=email", row[6].Actions[0].Href)

	noClass := m.Groups.Rows[1]
	require.Equal(t, "(no class)", noClass[1].Text)
	require.Equal(t, "/jobs?queue=email&status=dead", noClass[1].Href)
	require.Empty(t, noClass[5].Href, "no sample job")
	require.Empty(t, noClass[6].Actions, "an empty class would mean every class: no class-wide requeue")

	require.Empty(t, deadLettersModel(groups, queues.DeadLetterTotal{}, "", "viewer", now).Groups.Rows[0][6].Actions)
	narrowed := deadLettersModel(nil, queues.DeadLetterTotal{}, "billing", "viewer", now)
	require.Equal(t, "No dead jobs in queue billing.", narrowed.Groups.EmptyTitle)
	require.Equal(t, "/deadletters?queue=billing", narrowed.RefreshURL)
	require.Len(t, deadLetterPanel(groups, "viewer", false, now).Columns, 6, "the queue page leaves out the queue column")
}

func TestWorkerQueues(t *testing.T) {
	t.Parallel()
	w := queues.Worker{Queues: []string{"z", "a"}, InFlightByQueue: map[string]int{"z": 3}}
	require.Equal(t, "a, z (3)", workerQueues(w))
	require.Len(t, workersOf([]queues.Worker{w, {Queues: []string{"b"}}}, "a"), 1)
}
