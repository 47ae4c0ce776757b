package views

// DatabasePage is one diagnostics page: a heading and panels that load on
// their own.
type DatabasePage struct {
	Slug    string      `json:"slug"`
	Title   string      `json:"title"`
	Intro   string      `json:"intro"`
	Runbook string      `json:"runbook"`
	Panels  []PanelSlot `json:"panels"`
}
