package openstack

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
)

// retryServer answers each request with the next status of script (the
// last one repeats) and counts requests.
type retryServer struct {
	mu       sync.Mutex
	script   []int
	header   http.Header
	requests int
}

func (s *retryServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	code := s.script[min(s.requests, len(s.script)-1)]
	s.requests++
	s.mu.Unlock()
	for k, v := range s.header {
		w.Header()[k] = v
	}
	w.WriteHeader(code)
	_, _ = w.Write([]byte(`{}`))
}

func TestRetryPolicy(t *testing.T) {
	for _, tt := range []struct {
		name       string
		method     string
		path       string
		script     []int
		header     http.Header
		maxAttempt int
		wantOK     bool
		wantTries  int
		wantWaits  []time.Duration // nil: only count them
		wantStatus int
	}{
		{name: "GET retried through 503s", method: "GET", script: []int{503, 503, 200}, maxAttempt: 5, wantOK: true, wantTries: 3},
		{name: "GET gives up after maxAttempts", method: "GET", script: []int{500}, maxAttempt: 4, wantTries: 4, wantStatus: 500},
		{name: "POST not repeated after 500", method: "POST", script: []int{500, 200}, maxAttempt: 5, wantTries: 1, wantStatus: 500},
		{name: "POST repeated after 429 with Retry-After", method: "POST", script: []int{429, 202}, header: http.Header{"Retry-After": {"3"}}, maxAttempt: 5, wantOK: true, wantTries: 2, wantWaits: []time.Duration{3 * time.Second}},
		{name: "Nova 413 over-limit honoured", method: "GET", script: []int{413, 413, 200}, header: http.Header{"Retry-After": {"1"}}, maxAttempt: 5, wantOK: true, wantTries: 3, wantWaits: []time.Duration{time.Second, time.Second}},
		{name: "Retry-After capped", method: "DELETE", script: []int{429, 204}, header: http.Header{"Retry-After": {"3600"}}, maxAttempt: 5, wantOK: true, wantTries: 2, wantWaits: []time.Duration{20 * time.Second}},
		{name: "429 gives up after maxAttempts", method: "GET", script: []int{429}, maxAttempt: 3, wantTries: 3, wantStatus: 429},
		{name: "404 is the answer", method: "GET", script: []int{404}, maxAttempt: 5, wantTries: 1, wantStatus: 404},
		{name: "409 is the answer", method: "PUT", script: []int{409}, maxAttempt: 5, wantTries: 1, wantStatus: 409},
		{name: "token creation retried after 503", method: "POST", path: "/identity/v3/auth/tokens", script: []int{503, 201}, maxAttempt: 5, wantOK: true, wantTries: 2},
		{name: "one attempt means no retry", method: "GET", script: []int{503, 200}, maxAttempt: 1, wantTries: 1, wantStatus: 503},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := &retryServer{script: tt.script, header: tt.header}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			var waits []time.Duration
			p := newRetryPolicy(tt.maxAttempt)
			p.sleep = func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return nil }
			pc := &gophercloud.ProviderClient{HTTPClient: *ts.Client()}
			p.install(pc)
			path := tt.path
			if path == "" {
				path = "/x"
			}
			_, err := pc.Request(t.Context(), tt.method, ts.URL+path, &gophercloud.RequestOpts{OkCodes: []int{200, 201, 202, 204}})
			if (err == nil) != tt.wantOK {
				t.Fatalf("err = %v, want ok %v", err, tt.wantOK)
			}
			if !tt.wantOK && statusOf(err) != tt.wantStatus {
				t.Errorf("status of %v = %d, want %d", err, statusOf(err), tt.wantStatus)
			}
			if srv.requests != tt.wantTries {
				t.Errorf("%d requests, want %d", srv.requests, tt.wantTries)
			}
			if len(waits) != tt.wantTries-1 {
				t.Errorf("waited %d times, want %d", len(waits), tt.wantTries-1)
			}
			if tt.wantWaits != nil && !equalDurations(waits, tt.wantWaits) {
				t.Errorf("waits %v, want %v", waits, tt.wantWaits)
			}
		})
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRetryStopsWithCaller: a caller that gives up during a wait gets the
// failure at once, and nothing more is sent.
func TestRetryStopsWithCaller(t *testing.T) {
	srv := &retryServer{script: []int{503}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	ctx, cancel := context.WithCancel(t.Context())
	p := newRetryPolicy(8)
	p.sleep = func(ctx context.Context, d time.Duration) error { cancel(); return ctx.Err() }
	pc := &gophercloud.ProviderClient{HTTPClient: *ts.Client()}
	p.install(pc)
	_, err := pc.Request(ctx, "GET", ts.URL+"/x", &gophercloud.RequestOpts{})
	if statusOf(err) != 503 || srv.requests != 1 {
		t.Errorf("err %v after %d requests, want the 503 after 1", err, srv.requests)
	}
}

func TestRetryAfterForms(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"7":                             7 * time.Second,
		"Mon, 23 Nov 2026 12:00:30 GMT": 30 * time.Second,
		"Mon, 23 Nov 2026 11:00:00 GMT": 0,
	} {
		if d, ok := retryAfter(http.Header{"Retry-After": {v}}, now); !ok || d != want {
			t.Errorf("%q: %v %v, want %v", v, d, ok, want)
		}
	}
	if _, ok := retryAfter(http.Header{"Retry-After": {"soon"}}, now); ok {
		t.Error("garbage Retry-After accepted")
	}
}
