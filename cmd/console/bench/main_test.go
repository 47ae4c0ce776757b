package bench

import (
	"testing"

	"github.com/pgconsole/console/internal/testdb"
)

// TestMain stops the test server and removes its folder when the tests end.
func TestMain(m *testing.M) { testdb.Main(m) }
