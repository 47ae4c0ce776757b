package views

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
	Stage   string `json:"stage"`
	Error   string `json:"error,omitempty"`
	Preview *Value `json:"preview,omitempty"`
	Result  *Value `json:"result,omitempty"`
	AuditID int64  `json:"audit_id,omitempty"`
	// Confirm, when set, is the value the operator must type again before
	// executing (the pid of backend.terminate).
	ConfirmName  string       `json:"-"`
	ConfirmLabel string       `json:"-"`
	ConfirmValue string       `json:"-"`
	Incident     *IncidentRef `json:"incident,omitempty"`
	CSRF         string       `json:"-"`
	Allowed      bool         `json:"allowed"`
	Next         []ActionLink `json:"next,omitempty"`
	// Watch are live panels shown after the action ran, so the operator
	// sees its effect (the fleet's in-flight count falling to a new
	// limit, the blocking tree clearing).
	Watch []PanelSlot `json:"-"`
}

// ActionField is one parameter input.
type ActionField struct {
	Name     string   `json:"name"`
	Label    string   `json:"label"`
	Kind     string   `json:"kind"` // text, number, checkbox, textarea, select
	Value    string   `json:"value"`
	Help     string   `json:"help,omitempty"`
	Required bool     `json:"required"`
	Options  []string `json:"options,omitempty"`
}

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
