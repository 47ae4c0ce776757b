package views

// Overview is the landing page: findings worst first, then the tiles.
type Overview struct {
	GeneratedAt string `json:"generated_at"`
	// AsOf says when the round behind the page started ("as of 14:03:07
	// UTC"): rounds are shared, so it may be a few seconds old.
	AsOf string `json:"as_of,omitempty"`
	// Story is the current incident in one paragraph; empty when nothing
	// needs attention.
	Story    Story        `json:"narrative"`
	Findings []FindingRow `json:"findings"`
	Tiles    []Tile       `json:"tiles"`
	// Error is set when the findings round itself failed.
	Error      string `json:"error,omitempty"`
	RefreshURL string `json:"-"`
	// History, when set, marks an overview drawn from a recorded sample
	// ("History · at 03:12:40 (sample 03:12:35)"); it never refreshes and
	// offers no action. Missing says why there is no sample to show.
	History string `json:"history,omitempty"`
	Missing string `json:"missing,omitempty"`
}

// FindingRow is one finding as the overview shows it.
type FindingRow struct {
	Code        string       `json:"code"`
	Severity    string       `json:"severity"`
	Title       string       `json:"title"`
	Evidence    string       `json:"evidence"`
	RunbookHref string       `json:"runbook"`
	Actions     []ActionLink `json:"actions"`
	// Jobs are the jobs waiting behind a root blocker, each linked to its
	// page ("#42 mail/send, 3m").
	Jobs []FindingJob `json:"jobs,omitempty"`
	// Incident opens an incident from this finding, or adds it to the
	// open one; nil for a role that may not or on a page of the past.
	Incident *IncidentButton `json:"-"`
	// Evidence links the page that lists the finding's evidence one by
	// one (a repeat blocker's lock episodes); nil when there is none.
	EvidenceLink *FindingJob `json:"evidence_link,omitempty"`
}

// FindingJob is a job a finding names, linked to its page.
type FindingJob struct {
	Label string `json:"label"`
	Href  string `json:"href"`
}

// Tile is one number that matters, its trend and its state.
type Tile struct {
	ID        string `json:"id"`
	Label     string `json:"label"`
	Value     string `json:"value"`
	Meta      string `json:"meta,omitempty"`
	Threshold string `json:"threshold,omitempty"`
	State     string `json:"state"` // ok, warning, critical, unknown
	Href      string `json:"href,omitempty"`
	Spark     Spark  `json:"-"`
	// Number is Value as a number, the last point of the tile's line, so
	// that the big number and the line end at the same moment; nil when
	// the value is not known.
	Number *float64 `json:"-"`
}

// Status is "ok", or "error" when the round failed: app.js then keeps the
// findings it showed last, marked stale, instead of the error.
func (m Overview) Status() string {
	if m.Error != "" {
		return "error"
	}
	return "ok"
}

// Story is the paragraph that opens the overview and an incident's page:
// what is stuck, since when, why, what it costs, and the one action that
// fits (nil when none fits or the role may not run it). Recorded says it
// tells a past moment (a closed incident's opening), not now: it is drawn
// as information, not as a warning, and has no action.
type Story struct {
	Text     string      `json:"text,omitempty"`
	Action   *ActionLink `json:"action,omitempty"`
	Recorded bool        `json:"recorded,omitempty"`
}
