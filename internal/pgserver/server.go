package pgserver

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Superuser is the name of the cluster's bootstrap superuser.
const Superuser = "console"

// Config says where and how to run the server. The zero value of every
// optional field is a sensible default.
type Config struct {
	// Dir is the folder the server owns: the cluster in Dir/pgdata, the log in
	// Dir/postgresql.log and the superuser password in Dir/superuser.password.
	// A cluster found there is reused.
	Dir string
	// BinDir holds postgres and initdb; empty means FindBinDir("").
	BinDir string
	// Port to listen on, on 127.0.0.1; 0 picks a free one at each start.
	Port int
	// Trust makes initdb use trust authentication on loopback (tests only:
	// faster connections, no password). The default is scram-sha-256 with a
	// generated password.
	Trust bool
	// Settings are extra server settings passed as -c name=value.
	Settings map[string]string
	// Fast trades durability for speed (fsync off, no initdb sync): for
	// throwaway test clusters only.
	Fast bool
	// StartTimeout bounds initdb plus startup; default 60s.
	StartTimeout time.Duration
}

// Server is a running private PostgreSQL. Stop it with Stop.
type Server struct {
	cfg      Config
	bin      string
	pgdata   string
	logPath  string
	port     int
	password string
	acct     *runAs
	// relocation is place's note: why the cluster is not in Config.Dir.
	relocation string
	cmd        *exec.Cmd
	logFile    *os.File
	exited     chan struct{}
	exitErr    error
	stopOnce   sync.Once
}

// Start initialises the cluster if needed and starts the server, returning
// once it accepts connections. The context bounds startup only.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("pgserver: Config.Dir is required")
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()

	bin, err := FindBinDir(cfg.BinDir)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create data folder %s: %w", dir, err)
	}
	acct, err := accountFor()
	if err != nil {
		return nil, err
	}
	dir, note, err := place(dir, acct)
	if err != nil {
		return nil, err
	}
	if b, mode, err := acct.blocker(bin); err != nil || b != "" {
		return nil, unreachableBinaries(acct, bin, b, mode, err)
	}
	s := &Server{
		cfg: cfg, bin: bin, acct: acct, relocation: note,
		pgdata:  filepath.Join(dir, "pgdata"),
		logPath: filepath.Join(dir, "postgresql.log"),
		exited:  make(chan struct{}),
	}
	if err := s.initdb(ctx, dir); err != nil {
		return nil, err
	}
	if err := s.checkNotRunning(); err != nil {
		return nil, err
	}
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// initdb creates the cluster unless one is there already.
func (s *Server) initdb(ctx context.Context, dir string) error {
	pwPath := filepath.Join(dir, "superuser.password")
	if _, err := os.Stat(filepath.Join(s.pgdata, "PG_VERSION")); err == nil {
		if !s.cfg.Trust {
			b, err := os.ReadFile(pwPath)
			if err != nil {
				return fmt.Errorf("the cluster in %s exists but its password file is unreadable: %w", s.pgdata, err)
			}
			s.password = strings.TrimSpace(string(b))
		}
		return s.acct.chownTree(s.pgdata)
	}
	if err := os.MkdirAll(s.pgdata, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", s.pgdata, err)
	}
	if err := s.acct.chownTree(s.pgdata); err != nil {
		return fmt.Errorf("give %s to the PostgreSQL account: %w", s.pgdata, err)
	}
	args := []string{"-D", s.pgdata, "-U", Superuser, "--encoding=UTF8", "--locale=C"}
	if s.cfg.Fast {
		args = append(args, "--no-sync")
	}
	var tmpPw string
	if s.cfg.Trust {
		args = append(args, "--auth=trust")
	} else {
		s.password = randomHex(24)
		if err := os.WriteFile(pwPath, []byte(s.password+"\n"), 0o600); err != nil {
			return fmt.Errorf("write %s: %w", pwPath, err)
		}
		// initdb reads the password as the PostgreSQL account, so it gets
		// its own copy, removed right after.
		tmpPw = filepath.Join(dir, ".initdb-pw")
		if err := os.WriteFile(tmpPw, []byte(s.password+"\n"), 0o600); err != nil {
			return err
		}
		if err := s.acct.chownTree(tmpPw); err != nil {
			return err
		}
		args = append(args, "--auth-local=scram-sha-256", "--auth-host=scram-sha-256", "--pwfile="+tmpPw)
	}
	out, err := s.command(ctx, filepath.Join(s.bin, "initdb"), args...).CombinedOutput()
	if tmpPw != "" {
		os.Remove(tmpPw)
	}
	if err != nil {
		os.RemoveAll(s.pgdata)
		return fmt.Errorf("initdb in %s failed: %v\n%s", s.pgdata, err, tail(string(out), 15))
	}
	return nil
}

