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
	// Story is the incident as the console sees it now; empty once the
	// incident is closed or when nothing needs attention.
	Story      Story           `json:"narrative"`
	Timeline   []TimelineEntry `json:"timeline"`
	ExportHref string          `json:"-"`
	CSRF       string          `json:"-"`
	CanClose   bool            `json:"-"`
	CanNote    bool            `json:"-"`
	Error      string          `json:"error,omitempty"`
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
	// Table is a capture's first rows, shown inline.
	Table *EvidenceTable `json:"table,omitempty"`
}

// EvidenceTable is the first rows of a captured panel; More counts the
// rows left out.
type EvidenceTable struct {
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
	More    int        `json:"more,omitempty"`
}
