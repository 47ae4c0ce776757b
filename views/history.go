package views

// HistoryPage is the flight recorder's page: the blocking tree and activity
// as they were at one moment, clearly marked as history, with a time picker
// and the moments of the window when backends were blocked.
type HistoryPage struct {
	// Recording says whether history is recorded now, and why not.
	Recording    bool
	RecordingWhy string
	// Window is the picked window ("15m", "1h", "24h", "7d" or "custom");
	// From and To bound it and At is the moment shown, in Zone, as the
	// inputs take them back ("2026-12-03 03:12:40").
	Window string
	From   string
	// Zone is the zone the inputs are read in (see TimeBar.Zone); Problem
	// says why what was typed could not be read (the inputs keep it).
	Zone, Problem string
	To            string
	At            string
	// Windows are the quick picks.
	Windows []HistoryWindowLink
	// Found is false when no sample was recorded near At; Missing says
	// why, for the empty state.
	Found   bool
	Missing string
	// SampleAt and RecordedBy name the sample shown.
	SampleAt   string
	RecordedBy string
	// Moments are the lock chains recorded in the window, newest first,
	// each a link to show it.
	Moments      []HistoryMoment
	MomentsLimit bool
	Tree         []HistoryTreeRow
	Activity     []HistoryActivityRow
	Waits        []HistoryWaitRow
	Findings     []HistoryFindingRow
	// APIHref is the same evidence as JSON.
	APIHref string
	Error   string
}

// HistoryWindowLink is one quick pick of the time picker.
type HistoryWindowLink struct {
	Label  string
	Href   string
	Active bool
}

// HistoryMoment is one lock chain as recorded: consecutive samples with
// the same root blocker; Href shows its worst sample.
type HistoryMoment struct {
	At      string
	Samples string
	Href    string
	Blocked string
	Root    string
	Active  bool
}

// HistoryTreeRow is one backend of a recorded blocking tree.
type HistoryTreeRow struct {
	PID     string
	Indent  string
	Root    bool
	Blocked string
	State   string
	Wait    string
	Waited  string
	XactAge string
	App     string
	Job     string
	JobHref string
	Query   string
}

// HistoryActivityRow is one backend of recorded activity.
type HistoryActivityRow struct {
	PID      string
	State    string
	Wait     string
	XactAge  string
	QueryAge string
	App      string
	Query    string
}

// HistoryWaitRow is one wait event and how many backends waited on it.
type HistoryWaitRow struct {
	Event    string
	Backends string
}

// HistoryFindingRow is one finding of the recorded sample.
type HistoryFindingRow struct {
	Severity string
	Title    string
	Evidence string
}
