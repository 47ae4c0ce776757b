package views

// JumpPage answers the jump box when the query does not lead to exactly
// one page: what was asked, what it found (choices), or why nothing
// matches, and for a live backend its facts and actions.
type JumpPage struct {
	Query   string       `json:"query"`
	Message string       `json:"message,omitempty"`
	Choices []JumpChoice `json:"choices,omitempty"`
	// Backend is set when the query named a live backend's pid.
	Backend *JumpBackend `json:"backend,omitempty"`
}

// JumpChoice is one thing the query may mean.
type JumpChoice struct {
	Label string `json:"label"`
	Href  string `json:"href"`
	What  string `json:"what"`
}

// JumpBackend is a live session found by pid.
type JumpBackend struct {
	PID     string       `json:"pid"`
	Facts   []Fact       `json:"facts"`
	Actions []ActionLink `json:"actions,omitempty"`
}
