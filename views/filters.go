package views

import "strings"

// activeText lists the filters that are on as "name value" pairs (the
// value alone when the name is ""), or says none is.
func activeText(kv ...string) string {
	var on []string
	for i := 0; i+1 < len(kv); i += 2 {
		switch {
		case kv[i+1] == "":
		case kv[i] == "":
			on = append(on, kv[i+1])
		default:
			on = append(on, kv[i]+" "+kv[i+1])
		}
	}
	if len(on) == 0 {
		return "none on"
	}
	return strings.Join(on, " · ")
}

// ActiveText says which filters of the jobs list are on, for the folded
// form's summary (the state is the tab's).
func (f JobFilter) ActiveText() string {
	return activeText("queue", f.Queue, "kind", f.Kind, "class", f.ErrorClass, "from", f.CreatedFrom,
		"until", f.CreatedUntil, "per page", f.Limit)
}

// ActiveText says which filters of the audit log are on.
func (f AuditFilter) ActiveText() string {
	return activeText("actor", f.Actor, "action", f.Action, "target", f.Target, "outcome", f.Outcome,
		"incident", f.Incident, "per page", f.Limit)
}

// ActiveText says which filters of the lock episodes are on: the window
// always, the others when filled in.
func (f LockEpisodeFilter) ActiveText() string {
	since := f.Since
	for _, o := range f.Sinces {
		if o.Selected {
			since = o.Label
		}
	}
	return activeText("", since, "at least", f.MinDuration, "table", f.Table, "application", f.Application,
		"kind", f.JobKind, "queue", f.Queue)
}

// ActiveText says which window and moment the history page shows
// ("last 1h · at 2026-12-06 17:16:42 UTC").
func (m HistoryPage) ActiveText() string {
	window := ""
	for _, w := range m.Windows {
		if w.Active && w.Label != "custom" {
			window = "last " + w.Label
		}
	}
	if window == "" && (m.From != "" || m.To != "") {
		window = "from " + orText(m.From, "the start") + " to " + orText(m.To, "now")
	}
	at := ""
	if m.At != "" {
		at = m.At + " " + m.Zone
	}
	return activeText("", window, "at", at)
}

// ActiveText says which range and moment were typed into the time bar.
func (b TimeBar) ActiveText() string {
	return activeText("from", b.From, "to", b.To, "at", b.At, "in", b.Zone)
}
