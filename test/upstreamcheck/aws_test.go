//go:build upstreamcheck

package upstreamcheck

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
	confaws "github.com/multicloud-ccm/multicloud-ccm/test/conformance/aws"
)

// The upstream AWS CCM's Service annotations, spelled out: a Service
// written for upstream carries these exact strings.
const (
	awsAnnType     = "service.beta.kubernetes.io/aws-load-balancer-type"
	awsAnnInternal = "service.beta.kubernetes.io/aws-load-balancer-internal"
	// awsAccount is the account the stand-in's identity document names.
	awsAccount = "123456789012"
	// Fake static credentials: the emulator checks no signature.
	awsAccessKeyID = "AKIAUPSTREAMCHECK000"
	awsSecretKey   = "upstream-check-secret"
)

// awsUpstream runs k8s.io/cloud-provider-aws's
// cmd/aws-cloud-controller-manager (the version pinned in
// tools/aws/go.mod) against test/cloudsim/aws.
type awsUpstream struct{}

func (awsUpstream) adapter() conformance.Adapter { return confaws.Adapter{} }

// shapes are the kinds of load balancer upstream makes that our tables
// (providers/aws annotations, docs/reference/aws.md) serve: Classic ELB
// (upstream's default), NLB, internal NLB, each with the variants that
// change what upstream builds (source ranges: the Classic ELB's security
// group rules; ETP Local: the health check on the health check NodePort).
func (awsUpstream) shapes() []shape {
	local := func(s *corev1.Service) {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}
	return []shape{
		{name: "clb"},
		{name: "clb-src", mutate: func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"203.0.113.0/24"} }},
		{name: "clb-local", mutate: local},
		{name: "nlb", annotations: map[string]string{awsAnnType: "nlb"}},
		{name: "nlb-int", annotations: map[string]string{awsAnnType: "nlb", awsAnnInternal: "true"}},
		{name: "nlb-local", annotations: map[string]string{awsAnnType: "nlb"}, mutate: local},
	}
}

func (awsUpstream) duplicateKinds() []string {
	return []string{"load-balancer", "classic-load-balancer", "target-group", "security-group"}
}

// prepare writes upstream's cloud.conf as a cluster on EC2 has it (zone,
// VPC, cluster ID, and endpoint overrides, here the emulator's), and
// starts the instance metadata stand-in upstream reads once at start: it
// runs on a "control-plane" instance launched in the emulator, as the
// upstream CCM runs on one in a real cluster.
func (awsUpstream) prepare(t *testing.T, c conformance.Cloud, dir string) upstreamSetup {
	t.Helper()
	cloud := c.(*confaws.Cloud)
	fx := cloud.Fixture()
	emu := cloud.Emulator()
	zone := c.Zones()[0]
	host, err := c.Launch(conformance.InstanceSpec{Zone: zone, NameHint: "upcheck-control-plane"})
	if err != nil {
		t.Fatal(err)
	}
	info, ok := emu.Instance(host.ID)
	if !ok {
		t.Fatalf("instance %s not in the emulator", host.ID)
	}
	md := &awsMetadata{values: map[string]string{
		"instance-id":                 info.ID,
		"instance-type":               info.InstanceType,
		"local-hostname":              info.PrivateDNSName,
		"hostname":                    info.PrivateDNSName,
		"local-ipv4":                  info.PrivateIP,
		"placement/availability-zone": info.Zone,
		"placement/region":            c.Region(),
		"mac":                         "02:00:00:00:00:01",
		"network/interfaces/macs/":    "02:00:00:00:00:01/",
		"network/interfaces/macs/02:00:00:00:00:01/vpc-id":    info.VPCID,
		"network/interfaces/macs/02:00:00:00:00:01/subnet-id": info.SubnetID,
	}, identity: map[string]any{
		"accountId": awsAccount, "architecture": "x86_64", "availabilityZone": info.Zone,
		"imageId": "ami-0upstreamcheck", "instanceId": info.ID, "instanceType": info.InstanceType,
		"pendingTime": "2026-11-28T00:00:00Z", "privateIp": info.PrivateIP, "region": c.Region(), "version": "2017-09-30",
	}}
	srv := httptest.NewServer(md)
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		if asked := md.unknown(); len(asked) > 0 {
			t.Logf("instance metadata paths upstream asked for that the stand-in does not serve: %v", asked)
		}
	})

	// Service is compared exactly with the SDK's service ID by upstream
	// (pkg/providers/v1/config/config.go:204-356), and every override
	// needs Region, URL and SigningRegion (ValidateOverrides).
	var b strings.Builder
	fmt.Fprintf(&b, "[Global]\nZone = %s\nVPC = %s\nKubernetesClusterID = %s\n", zone, fx.VPCID, clusterID)
	for i, svc := range []string{"EC2", "Elastic Load Balancing", "Elastic Load Balancing v2"} {
		fmt.Fprintf(&b, "\n[ServiceOverride %q]\nService = %s\nRegion = %s\nURL = %s\nSigningRegion = %s\n",
			fmt.Sprint(i+1), svc, c.Region(), c.Server().URL(), c.Region())
	}
	conf := filepath.Join(dir, "aws-cloud.conf")
	if err := os.WriteFile(conf, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return upstreamSetup{
		configFile: conf,
		args:       []string{"--cloud-provider=aws"},
		// Both managers take credentials from the SDK's standard
		// environment; only upstream reads the metadata endpoint. The
		// shared config files are pointed away so nothing of this
		// machine's ~/.aws leaks in.
		env: []string{
			"AWS_ACCESS_KEY_ID=" + awsAccessKeyID, "AWS_SECRET_ACCESS_KEY=" + awsSecretKey,
			"AWS_EC2_METADATA_SERVICE_ENDPOINT=" + srv.URL,
			"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		},
		secrets: []string{awsSecretKey},
	}
}

// awsMetadata is a loopback stand-in for the EC2 instance metadata
// service (IMDSv2): the session token, the identity document and the
// meta-data paths of one instance. Paths it does not serve answer 404 and
// are remembered, so a newer upstream asking for more says what.
type awsMetadata struct {
	values   map[string]string
	identity map[string]any
	mu       sync.Mutex
	missing  []string
}

func (m *awsMetadata) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPut && r.URL.Path == "/latest/api/token":
		// The SDK refuses a token without its TTL header.
		w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
		fmt.Fprint(w, "upstream-check-imds-token")
	case r.URL.Path == "/latest/dynamic/instance-identity/document":
		_ = json.NewEncoder(w).Encode(m.identity)
	case strings.HasPrefix(r.URL.Path, "/latest/meta-data/"):
		if v, ok := m.values[strings.TrimPrefix(r.URL.Path, "/latest/meta-data/")]; ok {
			fmt.Fprint(w, v)
			return
		}
		fallthrough
	default:
		m.mu.Lock()
		if !slices.Contains(m.missing, r.Method+" "+r.URL.Path) {
			m.missing = append(m.missing, r.Method+" "+r.URL.Path)
		}
		m.mu.Unlock()
		http.NotFound(w, r)
	}
}

func (m *awsMetadata) unknown() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.missing)
}
