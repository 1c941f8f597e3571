package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
	confazure "github.com/multicloud-ccm/multicloud-ccm/test/conformance/azure"
)

// TestAzure checks, through the release binary, what is Azure's own (what
// every cloud must do is TestConformance's): many Services at once share
// the cluster's one Standard load balancer and security group and all
// survive; a change someone else makes to the load balancer between the
// manager's read and write (412 on If-Match) is kept, not overwritten; a
// user's public IP is used and never deleted; the load balancer goes with
// its last Service.
func TestAzure(t *testing.T) {
	s := startSuiteCloud(t, confazure.Adapter{}, "azure-only")
	c, ok := s.cloud.(*confazure.Cloud)
	if !ok {
		t.Fatalf("the azure adapter returned %T", s.cloud)
	}
	emu, srv, fx := c.Emulator(), c.Server(), c.Fixture()
	lbName := c.ClusterID()
	zones := s.cloud.Zones()
	i1 := s.launchNode(t, zones[0], "az-1", "")
	i2 := s.launchNode(t, zones[1], "az-2", "")
	for _, i := range []conformance.Instance{i1, i2} {
		waitInitialized(t, i.NodeName)
	}

	t.Run("/metrics has ARM calls by resource type and the rate-limit budgets", func(t *testing.T) {
		code, body, err := s.ccm.get("/metrics", true)
		if err != nil || code != 200 {
			t.Fatalf("GET /metrics: %d %v", code, err)
		}
		for _, want := range []string{
			`multicloud_ccm_cloud_api_requests_total{code="200",operation="virtualMachines.list",provider="azure",service="compute"}`,
			`multicloud_ccm_cloud_api_requests_total{code="200",operation="networkInterfaces.list",provider="azure",service="network"}`,
			`multicloud_ccm_cloud_api_ratelimit_remaining{limit="subscription-reads",provider="azure",service="compute"}`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "multicloud_ccm_") && (strings.Contains(line, fx.ClientSecret) || strings.Contains(line, "/subscriptions/") || strings.Contains(line, i1.ID)) {
				t.Errorf("a series carries a secret or a resource ID: %s", line)
			}
		}
	})

	t.Run("50 Services at once share the load balancer and security group", func(t *testing.T) {
		srv.ResetCalls()
		keys := make([]types.NamespacedName, 50)
		var wg sync.WaitGroup
		for i := range keys {
			wg.Go(func() { keys[i] = createService(t, lbService(fmt.Sprintf("az-many-%d", i), 80)) })
		}
		wg.Wait()
		for _, k := range keys {
			waitService(t, k, "an address", hasAddress)
		}
		for _, k := range keys {
			s.waitLB(t, k, []int32{80}, i1, i2)
		}
		lb, _ := emu.LoadBalancer(fx.ResourceGroup, lbName)
		g, _ := emu.SecurityGroup(fx.SecurityGroupResourceGroup, fx.SecurityGroupName)
		if n := len(lb.Properties.FrontendIPConfigurations); n != 50 {
			t.Errorf("%d frontends, want 50", n)
		}
		// Upstream's shared rule: one for the 50 (same sources and port),
		// their 50 addresses its destinations.
		if n := len(g.Properties.SecurityRules); n != 1 {
			t.Errorf("%d security rules, want the one shared rule", n)
		} else if d := len(g.Properties.SecurityRules[0].Properties.DestinationAddressPrefixes); d != 50 {
			t.Errorf("the shared rule has %d destinations, want 50", d)
		}
		calls := srv.Calls()
		t.Logf("50 Services: %d load balancer writes, %d security group writes, %d public IP writes",
			calls["network:LoadBalancers_CreateOrUpdate"], calls["network:NetworkSecurityGroups_CreateOrUpdate"], calls["network:PublicIPAddresses_CreateOrUpdate"])
		if n := calls["network:LoadBalancers_CreateOrUpdate"]; n >= 25 {
			t.Errorf("%d load balancer writes for 50 Services: not coalesced", n)
		}
		for _, k := range keys {
			deleteService(t, k)
		}
		for _, k := range keys {
			deleteServiceAndWait(t, k)
		}
		if _, ok := emu.LoadBalancer(fx.ResourceGroup, lbName); ok {
			t.Error("the load balancer outlived its last Service")
		}
		// The VMs' own public IPs stay; no Service's may.
		for _, id := range emu.ListNetwork("publicIPAddresses") {
			name := id[strings.LastIndex(id, "/")+1:]
			if pip, ok := emu.PublicIP(fx.ResourceGroup, name); ok && pip.Tags["k8s-azure-service"] != nil {
				t.Errorf("public IP %s of Service %s left", name, *pip.Tags["k8s-azure-service"])
			}
		}
		g, _ = emu.SecurityGroup(fx.SecurityGroupResourceGroup, fx.SecurityGroupName)
		if n := len(g.Properties.SecurityRules); n != 0 {
			t.Errorf("%d security rules left", n)
		}
	})

	t.Run("a change by someone else is kept through the 412", func(t *testing.T) {
		first := createService(t, lbService("az-first", 80))
		s.waitLB(t, first, []int32{80}, i1, i2)
		// An operator adds a probe of their own to the shared load
		// balancer: the manager's copy (and its ETag) is now stale.
		lb, _ := emu.LoadBalancer(fx.ResourceGroup, lbName)
		lb.Properties.Probes = append(lb.Properties.Probes, &armnetwork.Probe{Name: to.Ptr("operator-probe"), Properties: &armnetwork.ProbePropertiesFormat{
			Protocol: to.Ptr(armnetwork.ProbeProtocolTCP), Port: to.Ptr[int32](22),
		}})
		if err := c.PutLoadBalancer(context.Background(), lb); err != nil {
			t.Fatal(err)
		}
		srv.ResetCalls()
		second := createService(t, lbService("az-second", 81))
		s.waitLB(t, second, []int32{81}, i1, i2)
		lb, _ = emu.LoadBalancer(fx.ResourceGroup, lbName)
		var probes []string
		for _, p := range lb.Properties.Probes {
			probes = append(probes, *p.Name)
		}
		if !strings.Contains(strings.Join(probes, ","), "operator-probe") {
			t.Errorf("the operator's probe was overwritten: probes %v", probes)
		}
		if got := s.cloud.LoadBalancers(first); len(got) != 1 {
			t.Errorf("the first Service's frontend: %+v", got)
		}
		if n := srv.Calls()["network:LoadBalancers_CreateOrUpdate"]; n < 2 {
			t.Logf("load balancer writes %d: the manager re-read before writing (no 412 was needed)", n)
		}
		deleteServiceAndWait(t, second)
		deleteServiceAndWait(t, first)
		// The load balancer is the manager's and has no frontend left,
		// so it goes, the operator's probe with it.
		if _, ok := emu.LoadBalancer(fx.ResourceGroup, lbName); ok {
			t.Error("the load balancer outlived its last Service")
		}
	})

	t.Run("a user's public IP is used and never deleted", func(t *testing.T) {
		_, addr, err := emu.CreatePublicIP(fx.ResourceGroup, "team-ip", map[string]string{"owner": "team-a"})
		if err != nil {
			t.Fatal(err)
		}
		svc := lbService("az-user-ip", 80)
		svc.Annotations = map[string]string{"service.beta.kubernetes.io/azure-pip-name": "team-ip"}
		k := createService(t, svc)
		waitService(t, k, "the user's address", func(s *corev1.Service) (bool, string) {
			ing := s.Status.LoadBalancer.Ingress
			return len(ing) == 1 && ing[0].IP == addr, fmt.Sprint(ing)
		})
		deleteServiceAndWait(t, k)
		if pip, ok := emu.PublicIP(fx.ResourceGroup, "team-ip"); !ok || *pip.Tags["owner"] != "team-a" {
			t.Errorf("the user's public IP was deleted or changed: %v", ok)
		}
		if _, ok := emu.LoadBalancer(fx.ResourceGroup, lbName); ok {
			t.Error("the load balancer outlived its last Service")
		}
	})
}
