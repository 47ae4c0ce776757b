package testdb

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// StatsEnv names the variable that turns on the cost report: a file each
// test binary appends its report to when its server stops. The report
// says what the binary's test server spent (the postmaster and every
// backend, as CPU seconds), what the binary spent itself, how many
// databases it created, the connections each test's database took (the
// server logs every connection while the report is on), and the statements
// it spent most time on, planning and JIT apart. A run of the
// inner loop with it shows where the CPU goes:
//
//	CONSOLE_TESTDB_STATS=/tmp/cost go test -short -count=1 ./...
//	sort -t' ' -k4 -rn /tmp/cost | head    # the summary lines come first per binary
const StatsEnv = "CONSOLE_TESTDB_STATS"

var (
	statsMu    sync.Mutex
	statsTests = map[string]string{} // database -> the test that created it
)

// statsOn says whether this binary reports its costs.
func statsOn() bool { return os.Getenv(StatsEnv) != "" }

// statsSettings is settings with the server logging every connection and
// its end, when the report is on.
func statsSettings(settings map[string]string) map[string]string {
	if !statsOn() {
		return settings
	}
	out := map[string]string{"log_connections": "on", "log_disconnections": "on",
		// Room for every test database's statements, planning included.
		"pg_stat_statements.max": "20000", "pg_stat_statements.track_planning": "on"}
	for k, v := range settings {
		out[k] = v
	}
	return out
}

// statsDatabase records that test made database db, for the report.
func statsDatabase(db string, t testing.TB) {
	if !statsOn() {
		return
	}
	name := testName(t)
	statsMu.Lock()
	statsTests[db] = name
	statsMu.Unlock()
}

// testName is t.Name(), or "(example)" for a stand-in that has none (an
// Example's).
func testName(t testing.TB) (name string) {
	defer func() {
		if recover() != nil {
			name = "(example)"
		}
	}()
	return t.Name()
}

// serverCPU is the CPU the running server at pgdata has spent: the
// postmaster's own, that of the children it has reaped (every backend
// that exited) and that of those still running.
func serverCPU(pgdata string) (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join(pgdata, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return 0, fmt.Errorf("read postmaster.pid: %w", err)
	}
	ticks, err := procTicks(pid, true)
	if err != nil {
		return 0, err
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		child, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if child == pid || procParent(child) != pid {
			continue
		}
		n, err := procTicks(child, false)
		if err == nil {
			ticks += n
		}
	}
	return time.Duration(ticks) * time.Second / 100, nil // USER_HZ is 100 on Linux
}

// procStat returns the fields of /proc/pid/stat after the command's name
// (the third field, the state, first).
func procStat(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:]), nil
}

func procParent(pid int) int {
	f, err := procStat(pid)
	if err != nil || len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// procTicks sums utime and stime of pid, and cutime and cstime (its reaped
// children's) when children is true.
func procTicks(pid int, children bool) (int64, error) {
	f, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	if len(f) < 15 {
		return 0, fmt.Errorf("/proc/%d/stat has %d fields", pid, len(f))
	}
	// utime, stime, cutime and cstime are the line's fields 14 to 17: 11
	// to 14 here.
	end := 15
	if !children {
		end = 13
	}
	var sum int64
	for _, s := range f[11:end] {
		n, _ := strconv.ParseInt(s, 10, 64)
		sum += n
	}
	return sum, nil
}

var connectionRE = regexp.MustCompile(`connection authorized: user=(\S+) database=(\S+)(?: application_name=(.*))?`)

// writeStats appends the binary's report to the file StatsEnv names: one
// line for the binary, then one per test database by connections, most
// first. It runs before the server stops.
func writeStats() {
	path := os.Getenv(StatsEnv)
	if path == "" || server == nil {
		return
	}
	pkg := strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
	serverTime, err := serverCPU(server.DataDir())
	if err != nil {
		fmt.Fprintf(os.Stderr, "testdb: %s: the server's CPU: %v\n", StatsEnv, err)
	}
	var own syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &own)
	var kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	conns := map[string]int{}
	apps := map[string]map[string]int{}
	total := 0
	if f, err := os.Open(server.LogPath()); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			m := connectionRE.FindStringSubmatch(sc.Text())
			if m == nil {
				continue
			}
			total++
			test := statsTests[m[2]]
			if test == "" {
				test = "(" + m[2] + ")"
			}
			conns[test]++
			if apps[test] == nil {
				apps[test] = map[string]int{}
			}
			apps[test][m[1]+"/"+m[3]]++
		}
		f.Close()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s summary server_cpu %.1f own_user %.1f own_sys %.1f exec_children %.1f databases %d connections %d\n",
		pkg, serverTime.Seconds(), tv(own.Utime), tv(own.Stime), tv(kids.Utime)+tv(kids.Stime), counter.Load(), total)
	tests := make([]string, 0, len(conns))
	for test := range conns {
		tests = append(tests, test)
	}
	slices.SortFunc(tests, func(a, b string) int { return cmp.Or(conns[b]-conns[a], strings.Compare(a, b)) })
	for _, test := range tests {
		var who []string
		for app, n := range apps[test] {
			who = append(who, fmt.Sprintf("%s=%d", app, n))
		}
		slices.Sort(who)
		fmt.Fprintf(&b, "%s test %s connections %d %s\n", pkg, test, conns[test], strings.Join(who, ","))
	}
	b.WriteString(topStatements(pkg))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testdb: %s: %v\n", StatsEnv, err)
		return
	}
	defer f.Close()
	f.WriteString(b.String())
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// topStatements reports the statements the server spent most time on,
// over every test database (planning and execution, from
// pg_stat_statements; a test that resets it takes what came before with
// it): a line each, most first.
func topStatements(pkg string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, server.URL(template)) // the extension is there
	if err != nil {
		fmt.Fprintf(os.Stderr, "testdb: %s: the statements: %v\n", StatsEnv, err)
		return ""
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT sum(calls)::bigint, sum(total_exec_time), sum(total_plan_time),
			sum(jit_generation_time + jit_inlining_time + jit_optimization_time + jit_emission_time),
			left(regexp_replace(query, '\s+', ' ', 'g'), 120)
		FROM pg_stat_statements GROUP BY query
		ORDER BY sum(total_exec_time + total_plan_time) DESC LIMIT 15`)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testdb: %s: the statements: %v\n", StatsEnv, err)
		return ""
	}
	var b strings.Builder
	for rows.Next() {
		var calls int64
		var exec, plan, jit float64
		var query string
		if rows.Scan(&calls, &exec, &plan, &jit, &query) == nil {
			fmt.Fprintf(&b, "%s statement calls %d exec_ms %.0f plan_ms %.0f jit_ms %.0f %s\n", pkg, calls, exec, plan, jit, query)
		}
	}
	return b.String()
}
