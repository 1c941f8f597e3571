package sandbox

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
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

// TestDemoOnceHybrid runs `make demo CLOUD=openstack,aws ONCE=1`'s code
// path with one Node per cloud (the report's shape is the same with
// more) and checks what only a hybrid report has: each Node's cloud, each
// Service in its cloud with that cloud's Nodes as backends, routes in
// both clouds, and the manager's attempts counted per cloud.
func TestDemoOnceHybrid(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var out bytes.Buffer
	dir := t.TempDir()
	if err := Run(ctx, Options{Out: &out, Once: true, StateDir: dir, Cloud: "openstack,aws", Nodes: 1}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	report := out.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^  demo-openstack-0 +openstack +openstack:///`),
		regexp.MustCompile(`(?m)^  (ip-[0-9-]+\.eu-west-1\.compute\.internal) +aws +aws:///eu-west-1a/i-`),
		regexp.MustCompile(`(?m)^  default/web-openstack +openstack \(default\) +172\.24\.[0-9.]+ +demo-openstack-0$`),
		regexp.MustCompile(`(?m)^  default/web-aws +aws \(annotation\) +\S+\.elb\.eu-west-1\.amazonaws\.com +ip-[0-9-]+\.eu-west-1\.compute\.internal$`),
		regexp.MustCompile(`(?m)^Pod routes the CCM programmed in openstack\n  10\.244\.0\.0/24 via `),
		regexp.MustCompile(`(?m)^Pod routes the CCM programmed in aws\n  10\.244\.1\.0/24 via i-`),
		regexp.MustCompile(`(?m)^Cloud API calls so far to openstack\n  \S+ +[0-9]+`),
		regexp.MustCompile(`(?m)^Cloud API calls so far to aws\n  \S+ +[0-9]+`),
		regexp.MustCompile(`cloud API attempts by provider \(multicloud_ccm_cloud_api_requests_total\): aws [1-9][0-9]*, openstack [1-9][0-9]*\n`),
		regexp.MustCompile(`done \(ONCE\)`),
	} {
		if !want.MatchString(report) {
			t.Errorf("report lacks %s:\n%s", want, report)
		}
	}
	// Every credential of the hybrid cloud-config, by its key.
	cfg, err := os.ReadFile(filepath.Join(dir, "cloud-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	secrets := regexp.MustCompile(`(?:password|secretAccessKey): ([^,}\s]+)`).FindAllStringSubmatch(string(cfg), -1)
	if len(secrets) != 2 {
		t.Fatalf("found %d credentials in the cloud-config, want OpenStack's and AWS's:\n%s", len(secrets), cfg)
	}
	for _, s := range secrets {
		if strings.Contains(report, s[1]) {
			t.Errorf("report shows the cloud-config's %s", strings.SplitN(s[0], ":", 2)[0])
		}
	}
}
