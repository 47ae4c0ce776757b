package findings

import (
	"fmt"
	"io"
	"strings"
)

// WriteText prints the report for a terminal (`console findings` without
// --json): one block per finding, worst first, or a line saying there are
// none.
func (r Report) WriteText(w io.Writer) error {
	if len(r.Findings) == 0 {
		_, err := fmt.Fprintf(w, "%s  no findings\n", r.GeneratedAt.Format("2006-01-02T15:04:05Z07:00"))
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %d %s\n", r.GeneratedAt.Format("2006-01-02T15:04:05Z07:00"), len(r.Findings), plural(len(r.Findings), "finding", "findings"))
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "\n%-8s %s  %s\n", strings.ToUpper(f.Severity), f.Code, f.Title)
		fmt.Fprintf(&b, "         %s\n", f.Evidence)
		fmt.Fprintf(&b, "         runbook %s", f.Runbook)
		if len(f.Actions) > 0 {
			fmt.Fprintf(&b, "  actions %s", strings.Join(f.Actions, ", "))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Worst returns the most severe severity in the report ("" when there are
// no findings), for exit codes of `console findings`.
func (r Report) Worst() string {
	worst := ""
	rank := map[string]int{"": 3, SeverityInfo: 2, SeverityWarning: 1, SeverityCritical: 0}
	for _, f := range r.Findings {
		if rank[f.Severity] < rank[worst] {
			worst = f.Severity
		}
	}
	return worst
}
