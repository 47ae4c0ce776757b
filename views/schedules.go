package views

// SchedulesPage is /schedules: every cron schedule with its next runs and
// its last result.
type SchedulesPage struct {
	GeneratedAt string `json:"generated_at"`
	Schedules   Panel  `json:"schedules"`
	// NewHref opens schedule.create; empty for a role that may not.
	NewHref string `json:"-"`
	// Retention says how long done jobs are kept and what the last
	// retention run did.
	Retention Retention `json:"retention"`
}

// Retention is the built-in done-job retention as /schedules shows it.
type Retention struct {
	// On is false when this console keeps every done job.
	On bool `json:"on"`
	// Sentence says what is kept and how, or why nothing is removed.
	Sentence string `json:"sentence"`
	// LastRun describes the newest recorded run; empty when none.
	LastRun []Fact `json:"last_run,omitempty"`
}
