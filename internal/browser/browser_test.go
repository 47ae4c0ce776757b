package browser

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/stretchr/testify/require"
)

// A step whose node vanished between its query and its use runs again; any
// other failure, or one that lasts past the deadline, is returned as is.
func TestAgainIfStale(t *testing.T) {
	stale := fmt.Errorf("click: %w", &cdproto.Error{Code: -32000, Message: "No node with given id found"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	runs := 0
	v, err := againIfStale(ctx, func() (string, error) {
		runs++
		if runs < 3 {
			return "", stale
		}
		return "operator (operator)", nil
	})
	require.NoError(t, err)
	require.Equal(t, "operator (operator)", v)
	require.Equal(t, 3, runs)

	other := &cdproto.Error{Code: -32000, Message: "Could not compute box model."}
	runs = 0
	_, err = againIfStale(ctx, func() (int, error) { runs++; return 0, other })
	require.ErrorIs(t, err, other)
	require.Equal(t, 1, runs, "a failure that is not a vanished node is not retried")

	short, cancelShort := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelShort()
	_, err = againIfStale(short, func() (int, error) { return 0, stale })
	require.True(t, errors.Is(err, stale) || staleNode(err), "past the deadline the stale error is returned: %v", err)
}
