package web

import (
	"cmp"
	"fmt"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/internal/humanize"
	"github.com/pgconsole/console/views"
)

// findingJobs links the jobs a root finding lists.
func findingJobs(f findings.Finding) []views.FindingJob {
	jobs, _ := f.Subject["jobs"].([]diagnostics.JobBehind)
	var out []views.FindingJob
	for _, j := range jobs {
		label := "#" + itoa64(j.ID)
		if j.Queue != "" {
			label += " " + j.Queue + "/" + j.Kind
		}
		out = append(out, views.FindingJob{Label: label + ", " + humanize.Seconds(j.WaitSeconds), Href: j.URL})
	}
	return out
}

// findingEvidenceLink links the page that lists a finding's evidence: a
// repeat blocker's lock episodes, a River discard burst's discarded jobs.
func findingEvidenceLink(f findings.Finding) *views.FindingJob {
	if f.Code == findings.CodeRiverDiscardBurst {
		return riverDiscardsLink(f)
	}
	href, _ := f.Subject["episodes_url"].(string)
	if href == "" {
		return nil
	}
	app, _ := f.Subject["application"].(string)
	return &views.FindingJob{Label: fmt.Sprintf("Lock episodes of %q in the last hour", app), Href: href}
}

// jobLockWaitModel says on a running job's page what its session waits on
// and whom for, and offers the actions of the chain's root: acting on the
// waiting job would release nothing.
func jobLockWaitModel(w diagnostics.JobLockWait, role string) *views.JobLockWait {
	n, root := w.Waiter, w.Root
	holder := n.Holder()
	if n.ParentPID != nil {
		switch {
		case w.HolderJobID != nil:
			holder += fmt.Sprintf(" (job #%d / application %q)", *w.HolderJobID, w.HolderApplication)
		case w.HolderApplication != "":
			holder += fmt.Sprintf(" (application %q)", w.HolderApplication)
		}
	}
	lock := fmt.Sprintf("%s (%s lock, wants %s)", cmp.Or(n.LockTarget, "a lock"), cmp.Or(n.LockType, "unknown"), cmp.Or(n.ModeWanted, "?"))
	how := "held by " + holder
	if n.ModeHeld != "" {
		how += " as " + n.ModeHeld
	}
	if !n.HeldGranted && n.ModeHeld != "" {
		how = fmt.Sprintf("queued behind %s, which asked first for %s and waits too", holder, n.ModeHeld)
	}
	m := &views.JobLockWait{
		Text:      fmt.Sprintf("Backend pid %d is waiting on %s, %s, for %s.", n.PID, lock, how, humanize.Seconds(n.WaitSeconds)),
		ChainHref: diagnostics.RunbookURL(diagnostics.StepBlocking),
		Actions:   rootOffers(root, role),
	}
	rootName := fmt.Sprintf("pid %d (%s, transaction %s old, application %q)", root.PID, cmp.Or(root.State, "gone"), humanize.Seconds(root.XactAgeSeconds), root.ApplicationName)
	if root.IsPrepared() {
		rootName = fmt.Sprintf("prepared transaction %q (%s old)", root.GID, humanize.Seconds(root.XactAgeSeconds))
	}
	m.Root = "The chain's root is " + rootName + ": act on it, not on this job."
	return m
}
