package views

import "strings"

// LockEpisodesPage is /lock-episodes: every lock wait the console saw,
// most waited first, with the filters that narrow them.
type LockEpisodesPage struct {
	// Recording says whether lock episodes are recorded now, and why not.
	Recording    bool
	RecordingWhy string
	Filter       LockEpisodeFilter
	// Findings are the applications that blocked the job claims again
	// and again in the last hour.
	Findings []LockEpisodeFinding
	Episodes []LockEpisodeCard
	// Limited is true when more episodes matched than are shown: a page
	// holds Shown of them, NextHref leads to the next page and FirstHref
	// (set past the first page) back to the first.
	Limited   bool
	Shown     int
	NextHref  string
	FirstHref string
	// APIHref is the same list as JSON.
	APIHref string
}

// LockEpisodeFilter is the filter form, as the operator filled it in.
type LockEpisodeFilter struct {
	Since       string
	Sinces      []LockEpisodeOption
	MinDuration string
	Table       string
	Application string
	JobKind     string
	Queue       string
}

// LockEpisodeOption is one choice of a select.
type LockEpisodeOption struct {
	Value    string
	Label    string
	Selected bool
}

// LockEpisodeFinding is one repeat blocker: its sentence, the locks its
// episodes waited for and the root statements.
type LockEpisodeFinding struct {
	Sentence   string
	Targets    string
	Statements []string
	Href       string
}

// LockEpisodeCard is one episode.
type LockEpisodeCard struct {
	ID string
	// Lock is what the first waiter waited for ("ShareLock on accounts
	// row (0,1)").
	Lock     string
	Start    string
	End      string
	Duration string
	// EndNote is set when the end was not seen, or the episode is still
	// open, and says so.
	EndNote     string
	Root        string
	RootQuery   string
	Held        []string
	Waiting     string
	Waited      string
	Claims      string
	Jobs        []LockEpisodeLink
	HistoryHref string
	Sessions    []LockEpisodeSession
}

// LockEpisodeLink is a link with its text.
type LockEpisodeLink struct {
	Text string
	Href string
}

// LockEpisodeSession is one session of an episode, with its wait as a bar
// on the episode's timeline: BarX and BarW are percentages of the episode.
type LockEpisodeSession struct {
	PID         string
	Role        string
	App         string
	Job         string
	JobHref     string
	JobWhere    string
	Lock        string
	Waited      string
	Query       string
	Fingerprint string
	BarX        string
	BarW        string
}

// joinComma lists items as one line.
func joinComma(items []string) string { return strings.Join(items, ", ") }
