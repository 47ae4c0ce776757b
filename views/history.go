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
	// Strip is the scrubber: episodes and blocked samples on a time line.
	Strip HistoryStrip
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

// HistoryStrip is the scrubber over the history page: a strip over the
// last hour or day (to the window's end) with the recorded lock episodes
// and the samples that found backends blocked marked where they fell, and
// the moment shown as a line. Each mark is a link: an episode to its card
// on the lock episodes page, a sample to that moment here.
type HistoryStrip struct {
	// Spans are the strip's choosable ranges ("last hour", "last day").
	Spans []HistoryWindowLink
	// From and To label the strip's ends, as the page shows times.
	From, To string
	// Episodes and Samples are the marks of each lane.
	Episodes, Samples []HistoryStripMark
	// AtX is where the moment shown falls, in percent of the strip;
	// AtShown is false when it falls outside.
	AtX     string
	AtShown bool
	// Limited is true when only the most waited episodes are marked.
	Limited bool
}

// HistoryStripMark is one mark of the strip: X and W are its left edge and
// width in percent of the strip; Level (low, mid, high) how much it held
// up; Label says what it is, for a screen reader and a tooltip.
type HistoryStripMark struct {
	X, W  string
	Level string
	Label string
	Href  string
}
