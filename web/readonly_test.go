package web

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The banner names the primary from primary_conninfo in either form libpq
// reads.
func TestConninfoHost(t *testing.T) {
	t.Parallel()
	for conninfo, want := range map[string]string{
		"user=replicator host=10.0.0.5 port=5433 sslmode=prefer":     "10.0.0.5:5433",
		"host='db-1.internal' application_name=standby":              "db-1.internal",
		"hostaddr=10.0.0.7 port=5432":                                "10.0.0.7:5432",
		"host=db-1 hostaddr=10.0.0.7 port=5432":                      "db-1:5432",
		"host=::1 port=5432":                                         "[::1]:5432",
		"postgresql://replicator:secret@db-2.internal:6432/postgres": "db-2.internal:6432",
		"user=replicator":                                            "",
		"":                                                           "",
	} {
		require.Equal(t, want, conninfoHost(conninfo), conninfo)
	}
}
