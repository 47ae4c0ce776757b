package views

// Chrome is what every page's frame shows: where the console is attached, who
// is signed in, the navigation and the open incident.
type Chrome struct {
	Title    string // page title, without the product name
	Database string // redacted target, e.g. "console@127.0.0.1:5433/console"
	DBRole   string // "primary" or "standby"; empty when unknown
	DBServer string // e.g. "PostgreSQL 15.18"
	Version  string // the console's own version
	Now      string // server time, RFC 3339 UTC, so the browser keeps ages honest
	User     string // signed-in operator; empty on the login page
	UserRole string
	CSRF     string
	Nav      []NavGroup
	Incident *IncidentPill
	// DBDown, when set, is the banner saying the database does not answer
	// ("Database not answering for 12 s"); DBDownSince is when it stopped,
	// RFC 3339, so the page keeps the count going. app.js shows and clears
	// the banner from then on.
	DBDown      string
	DBDownSince string
	CSS         string // asset URLs with content hashes
	JS          string
	HTMX        string
	Favicon     string
}

// NavGroup is one heading of the left navigation.
type NavGroup struct {
	Title string
	Items []NavItem
}

// NavItem is one link of the left navigation.
type NavItem struct {
	Label  string
	Href   string
	Active bool
}

// IncidentPill shows the open incident in the top bar.
type IncidentPill struct {
	Title string
	Href  string
}
