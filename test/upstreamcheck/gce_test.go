//go:build upstreamcheck

package upstreamcheck

import (
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
	confgce "github.com/multicloud-ccm/multicloud-ccm/test/conformance/gce"
)

// The upstream GCP CCM's Service annotation, spelled out.
const gceAnnLBType = "networking.gke.io/load-balancer-type"

// gceUpstream runs k8s.io/cloud-provider-gcp's cmd/cloud-controller-manager
// (the version pinned in tools/gce/go.mod) against test/cloudsim/gce: the
// emulator as its api-endpoint, Application Default Credentials from a
// service-account key whose token_uri is the emulator's (token-url = nil),
// a metadata-server stand-in for what it asks of its own instance, and
// its cluster ID in kube-system/ingress-uid.
type gceUpstream struct{}

func (gceUpstream) adapter() conformance.Adapter { return confgce.Adapter{} }

// shapes are the kinds of load balancer upstream makes that our tables
// (docs/reference/gce.md) serve: external (target pool, forwarding rule,
// firewalls, HTTP health check) and internal (instance groups, backend
// service, internal forwarding rule), with the variants that change what
// upstream writes (source ranges: the firewall's sources; ETP Local: the
// health check on the health check NodePort).
func (gceUpstream) shapes() []shape {
	local := func(s *corev1.Service) {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}
	src := func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"203.0.113.0/24"} }
	internal := map[string]string{gceAnnLBType: "Internal"}
	return []shape{
		{name: "external"},
		{name: "external-src", mutate: src},
		{name: "external-local", mutate: local},
		{name: "internal", annotations: internal},
		{name: "internal-local", annotations: internal, mutate: local},
	}
}

// duplicateKinds: the emulator's kinds (test/cloudsim/gce kinds.go) of a
// Service's load balancer parts.
func (gceUpstream) duplicateKinds() []string {
	return []string{"compute#forwardingRule", "compute#targetPool", "compute#backendService", "compute#instanceGroup", "compute#address"}
}

// prepare writes upstream's gce.conf as a regional cluster has it.
func (gceUpstream) prepare(t *testing.T, c conformance.Cloud, dir string) upstreamSetup {
	t.Helper()
	cloud := c.(*confgce.Cloud)
	fx := cloud.Fixture()
	key := filepath.Join(dir, "service-account.json")
	if err := os.WriteFile(key, cloud.ServiceAccountKey(), 0o600); err != nil {
		t.Fatal(err)
	}
	md := &gceMetadata{values: map[string]string{
		"project/project-id":         fx.Project,
		"project/numeric-project-id": "123456789012",
		"instance/hostname":          "upcheck-control-plane.c." + fx.Project + ".internal",
		"instance/zone":              "projects/123456789012/zones/" + c.Zones()[0],
		"instance/name":              "upcheck-control-plane",
		"instance/id":                "1",
	}}
	srv := httptest.NewServer(md)
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		if asked := md.unknown(); len(asked) > 0 {
			t.Logf("metadata paths upstream asked for that the stand-in does not serve: %v", asked)
		}
	})
	// The network and subnetwork as URLs (as Shared VPC configs have
	// them): upstream compares a forwarding rule's subnetwork with the one
	// it builds from api-endpoint (gce_loadbalancer_internal.go ilbIPToUse)
	// and, when they differ, gives the internal load balancer a new
	// address; the API's links are always www.googleapis.com ones, so a
	// name here, built under the emulator's endpoint, would move every
	// internal address on upstream's first sync of an existing rule.
	const api = "https://www.googleapis.com/compute/v1/projects/"
	var b strings.Builder
	fmt.Fprintf(&b, "[global]\nproject-id = %s\nlocal-zone = %s\nregional = true\nnetwork-name = %s\nsubnetwork-name = %s\nnode-tags = %s\ntoken-url = nil\napi-endpoint = %s/compute/v1/\n",
		fx.Project, c.Zones()[0], api+fx.Project+"/global/networks/"+fx.NetworkName,
		api+fx.Project+"/regions/"+fx.Region+"/subnetworks/"+fx.SubnetworkName, cloud.NodeTag(), c.Server().URL())
	conf := filepath.Join(dir, "gce.conf")
	if err := os.WriteFile(conf, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return upstreamSetup{
		configFile: conf,
		// Its node IPAM (on with --allocate-node-cidrs) is not part of the
		// switch; the common flags turn it off.
		args: []string{"--cloud-provider=gce", "--cluster-name=" + clusterID},
		env: []string{
			"GOOGLE_APPLICATION_CREDENTIALS=" + key,
			"GCE_METADATA_HOST=" + strings.TrimPrefix(srv.URL, "http://"),
		},
		importArgs: []string{"--cluster-name=" + clusterID},
		widerRBAC:  true,
	}
}

// gceMetadata is a loopback stand-in for the GCE metadata server: the
// paths upstream reads of the instance it runs on. Others answer 404 and
// are remembered.
type gceMetadata struct {
	values  map[string]string
	mu      sync.Mutex
	missing []string
}

func (m *gceMetadata) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Metadata-Flavor", "Google")
	if v, ok := m.values[strings.TrimPrefix(r.URL.Path, "/computeMetadata/v1/")]; ok {
		fmt.Fprint(w, v)
		return
	}
	m.mu.Lock()
	if !slices.Contains(m.missing, r.URL.Path) {
		m.missing = append(m.missing, r.URL.Path)
	}
	m.mu.Unlock()
	http.NotFound(w, r)
}

func (m *gceMetadata) unknown() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.missing)
}
