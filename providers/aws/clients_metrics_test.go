package aws

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/clientopts"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/cloudmetrics"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

// series is one cloud API metric series of this backend, keyed by the
// labels that vary.
type series struct{ service, operation, code string }

// awsCloudMetrics reads this backend's series from legacyregistry, which
// the manager serves on /metrics: request counts by series, throttle
// counts and duration sample counts by "service:operation".
func awsCloudMetrics(t *testing.T) (requests map[series]float64, throttled, durations map[string]float64) {
	t.Helper()
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	requests, throttled, durations = map[series]float64{}, map[string]float64{}, map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["provider"] != ProviderName {
				continue
			}
			op := l["service"] + ":" + l["operation"]
			switch mf.GetName() {
			case cloudmetrics.RequestsName:
				requests[series{l["service"], l["operation"], l["code"]}] += m.GetCounter().GetValue()
			case cloudmetrics.ThrottledName:
				throttled[op] += m.GetCounter().GetValue()
			case cloudmetrics.DurationName:
				durations[op] += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return requests, throttled, durations
}

// TestCloudMetricsMatchTheCloudsCounts drives the production clients
// against the emulator with throttling, a 5xx, a hung call and a client
// error, and checks that /metrics counts exactly the attempts the emulator
// received, per operation, with the SDK's retries in them.
func TestCloudMetricsMatchTheCloudsCounts(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "")
	emu := cloudsimaws.NewDefault(cloudsimaws.Config{Region: "eu-west-1", ClusterID: "metrics"})
	srv, err := cloudsim.Start(emu)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	s := &Section{
		Region:      "eu-west-1",
		Endpoints:   Endpoints{EC2: srv.URL(), ELBv2: srv.URL()},
		Credentials: Credentials{AccessKeyID: "AKIDMETRICS", SecretAccessKey: "metrics-secret-value"},
		// Long enough for a served call under -race, short enough that
		// the hung attempt ends quickly.
		Options: clientopts.Options{RequestTimeout: time.Second, MaxAttempts: 4},
	}
	s.SetDefaults()
	api, err := newClients(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := emu.Launch(cloudsimaws.LaunchSpec{Count: 2})
	if err != nil {
		t.Fatal(err)
	}

	reqBefore, thrBefore, durBefore := awsCloudMetrics(t)
	srv.ResetCalls()
	faults := []cloudsim.FaultSpec{
		{Op: "ec2:DescribeInstances", ThrottleNext: 2},
		{Op: "elbv2:DescribeLoadBalancers", FailNext: 1},
		{Op: "ec2:DescribeSubnets", HangNext: 1},
	}
	for _, f := range faults {
		if err := srv.SetFault(f); err != nil {
			t.Fatal(err)
		}
	}
	ctx := t.Context()
	if _, err := api.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids}); err != nil {
		t.Fatalf("DescribeInstances after 2 throttles: %v", err)
	}
	if _, err := api.elbv2.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{}); err != nil {
		t.Fatalf("DescribeLoadBalancers after a 5xx: %v", err)
	}
	if _, err := api.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{}); err != nil {
		t.Fatalf("DescribeSubnets after a hung attempt: %v", err)
	}
	// The cloud's own not-found: an error, not retried, and its ID must
	// not become a label value.
	const goneID = "i-0123456789abcdef0"
	if _, err := api.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{goneID}}); err == nil {
		t.Fatalf("DescribeInstances %s: no error", goneID)
	}

	reqAfter, thrAfter, durAfter := awsCloudMetrics(t)
	byOp := map[string]float64{}
	byCode := map[series]float64{}
	for k, v := range reqAfter {
		if d := v - reqBefore[k]; d != 0 {
			byOp[k.service+":"+k.operation] += d
			byCode[k] = d
		}
		for _, v := range []string{k.service, k.operation, k.code} {
			if strings.Contains(v, goneID) || strings.Contains(v, s.Credentials.SecretAccessKey) || strings.HasPrefix(v, "i-") {
				t.Errorf("label value %q carries an ID or a secret", v)
			}
		}
	}
	calls := srv.Calls()
	for op, n := range calls {
		if byOp[op] != float64(n) {
			t.Errorf("%s: %v attempts on /metrics, the emulator received %d", op, byOp[op], n)
		}
		if d := durAfter[op] - durBefore[op]; d != float64(n) {
			t.Errorf("%s: %v duration samples, want %d", op, d, n)
		}
	}
	for op, n := range byOp {
		if _, ok := calls[op]; !ok {
			t.Errorf("%s: %v attempts on /metrics that the emulator never received", op, n)
		}
	}
	if want := 4; calls["ec2:DescribeInstances"] != want {
		t.Errorf("emulator saw %d DescribeInstances, want %d (2 throttled, 1 served, 1 not found)", calls["ec2:DescribeInstances"], want)
	}

	// Throttled attempts are exactly the throttles injected.
	for op := range calls {
		want := 0.0
		if op == "ec2:DescribeInstances" {
			want = 2
		}
		if d := thrAfter[op] - thrBefore[op]; d != want {
			t.Errorf("%s: %v throttled attempts, want %v", op, d, want)
		}
	}
	// Each attempt carries its own outcome.
	for k, want := range map[series]float64{
		{"ec2", "DescribeInstances", "200"}:       1,
		{"ec2", "DescribeInstances", "400"}:       1,
		{"ec2", "DescribeSubnets", "timeout"}:     1,
		{"ec2", "DescribeSubnets", "200"}:         1,
		{"elbv2", "DescribeLoadBalancers", "503"}: 1,
		{"elbv2", "DescribeLoadBalancers", "200"}: 1,
	} {
		if byCode[k] != want {
			t.Errorf("%+v: %v attempts, want %v (all: %v)", k, byCode[k], want, byCode)
		}
	}
}

func TestServiceLabel(t *testing.T) {
	for id, want := range map[string]string{
		"EC2":                       "ec2",
		"Elastic Load Balancing v2": "elbv2",
		"STS":                       "sts",
		"Auto Scaling":              "auto-scaling",
	} {
		if got := serviceLabel(id); got != want {
			t.Errorf("serviceLabel(%q) = %q, want %q", id, got, want)
		}
	}
}
