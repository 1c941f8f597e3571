package sandbox

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	confaws "github.com/multicloud-ccm/multicloud-ccm/test/conformance/aws"
)

// TestDemoOnce runs `make demo ONCE=1`'s code path end to end and checks the
// report a person would read.
func TestDemoOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := Run(ctx, Options{Out: &out, Once: true, StateDir: t.TempDir()}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	report := out.String()
	for _, want := range []string{
		"aws:///eu-west-1a/i-",
		"InternalIP=10.0.",
		"ExternalIP=",
		"m5.large",
		".elb.eu-west-1.amazonaws.com",
		"load-balancer",
		"target-group",
		"listener",
		"10.244.0.0/24 via i-",
		"secure port: ",
		"samples to ServiceAccount kube-system/metrics-reader",
		"curl -sk -H \"Authorization: Bearer",
		"done (ONCE)",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if strings.Contains(report, confaws.SecretAccessKey) {
		t.Errorf("report shows the cloud-config secret")
	}
}
