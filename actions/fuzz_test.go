package actions_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/internal/testdb"
)

// hostileValues are the hostile values every parameter of every action gets.
var hostileValues = []string{
	`"x"`, `""`, `"a\u0000b"`, "\"\xff\xfe\"", `1e19`, `5e-324`, `-1`, `"NaN"`, `"2999-01-01T00:00:00Z"`,
	`[1, "x"]`, `{"k": "\u0000"}`, `true`, `null`, `"` + strings.Repeat("a", 5000) + `"`,
}

// FuzzActionParams feeds every action one parameter at a time, and whole
// raw bodies: a dry run must succeed or be refused (a 4xx, never a failure
// the web layer would show as a 5xx), and when it is refused, the real
// attempt is refused too and leaves exactly one audit record. Run as a
// normal test it checks its seed corpus: every parameter of every action
// with each of hostileValues.
func FuzzActionParams(f *testing.F) {
	specs := actions.Registry()
	for i, s := range specs {
		for _, p := range s.Params {
			for _, v := range hostileValues {
				f.Add(uint8(i), p.Name, v, reason)
			}
		}
		f.Add(uint8(i), "", `{"nope": 1} trailing`, "why\x00")
		f.Add(uint8(i), "", "\xff{", reason)
	}
	pool := testdb.New(f)
	r, err := actions.NewRunner(pool, actions.RunnerConfig{RefusalWindow: -1})
	require.NoError(f, err)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, idx uint8, param, value, why string) {
		spec := specs[int(idx)%len(specs)]
		var params json.RawMessage
		if param == "" {
			params = json.RawMessage(value)
		} else {
			key, err := json.Marshal(param)
			require.NoError(t, err)
			params = json.RawMessage(`{` + string(key) + `: ` + value + `}`)
		}
		_, err := r.Run(ctx, admin, spec.Name, actions.Request{Params: params, Reason: why, DryRun: true})
		if err == nil {
			return // a valid request; running it for real would change the database
		}
		require.True(t, isRefusal(err), "%s %s: a dry run failed instead of refusing: %v", spec.Name, params, err)
		before := auditCount(t, pool)
		_, err = r.Run(ctx, admin, spec.Name, actions.Request{Params: params, Reason: why})
		require.Error(t, err)
		require.True(t, isRefusal(err), "%s %s: failed instead of refusing: %v", spec.Name, params, err)
		require.Equal(t, before+1, auditCount(t, pool), "%s %s: the refusal is audited once", spec.Name, params)
	})
}

func isRefusal(err error) bool {
	for _, s := range []error{actions.ErrInvalid, actions.ErrForbidden, actions.ErrReasonRequired, actions.ErrGuard, actions.ErrNotFound} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
