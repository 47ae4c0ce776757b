package web

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/views"
)

// actionFields maps an action's parameters to form inputs: a select where
// the values are fixed, a checkbox for a flag, a hidden input for the
// guards a preview fills (never shown), and no input for the typed
// confirmation (asked at execution, never prefilled).
func actionFields(spec actions.Spec, values map[string]string) []views.ActionField {
	var out []views.ActionField
	for _, prm := range spec.Params {
		if prm.Name == spec.Confirm {
			continue
		}
		f := views.ActionField{Name: prm.Name, Label: strings.ReplaceAll(prm.Name, "_", " "), Value: values[prm.Name],
			Help: prm.Description, Required: prm.Required, Kind: "text"}
		def := defaultOf(prm.Description)
		switch {
		case prm.Guard:
			f.Kind = "hidden"
		case len(prm.Enum) > 0:
			f.Kind = "select"
			for _, v := range prm.Enum {
				f.Options = append(f.Options, views.Option{Value: v, Label: v})
			}
		case prm.Type == actions.ParamBool && def != "":
			// An optional flag whose default is on cannot be a checkbox:
			// an unticked box would read as "off" and mean "default".
			f.Kind, f.Blank = "select", blankFor(spec, def)
			f.Options = []views.Option{{Value: "true", Label: "yes"}, {Value: "false", Label: "no"}}
		case prm.Type == actions.ParamBool:
			f.Kind = "checkbox"
		case prm.Type == actions.ParamJSON:
			f.Kind = "textarea"
		}
		if f.Kind == "select" && f.Blank == "" {
			f.Blank = blankFor(spec, def)
		}
		out = append(out, f)
	}
	return out
}

var defaultRE = regexp.MustCompile(`\(default:? ([^)]+)\)`)

// defaultOf is the default a parameter's description states, "maintenance"
// from "(default maintenance)", or "".
func defaultOf(desc string) string {
	if m := defaultRE.FindStringSubmatch(desc); m != nil {
		return strings.TrimSpace(m[1])
	}
	return ""
}

// blankFor says what leaving a choice empty means: the stated default on
// create, "unchanged" on an update, "any" on a filter.
func blankFor(spec actions.Spec, def string) string {
	switch {
	case strings.HasSuffix(spec.Name, ".update"):
		return "unchanged"
	case def == "true":
		return "yes (default)"
	case def != "":
		return def + " (default)"
	case strings.HasSuffix(spec.Name, ".requeue"):
		return "any"
	}
	return "choose…"
}

// formFields are actionFields with the choices only the database knows:
// the queues (with their present state, for the queue actions) and the
// dead-letter classes. A value that is not among them (a queue with no jobs
// yet) is kept as a choice of its own.
func (s *Server) formFields(ctx context.Context, spec actions.Spec, values map[string]string) []views.ActionField {
	fs := actionFields(spec, values)
	for i, f := range fs {
		var opts []views.Option
		switch {
		case f.Kind != "text":
			continue
		case f.Name == "queue":
			opts = s.queueOptions(ctx, spec)
		case f.Name == "error_class":
			opts = s.classOptions(ctx, values["queue"])
		case f.Name == "panel":
			opts = panelOptions()
		default:
			continue
		}
		if opts == nil {
			continue // the list could not be read: keep the text input
		}
		if f.Value != "" && !slices.ContainsFunc(opts, func(o views.Option) bool { return o.Value == f.Value }) {
			opts = append([]views.Option{{Value: f.Value, Label: f.Value}}, opts...)
		}
		fs[i].Kind, fs[i].Options = "select", opts
		if fs[i].Blank == "" {
			fs[i].Blank = blankFor(spec, defaultOf(f.Help))
		}
	}
	return fs
}

// queueOptions lists the queues; the queue actions' labels say each
// queue's present state, the others' how many jobs wait or died.
func (s *Server) queueOptions(ctx context.Context, spec actions.Spec) []views.Option {
	stats, err := queues.QueueHealth(ctx, s.cfg.Pool, queues.QueueHealthParams{DeadWindow: s.cfg.Diagnostics.Thresholds().DeadLetterWindow})
	if err != nil {
		return nil
	}
	opts := []views.Option{}
	for _, q := range stats {
		label := q.Queue
		switch {
		case strings.HasPrefix(spec.Name, "queue."):
			label += " — now " + limitsWords(q.Paused, "max workers", q.MaxWorkers, q.RatePerSecond)
		case strings.HasPrefix(spec.Name, "deadletters."):
			label += fmt.Sprintf(" — %s dead", strconv.FormatInt(q.Dead, 10))
		}
		opts = append(opts, views.Option{Value: q.Queue, Label: label})
	}
	return opts
}

// classOptions lists the dead-letter classes (of one queue, when given),
// with their counts, largest first.
func (s *Server) classOptions(ctx context.Context, queue string) []views.Option {
	groups, err := queues.DeadLetterGroups(ctx, s.cfg.Pool, queue)
	if err != nil {
		return nil
	}
	counts := map[string]int64{}
	var order []string
	for _, g := range groups {
		if _, seen := counts[g.ErrorClass]; !seen {
			order = append(order, g.ErrorClass)
		}
		counts[g.ErrorClass] += g.Count
	}
	opts := []views.Option{}
	for _, c := range order {
		opts = append(opts, views.Option{Value: c, Label: fmt.Sprintf("%s — %d dead", c, counts[c])})
	}
	return opts
}

// panelOptions lists the diagnostics panels an incident can capture.
func panelOptions() []views.Option {
	opts := []views.Option{}
	for _, c := range diagnostics.Catalog() {
		opts = append(opts, views.Option{Value: c.Name, Label: c.Title})
	}
	return opts
}

// limitsWords says a queue's or the relay's settings as the forms show
// them: "running, max workers 4, rate no limit".
func limitsWords(paused bool, countName string, count *int, rate *float64) string {
	state := "running"
	if paused {
		state = "paused"
	}
	c, r := "no limit", "no limit"
	if count != nil {
		c = strconv.Itoa(*count)
	}
	if rate != nil {
		r = strconv.FormatFloat(*rate, 'f', -1, 64) + "/s"
	}
	return state + ", " + countName + " " + c + ", rate " + r
}

// currentState says the present state of what the form changes: the
// queue's settings for the queue actions (once a queue is chosen), the
// relay's for the relay actions.
func (s *Server) currentState(ctx context.Context, spec actions.Spec, values map[string]string) string {
	switch {
	case strings.HasPrefix(spec.Name, "queue.") && values["queue"] != "":
		q, err := queues.QueueSettingsGet(ctx, s.cfg.Pool, values["queue"])
		if err != nil {
			return ""
		}
		return "Queue " + values["queue"] + " now: " + limitsWords(q.Paused, "max workers", q.MaxWorkers, q.RatePerSecond)
	case strings.HasPrefix(spec.Name, "relay."):
		r, err := queues.RelaySettingsGet(ctx, s.cfg.Pool)
		if err != nil {
			return ""
		}
		return "The relay now: " + limitsWords(r.Paused, "batch size", r.BatchSize, r.RatePerSecond)
	}
	return ""
}
