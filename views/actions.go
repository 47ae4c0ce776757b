package views

import "strings"

// ActionList is the index of every action an operator can take.
type ActionList struct {
	Actions []ActionSummary `json:"actions"`
}

// ActionSummary is one row of the action index.
type ActionSummary struct {
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Role        string `json:"role"`
	Risk        string `json:"risk"`
	Href        string `json:"href"`
	Allowed     bool   `json:"allowed"`
}

// ActionPage is an action's form, its preview, or its result: the same page
// moves through the three stages.
type ActionPage struct {
	Name        string        `json:"name"`
	Title       string        `json:"title"`
	Description string        `json:"description"`
	Risk        string        `json:"risk"`
	Role        string        `json:"role"`
	Fields      []ActionField `json:"fields"`
	Reason      string        `json:"reason"`
	// Stage is "edit", "preview" or "done".
	Stage string `json:"stage"`
	Error string `json:"error,omitempty"`
	// Summary is the preview's one sentence with the key numbers, and
	// ResultSummary the result's; names in it are in backquotes. Preview
	// and Result are the details behind them.
	Summary       string `json:"summary,omitempty"`
	ResultSummary string `json:"result_summary,omitempty"`
	Preview       *Value `json:"preview,omitempty"`
	Result        *Value `json:"result,omitempty"`
	AuditID       int64  `json:"audit_id,omitempty"`
	// Seal is the signed preview the Execute button sends back; ChangeHref
	// reopens the form with the previewed parameters, for a new preview.
	Seal       string `json:"-"`
	ChangeHref string `json:"-"`
	// Current says the present state of what the form changes ("now:
	// running, max workers 4, rate no limit"), or is empty.
	Current string `json:"current,omitempty"`
	// Confirm, when set, is the value the operator must type again before
	// executing (the pid of backend.terminate).
	ConfirmName  string       `json:"-"`
	ConfirmLabel string       `json:"-"`
	ConfirmValue string       `json:"-"`
	Incident     *IncidentRef `json:"incident,omitempty"`
	CSRF         string       `json:"-"`
	Allowed      bool         `json:"allowed"`
	// ReadOnly, when set, is why nothing can run (the database is a
	// standby): the page shows it instead of the button that executes.
	ReadOnly string       `json:"read_only,omitempty"`
	Next     []ActionLink `json:"next,omitempty"`
	// Follow are links to what the action made or changed (the job a
	// schedule's run enqueued), shown with the result.
	Follow []ResultLink `json:"follow,omitempty"`
	// Watch are live panels shown after the action ran, so the operator
	// sees its effect (the fleet's in-flight count falling to a new
	// limit, the blocking tree clearing).
	Watch []PanelSlot `json:"-"`
}

// ResultLink is a link from an action's result to what it touched.
type ResultLink struct {
	Label string `json:"label"`
	Href  string `json:"href"`
}

// ActionField is one parameter input.
type ActionField struct {
	Name     string `json:"name"`
	Label    string `json:"label"`
	Kind     string `json:"kind"` // text, checkbox, textarea, select, hidden
	Value    string `json:"value"`
	Help     string `json:"help,omitempty"`
	Required bool   `json:"required"`
	// Options are a select's choices; Blank labels its empty choice (what
	// leaving it empty means).
	Options []Option `json:"options,omitempty"`
	Blank   string   `json:"blank,omitempty"`
	// Locked shows the value read-only, carried in a hidden input: under
	// a preview, changing a parameter means a new preview.
	Locked bool `json:"locked,omitempty"`
}

// Option is one choice of a select: the value sent and the words shown.
type Option struct {
	Value string `json:"value"`
	Label string `json:"label"`
}

// Shown is the field's value as a locked field shows it.
func (f ActionField) Shown() string {
	for _, o := range f.Options {
		if o.Value == f.Value && f.Value != "" {
			return o.Label
		}
	}
	switch {
	case f.Kind == "checkbox" && f.Value == "true":
		return "yes"
	case f.Kind == "checkbox":
		return "no"
	case f.Value == "" && f.Blank != "":
		return f.Blank
	case f.Value == "":
		return notGiven
	}
	return f.Value
}

// notGiven is how a locked field shows a parameter left out; the preview's
// list of parameters skips those.
const notGiven = "not given"

// Value is how an action page draws a preview or a result: a text, a list of
// key-value pairs, a table or a list, nested. The web layer builds one for
// each typed preview and result, in the order an operator reads it.
type Value struct {
	Text    string     `json:"text,omitempty"`
	Pairs   []Pair     `json:"pairs,omitempty"`
	Columns []string   `json:"columns,omitempty"`
	Rows    [][]*Value `json:"rows,omitempty"`
	List    []*Value   `json:"list,omitempty"`
}

// Pair is one key and its value.
type Pair struct {
	Key   string `json:"key"`
	Value *Value `json:"value"`
}

// SentencePart is a piece of a summary sentence: plain words, or a name
// that was in backquotes and is shown as code.
type SentencePart struct {
	Text string
	Code bool
}

// SentenceParts splits a summary at its backquotes.
func SentenceParts(s string) []SentencePart {
	var out []SentencePart
	for i, part := range strings.Split(s, "`") {
		if part != "" {
			out = append(out, SentencePart{Text: part, Code: i%2 == 1})
		}
	}
	return out
}