// checkNotRunning refuses to start over a live postmaster: a second console on
// the same data folder would otherwise fail with PostgreSQL's less helpful
// lock-file message.
func (s *Server) checkNotRunning() error {
	b, err := os.ReadFile(filepath.Join(s.pgdata, "postmaster.pid"))
	if err != nil {
		return nil
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return nil
	}
	if syscall.Kill(pid, 0) == nil || errors.Is(syscall.Kill(pid, 0), syscall.EPERM) {
		if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil &&
			strings.Contains(string(cmdline), "postgres") {
			return fmt.Errorf("a PostgreSQL server (pid %d) is already running on %s: "+
				"another console is using this --data-dir; stop it or choose another --data-dir", pid, s.pgdata)
		}
	}
	return nil
}

func (s *Server) start(ctx context.Context) error {
	port := s.cfg.Port
	if port == 0 {
		p, err := FreePort()
		if err != nil {
			return fmt.Errorf("pick a port for PostgreSQL: %w", err)
		}
		port = p
	}
	s.port = port
	settings := map[string]string{
		"listen_addresses":        "127.0.0.1",
		"unix_socket_directories": "",
		"port":                    strconv.Itoa(port),
		"logging_collector":       "off",
	}
	if s.cfg.Fast {
		settings["fsync"] = "off"
		settings["full_page_writes"] = "off"
	}
	for k, v := range s.cfg.Settings {
		settings[k] = v
	}
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	args := []string{"-D", s.pgdata}
	for _, k := range keys {
		args = append(args, "-c", k+"="+settings[k])
	}
	// The log holds statements and connection details: owner only, also
	// for a log an older version created world-readable.
	lf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open PostgreSQL log %s: %w", s.logPath, err)
	}
	if err := lf.Chmod(0o600); err != nil {
		lf.Close()
		return fmt.Errorf("restrict PostgreSQL log %s to its owner: %w", s.logPath, err)
	}
	s.logFile = lf
	offset, _ := lf.Seek(0, 2)

	// Not exec.CommandContext: the server must outlive the startup context.
	cmd := s.command(context.Background(), filepath.Join(s.bin, "postgres"), args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	// If this process dies without stopping the server, the kernel sends it
	// SIGINT (fast shutdown), so no server is left behind.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGINT
	if err := cmd.Start(); err != nil {
		lf.Close()
		return fmt.Errorf("start postgres: %w", err)
	}
	s.cmd = cmd
	go func() {
		s.exitErr = cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(ctx); err != nil {
		s.Stop()
		return fmt.Errorf("PostgreSQL did not start: %w\nlast lines of %s:\n%s", err, s.logPath, s.logTail(offset, 15))
	}
	return nil
}

func (s *Server) waitReady(ctx context.Context) error {
	delay := 10 * time.Millisecond
	for {
		conn, err := pgx.Connect(ctx, s.URL("postgres"))
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("the server exited (%v)", s.exitErr)
		case <-ctx.Done():
			return fmt.Errorf("not accepting connections: %w", err)
		case <-time.After(delay):
		}
		if delay < 200*time.Millisecond {
			delay *= 2
		}
	}
}

// command builds an exec.Cmd that runs as the PostgreSQL account.
func (s *Server) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = s.acct.sysProcAttr()
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.Dir = "/"
	return cmd
}

// URL returns a connection URL for the named database as the superuser.
func (s *Server) URL(database string) string {
	u := url.URL{
		Scheme:   "postgres",
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)),
		Path:     "/" + database,
		RawQuery: "sslmode=disable",
	}
	if s.password != "" {
		u.User = url.UserPassword(Superuser, s.password)
	} else {
		u.User = url.User(Superuser)
	}
	return u.String()
}

