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

// Spark is a sparkline: points scaled to a 100x28 box, an optional
// threshold line, its scale (Min and Max on y, From and To on x) and a
// value per point to read on hover, computed by the web layer.
type Spark struct {
	Points    string // "x,y x,y ..." for an SVG polyline
	Threshold string // y of the threshold line; empty for none
	Label     string // accessible description, e.g. "ready jobs, last 30 minutes"
	Max, Min  string // the y scale's ends, formatted
	From, To  string // the x scale's ends ("14:10")
	// Dots are the points' hover areas, left to right; Latest is the value
	// shown until one is hovered: the last point's, or in the past the
	// moment's.
	Dots   []SparkDot
	Latest string
	// Mark is the x of the moment a page in the past shows; empty for none.
	Mark string
}

// SparkDot is the slice of a sparkline nearest to one point (X and Width
// in the 100-wide box) and the point's value ("14:12:30 UTC · 12 ready
// jobs").
type SparkDot struct {
	X, Width string
	Text     string
}

// Age is a time shown as an age with the absolute UTC time on hover.
type Age struct {
	Text string // "4m12s ago"
	UTC  string // RFC 3339, for the tooltip and the live ticker
}

// StartingPage is the body a console shows while it cannot start serving
// yet: the step it waits on, why, and what the operator can do meanwhile.
type StartingPage struct {
	Step     string // "connecting to the database"
	Reason   string // the database's last answer, in words; empty while the first try runs
	Since    string // "03:12:04 UTC (2m10s ago)"
	Attempts string // "7 tries"
	Next     string // "next try in 8s"
	Hint     string // what to do about Reason
	HintSQL  string // a statement that helps, shown as code after Hint
}
