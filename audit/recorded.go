package audit

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// RecordedEvidence is evidence the console's flight recorder kept while
// nobody was capturing: a lock chain at its worst, a finding that appeared
// or cleared. The caller reads it from the history (this package does not
// know the recorder) and hands it to IncidentMarkdown, so the post-mortem
// shows what happened from a few minutes before the incident's start even
// if nobody clicked capture.
type RecordedEvidence struct {
	At    time.Time
	Title string
	// Check names the history check the data comes from.
	Check string
	Data  json.RawMessage
}

// recordedEntry renders one recorded item for the Markdown timeline.
func recordedEntry(r RecordedEvidence) timelineEntry {
	var t strings.Builder
	fmt.Fprintf(&t, "### %s recorded: %s (history: %s)\n\n", stamp(r.At), mdInline(r.Title), mdInline(r.Check))
	var objects []json.RawMessage
	if json.Unmarshal(r.Data, &objects) == nil {
		if columns, rows, err := tableOf(objects, markdownRows); err == nil {
			t.WriteString(mdTable(columns, rows, len(objects)))
			return timelineEntry{r.At, t.String()}
		}
	}
	t.WriteString(mdFence("json", indentJSON(r.Data)))
	return timelineEntry{r.At, t.String()}
}
