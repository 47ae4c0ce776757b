package pgserver

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// runAs is the account PostgreSQL runs as; nil means the current user.
type runAs struct {
	name     string
	uid, gid uint32
}

// serviceAccounts are tried in order when running as root; the last one is
// created when none exists.
var serviceAccounts = []string{"postgres", "console-pg"}

// accountFor returns nil when the process is not root. As root it returns an
// existing service account, creating console-pg when there is none.
func accountFor() (*runAs, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range serviceAccounts {
		if a, err := lookup(name); err == nil {
			return a, nil
		}
	}
	name := serviceAccounts[len(serviceAccounts)-1]
	out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL refuses to run as root and creating the account %s failed: %v: %s "+
			"(create an unprivileged account named postgres or %s)", name, err, out, name)
	}
	return lookup(name)
}

func lookup(name string) (*runAs, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &runAs{name: name, uid: uint32(uid), gid: uint32(gid)}, nil
}

func (a *runAs) sysProcAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if a != nil {
		attr.Credential = &syscall.Credential{Uid: a.uid, Gid: a.gid}
	}
	return attr
}

// chownTree gives the account everything below dir.
func (a *runAs) chownTree(dir string) error {
	if a == nil {
		return nil
	}
	return filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Uid == a.uid && st.Gid == a.gid {
			return nil
		}
		return os.Lchown(p, int(a.uid), int(a.gid))
	})
}

// blocker returns the first folder on the way down to dir (dir included)
// that the account cannot enter, with its mode, or "" when the account can
// reach dir. Folders that do not exist yet are skipped: they are created
// later, by this process. A nil account (not root) reaches everything.
func (a *runAs) blocker(dir string) (string, os.FileMode, error) {
	if a == nil {
		return "", 0, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", 0, err
	}
	for p := abs; ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return "", 0, err
		case !a.canEnter(st):
			return p, st.Mode().Perm(), nil
		}
		if p == "/" {
			return "", 0, nil
		}
	}
}

// canEnter applies the kernel's rule for searching a folder: the owner's bit
// for the owner, else the group's for the group, else the others'.
func (a *runAs) canEnter(st os.FileInfo) bool {
	sys := st.Sys().(*syscall.Stat_t)
	if sys.Uid == a.uid {
		return st.Mode()&0o100 != 0
	}
	if sys.Gid == a.gid {
		return st.Mode()&0o010 != 0
	}
	return st.Mode()&0o001 != 0
}
