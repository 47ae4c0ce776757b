package logbuf

import (
	"strings"
	"sync"
)

// Buffer is an io.Writer that concurrent writers and a concurrent reader
// may share. The zero value is empty and ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

// Write appends p; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
