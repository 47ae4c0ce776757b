package actions_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/internal/auth"
)

// The API handler's whole job: decode the body, run the action for the
// authenticated actor, and let the error handler map the sentinel errors to
// 403, 422, 409 or 404.
func ExampleRunner_Run() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres:///console")
	if err != nil {
		return
	}
	defer pool.Close()
	r, err := actions.NewRunner(pool, actions.RunnerConfig{RequeueCap: 10000})
	if err != nil {
		return
	}
	var body struct {
		Params json.RawMessage `json:"params"`
		Reason string          `json:"reason"`
		DryRun bool            `json:"dry_run"`
	}
	_ = json.Unmarshal([]byte(`{"params": {"queue": "emails", "error_class": "smtp.timeout"},
		"reason": "SMTP relay is back", "dry_run": true}`), &body)

	out, err := r.Run(ctx, actions.Actor{Name: "olga", Role: auth.RoleOperator}, "deadletters.requeue",
		actions.Request{Params: body.Params, Reason: body.Reason, DryRun: body.DryRun})
	switch {
	case errors.Is(err, actions.ErrForbidden):
		fmt.Println("403", err)
	case errors.Is(err, actions.ErrInvalid), errors.Is(err, actions.ErrReasonRequired):
		fmt.Println("422", err)
	case errors.Is(err, actions.ErrGuard):
		fmt.Println("409", err)
	case err != nil:
		fmt.Println("error", err)
	default:
		p := out.Preview.(actions.RequeuePreview)
		fmt.Printf("%d dead jobs would move, in %d batches\n", p.Count, p.Batches)
	}
}
