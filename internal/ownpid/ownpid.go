package ownpid

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Set is the set of backend pids of the open connections of the pools it
// tracks. The zero value is an empty set, ready to use; it is safe for
// concurrent use.
type Set struct {
	mu   sync.Mutex
	pids map[int32]bool
}

// Track makes every connection of a pool made from cfg a member of s while
// it is open, keeping the connect and close hooks cfg already has.
func (s *Set) Track(cfg *pgxpool.Config) {
	after, before := cfg.AfterConnect, cfg.BeforeClose
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		s.mu.Lock()
		if s.pids == nil {
			s.pids = map[int32]bool{}
		}
		s.pids[int32(c.PgConn().PID())] = true
		s.mu.Unlock()
		if after != nil {
			return after(ctx, c)
		}
		return nil
	}
	cfg.BeforeClose = func(c *pgx.Conn) {
		s.mu.Lock()
		delete(s.pids, int32(c.PgConn().PID()))
		s.mu.Unlock()
		if before != nil {
			before(c)
		}
	}
}

// PIDs returns the pids of the open tracked connections in ascending order.
// A nil Set has none.
func (s *Set) PIDs() []int32 {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	out := make([]int32, 0, len(s.pids))
	for p := range s.pids {
		out = append(out, p)
	}
	s.mu.Unlock()
	slices.Sort(out)
	return out
}

// Contains reports whether pid is one of the open tracked connections.
func (s *Set) Contains(pid int32) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pids[pid]
}

// List is PIDs as a comma-separated list ("101,2040"), the form a setting
// such as console.own_pids carries into SQL.
func (s *Set) List() string {
	var b strings.Builder
	for i, p := range s.PIDs() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(int64(p), 10))
	}
	return b.String()
}
