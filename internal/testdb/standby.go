package testdb

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/pgserver"
)

// Standby makes a base backup of primary (pg_basebackup when the bin
// folder has it, else the low-level pg_backup_start/pg_backup_stop API and
// a file copy) and starts a streaming standby on it with extra settings over
// the test servers', stopped at cleanup.
func Standby(t testing.TB, primary *pgserver.Server, extra map[string]string, appName string) *pgserver.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := pgserver.TempDir("console-standby-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	pgdata := filepath.Join(dir, "pgdata")

	if tool, ok := primary.Tool("pg_basebackup"); ok {
		require.NoError(t, os.Mkdir(pgdata, 0o700))
		require.NoError(t, primary.ChownTree(pgdata))
		out, err := primary.Command(ctx, tool, "-D", pgdata, "-d", primary.URL("postgres"),
			"-X", "stream", "-c", "fast").CombinedOutput()
		require.NoError(t, err, "pg_basebackup: %s", out)
	} else {
		lowLevelBackup(t, ctx, primary, pgdata)
	}
	require.NoError(t, os.WriteFile(filepath.Join(pgdata, "standby.signal"), nil, 0o600))
	require.NoError(t, primary.ChownTree(pgdata))

	st := maps.Clone(ServerSettings)
	maps.Copy(st, extra)
	st["primary_conninfo"] = fmt.Sprintf("host=127.0.0.1 port=%d user=%s application_name=%s",
		primary.Port(), pgserver.Superuser, appName)
	st["hot_standby"] = "on"
	st["wal_receiver_status_interval"] = "1s"
	standby, err := pgserver.Start(ctx, pgserver.Config{
		Dir: dir, BinDir: primary.BinDir(), Trust: true, Fast: true, Settings: st,
	})
	require.NoError(t, err)
	t.Cleanup(func() { standby.Stop() })
	return standby
}

// lowLevelBackup copies the primary's data folder between pg_backup_start
// and pg_backup_stop (PostgreSQL 15+), for bin folders without
// pg_basebackup. WAL is not copied: the standby streams it.
func lowLevelBackup(t testing.TB, ctx context.Context, primary *pgserver.Server, pgdata string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, primary.URL("postgres"))
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "SELECT pg_backup_start('console-standby', true)")
	require.NoError(t, err)
	src := primary.DataDir()
	skip := map[string]bool{"postmaster.pid": true, "postmaster.opts": true, "standby.signal": true}
	emptyDirs := map[string]bool{"pg_wal": true, "pg_replslot": true, "pg_stat_tmp": true}
	err = filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil // removed while we copy: the WAL replay recreates it
			}
			return err
		}
		rel, _ := filepath.Rel(src, path)
		dst := filepath.Join(pgdata, rel)
		if e.IsDir() {
			if err := os.MkdirAll(dst, 0o700); err != nil {
				return err
			}
			if rel == "pg_wal" {
				if err := os.MkdirAll(filepath.Join(dst, "archive_status"), 0o700); err != nil {
					return err
				}
			}
			if emptyDirs[rel] {
				return fs.SkipDir
			}
			return nil
		}
		if skip[rel] || !e.Type().IsRegular() {
			return nil
		}
		return copyFile(path, dst)
	})
	require.NoError(t, err)
	var label, spcmap string
	require.NoError(t, conn.QueryRow(ctx, "SELECT labelfile, coalesce(spcmapfile, '') FROM pg_backup_stop(false)").Scan(&label, &spcmap))
	require.NoError(t, os.WriteFile(filepath.Join(pgdata, "backup_label"), []byte(label), 0o600))
	if strings.TrimSpace(spcmap) != "" {
		require.NoError(t, os.WriteFile(filepath.Join(pgdata, "tablespace_map"), []byte(spcmap), 0o600))
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
