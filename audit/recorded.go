package audit

import (
	"encoding/json"
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
