package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-base/metrics/testutil"

	"github.com/multicloud-ccm/multicloud-ccm/test/ccmproc"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

const (
	// metricsSecretKey is the cloud-config's AWS secret key; it must never
	// appear on /metrics.
	metricsSecretKey = "mtr-e2e-secret-key-3c9a71"
	metricsRequests  = "multicloud_ccm_cloud_api_requests_total"
	metricsThrottled = "multicloud_ccm_cloud_api_throttled_total"
	metricsDuration  = "multicloud_ccm_cloud_api_request_duration_seconds"
)

// TestCloudAPIMetrics runs the release binary against the AWS emulator and
// checks, from the outside, that /metrics counts every HTTP attempt the
// cloud received (SDK retries of throttled calls included), per
// operation, that only an authorized caller may read it, and that no label
// carries a secret or an instance ID.
func TestCloudAPIMetrics(t *testing.T) {
	emu := cloudsimaws.NewDefault(cloudsimaws.Config{Region: "eu-west-1", ClusterID: "e2e-metrics"})
	srv, err := cloudsim.Start(emu)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	fx := emu.Fixture()
	ids, err := emu.Launch(cloudsimaws.LaunchSpec{Count: 2, InstanceType: "m5.large", PublicIP: true,
		Tags: map[string]string{fx.ClusterTagKey: "owned"}})
	if err != nil {
		t.Fatal(err)
	}

	cfg := filepath.Join(env.tmp, "metrics-cloud-config.yaml")
	// A long snapshot age keeps the manager quiet between the scenario's
	// steps: once the Nodes are initialized it needs no cloud call.
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`apiVersion: multicloud-ccm.io/v1alpha1
kind: CloudConfig
provider: aws
clusterID: e2e-metrics
aws:
  region: eu-west-1
  vpcID: %s
  endpoints: {ec2: %q, elbv2: %q}
  credentials: {accessKeyID: AKIAE2EMETRICS000000, secretAccessKey: %s}
  requestTimeout: 5s
  maxAttempts: 4
  instanceCacheTTL: 10m
`, fx.VPCID, srv.URL(), srv.URL(), metricsSecretKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	binary := filepath.Join(env.tmp, "multicloud-ccm-metrics")
	if err := ccmproc.Build(binary, "", os.Stderr); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(env.tmp, "ccm-metrics.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	ccm, err := ccmproc.Start(ccmproc.Options{
		Binary: binary, CloudConfig: cfg, Kubeconfig: env.saKubeconfig,
		// Leader election is TestManager's subject; here it would only add a
		// wait for an earlier test's Lease to expire.
		LeaderElect: false, Output: logFile,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ccm.Stop()
		_ = logFile.Close()
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			lines := strings.Split(string(out), "\n")
			t.Logf("---- ccm output (last 60 lines of %s) ----\n%s", logPath, strings.Join(lines[max(0, len(lines)-60):], "\n"))
		}
	})

	token := metricsSAToken(t)
	metricsPoll(t, ccm, 60*time.Second, "/metrics to answer the ServiceAccount", func(ctx context.Context) (bool, string, error) {
		code, _, err := ccmproc.GetSecure(ctx, ccm.Port, "/metrics", token)
		return code == http.StatusOK, fmt.Sprint("status ", code), err
	})

	t.Run("an anonymous scrape is refused", func(t *testing.T) {
		code, _, err := ccmproc.GetSecure(context.Background(), ccm.Port, "/metrics", "")
		if err != nil {
			t.Fatal(err)
		}
		if code != http.StatusUnauthorized && code != http.StatusForbidden {
			t.Fatalf("anonymous GET /metrics: status %d, want 401 or 403", code)
		}
	})

	before := metricsQuiet(t, ccm, srv, token)

	// The scenario: two kubelet-style Nodes for the launched instances,
	// with EC2 throttling the first two DescribeInstances attempts. The
	// SDK retries them; each attempt must be counted.
	const throttles = 2
	if err := srv.SetFault(cloudsim.FaultSpec{Op: "ec2:DescribeInstances", ThrottleNext: throttles}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, id := range ids {
		info, _ := emu.Instance(id)
		names = append(names, info.PrivateDNSName)
		node := ccmproc.KubeletNode(info.PrivateDNSName, "")
		if _, err := env.admin.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = env.admin.CoreV1().Nodes().Delete(context.Background(), info.PrivateDNSName, metav1.DeleteOptions{})
		})
	}
	for _, name := range names {
		metricsPoll(t, ccm, 60*time.Second, "node "+name+" initialized", func(ctx context.Context) (bool, string, error) {
			n, err := env.admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			return ccmproc.Initialized(n), fmt.Sprintf("providerID=%q taints=%v", n.Spec.ProviderID, n.Spec.Taints), nil
		})
	}
	if left := srv.Faults(); len(left) != 1 || left[0].ThrottleNext != 0 {
		t.Fatalf("the injected throttles were not all used: %+v", left)
	}
	after := metricsQuiet(t, ccm, srv, token)

	t.Run("requests_total per operation equals the calls the cloud received", func(t *testing.T) {
		got := deltas(before.requests, after.requests)
		want := deltas(before.calls, after.calls)
		t.Logf("attempts during the scenario: %v; since start: %v", got, after.requests)
		if !maps.Equal(got, want) {
			t.Fatalf("attempts during the scenario on /metrics %v, the emulator received %v", got, want)
		}
		if want["ec2:DescribeInstances"] < throttles+1 {
			t.Fatalf("the emulator received %d DescribeInstances, want at least %d (2 throttled, then served)", want["ec2:DescribeInstances"], throttles+1)
		}
		// The emulator saw only this manager, from its start.
		if !maps.Equal(after.requests, after.calls) {
			t.Fatalf("attempts since start on /metrics %v, the emulator received %v", after.requests, after.calls)
		}
	})

	t.Run("throttled_total counts the throttles injected", func(t *testing.T) {
		got := deltas(before.throttled, after.throttled)
		if want := map[string]int{"ec2:DescribeInstances": throttles}; !maps.Equal(got, want) {
			t.Fatalf("throttled attempts during the scenario %v, want %v", got, want)
		}
	})

	t.Run("every attempt has a duration sample", func(t *testing.T) {
		if !maps.Equal(after.durations, after.requests) {
			t.Fatalf("duration samples %v, attempts %v", after.durations, after.requests)
		}
	})

	t.Run("no secret or instance ID on /metrics", func(t *testing.T) {
		forbidden := append([]string{metricsSecretKey}, ids...)
		for _, f := range forbidden {
			if strings.Contains(after.body, f) {
				t.Errorf("/metrics contains %q", f)
			}
		}
		for _, v := range after.labelValues {
			if strings.HasPrefix(v, "i-") || strings.Contains(v, "/") {
				t.Errorf("cloud API label value %q looks like an ID or a path", v)
			}
		}
	})
}

