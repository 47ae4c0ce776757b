package views

// TimeBar is the time picker of an evidence page: live, a quick window
// (15 m, 1 h, 24 h, 7 d) or a typed range and moment. In the past it says
// so in one marker, and app.js carries Query to the links of Paths.
type TimeBar struct {
	// Path is the page the picker reloads (its form's action).
	Path    string
	Choices []HistoryWindowLink
	// History is true when the page shows the past; Marker then says which
	// moment ("History · at 03:12:40 UTC, 3 Dec").
	History bool
	Marker  string
	// Custom is true when the range or moment was typed.
	Custom bool
	// From, To and At are the inputs' values, in Zone, in a form that can
	// be typed back ("2026-12-03 03:12:40"), or what was typed when it
	// could not be read (Problem says why).
	From, To, At string
	// Zone is the IANA name of the zone typed times are read in ("UTC"
	// unless the browser said otherwise).
	Zone string
	// Problem is the sentence saying why what was typed could not be read
	// and what to type instead; the page is then live.
	Problem  string
	LiveHref string
	// Query is the choice as URL parameters; Paths the page prefixes that
	// honour it, space separated ("/" alone is the overview).
	Query string
	Paths string
}
