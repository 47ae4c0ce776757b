package pgserver

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ErrNoBinaries reports that no PostgreSQL server binaries were found.
var ErrNoBinaries = errors.New("no PostgreSQL server binaries found " +
	"(looked for postgres and initdb on PATH, in `pg_config --bindir` and under /usr/lib/postgresql/*/bin); " +
	"install them with `apt-get install postgresql` (Debian/Ubuntu) or point --pg-bin at the folder that holds them, " +
	"or set DATABASE_URL to use an existing database")

// debianRoot is where Debian and Ubuntu install versioned server binaries.
var debianRoot = "/usr/lib/postgresql"

// FindBinDir returns the folder holding the postgres and initdb binaries.
// A non-empty explicit folder is checked and used as is; otherwise it looks on
// PATH, then asks pg_config, then takes the newest /usr/lib/postgresql/N/bin.
func FindBinDir(explicit string) (string, error) {
	if explicit != "" {
		if err := hasServer(explicit); err != nil {
			return "", fmt.Errorf("--pg-bin %s: %w", explicit, err)
		}
		return explicit, nil
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		// A PATH entry is often a symlink (/usr/local/bin/postgres): use
		// the installation it points into, where the other tools live.
		if real, err := filepath.EvalSymlinks(p); err == nil && hasServer(filepath.Dir(real)) == nil {
			return filepath.Dir(real), nil
		}
		if dir := filepath.Dir(p); hasServer(dir) == nil {
			return dir, nil
		}
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if dir := strings.TrimSpace(string(out)); hasServer(dir) == nil {
			return dir, nil
		}
	}
	matches, _ := filepath.Glob(filepath.Join(debianRoot, "*", "bin"))
	sort.Slice(matches, func(i, j int) bool { return versionOf(matches[i]) > versionOf(matches[j]) })
	for _, dir := range matches {
		if hasServer(dir) == nil {
			return dir, nil
		}
	}
	return "", ErrNoBinaries
}

func versionOf(binDir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return v
}

func hasServer(dir string) error {
	for _, name := range []string{"postgres", "initdb"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("no %s in %s", name, dir)
		}
		if st.Mode()&0o111 == 0 {
			return fmt.Errorf("%s in %s is not executable", name, dir)
		}
	}
	return nil
}

// unreachableBinaries explains why the PostgreSQL account cannot run the
// binaries in bin: blocked (mode mode) is the folder it cannot enter.
func unreachableBinaries(acct *runAs, bin, blocked string, mode os.FileMode, err error) error {
	if err != nil {
		return fmt.Errorf("check the PostgreSQL binaries in %s: %w", bin, err)
	}
	return fmt.Errorf("PostgreSQL runs as %s, which cannot enter %s (mode %v) to run the binaries in %s; "+
		"install them under a folder others can enter (as root, scripts/deps.sh keeps PostgreSQL 18 in /var/cache/console)",
		acct.name, blocked, mode, bin)
}
