package queues

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// errTestFail is the error of the "fail" test kind (one error class for all).
var errTestFail = errors.New("test fail kind")

// registerTestKinds installs the kinds the engine's tests enqueue:
//
//   - noop: succeeds at once.
//   - sleep {"ms": N}: waits N milliseconds, or until cancelled.
//   - fail {"times": N}: fails the first N attempts, then succeeds; -1
//     always fails.
//   - panic: panics.
func registerTestKinds(c *Client) {
	c.Handle("noop", func(context.Context, *Job) error { return nil })
	c.Handle("sleep", testSleep)
	c.Handle("fail", func(_ context.Context, j *Job) error {
		var p struct {
			Times int `json:"times"`
		}
		if err := json.Unmarshal(j.Payload, &p); err != nil {
			return Permanent(err)
		}
		if p.Times < 0 || j.Attempts <= p.Times {
			return fmt.Errorf("attempt %d of job %d: %w", j.Attempts, j.ID, errTestFail)
		}
		return nil
	})
	c.Handle("panic", func(_ context.Context, j *Job) error {
		panic(fmt.Sprintf("test panic kind, job %d", j.ID))
	})
}

// testSleep is the "sleep" test kind: it waits the payload's ms, or until
// its context ends.
func testSleep(ctx context.Context, j *Job) error {
	var p struct {
		MS int64 `json:"ms"`
	}
	if err := json.Unmarshal(j.Payload, &p); err != nil {
		return Permanent(err)
	}
	return sleepCtx(ctx, time.Duration(p.MS)*time.Millisecond)
}
