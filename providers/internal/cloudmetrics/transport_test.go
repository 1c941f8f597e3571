package cloudmetrics

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/component-base/metrics/testutil"
)

// gceRateLimited is GCE's way to throttle: 403 with reason
// rateLimitExceeded, which must not be read as a permission error.
func gceRateLimited(resp *http.Response) bool {
	if resp.StatusCode != http.StatusForbidden {
		return false
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return err == nil && bytes.Contains(body, []byte(`"rateLimitExceeded"`))
}

func TestTransportRecordsEveryAttempt(t *testing.T) {
	rateLimitBody := `{"error":{"code":403,"errors":[{"reason":"rateLimitExceeded"}]}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/servers/4f1c2a":
			w.WriteHeader(http.StatusOK)
		case "/servers":
			w.WriteHeader(http.StatusTooManyRequests)
		case "/quota":
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, rateLimitBody)
		case "/denied":
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"error":{"code":403,"errors":[{"reason":"forbidden"}]}}`)
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}
	}))
	defer srv.Close()

	rec, reg := newTestRecorder(t)
	// Maps paths to operation names; an ID in the path never reaches a label.
	operation := func(r *http.Request) string {
		switch {
		case strings.HasPrefix(r.URL.Path, "/servers/"):
			return "servers.get"
		case r.URL.Path == "/servers":
			return "servers.list"
		default:
			return strings.TrimPrefix(r.URL.Path, "/")
		}
	}
	client := &http.Client{Transport: NewTransport(nil, TransportOptions{
		Provider: "test", Service: "compute", Operation: operation, Throttled: gceRateLimited, Recorder: rec,
	})}
	get := func(path string, timeout time.Duration) (*http.Response, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err == nil {
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			resp.Body = io.NopCloser(bytes.NewReader(body))
		}
		return resp, err
	}
	for _, path := range []string{"/servers/4f1c2a", "/servers", "/servers", "/quota", "/denied"} {
		if _, err := get(path, 5*time.Second); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	// The throttle hook read the body; the caller must still see all of it.
	resp, err := get("/quota", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if body, _ := io.ReadAll(resp.Body); string(body) != rateLimitBody {
		t.Errorf("body after the throttle hook = %q, want %q", body, rateLimitBody)
	}
	if _, err := get("/slow", 100*time.Millisecond); err == nil {
		t.Fatal("GET /slow: no error, want a timeout")
	}

	want := `
# HELP multicloud_ccm_cloud_api_requests_total [ALPHA] HTTP attempts to the cloud API by operation and HTTP status code (or timeout, canceled, error when no response came back); SDK retries count once per attempt.
# TYPE multicloud_ccm_cloud_api_requests_total counter
multicloud_ccm_cloud_api_requests_total{code="200",operation="servers.get",provider="test",service="compute"} 1
multicloud_ccm_cloud_api_requests_total{code="429",operation="servers.list",provider="test",service="compute"} 2
multicloud_ccm_cloud_api_requests_total{code="403",operation="quota",provider="test",service="compute"} 2
multicloud_ccm_cloud_api_requests_total{code="403",operation="denied",provider="test",service="compute"} 1
multicloud_ccm_cloud_api_requests_total{code="timeout",operation="slow",provider="test",service="compute"} 1
# HELP multicloud_ccm_cloud_api_throttled_total [ALPHA] HTTP attempts the cloud API refused as throttled (rate limit exceeded); each is also in multicloud_ccm_cloud_api_requests_total.
# TYPE multicloud_ccm_cloud_api_throttled_total counter
multicloud_ccm_cloud_api_throttled_total{operation="servers.list",provider="test",service="compute"} 2
multicloud_ccm_cloud_api_throttled_total{operation="quota",provider="test",service="compute"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), RequestsName, ThrottledName); err != nil {
		t.Fatal(err)
	}
	h, err := testutil.GetHistogramVecFromGatherer(reg, DurationName, map[string]string{"provider": "test"})
	if err != nil {
		t.Fatal(err)
	}
	if n := h.GetAggregatedSampleCount(); n != 7 {
		t.Errorf("duration samples = %d, want one per attempt (7)", n)
	}
}

// TestTransportWithoutResponse: an attempt that got no response at all is
// counted as "error", named by method when no Operation func is given.
func TestTransportWithoutResponse(t *testing.T) {
	// A listener closed at once: the port refuses connections.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()

	rec, reg := newTestRecorder(t)
	client := &http.Client{Transport: NewTransport(http.DefaultTransport, TransportOptions{Provider: "test", Service: "network", Recorder: rec})}
	if resp, err := client.Get("http://" + addr + "/v2.0/ports"); err == nil {
		_ = resp.Body.Close()
		t.Fatal("GET to a closed port: no error")
	}
	want := `
# HELP multicloud_ccm_cloud_api_requests_total [ALPHA] HTTP attempts to the cloud API by operation and HTTP status code (or timeout, canceled, error when no response came back); SDK retries count once per attempt.
# TYPE multicloud_ccm_cloud_api_requests_total counter
multicloud_ccm_cloud_api_requests_total{code="error",operation="GET",provider="test",service="network"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), RequestsName, ThrottledName); err != nil {
		t.Fatal(err)
	}
}
