package views

// Overview is the landing page: what the console is attached to and, first,
// what is wrong.
type Overview struct {
	Server   string `json:"server"`
	Role     string `json:"role"`
	Database string `json:"database"`
}
