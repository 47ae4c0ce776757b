package views

// Panel is one independently loaded block of evidence: a table of rows from
// one query, the SQL that produced it, and its own status, so a query that
// times out or is blocked shows that here without taking the page down.
type Panel struct {
	ID      string   `json:"id"`
	Title   string   `json:"title"`
	SQL     string   `json:"sql,omitempty"`
	Columns []Column `json:"columns"`
	Rows    [][]Cell `json:"rows"`
	// Status is "ok", "timed_out", "locked" or "error"; Message says what
	// happened and what to try.
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
	// EmptyTitle and EmptyWhy describe what would appear and why nothing
	// does.
	EmptyTitle string `json:"-"`
	EmptyWhy   string `json:"-"`
	Took       string `json:"took,omitempty"`
	// AsOf says how old the rows are ("as of 03:12:04 UTC, 2s old"): a
	// live panel is served from a result shared by every viewer.
	AsOf string `json:"as_of,omitempty"`
	// RefreshURL, when set, makes the panel refresh itself every
	// RefreshSeconds (app.js polls it; a refresh that fails keeps the last
	// good rows, marked stale, and retries with backoff).
	RefreshURL     string `json:"-"`
	RefreshSeconds int    `json:"-"`
	// CaptureURL, when set, offers "capture into the open incident".
	CaptureURL string `json:"-"`
	// Cards draws each row as a labelled card on a phone, as tables with
	// actions are: for wide tables read a row at a time (statements,
	// workers), where scrolling sideways would hide most of a row.
	Cards bool   `json:"-"`
	CSRF  string `json:"-"`
	Note  string `json:"note,omitempty"`
	// History, when set, marks a panel drawn from a recorded sample
	// ("History · at 03:12:40 (sample 03:12:35)"); such a panel never
	// refreshes and offers no action. Missing, when set, is shown instead
	// of rows: the past cannot be shown ("Not recorded: history keeps …").
	History string `json:"history,omitempty"`
	Missing string `json:"missing,omitempty"`
}

// Column is a table heading; Num right-aligns it.
type Column struct {
	Label string `json:"label"`
	Num   bool   `json:"num,omitempty"`
	Hint  string `json:"hint,omitempty"`
}

// Cell is one table cell, already formatted.
type Cell struct {
	Text    string       `json:"text"`
	Href    string       `json:"href,omitempty"`
	Title   string       `json:"title,omitempty"` // tooltip, e.g. absolute UTC
	Mono    bool         `json:"-"`
	Sev     string       `json:"sev,omitempty"` // render as a severity badge
	Indent  int          `json:"indent,omitempty"`
	Actions []ActionLink `json:"actions,omitempty"`
	TS      string       `json:"ts,omitempty"` // RFC 3339: keep the age ticking
}

// ActionLink is the next step for a finding or a row: a button that opens the
// action's preview. Risk is the action registry's risk in one of the three
// words the UI styles (low, medium, high).
type ActionLink struct {
	Name  string `json:"name"`
	Label string `json:"label"`
	Href  string `json:"href"`
	Risk  string `json:"risk"`
	// Refused, when set, says why the action is not offered here (the
	// guards would refuse it): the page shows the reason instead of a
	// button, and Href is empty.
	Refused string `json:"refused,omitempty"`
}

// Danger reports whether the action should look different from safe ones.
func (a ActionLink) Danger() bool { return a.Risk == "high" || a.Risk == "medium" }

// PanelSlot is a placeholder that loads a panel with htmx as soon as the page
// is shown, so every panel loads (and fails) on its own.
type PanelSlot struct {
	ID    string
	Title string
	URL   string
}

// HasActions reports whether a row offers an action. Such tables become one
// card per row on a phone, so the buttons are never scrolled out of sight.
func (p Panel) HasActions() bool {
	for _, row := range p.Rows {
		for _, c := range row {
			if len(c.Actions) > 0 {
				return true
			}
		}
	}
	return false
}

// column is the i-th column, or a blank one for a row longer than the
// header.
func (p Panel) column(i int) Column {
	if i < len(p.Columns) {
		return p.Columns[i]
	}
	return Column{}
}

// blank reports a cell with nothing to show, which a card leaves out.
func (c Cell) blank() bool { return c.Text == "" && c.Sev == "" && len(c.Actions) == 0 }
