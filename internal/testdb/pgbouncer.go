package testdb

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/internal/pgserver"
)

// PgBouncerPath is where Debian's pgbouncer package installs the binary.
const PgBouncerPath = "/usr/sbin/pgbouncer"

// PgBouncer starts a PgBouncer in transaction pooling mode in front of the
// server of dbURL (a database of this binary's test server, from URL), for
// one test, and returns dbURL reached through it. Its server pool is small
// (default_pool_size 5), so clients share server connections as they would
// in production. It runs as the account PostgreSQL runs as (PgBouncer
// refuses root) from a folder that account can enter, with trust
// authentication for dbURL's user, and is stopped at cleanup, its log shown
// when the test failed.
//
// Without Debian's pgbouncer the test is skipped loudly, or fails when CI is
// set (scripts/deps.sh test installs it).
func PgBouncer(t testing.TB, dbURL string) string {
	t.Helper()
	SkipShort(t, "a test through PgBouncer")
	bin := pgBouncerBinary(t)
	srv := Server(t)
	if srv == nil {
		t.Skip("PgBouncer tests need the harness's own server (TEST_DATABASE_URL is set)")
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("parse %s: %v", dbURL, err)
	}
	base, err := ensureBaseDir()
	if err != nil {
		t.Fatalf("pgbouncer folder: %v", err)
	}
	dir, err := os.MkdirTemp(base, "pgbouncer-")
	if err != nil {
		t.Fatalf("pgbouncer folder: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	port, err := pgserver.FreePort()
	if err != nil {
		t.Fatalf("pgbouncer port: %v", err)
	}
	user := u.User.Username()
	ini := fmt.Sprintf(`[databases]
* = host=127.0.0.1 port=%d

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = 5
max_client_conn = 300
server_check_delay = 0
`, srv.Port(), port, filepath.Join(dir, "users.txt"))
	files := map[string]string{"pgbouncer.ini": ini, "users.txt": fmt.Sprintf("%q \"\"\n", user)}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatalf("write %s: %v", name, err)
		}
	}
	if err := srv.ChownTree(dir); err != nil {
		t.Fatalf("give the pgbouncer folder to the PostgreSQL account: %v", err)
	}
	var log lockedBuffer
	cmd := srv.Command(context.Background(), bin, filepath.Join(dir, "pgbouncer.ini"))
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start pgbouncer: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("pgbouncer log:\n%s", log.String())
		}
	})
	u.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	through := u.String()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, through)
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return through
		}
		select {
		case <-exited:
			t.Fatalf("pgbouncer exited at start: %v\n%s", cmd.ProcessState, log.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("pgbouncer did not accept a connection within 30s: %v\n%s", err, log.String())
		}
	}
}

// pgBouncerBinary returns Debian's pgbouncer, or skips (fails under CI) the
// test when it is missing.
func pgBouncerBinary(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p
	}
	if _, err := os.Stat(PgBouncerPath); err == nil {
		return PgBouncerPath
	}
	msg := "pgbouncer not found (" + PgBouncerPath + "): install Debian's pgbouncer package (scripts/deps.sh test does)"
	if onCI() {
		t.Fatalf("%s; CI=%s requires it", msg, os.Getenv("CI"))
	}
	t.Skipf("SKIPPED, not passed: %s", msg)
	return ""
}

// onCI reports whether CI is set and not false or 0, as the Makefile and
// scripts/deps.sh read it: a missing dependency then fails the run.
func onCI() bool {
	switch strings.TrimSpace(os.Getenv("CI")) {
	case "", "false", "False", "FALSE", "0":
		return false
	}
	return true
}

// lockedBuffer collects a child's output while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
