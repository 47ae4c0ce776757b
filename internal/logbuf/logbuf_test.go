package logbuf_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/logbuf"
)

// TestConcurrentWritersAndReader: lines written from several goroutines
// while the test reads all arrive whole (run with -race).
func TestConcurrentWritersAndReader(t *testing.T) {
	var b logbuf.Buffer
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 100 {
				fmt.Fprintf(&b, "writer %d line %d\n", w, i)
			}
		})
	}
	for range 10 {
		_ = b.String()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	require.Len(t, lines, 800)
	for _, l := range lines {
		require.Regexp(t, `^writer \d line \d+$`, l)
	}
}
