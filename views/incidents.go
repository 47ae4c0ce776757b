package views

// IncidentList is the incidents page: the open-incident form and the list.
type IncidentList struct {
	Incidents []IncidentRow `json:"incidents"`
	CSRF      string        `json:"-"`
	CanOpen   bool          `json:"-"`
	Error     string        `json:"error,omitempty"`
	Title     string        `json:"-"`
	Impact    string        `json:"-"`
	SLO       string        `json:"-"`
}

// IncidentRow is one incident in the list.
type IncidentRow struct {
	ID       int64  `json:"id"`
	Title    string `json:"title"`
	Status   string `json:"status"`
	OpenedBy string `json:"opened_by"`
	Opened   Age    `json:"opened"`
	Href     string `json:"href"`
}

// IncidentPage is one incident: its facts and its timeline.
type IncidentPage struct {
	ID          int64  `json:"id"`
	Title       string `json:"title"`
	Status      string `json:"status"`
	Impact      string `json:"impact"`
	SLO         string `json:"slo"`
	WindowStart string `json:"window_start"`
	WindowEnd   string `json:"window_end,omitempty"`
	OpenedBy    string `json:"opened_by"`
	ClosedBy    string `json:"closed_by,omitempty"`
	Summary     string `json:"summary,omitempty"`
	// Story is the incident as the console sees it now while it is open;
	// once it is closed, as the flight recorder kept it when it opened
	// (with no action). Empty when nothing needed attention or nothing
	// was recorded then.
	Story    Story           `json:"narrative"`
	Timeline []TimelineEntry `json:"timeline"`
	// Order is "oldest" or "newest": which end of the timeline comes
	// first. OrderHref is the address of the page in the other order;
	// Before says whether entries from before the incident opened are
	// shown, BeforeCount how many there are and BeforeHref toggles them.
	// Each address keeps the other choice.
	Order       string `json:"order"`
	OrderHref   string `json:"-"`
	Before      bool   `json:"before"`
	BeforeCount int    `json:"before_count"`
	BeforeHref  string `json:"-"`
	ExportHref  string `json:"-"`
	CSRF        string `json:"-"`
	CanClose    bool   `json:"-"`
	CanNote     bool   `json:"-"`
	Error       string `json:"error,omitempty"`
}

// TimelineEntry is one captured piece of evidence or one audited action.
type TimelineEntry struct {
	At      Age    `json:"at"`
	Kind    string `json:"kind"` // "evidence", "action" or "recorded"
	Title   string `json:"title"`
	Who     string `json:"who"`
	Detail  string `json:"detail,omitempty"`
	SQL     string `json:"sql,omitempty"`
	Outcome string `json:"outcome,omitempty"`
	Href    string `json:"href,omitempty"`
	// Panel is a capture drawn as the live panel is (PanelView), with the
	// human column names and formats of the live page; Recapture names
	// its check when it can be captured again into the open incident.
	Panel     *Panel `json:"panel,omitempty"`
	Recapture string `json:"-"`
}

// IncidentButton is the one-click form that opens an incident from a
// finding or a runbook step (or adds it to the one open): the finding's
// title, evidence and runbook page travel as hidden fields, so nothing has
// to be typed. Label says which it does ("Open incident", "Add to incident
// #3").
type IncidentButton struct {
	Label    string `json:"label"`
	CSRF     string `json:"-"`
	Code     string `json:"code,omitempty"`
	Title    string `json:"title"`
	Evidence string `json:"evidence,omitempty"`
	Runbook  string `json:"runbook,omitempty"`
}

// outcomeSev colours an action's outcome: succeeded ok, refused a warning,
// failed critical.
func outcomeSev(outcome string) string {
	switch outcome {
	case "succeeded":
		return "ok"
	case "refused":
		return "warning"
	case "failed":
		return "critical"
	}
	return ""
}
