package views

// SchedulesPage is /schedules: every cron schedule with its next runs and
// its last result.
type SchedulesPage struct {
	GeneratedAt string `json:"generated_at"`
	Schedules   Panel  `json:"schedules"`
}
