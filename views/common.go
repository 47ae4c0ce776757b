package views

// Alert is a message box: Kind is "error", "ok" or "info".
type Alert struct {
	Kind    string
	Message string
}

// ErrorPage is the body of an error response: what failed and what to try.
type ErrorPage struct {
	Status    int
	Title     string
	Message   string
	Hint      string
	RequestID string
}

// LoginPage is the sign-in form.
type LoginPage struct {
	Next   string
	Name   string
	Error  string
	CSRF   string
	Notice string
}

// Spark is a sparkline: points scaled to a 100x28 box, and an optional
// threshold line, computed by the web layer.
type Spark struct {
	Points    string // "x,y x,y ..." for an SVG polyline
	Threshold string // y of the threshold line; empty for none
	Label     string // accessible description, e.g. "ready jobs, last 10 minutes"
}

// Age is a time shown as an age with the absolute UTC time on hover.
type Age struct {
	Text string // "4m12s ago"
	UTC  string // RFC 3339, for the tooltip and the live ticker
}
