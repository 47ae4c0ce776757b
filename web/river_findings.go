package web

import (
	"fmt"

	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/views"
)

// riverDiscardsLink links a River discard burst to its queue's dead
// letters: River's discarded jobs grouped by error class, where each class
// is retried (river.retry) after a look at its jobs. Nil without a queue.
func riverDiscardsLink(f findings.Finding) *views.FindingJob {
	queue, _ := f.Subject["queue"].(string)
	if queue == "" {
		return nil
	}
	return &views.FindingJob{Label: fmt.Sprintf("Discarded jobs of queue %s, by error class", queue), Href: deadLettersHref(queue)}
}
