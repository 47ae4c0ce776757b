package sqlset_test

import (
	"errors"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/sqlset"
)

func files() fstest.MapFS {
	return fstest.MapFS{
		"sql/job_get.sql":       {Data: []byte("-- jobGet: one job.\nSELECT 1\n\n")},
		"sql/wal_stats.sql":     {Data: []byte("SELECT 'old'")},
		"sql/wal_stats_v18.sql": {Data: []byte("SELECT 'v18'")},
		"sql/io_stats.sql":      {Data: []byte("SELECT 'io'")},
		"sql/io_stats_v18.sql":  {Data: []byte("SELECT 'io18'")},
		"README.md":             {Data: []byte("not a query")},
	}
}

func TestText(t *testing.T) {
	s := sqlset.New("demo", files())
	require.Equal(t, "-- jobGet: one job.\nSELECT 1", s.Text("job_get"))
	require.PanicsWithValue(t, `demo: no embedded query "nope"`, func() { s.Text("nope") })
	require.Equal(t, "SELECT 'v18'", s.Text("wal_stats_v18"), "a variant's file is a query of its own too")
}

func TestNewWithoutFilesPanics(t *testing.T) {
	require.PanicsWithValue(t, "demo: no embedded sql/*.sql files", func() {
		sqlset.New("demo", fstest.MapFS{"other/x.sql": {Data: []byte("SELECT 1")}})
	})
}

func TestVariants(t *testing.T) {
	s := sqlset.New("demo", files()).WithVariants(map[string][]sqlset.Variant{
		"wal_stats": {{0, "wal_stats"}, {180000, "wal_stats_v18"}},
		"io_stats":  {{160000, "io_stats"}, {180000, "io_stats_v18"}},
	})
	cases := []struct {
		name    string
		version int
		want    string
	}{
		{"wal_stats", 150000, "SELECT 'old'"},
		{"wal_stats", 179999, "SELECT 'old'"},
		{"wal_stats", 180000, "SELECT 'v18'"},
		{"wal_stats", 0, "SELECT 'v18'"},
		{"io_stats", 160000, "SELECT 'io'"},
		{"io_stats", 170004, "SELECT 'io'"},
		{"io_stats", 180001, "SELECT 'io18'"},
		{"job_get", 150000, "-- jobGet: one job.\nSELECT 1"},
	}
	for _, tc := range cases {
		got, err := s.For(tc.name, tc.version)
		require.NoError(t, err, "%s on %d", tc.name, tc.version)
		require.Equal(t, tc.want, got, "%s on %d", tc.name, tc.version)
	}
	_, err := s.For("io_stats", 150000)
	require.True(t, errors.Is(err, sqlset.ErrUnsupported), "got %v", err)
	require.EqualError(t, err, "io_stats needs PostgreSQL 16 or later: not available on this PostgreSQL version")
	file, err := s.File("wal_stats", 170000)
	require.NoError(t, err)
	require.Equal(t, "wal_stats", file)
	require.True(t, s.Has("io_stats"))
	require.False(t, s.Has("nope"))
}

func TestBadVariantsPanic(t *testing.T) {
	require.Panics(t, func() {
		sqlset.New("demo", files()).WithVariants(map[string][]sqlset.Variant{"wal_stats": {{0, "wal_stats"}, {180000, "wal_stats_v19"}}})
	}, "a variant naming a missing file")
	require.Panics(t, func() {
		sqlset.New("demo", files()).WithVariants(map[string][]sqlset.Variant{"wal_stats": {{180000, "wal_stats_v18"}, {0, "wal_stats"}}})
	}, "variants out of order")
	require.Panics(t, func() {
		sqlset.New("demo", files()).WithVariants(map[string][]sqlset.Variant{"wal_stats": nil})
	}, "an empty variant list")
}
