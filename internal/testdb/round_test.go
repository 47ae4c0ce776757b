package testdb

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPG18Round checks the Makefile's PostgreSQL 18 round: it runs the
// database-facing packages with PG_BIN set when the binaries are there; when
// they are missing it is a loud skip on a developer's machine and a failure
// under CI, so a green CI cannot mean "15 only". The go command is replaced
// by a script that records how it was called, so no test runs twice.
func TestPG18Round(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(root, "Makefile"))
	work := t.TempDir()
	calls := filepath.Join(work, "go-calls")
	fakeGo := filepath.Join(work, "go")
	require.NoError(t, os.WriteFile(fakeGo, []byte("#!/bin/sh\necho \"PG_BIN=$PG_BIN $*\" >> "+calls+"\nexit ${FAKE_GO_EXIT:-0}\n"), 0o755))
	present := filepath.Join(work, "pg18", "bin")
	require.NoError(t, os.MkdirAll(present, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(present, "postgres"), []byte("#!/bin/sh\n"), 0o755))
	missing := filepath.Join(work, "nothing", "bin")

	makeRound := func(t *testing.T, bin, ci string, env ...string) (string, error) {
		t.Helper()
		os.Remove(calls)
		cmd := exec.Command("make", "--no-print-directory", "-s", "-C", root, "test-pg18",
			"PG18_BIN="+bin, "CI="+ci, "GO="+fakeGo, "PKGS=./audit/...")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "MAKEFLAGS=") && !strings.HasPrefix(kv, "MAKELEVEL=") && !strings.HasPrefix(kv, "MFLAGS=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, env...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	goCalls := func(t *testing.T) string {
		t.Helper()
		b, err := os.ReadFile(calls)
		if os.IsNotExist(err) {
			return ""
		}
		require.NoError(t, err)
		return string(b)
	}

	t.Run("RunsWithTheBinaries", func(t *testing.T) {
		for _, ci := range []string{"", "true"} {
			out, err := makeRound(t, present, ci)
			require.NoError(t, err, out)
			require.Equal(t, "PG_BIN="+present+" test -race -count=1 -timeout 15m ./audit/...\n", goCalls(t))
		}
	})
	t.Run("FailingTestsFailTheRound", func(t *testing.T) {
		out, err := makeRound(t, present, "", "FAKE_GO_EXIT=1")
		require.Error(t, err, out)
	})
	t.Run("MissingIsALoudSkipOffCI", func(t *testing.T) {
		for _, ci := range []string{"", "false", "0"} {
			out, err := makeRound(t, missing, ci)
			require.NoError(t, err, "CI=%q: %s", ci, out)
			require.Contains(t, out, "SKIPPED: the PostgreSQL 18 round: no postgres in "+missing)
			require.Empty(t, goCalls(t))
		}
	})
	t.Run("MissingFailsUnderCI", func(t *testing.T) {
		for _, ci := range []string{"true", "1"} {
			out, err := makeRound(t, missing, ci)
			require.Error(t, err, "CI=%q must fail without PostgreSQL 18: %s", ci, out)
			require.Contains(t, out, "FAILED: no PostgreSQL 18 in "+missing)
			require.Empty(t, goCalls(t))
		}
	})
}
