// Package logtest is a bytes.Buffer that a process (or a daemon, exporter
// or watcher in the test's own process) writes while the test reads it,
// for tests that read a log as it is written.
package logtest

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer whose Write and String may be called from
// different goroutines at once. The zero value is an empty buffer.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p; it never fails (bytes.Buffer.Write).
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
