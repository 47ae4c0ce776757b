package pgserver

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// systemDir holds, as root, the clusters whose data folder the PostgreSQL
// account cannot reach: one folder per data folder, named after it, so the
// next start from the same folder finds its cluster again.
var systemDir = "/var/lib/console"

// place decides where the cluster asked for in dir lives. Not as root, or
// when the account can reach dir, that is dir itself. Otherwise it is a
// folder of its own under systemDir, created root-owned and mode 0711 (the
// account may pass through, nobody may list); the cluster inside is the
// account's, mode 0700, as everywhere. A cluster already kept there for dir
// is used even once dir has become reachable, so the data does not seem to
// vanish. The note says where the cluster is and why, or is "" when it is in
// dir.
func place(dir string, acct *runAs) (where, note string, err error) {
	if acct == nil {
		return dir, "", nil
	}
	hasCluster := func(d string) bool {
		_, err := os.Stat(filepath.Join(d, "pgdata", "PG_VERSION"))
		return err == nil
	}
	kept := keptDir(dir)
	blocked, mode, err := acct.blocker(filepath.Join(dir, "pgdata"))
	if err != nil {
		return "", "", err
	}
	switch {
	case blocked == "" && hasCluster(dir):
		return dir, "", nil
	case blocked == "" && hasCluster(kept):
		return kept, fmt.Sprintf("the PostgreSQL cluster for %s is in %s (made there when %s could not enter %s)",
			dir, kept, acct.name, dir), nil
	case blocked == "":
		return dir, "", nil
	case hasCluster(dir):
		return "", "", fmt.Errorf("PostgreSQL runs as %s, which cannot enter %s (mode %v), and the cluster in %s is there; "+
			"move that folder under one others can enter and point --data-dir at it, or run `chmod o+x %s`",
			acct.name, blocked, mode, dir, blocked)
	}
	if err := makeKeptDir(kept, dir); err != nil {
		return "", "", err
	}
	b, _, err := acct.blocker(filepath.Join(kept, "pgdata"))
	if err != nil {
		return "", "", err
	}
	if b != "" {
		return "", "", fmt.Errorf("PostgreSQL runs as %s, which cannot enter %s, nor %s on the way to %s where the cluster would go instead; "+
			"choose a --data-dir under a folder others can enter", acct.name, blocked, b, kept)
	}
	return kept, fmt.Sprintf("the PostgreSQL cluster for %s is in %s: PostgreSQL runs as %s, which cannot enter %s (mode %v)",
		dir, kept, acct.name, blocked, mode), nil
}

// keptDir is the folder under systemDir that stands in for dir: the last two
// names of dir, readable in a listing, and a hash of the whole path.
func keptDir(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	name := filepath.Base(filepath.Dir(dir)) + "-" + filepath.Base(dir)
	name = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, strings.Trim(name, "/"))
	return filepath.Join(systemDir, name+"-"+hex.EncodeToString(sum[:6]))
}

// makeKeptDir creates systemDir and kept, both root-owned 0711, and records
// in kept/origin the data folder dir it stands for. It refuses a systemDir
// that another user could write to: the password file goes there.
func makeKeptDir(kept, dir string) error {
	for _, d := range []string{filepath.Dir(kept), kept} {
		if err := os.Mkdir(d, 0o711); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create %s for the PostgreSQL cluster: %w", d, err)
		}
		st, err := os.Lstat(d)
		if err != nil {
			return err
		}
		sys := st.Sys().(*syscall.Stat_t)
		if !st.IsDir() || sys.Uid != 0 || st.Mode().Perm()&0o022 != 0 {
			return fmt.Errorf("%s must be a folder owned by root and writable by root only (it holds PostgreSQL clusters and their passwords); "+
				"it is %v owned by uid %d: fix or remove it", d, st.Mode(), sys.Uid)
		}
		if err := os.Chmod(d, 0o711); err != nil {
			return err
		}
	}
	origin := filepath.Join(kept, "origin")
	if _, err := os.Stat(origin); err == nil {
		return nil
	}
	return os.WriteFile(origin, []byte(dir+"\n"), 0o600)
}

// TempDir creates a fresh folder for throwaway clusters (tests, benchmarks)
// that the account PostgreSQL runs as can enter: under the system temp
// folder, or, as root when the account cannot enter that one (TMPDIR a 0700
// folder), under /tmp or /var/tmp. As root the folder is mode 0711: the
// account may pass through, nobody may list it. The caller removes it.
func TempDir(pattern string) (string, error) {
	acct, err := accountFor()
	if err != nil {
		return "", err
	}
	if acct == nil {
		return os.MkdirTemp("", pattern)
	}
	for _, parent := range []string{os.TempDir(), "/tmp", "/var/tmp"} {
		if b, _, err := acct.blocker(parent); err != nil || b != "" {
			continue
		}
		d, err := os.MkdirTemp(parent, pattern)
		if err != nil {
			return "", err
		}
		if err := os.Chmod(d, 0o711); err != nil {
			os.Remove(d)
			return "", err
		}
		return d, nil
	}
	return "", fmt.Errorf("PostgreSQL runs as %s, which cannot enter %s, /tmp or /var/tmp: "+
		"set TMPDIR to a folder others can enter", acct.name, os.TempDir())
}
