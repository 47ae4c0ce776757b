package views

import "strings"

// activeText lists the filters that are on as "name value" pairs, or
// says none is.
func activeText(kv ...string) string {
	var on []string
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
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
