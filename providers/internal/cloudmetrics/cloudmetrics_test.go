package cloudmetrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
)

// newTestRecorder returns a Recorder registered in a registry of its own,
// so each test starts from zero.
func newTestRecorder(t *testing.T) (*Recorder, metrics.KubeRegistry) {
	t.Helper()
	reg := metrics.NewKubeRegistry()
	rec := NewRecorder()
	reg.MustRegister(rec.Collectors()...)
	return rec, reg
}

func TestObserveCountsAttemptsAndThrottles(t *testing.T) {
	rec, reg := newTestRecorder(t)
	// One DescribeInstances throttled twice and then served, as the SDK's
	// retries produce it; one timed-out CreateLoadBalancer; one hook that
	// could not name its operation.
	rec.Observe("aws", "ec2", "DescribeInstances", "503", 10*time.Millisecond, true)
	rec.Observe("aws", "ec2", "DescribeInstances", "503", 20*time.Millisecond, true)
	rec.Observe("aws", "ec2", "DescribeInstances", "200", 30*time.Millisecond, false)
	rec.Observe("aws", "elbv2", "CreateLoadBalancer", CodeTimeout, 5*time.Second, false)
	rec.Observe("openstack", "compute", "", "200", time.Millisecond, false)

	want := `
# HELP multicloud_ccm_cloud_api_requests_total [ALPHA] HTTP attempts to the cloud API by operation and HTTP status code (or timeout, canceled, error when no response came back); SDK retries count once per attempt.
# TYPE multicloud_ccm_cloud_api_requests_total counter
multicloud_ccm_cloud_api_requests_total{code="200",operation="DescribeInstances",provider="aws",service="ec2"} 1
multicloud_ccm_cloud_api_requests_total{code="503",operation="DescribeInstances",provider="aws",service="ec2"} 2
multicloud_ccm_cloud_api_requests_total{code="timeout",operation="CreateLoadBalancer",provider="aws",service="elbv2"} 1
multicloud_ccm_cloud_api_requests_total{code="200",operation="unknown",provider="openstack",service="compute"} 1
# HELP multicloud_ccm_cloud_api_throttled_total [ALPHA] HTTP attempts the cloud API refused as throttled (rate limit exceeded); each is also in multicloud_ccm_cloud_api_requests_total.
# TYPE multicloud_ccm_cloud_api_throttled_total counter
multicloud_ccm_cloud_api_throttled_total{operation="DescribeInstances",provider="aws",service="ec2"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), RequestsName, ThrottledName); err != nil {
		t.Fatal(err)
	}

	h, err := testutil.GetHistogramVecFromGatherer(reg, DurationName, map[string]string{"operation": "DescribeInstances"})
	if err != nil {
		t.Fatal(err)
	}
	if n, sum := h.GetAggregatedSampleCount(), h.GetAggregatedSampleSum(); n != 3 || sum < 0.059 || sum > 0.061 {
		t.Errorf("DescribeInstances duration: %d samples summing to %vs, want 3 summing to 0.06s", n, sum)
	}
	h, err = testutil.GetHistogramVecFromGatherer(reg, DurationName, map[string]string{"operation": "CreateLoadBalancer"})
	if err != nil {
		t.Fatal(err)
	}
	// 5s must land in a real bucket, not only +Inf: cloud calls run to 60s.
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	if q := h.Quantile(0.5); q > 5 || q <= 2.5 {
		t.Errorf("median of one 5s attempt = %vs, want within the (2.5s, 5s] bucket", q)
	}
}

func TestSnapshotLookup(t *testing.T) {
	rec, reg := newTestRecorder(t)
	rec.SnapshotLookup("aws", true)
	rec.SnapshotLookup("aws", true)
	rec.SnapshotLookup("aws", false)
	want := `
# HELP multicloud_ccm_instance_snapshot_lookups_total [ALPHA] Node lookups answered from the backend's instance snapshot (hit) or that needed a cloud call (miss).
# TYPE multicloud_ccm_instance_snapshot_lookups_total counter
multicloud_ccm_instance_snapshot_lookups_total{provider="aws",result="hit"} 2
multicloud_ccm_instance_snapshot_lookups_total{provider="aws",result="miss"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), SnapshotLookupsName); err != nil {
		t.Fatal(err)
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

var _ net.Error = timeoutErr{}

func TestCode(t *testing.T) {
	tests := []struct {
		name   string
		status int
		err    error
		want   string
	}{
		{"response", 200, nil, "200"},
		{"error response", 503, errors.New("RequestLimitExceeded"), "503"},
		{"context deadline", 0, fmt.Errorf("send: %w", context.DeadlineExceeded), CodeTimeout},
		{"network timeout", 0, &net.OpError{Op: "read", Err: timeoutErr{}}, CodeTimeout},
		{"canceled", 0, fmt.Errorf("send: %w", context.Canceled), CodeCanceled},
		{"refused", 0, &net.OpError{Op: "dial", Err: errors.New("connection refused")}, CodeError},
		{"nothing known", 0, nil, CodeError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Code(tt.status, tt.err); got != tt.want {
				t.Errorf("Code(%d, %v) = %q, want %q", tt.status, tt.err, got, tt.want)
			}
		})
	}
}

// TestDefaultIsRegisteredOnceInLegacyRegistry: /metrics serves
// legacyregistry, and a second registration would panic.
func TestDefaultIsRegisteredOnceInLegacyRegistry(t *testing.T) {
	if Default() != Default() {
		t.Fatal("Default returned two recorders")
	}
	before := counterValue(t, legacyregistry.DefaultGatherer, RequestsName, map[string]string{"provider": "test-default", "code": "200"})
	Observe("test-default", "svc", "Op", "200", time.Millisecond, false)
	SnapshotLookup("test-default", false)
	if got := counterValue(t, legacyregistry.DefaultGatherer, RequestsName, map[string]string{"provider": "test-default", "code": "200"}); got != before+1 {
		t.Errorf("%s in legacyregistry = %v, want %v", RequestsName, got, before+1)
	}
	if got := counterValue(t, legacyregistry.DefaultGatherer, SnapshotLookupsName, map[string]string{"provider": "test-default", "result": "miss"}); got != 1 {
		t.Errorf("%s in legacyregistry = %v, want 1", SnapshotLookupsName, got)
	}
}

// counterValue sums the counter's series matching labels; 0 if none.
func counterValue(t *testing.T, g metrics.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if testutil.LabelsMatch(m, labels) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}
