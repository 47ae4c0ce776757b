package diagnostics_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/recorder"
	"github.com/pgconsole/console/internal/testdb"
)

// TestRecorderCheckSaysWhyItCannotRecord checks the start-up verdict on
// history recording in each state the recorder cannot write in, and that
// Status carries it before the first sample.
func TestRecorderCheckSaysWhyItCannotRecord(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, url string) recorder.HistoryStatus {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rec := recorder.New(open(t, url, diagnostics.Config{}), testdb.Pool(t, url), recorder.Config{})
		st := rec.Check(ctx)
		if !st.On {
			require.Equal(t, st, rec.Status(), "the pages say it too")
		}
		return st
	}

	t.Run("On", func(t *testing.T) {
		t.Parallel()
		st := check(t, testdb.URL(t))
		require.True(t, st.On)
		require.Equal(t, "on (every 10s)", st.String())
	})
	t.Run("RoleWithoutGrant", func(t *testing.T) {
		t.Parallel()
		url := testdb.URL(t)
		testdb.Roles(t, url, `DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'history_reader') THEN
			CREATE ROLE history_reader LOGIN; END IF; END $$; GRANT SELECT ON history_samples TO history_reader`)
		st := check(t, testdb.AsUser(t, url, "history_reader"))
		require.False(t, st.On)
		require.Equal(t, "off: the role history_reader may not read and insert into history_samples; "+
			"run `console roles sql` as a superuser in this database (it grants them to console_web)", st.String())
	})
	t.Run("ReadOnly", func(t *testing.T) {
		t.Parallel()
		url := testdb.URL(t)
		conn := testdb.Connect(t, url, "setup")
		var db string
		require.NoError(t, conn.QueryRow(context.Background(), "SELECT current_database()").Scan(&db))
		_, err := conn.Exec(context.Background(), "ALTER DATABASE "+pgx.Identifier{db}.Sanitize()+" SET default_transaction_read_only = on")
		require.NoError(t, err)
		st := check(t, url)
		require.False(t, st.On)
		require.Contains(t, st.String(), "off: the database refuses writes")
	})
	t.Run("NoTable", func(t *testing.T) {
		t.Parallel()
		st := check(t, testdb.EmptyURL(t))
		require.False(t, st.On)
		require.Contains(t, st.String(), "off: the table history_samples does not exist; run `console migrate up`")
	})
	t.Run("Standby", func(t *testing.T) {
		t.Parallel()
		standby := testdb.Standby(t, primaryWithSchema(t, nil), nil, "history-check")
		st := check(t, standby.URL("postgres"))
		require.False(t, st.On)
		require.Contains(t, st.String(), "off: this server is a standby")
	})
}
