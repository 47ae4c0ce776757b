package views

// SourcePage is a queue page of another engine (River's queues, jobs, one
// job, failed jobs, clients): what the engine calls its states is shown
// as it is.
type SourcePage struct {
	Title string `json:"title"`
	// Sub says which engine the page reads and what its counts mean.
	Sub    string `json:"sub"`
	TestID string `json:"-"`
	// Filter is the job list's form (empty on other pages), sent with GET
	// to FilterAction.
	Filter       []FilterInput `json:"filter,omitempty"`
	FilterAction string        `json:"-"`
	// Error is a refused filter, said next to the form.
	Error     string  `json:"error,omitempty"`
	Facts     []Fact  `json:"facts,omitempty"`
	Panels    []Panel `json:"panels"`
	OlderHref string  `json:"older_href,omitempty"`
	// RefreshURL is polled by htmx to keep the page live.
	RefreshURL string `json:"-"`
	// History, when set, marks a page drawn from a recorded sample
	// ("History · at 03:12:40 (sample 03:12:35)"); Missing says why there
	// is nothing to show then.
	History string `json:"history,omitempty"`
	Missing string `json:"missing,omitempty"`
}

// FilterInput is one text field of a filter form.
type FilterInput struct {
	Name        string `json:"name"`
	Label       string `json:"label"`
	Value       string `json:"value"`
	Placeholder string `json:"placeholder,omitempty"`
}
