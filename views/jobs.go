package views

import "strconv"

// JobFilter is the /jobs filter form as the operator typed it.
type JobFilter struct {
	Queue        string   `json:"queue,omitempty"`
	Kind         string   `json:"kind,omitempty"`
	Status       string   `json:"status,omitempty"`
	ErrorClass   string   `json:"error_class,omitempty"`
	CreatedFrom  string   `json:"created_from,omitempty"`
	CreatedUntil string   `json:"created_until,omitempty"`
	Limit        string   `json:"limit,omitempty"`
	Statuses     []string `json:"-"`
}

// JobsPage is /jobs: the filter, one keyset page of jobs and the link to the
// next (older) page.
type JobsPage struct {
	Filter JobFilter `json:"filter"`
	Jobs   Panel     `json:"jobs"`
	// OlderHref continues the list below the last id shown; empty on the
	// last page. FirstHref goes back to the newest jobs with the same filter.
	OlderHref string `json:"older_href,omitempty"`
	FirstHref string `json:"first_href,omitempty"`
}

// JobDetail is /jobs/{id}.
type JobDetail struct {
	ID        int64  `json:"id"`
	Queue     string `json:"queue"`
	Kind      string `json:"kind"`
	Status    string `json:"status"`
	StatusSev string `json:"-"`
	Facts     []Fact `json:"facts"`
	Lease     []Fact `json:"lease"`
	Payload   string `json:"payload"`
	// PayloadCut says Payload holds only the start of a large payload;
	// PayloadHref downloads it whole (PayloadBytes long).
	PayloadCut   bool         `json:"payload_cut,omitempty"`
	PayloadBytes int          `json:"payload_bytes"`
	PayloadHref  string       `json:"payload_href"`
	LastError    string       `json:"last_error,omitempty"`
	ErrorClass   string       `json:"error_class,omitempty"`
	Attempts     Panel        `json:"attempts"`
	Actions      []ActionLink `json:"actions"`
	QueueHref    string       `json:"queue_href"`
	ClassHref    string       `json:"class_href,omitempty"`
}

func i64toa(n int64) string { return strconv.FormatInt(n, 10) }