// metricsSnapshot is what /metrics and the emulator said at one quiet
// moment. Maps are keyed "service:Operation", as the emulator names calls.
type metricsSnapshot struct {
	calls, requests, throttled, durations map[string]int
	labelValues                           []string
	body                                  string
}

// metricsQuiet scrapes /metrics inside a window in which the emulator
// received nothing, so both sides describe the same set of attempts; it
// retries until such a window comes.
func metricsQuiet(t *testing.T, ccm *ccmproc.Process, srv *cloudsim.Server, token string) metricsSnapshot {
	t.Helper()
	var snap metricsSnapshot
	metricsPoll(t, ccm, 60*time.Second, "a quiet moment to scrape /metrics", func(ctx context.Context) (bool, string, error) {
		first := srv.Calls()
		// An attempt the emulator has counted is answered within
		// milliseconds; give it time to reach the manager's counters.
		time.Sleep(500 * time.Millisecond)
		code, body, err := ccmproc.GetSecure(ctx, ccm.Port, "/metrics", token)
		if err != nil || code != http.StatusOK {
			return false, fmt.Sprint("status ", code), err
		}
		time.Sleep(500 * time.Millisecond)
		last := srv.Calls()
		if !maps.Equal(first, last) {
			return false, fmt.Sprintf("calls moved from %v to %v", first, last), nil
		}
		s, err := parseCloudMetrics(body)
		if err != nil {
			return false, "", err
		}
		s.calls = last
		snap = s
		return true, "", nil
	})
	return snap
}

// parseCloudMetrics reads the AWS cloud API series from a /metrics body.
func parseCloudMetrics(body string) (metricsSnapshot, error) {
	s := metricsSnapshot{requests: map[string]int{}, throttled: map[string]int{}, durations: map[string]int{}, body: body}
	families, err := testutil.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		return s, fmt.Errorf("parse /metrics: %w", err)
	}
	for _, name := range []string{metricsRequests, metricsThrottled, metricsDuration} {
		for _, m := range families[name].GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
				s.labelValues = append(s.labelValues, lp.GetValue())
			}
			if labels["provider"] != "aws" {
				continue
			}
			key := labels["service"] + ":" + labels["operation"]
			switch name {
			case metricsRequests:
				s.requests[key] += int(m.GetCounter().GetValue())
			case metricsThrottled:
				s.throttled[key] += int(m.GetCounter().GetValue())
			case metricsDuration:
				s.durations[key] += int(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return s, nil
}

// deltas returns after-before per key, without the keys that did not move.
func deltas(before, after map[string]int) map[string]int {
	out := map[string]int{}
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if d := after[k] - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// metricsSAToken is the bearer token of deploy/'s ServiceAccount, which
// deploy/'s ClusterRole allows GET /metrics.
func metricsSAToken(t *testing.T) string {
	t.Helper()
	token, err := ccmproc.BearerToken(env.saKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// metricsPoll waits for cond, failing the test with what was last seen, or
// at once if the manager exits.
func metricsPoll(t *testing.T, ccm *ccmproc.Process, timeout time.Duration, what string, cond func(context.Context) (bool, string, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last string
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if ccm.Exited() {
			return false, fmt.Errorf("multicloud-ccm exited: %v", ccm.Err())
		}
		ok, seen, err := cond(ctx)
		last = seen
		if err != nil {
			last = err.Error()
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; last seen: %s", what, err, last)
	}
}