// Port is the TCP port the server listens on.
func (s *Server) Port() int { return s.port }

// LogPath is the server's log file.
func (s *Server) LogPath() string { return s.logPath }

// Relocation is one line saying where the cluster is and why, when it is not
// in Config.Dir: as root, a data folder the PostgreSQL account cannot reach
// is kept under /var/lib/console instead, and found there again at the next
// start from the same folder. It is "" when the cluster is in Config.Dir.
func (s *Server) Relocation() string { return s.relocation }

// DataDir is the cluster folder (PGDATA).
func (s *Server) DataDir() string { return s.pgdata }

// BinDir is the folder of the binaries the server runs from.
func (s *Server) BinDir() string { return s.bin }

// Exited is closed when the server process ends, for whatever reason.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// Stop shuts the server down (fast shutdown: open transactions roll back) and
// waits for it to exit, escalating to immediate shutdown and then SIGKILL if
// it takes too long. It is safe to call more than once.
func (s *Server) Stop() error { return s.stop(syscall.SIGINT) }

// stop sends first (SIGINT: fast shutdown, SIGQUIT: immediate) and
// escalates from there until the server exits.
func (s *Server) stop(first syscall.Signal) error {
	var err error
	s.stopOnce.Do(func() {
		if s.cmd == nil || s.cmd.Process == nil {
			return
		}
		defer s.logFile.Close()
		steps := []struct {
			sig  syscall.Signal
			wait time.Duration
		}{{syscall.SIGINT, 30 * time.Second}, {syscall.SIGQUIT, 10 * time.Second}, {syscall.SIGKILL, 10 * time.Second}}
		for steps[0].sig != first {
			steps = steps[1:]
		}
		for _, step := range steps {
			_ = s.cmd.Process.Signal(step.sig)
			select {
			case <-s.exited:
				return
			case <-time.After(step.wait):
			}
		}
		err = fmt.Errorf("postgres pid %d did not exit", s.cmd.Process.Pid)
	})
	return err
}

// Restart stops the server (fast shutdown) and starts it again on the same
// port, for tests that check recovery from a database restart.
func (s *Server) Restart(ctx context.Context) error { return s.restart(ctx, syscall.SIGINT) }

// Crash stops the server with an immediate shutdown (no shutdown
// checkpoint: the next start runs crash recovery, as after a power loss)
// and starts it again on the same port.
func (s *Server) Crash(ctx context.Context) error { return s.restart(ctx, syscall.SIGQUIT) }

func (s *Server) restart(ctx context.Context, first syscall.Signal) error {
	if err := s.stop(first); err != nil {
		return err
	}
	s.stopOnce = sync.Once{}
	s.exited = make(chan struct{})
	s.cfg.Port = s.port
	return s.start(ctx)
}

// Command runs another binary from the server's bin folder (pg_basebackup,
// pg_ctl...) as the PostgreSQL account. An absolute name (from Tool) is run
// as is.
func (s *Server) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	if !filepath.IsAbs(name) {
		name = filepath.Join(s.bin, name)
	}
	return s.command(ctx, name, args...)
}

// Tool returns the path of a client binary of the server's installation
// (pg_basebackup, pg_ctl...): in the bin folder, or next to the real postgres
// binary when the bin folder holds symlinks to it (as /usr/local/bin may).
// It reports false when the installation has no such binary (the npm
// PostgreSQL 18 build ships only initdb, pg_ctl and postgres).
func (s *Server) Tool(name string) (string, bool) {
	dirs := []string{s.bin}
	if real, err := filepath.EvalSymlinks(filepath.Join(s.bin, "postgres")); err == nil {
		dirs = append(dirs, filepath.Dir(real))
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, true
		}
	}
	return "", false
}

// ChownTree gives a folder to the account the server runs as, for tests that
// build a standby next to the server.
func (s *Server) ChownTree(dir string) error { return s.acct.chownTree(dir) }

func (s *Server) logTail(offset int64, n int) string {
	f, err := os.Open(s.logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	f.Seek(offset, 0)
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// FreePort returns a TCP port on 127.0.0.1 that nothing listens on now,
// for a server this process is about to start (PostgreSQL, or a pooler in
// front of it in tests).
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
