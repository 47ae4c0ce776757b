package views

// Fact is one labelled value of a detail list (dl.kv): already formatted,
// with an optional tooltip (absolute UTC for ages), link and monospace.
type Fact struct {
	Label string `json:"label"`
	Value string `json:"value"`
	Title string `json:"title,omitempty"`
	Href  string `json:"href,omitempty"`
	Mono  bool   `json:"-"`
	// TS keeps an age ticking in the browser (RFC 3339).
	TS string `json:"ts,omitempty"`
}

// QueuesPage is /queues: one row per queue with its counts, settings and
// row actions.
type QueuesPage struct {
	GeneratedAt string `json:"generated_at"`
	// Trends is one tile per queue: its ready count with the sampler's
	// sparkline and its state against the backlog thresholds.
	Trends []Tile `json:"trends"`
	Queues Panel  `json:"queues"`
	// History is true when the page shows a recorded moment: it does not
	// refresh (its panel carries the marker).
	History bool `json:"history,omitempty"`
}

// QueueDetail is /queues/{name}: counts, settings, dead-letter groups and
// the workers serving the queue.
type QueueDetail struct {
	Name        string `json:"name"`
	GeneratedAt string `json:"generated_at"`
	// Trends are the queue's numbers that matter with their sparklines and
	// thresholds: ready, oldest ready, running, dead.
	Trends      []Tile       `json:"trends"`
	Counts      []Fact       `json:"counts"`
	Settings    []Fact       `json:"settings"`
	Actions     []ActionLink `json:"actions"`
	DeadLetters Panel        `json:"dead_letters"`
	Workers     Panel        `json:"workers"`
	// Tenants is the backlog per tenant: oldest ready age, ready, running
	// and limits, the top tenants then "other".
	Tenants  Panel  `json:"tenants"`
	JobsHref string `json:"jobs_href"`
	// RefreshURL is polled by htmx to keep the numbers live.
	RefreshURL string `json:"-"`
	// History, when set, marks a page drawn from a recorded sample
	// ("History · at 03:12:40 (sample 03:12:35)"); Missing says why there
	// is nothing to show for that moment.
	History string `json:"history,omitempty"`
	Missing string `json:"missing,omitempty"`
}

// DeadLettersPage is /deadletters: dead jobs grouped by queue and error
// class.
type DeadLettersPage struct {
	GeneratedAt string `json:"generated_at"`
	Total       string `json:"total"`
	Groups      Panel  `json:"groups"`
	// RefreshURL is polled by htmx to keep the groups live.
	RefreshURL string `json:"-"`
}

// WorkersPage is /workers: the engine processes and their heartbeats.
type WorkersPage struct {
	GeneratedAt string `json:"generated_at"`
	Live        int    `json:"live"`
	Stale       int    `json:"stale"`
	// AliveWindow is how recently a live worker heartbeated ("1m00s").
	AliveWindow string `json:"alive_window"`
	Workers     Panel  `json:"workers"`
	// History, when set, marks a page drawn from a recorded sample
	// ("History · at 03:12:40 (sample 03:12:35)"); Missing says why there
	// is nothing to show for that moment.
	History string `json:"history,omitempty"`
	Missing string `json:"missing,omitempty"`
}
