package views

// RunbookIndex lists the evidence chain and the targeted runbooks.
type RunbookIndex struct {
	Steps   []StepLink   `json:"steps"`
	Targets []TargetLink `json:"targets"`
}

// StepLink names one step of the chain. Short is its title in a word or
// two; Mark says how many current findings point at it ("1 finding"), empty
// when none.
type StepLink struct {
	Number  int    `json:"number"`
	Slug    string `json:"slug"`
	Title   string `json:"title"`
	Short   string `json:"-"`
	Href    string `json:"href"`
	Mark    string `json:"mark,omitempty"`
	Current bool   `json:"-"`
}

// TargetLink names one targeted runbook.
type TargetLink struct {
	Slug     string `json:"slug"`
	Title    string `json:"title"`
	Href     string `json:"href"`
	Symptoms string `json:"symptoms"`
}

// RunbookStep is one step with its live evidence: the current findings that
// point at it (Mark counts them), its panels, then its actions, filled in
// from that evidence (ActionsFrom says with what).
type RunbookStep struct {
	Number      int          `json:"number"`
	Slug        string       `json:"slug"`
	Title       string       `json:"title"`
	Mark        string       `json:"mark,omitempty"`
	MarkSev     string       `json:"-"` // the worst severity among Findings
	Findings    []FindingRow `json:"findings"`
	ActionsFrom string       `json:"actions_from,omitempty"`
	Purpose     string       `json:"purpose"`
	Safety      string       `json:"safety"`
	LookFor     []string     `json:"look_for"`
	Traps       []string     `json:"traps"`
	Actions     []ActionLink `json:"actions"`
	Panels      []PanelSlot  `json:"-"`
	// Evidence heads the panels: "Live evidence", or "Recorded evidence"
	// when the time picker shows the past.
	Evidence string       `json:"-"`
	Steps    []StepLink   `json:"-"`
	Prev     *StepLink    `json:"prev,omitempty"`
	Next     *StepLink    `json:"next,omitempty"`
	Incident *IncidentRef `json:"incident,omitempty"`
	// OpenIncident opens an incident from this step (or adds the step's
	// evidence to the open one); nil when the role may not.
	OpenIncident *IncidentButton `json:"-"`
}

// IncidentRef points at the open incident evidence is captured into.
type IncidentRef struct {
	ID    int64  `json:"id"`
	Title string `json:"title"`
	Href  string `json:"href"`
}

// RunbookTarget is one targeted runbook page: the current findings that
// point at it and the panels of its evidence come first.
type RunbookTarget struct {
	Slug     string       `json:"slug"`
	Findings []FindingRow `json:"findings"`
	Panels   []PanelSlot  `json:"-"`
	// Evidence heads the panels, as on a step.
	Evidence  string       `json:"-"`
	Title     string       `json:"title"`
	Symptoms  string       `json:"symptoms"`
	Diagnosis []string     `json:"diagnosis"`
	Mitigate  []string     `json:"mitigate"`
	Dont      []string     `json:"dont"`
	Steps     []StepLink   `json:"steps"`
	Actions   []ActionLink `json:"actions"`
}
