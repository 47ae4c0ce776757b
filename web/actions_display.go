package web

import (
	"strconv"
	"strings"
	"time"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/diagnostics"
)

// displayValue reshapes the previews and results that carry whole backend
// rows and trees into what an operator reads at a glance; everything else is
// shown as it is.
func displayValue(v any, now time.Time) any {
	switch x := v.(type) {
	case actions.BackendPreview:
		out := map[string]any{
			"target":          fingerprintView(x.Target, now),
			"effect":          x.Effect,
			"is_root":         x.IsRoot,
			"backends_behind": x.BlockedCount,
			"blocking_tree":   treeView(x.Tree, now),
		}
		if x.Warning != "" {
			out["warning"] = x.Warning
		}
		if x.NextStep != "" {
			out["next_step"] = x.NextStep
		}
		return out
	case actions.BackendResult:
		out := map[string]any{
			"outcome":           x.Message,
			"signalled":         x.Signalled,
			"chain_cleared":     x.Cleared,
			"target_gone":       x.TargetGone,
			"new_roots":         x.NewRoots,
			"still_waiting":     x.StillWaits,
			"watched_for":       humanSeconds(float64(x.WaitedMS) / 1000),
			"blocking_tree_now": treeView(x.Tree, now),
		}
		if x.TargetState != "" {
			out["target_state"] = x.TargetState
		}
		if x.NextStep != "" {
			out["next_step"] = x.NextStep
		}
		return out
	}
	return v
}

func fingerprintView(f actions.Fingerprint, now time.Time) map[string]any {
	out := map[string]any{
		"pid": f.PID, "state": f.State, "application": f.ApplicationName, "user": f.User,
		"client": f.ClientAddr, "backend_type": f.BackendType, "query": truncate(f.Query, 200),
	}
	if f.XactStart != nil {
		out["transaction_started"] = agePtr(f.XactStart, now).Text
	}
	if f.BackendStart != nil {
		out["connected"] = agePtr(f.BackendStart, now).Text
	}
	if w := strings.Trim(f.WaitEventType+": "+f.WaitEvent, ": "); w != "" {
		out["waits_on"] = w
	}
	return out
}

// treeView is the blocking tree as rows of a small table, indented by depth.
func treeView(nodes []diagnostics.BlockingNode, now time.Time) []map[string]any {
	if len(nodes) == 0 {
		return nil
	}
	out := make([]map[string]any, 0, len(nodes))
	for _, n := range nodes {
		role := "waiting"
		if n.IsRoot {
			role = "root"
		}
		out = append(out, map[string]any{
			"1_pid":         strings.Repeat("· ", n.Depth) + strconv.Itoa(int(n.PID)),
			"2_role":        role,
			"3_state":       n.State,
			"4_blocks":      n.BlockedCount,
			"5_transaction": humanSeconds(n.XactAgeSeconds),
			"6_application": n.ApplicationName,
			"7_query":       truncate(n.Query, 60),
		})
	}
	return out
}
