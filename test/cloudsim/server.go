package cloudsim

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// maxBody bounds request bodies; real cloud APIs reject far smaller ones.
const maxBody = 16 << 20

// Server serves a Cloud over HTTP with call counting, fault injection and
// the admin API. It is an http.Handler, so it can also be mounted in a
// caller's own server; Start and StartAt run it on a listener of its own.
type Server struct {
	cloud  Cloud
	admin  *http.ServeMux
	faults faultSet
	// authz is the policy calls are checked against (authz.go).
	authz authz

	mu    sync.Mutex
	calls map[string]int
	// recent are the last recentCalls calls with their times, oldest
	// first from next (a ring).
	recent []CallTiming
	next   int

	// done is closed by Close so hung and delayed calls end promptly
	// instead of holding the listener open.
	done      chan struct{}
	closeOnce sync.Once

	httpServer *http.Server
	url        string

	// fresh holds connections that have not sent a request yet. Shutdown
	// waits up to 5s for those (SDK clients often dial spares), so Close
	// closes them itself.
	connMu sync.Mutex
	fresh  map[net.Conn]bool
}

// New wraps cloud in a Server without listening anywhere.
func New(cloud Cloud) *Server {
	s := &Server{
		cloud: cloud,
		calls: make(map[string]int),
		done:  make(chan struct{}),
	}
	s.admin = s.adminMux()
	return s
}

// TLSCloud is a Cloud served over TLS: Start and StartAt listen with
// ServerTLS, and the URL is https. Its clients trust the cloud's own CA.
type TLSCloud interface {
	Cloud
	ServerTLS() *tls.Config
}

// Start serves cloud on a random port of 127.0.0.1.
func Start(cloud Cloud) (*Server, error) {
	return StartAt(cloud, "127.0.0.1:0")
}

// StartAt serves cloud on addr ("host:port"; port 0 picks a free one).
func StartAt(cloud Cloud, addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cloudsim: listen on %s: %w", addr, err)
	}
	s := New(cloud)
	s.url = "http://" + ln.Addr().String()
	// A cloud whose SDK insists on TLS (Azure's bearer-token policy
	// refuses plain http) serves with its own certificate.
	if t, ok := cloud.(TLSCloud); ok {
		ln = tls.NewListener(ln, t.ServerTLS())
		s.url = "https://" + ln.Addr().String()
	}
	s.fresh = make(map[net.Conn]bool)
	s.httpServer = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ConnState: s.trackConn}
	go func() { _ = s.httpServer.Serve(ln) }()
	return s, nil
}

// URL is the base URL the server listens on, e.g. "http://127.0.0.1:41234".
// It is empty for a Server made with New.
func (s *Server) URL() string { return s.url }

// Cloud returns the wrapped cloud.
func (s *Server) Cloud() Cloud { return s.cloud }

// Close releases hung and delayed calls and stops the listener.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { close(s.done) })
	if s.httpServer == nil {
		return nil
	}
	s.connMu.Lock()
	for c := range s.fresh {
		_ = c.Close()
	}
	s.connMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.httpServer.Shutdown(ctx); err != nil {
		return s.httpServer.Close()
	}
	return nil
}

func (s *Server) trackConn(c net.Conn, state http.ConnState) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if state == http.StateNew {
		s.fresh[c] = true
	} else {
		delete(s.fresh, c)
	}
}

// ServeHTTP routes /admin/ to the admin API and everything else to the cloud.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/admin" || strings.HasPrefix(r.URL.Path, "/admin/") {
		s.admin.ServeHTTP(w, r)
		return
	}
	s.serveAPI(w, r)
}

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	_ = r.Body.Close()
	if err != nil {
		http.Error(w, "reading request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(body) > maxBody {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return
	}
	// Operation may consume the body; Serve must see it again.
	rewind := func() {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		r.ContentLength = int64(len(body))
	}
	rewind()
	op, err := s.cloud.Operation(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rewind()

	s.mu.Lock()
	s.calls[op]++
	s.mu.Unlock()
	defer s.record(op, time.Now())

	v := s.faults.decide(op, s.cloud.Mutating(op), time.Now())
	if v.hang {
		select {
		case <-r.Context().Done():
			// The client gave up; there is nobody left to answer.
		case <-s.done:
			s.cloud.WriteServerError(w, r, op)
		}
		return
	}
	if v.latency > 0 {
		t := time.NewTimer(v.latency)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		case <-s.done:
			s.cloud.WriteServerError(w, r, op)
			return
		}
	}
	// Authorization comes after throttling and hangs (a cloud throttles
	// at its front door) but before faults of the service itself.
	rewind()
	a, missing := s.authorize(r, op)
	rewind()
	switch {
	case v.throttle:
		s.cloud.WriteThrottle(w, r, op)
	case missing != "":
		a.WriteDenied(w, r, op, missing)
	case v.fail:
		s.cloud.WriteServerError(w, r, op)
	default:
		s.cloud.Serve(w, r, op)
	}
}

// recentCalls bounds the call timeline: enough for a benchmark's window
// of a few seconds, whatever the call rate before it.
const recentCalls = 4096

// CallTiming is one call: its operation, when the server received it and
// when it had answered it.
type CallTiming struct {
	Op         string
	Start, End time.Time
}

func (s *Server) record(op string, start time.Time) {
	c := CallTiming{Op: op, Start: start, End: time.Now()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.recent) < recentCalls {
		s.recent = append(s.recent, c)
		return
	}
	s.recent[s.next] = c
	s.next = (s.next + 1) % recentCalls
}

// CallsSince are the calls received at or after t, among the last 4096,
// in the order they were answered. Benchmarks use it to see when the
// first read after a change in the cloud happened.
func (s *Server) CallsSince(t time.Time) []CallTiming {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []CallTiming
	for i := range s.recent {
		c := s.recent[(s.next+i)%len(s.recent)]
		if !c.Start.Before(t) {
			out = append(out, c)
		}
	}
	return out
}

// Calls returns a copy of the per-operation call counts.
func (s *Server) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.calls))
	for op, n := range s.calls {
		out[op] = n
	}
	return out
}

// CallCount returns the number of calls to target, which is an operation
// name or any fault target ("*", "mutating", "read", "prefix*"), summed.
func (s *Server) CallCount(target string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for op, c := range s.calls {
		if matchTarget(target, op, s.cloud.Mutating(op)) {
			n += c
		}
	}
	return n
}

// ResetCalls zeroes all call counts.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = make(map[string]int)
}

// SetFault installs spec, replacing any spec with the same Op.
func (s *Server) SetFault(spec FaultSpec) error {
	return s.faults.set(spec, time.Now())
}

// ClearFault removes the spec for op.
func (s *Server) ClearFault(op string) {
	if op == "" {
		return
	}
	s.faults.clear(op)
}

// ClearFaults removes every spec.
func (s *Server) ClearFaults() { s.faults.clear("") }

// Faults lists the installed specs, their *Next counters showing what is left.
func (s *Server) Faults() []FaultSpec { return s.faults.list() }

// Resources lists the cloud's resources, sorted by kind and ID.
func (s *Server) Resources() []Resource {
	rs := s.cloud.Resources()
	SortResources(rs)
	return rs
}
