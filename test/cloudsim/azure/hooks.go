package azure

import (
	"net/http"
	"sync"
)

// hooks are what tests attach to the emulator's serving: a function to
// run before the next call of an operation, and the answers given, by
// operation and status.
type hooks struct {
	mu      sync.Mutex
	before  map[string]func()
	answers map[string]map[int]int
}

// BeforeNext runs f once, before the emulator serves the next call of op
// ("network:LoadBalancers_CreateOrUpdate"), while that call waits: a
// write by someone else landing between a client's read and its write,
// so the client's If-Match is stale for sure and ARM answers 412. f may
// call the emulator (over HTTP too): it is removed before it runs, so
// its own calls of op are served as usual. A second BeforeNext for the
// same op replaces the first.
func (e *Emulator) BeforeNext(op string, f func()) {
	e.hooks.mu.Lock()
	defer e.hooks.mu.Unlock()
	if e.hooks.before == nil {
		e.hooks.before = map[string]func(){}
	}
	e.hooks.before[op] = f
}

// Answers is how many calls of op the emulator has answered with status
// (http.StatusPreconditionFailed for ARM's 412), counted since it
// started. Calls a fault spec throttled or failed before they reached
// the emulator are not among them.
func (e *Emulator) Answers(op string, status int) int {
	e.hooks.mu.Lock()
	defer e.hooks.mu.Unlock()
	return e.hooks.answers[op][status]
}

// serveHooked serves one call through serve, running the op's
// BeforeNext function first and counting the answer's status.
func (e *Emulator) serveHooked(w http.ResponseWriter, r *http.Request, op string, serve func(http.ResponseWriter, *http.Request, string)) {
	e.hooks.mu.Lock()
	f := e.hooks.before[op]
	delete(e.hooks.before, op)
	e.hooks.mu.Unlock()
	if f != nil {
		f()
	}
	sw := &statusWriter{ResponseWriter: w}
	serve(sw, r, op)
	status := sw.status
	if status == 0 {
		status = http.StatusOK
	}
	e.hooks.mu.Lock()
	defer e.hooks.mu.Unlock()
	if e.hooks.answers == nil {
		e.hooks.answers = map[string]map[int]int{}
	}
	if e.hooks.answers[op] == nil {
		e.hooks.answers[op] = map[int]int{}
	}
	e.hooks.answers[op][status]++
}

// statusWriter keeps the status of the answer written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
