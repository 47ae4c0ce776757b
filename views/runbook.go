package views

// RunbookIndex lists the evidence chain and the targeted runbooks.
type RunbookIndex struct {
	Steps   []StepLink   `json:"steps"`
	Targets []TargetLink `json:"targets"`
}

// StepLink names one step of the chain.
type StepLink struct {
	Number  int    `json:"number"`
	Slug    string `json:"slug"`
	Title   string `json:"title"`
	Href    string `json:"href"`
	Current bool   `json:"-"`
}

// TargetLink names one targeted runbook.
type TargetLink struct {
	Slug     string `json:"slug"`
	Title    string `json:"title"`
	Href     string `json:"href"`
	Symptoms string `json:"symptoms"`
}

// RunbookStep is one step with its live evidence.
type RunbookStep struct {
	Number  int          `json:"number"`
	Slug    string       `json:"slug"`
	Title   string       `json:"title"`
	Purpose string       `json:"purpose"`
	Safety  string       `json:"safety"`
	LookFor []string     `json:"look_for"`
	Traps   []string     `json:"traps"`
	Actions []ActionLink `json:"actions"`
	Panels  []PanelSlot  `json:"-"`
	// Evidence heads the panels: "Live evidence", or "Recorded evidence"
	// when the time picker shows the past.
	Evidence string       `json:"-"`
	Steps    []StepLink   `json:"-"`
	Prev     *StepLink    `json:"prev,omitempty"`
	Next     *StepLink    `json:"next,omitempty"`
	Incident *IncidentRef `json:"incident,omitempty"`
}

// IncidentRef points at the open incident evidence is captured into.
type IncidentRef struct {
	ID    int64  `json:"id"`
	Title string `json:"title"`
	Href  string `json:"href"`
}

// RunbookTarget is one targeted runbook page.
type RunbookTarget struct {
	Slug      string       `json:"slug"`
	Title     string       `json:"title"`
	Symptoms  string       `json:"symptoms"`
	Diagnosis []string     `json:"diagnosis"`
	Mitigate  []string     `json:"mitigate"`
	Dont      []string     `json:"dont"`
	Steps     []StepLink   `json:"steps"`
	Actions   []ActionLink `json:"actions"`
}
