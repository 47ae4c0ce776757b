package views

// SchedulesPage is /schedules: every cron schedule with its next runs and
// its last result.
type SchedulesPage struct {
	GeneratedAt string `json:"generated_at"`
	Schedules   Panel  `json:"schedules"`
	// NewHref opens schedule.create; empty for a role that may not.
	NewHref string `json:"-"`
}
