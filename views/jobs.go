package views

import "strconv"

// JobFilter is the /jobs filter form as the operator typed it.
type JobFilter struct {
	Queue        string `json:"queue,omitempty"`
	Kind         string `json:"kind,omitempty"`
	Status       string `json:"status,omitempty"`
	ErrorClass   string `json:"error_class,omitempty"`
	CreatedFrom  string `json:"created_from,omitempty"`
	CreatedUntil string `json:"created_until,omitempty"`
	Limit        string `json:"limit,omitempty"`
	// JumpID is the job id box, kept when it holds a bad value.
	JumpID   string   `json:"-"`
	Statuses []string `json:"-"`
	// TimeHelp says which forms the time boxes take.
	TimeHelp string `json:"-"`
	// Errors are the messages of the values refused, by field (queue,
	// created_from...), shown next to the field.
	Errors map[string]string `json:"errors,omitempty"`
}

// JobsPage is /jobs: the filter, one keyset page of jobs and the link to the
// next (older) page.
type JobsPage struct {
	Filter JobFilter `json:"filter"`
	Jobs   Panel     `json:"jobs"`
	// OlderHref continues a newest-first list below the last id shown,
	// NewerHref an oldest-first one above it; empty on the last page.
	// FirstHref goes back to the list's first page with the same filter,
	// named FirstLabel ("Newest" or "Oldest").
	OlderHref  string `json:"older_href,omitempty"`
	NewerHref  string `json:"newer_href,omitempty"`
	FirstHref  string `json:"first_href,omitempty"`
	FirstLabel string `json:"-"`
	// Order says how the list is sorted, under the title.
	Order string `json:"order"`
	// Tabs are the status tabs with their counts; TabsNote says what the
	// counts cover.
	Tabs     []JobTab `json:"tabs,omitempty"`
	TabsNote string   `json:"-"`
	// Bulk are the actions the selected rows can go to (each opens its
	// preview); empty for a role that may run none.
	Bulk []BulkAction `json:"-"`
	CSRF string       `json:"-"`
}

// JobTab is one status tab of /jobs.
type JobTab struct {
	Label  string `json:"label"`
	Status string `json:"status"`
	Count  string `json:"count"`
	// Title says what the state is, on hover.
	Title   string `json:"-"`
	Href    string `json:"href"`
	Current bool   `json:"current"`
}

// BulkAction is a button that sends the selected jobs to an action's
// preview.
type BulkAction struct {
	Name  string
	Label string
	URL   string
	Risk  string
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
	// LockWait is set while the running job's session waits on a lock.
	LockWait *JobLockWait `json:"lock_wait,omitempty"`
	// Running says, for a running job, how long it has run and what its
	// lease says of its worker: held and renewed, or expired and why that
	// matters. StuckSev is its badge: "critical" when the lease expired.
	Running  string `json:"running,omitempty"`
	StuckSev string `json:"-"`
}

// JobLockWait says what a running job's session waits on, who holds it and
// which root to act on.
type JobLockWait struct {
	// Text is the wait in one sentence: backend, lock, holder, how long.
	Text string `json:"text"`
	// Root names the chain's root and says to act on it.
	Root string `json:"root"`
	// ChainHref is the runbook step that shows the whole chain.
	ChainHref string `json:"chain_href"`
	// Actions are the root's, not this job's.
	Actions []ActionLink `json:"actions"`
}

func i64toa(n int64) string { return strconv.FormatInt(n, 10) }

// tabID names a status tab for tests: its status, or "active" for the
// running and due jobs.
func tabID(status string) string {
	if status == "" {
		return "active"
	}
	return status
}
