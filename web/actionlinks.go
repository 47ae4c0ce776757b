package web

import (
	"fmt"
	"net/url"
	"sort"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/internal/auth"
	"github.com/pgconsole/console/views"
)

// actionLink is the button that opens an action's preview with its
// parameters filled in (those of params the action takes). Actions the role may not run are left out, so a
// viewer sees no buttons it cannot use.
func actionLink(name, role string, params map[string]string) (views.ActionLink, bool) {
	spec, ok := actions.Lookup(name)
	if !ok || !auth.RoleAtLeast(role, spec.Role) {
		return views.ActionLink{}, false
	}
	taken := map[string]string{}
	for _, p := range spec.Params {
		if v, ok := params[p.Name]; ok {
			taken[p.Name] = v
		}
	}
	return views.ActionLink{Name: name, Label: spec.Title, Href: actionHref(name, taken), Risk: riskWord(spec.Risk)}, true
}

// actionHref is the address of an action's form with params filled in.
func actionHref(name string, params map[string]string) string {
	q := url.Values{}
	for k, v := range params {
		if v != "" {
			q.Set(k, v)
		}
	}
	href := "/actions/" + name
	if len(q) > 0 {
		href += "?" + q.Encode()
	}
	return href
}

// riskWord maps the registry's risk to the three words the UI styles.
func riskWord(r actions.Risk) string {
	switch r {
	case actions.RiskLow:
		return "low"
	case actions.RiskHigh:
		return "high"
	}
	return "medium"
}

// actionLinks builds the buttons for several action names sharing params.
func actionLinks(names []string, role string, params map[string]string) []views.ActionLink {
	var out []views.ActionLink
	for _, n := range names {
		if l, ok := actionLink(n, role, params); ok {
			out = append(out, l)
		}
	}
	return out
}

// subjectParams turns a finding's subject into action parameters: the
// subject keys are named like the actions' parameters (pid, queue,
// error_class).
func subjectParams(subject map[string]any) map[string]string {
	out := map[string]string{}
	keys := make([]string, 0, len(subject))
	for k := range subject {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch v := subject[k].(type) {
		case string:
			out[k] = v
		case float64:
			out[k] = fmt.Sprintf("%g", v)
		case int, int32, int64:
			out[k] = fmt.Sprint(v)
		}
	}
	return out
}
