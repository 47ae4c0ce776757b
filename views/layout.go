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
	// Time, when set, is the time picker of an evidence page.
	Time *TimeBar
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
	// Theme is the theme the operator chose with the toggle, "dark" or
	// "light", rendered as <html data-theme> so the first paint has it;
	// empty follows the system's.
	Theme string

	// ReadOnly, when set, is the banner saying the database is a standby
	// and actions are off ("Read-only: connected to a standby of
	// 10.0.0.5:5432; actions are off").
	ReadOnly string
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

// IncidentPill shows the open incident in the top bar: its title, how long
// it has been open, and a link to its timeline.
type IncidentPill struct {
	Title  string
	Href   string
	Opened Age
}

// Shortcut is one keyboard shortcut of the help dialog. Key is what to
// press, space separated for a sequence ("g o"); Href, when set, is where
// the sequence goes (app.js reads it from the dialog).
type Shortcut struct {
	Key  string
	What string
	Href string
}

// Shortcuts is every keyboard shortcut app.js handles, in the order the
// help dialog lists them.
var Shortcuts = []Shortcut{
	{Key: "/", What: "Jump to a job id, queue, pid or incident"},
	{Key: "f", What: "Focus this page's filter box"},
	{Key: "?", What: "Show these shortcuts"},
	{Key: "m", What: "Open or close the menu (on a phone)"},
	{Key: "t", What: "Switch the theme: system, dark, light"},
	{Key: "Esc", What: "Close this dialog or the menu; leave a field"},
	{Key: "g o", What: "Go to the overview", Href: "/"},
	{Key: "g r", What: "Go to the runbook", Href: "/runbook"},
	{Key: "g b", What: "Go to the blocking step of the runbook", Href: "/runbook/blocking"},
	{Key: "g i", What: "Go to the incidents", Href: "/incidents"},
	{Key: "g q", What: "Go to the queues", Href: "/queues"},
	{Key: "g j", What: "Go to the jobs", Href: "/jobs"},
	{Key: "g d", What: "Go to the dead letters", Href: "/deadletters"},
	{Key: "g w", What: "Go to the workers", Href: "/workers"},
	{Key: "g l", What: "Go to activity and locks", Href: "/database/activity"},
	{Key: "g x", What: "Go to the actions", Href: "/actions"},
	{Key: "g a", What: "Go to the audit log", Href: "/audit"},
}
