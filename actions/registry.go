package actions

import "slices"

// registry is every action the console offers, in the order it lists them.
// An action exists once it is listed here; CONTRIBUTING.md says how to add
// one.
var registry = []definition{
	deadLettersRequeue,
	jobCancel, jobRetryNow, leaseExpire, jobsRetryNow, jobsCancel,
	queuePause, queueResume, queueThrottle, tenantThrottle,
	relayPause, relayResume, relayThrottle,
	outboxRequeue,
	riverRetry, riverCancel, riverQueuePause, riverQueueResume,
	backendCancel, backendTerminate, preparedXactRollback,
	scheduleCreate, scheduleUpdate, scheduleEnable, scheduleDisable, scheduleRunNow,
	incidentOpen, incidentClose, incidentCapture, incidentNote,
}

var definitions = indexDefinitions(registry)

func indexDefinitions(list []definition) map[string]definition {
	out := make(map[string]definition, len(list))
	for _, d := range list {
		if _, dup := out[d.spec.Name]; dup {
			panic("actions: " + d.spec.Name + " is listed twice")
		}
		out[d.spec.Name] = d
	}
	return out
}

// Registry returns the spec of every action in display order. The slice is
// a copy the caller may keep.
func Registry() []Spec {
	out := make([]Spec, 0, len(registry))
	for _, d := range registry {
		s := d.spec
		s.Params = slices.Clone(s.Params)
		out = append(out, s)
	}
	return out
}

// Lookup returns the spec of one action.
func Lookup(name string) (Spec, bool) {
	d, ok := definitions[name]
	d.spec.Params = slices.Clone(d.spec.Params)
	return d.spec, ok
}
