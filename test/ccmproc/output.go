package ccmproc

import (
	"bytes"
	"sync"
)

// Output collects a process's output from its two pipes, for assertions
// and failure dumps; safe to read while the process writes.
type Output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Output) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Output) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
