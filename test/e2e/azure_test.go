package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/ccmproc"
	cloudsimazure "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/azure"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
	confazure "github.com/multicloud-ccm/multicloud-ccm/test/conformance/azure"
)

// TestAzure checks, through the release binary, what is Azure's own (what
// every cloud must do is TestConformance's): many Services at once share
// the cluster's one Standard load balancer and security group and all
// survive; a change someone else makes to the load balancer between the
// manager's read and write (412 on If-Match) is kept, not overwritten; a
// user's public IP is used and never deleted; the load balancer goes with
// its last Service; each of upstream's Service annotations shapes the load
// balancer, public IP and security group as upstream's does; a
// control-plane Node stays out of the backend pool.
func TestAzure(t *testing.T) {
	s := startSuiteCloud(t, env.cluster, confazure.Adapter{}, "azure-only")
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
		env.waitInitialized(t, i.NodeName)
	}
	a := &azureSuite{suiteCloud: s, c: c, emu: emu, fx: fx, lbName: lbName, nodes: []conformance.Instance{i1, i2}}

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
			wg.Go(func() { keys[i] = env.createService(t, lbService(fmt.Sprintf("az-many-%d", i), 80)) })
		}
		wg.Wait()
		for _, k := range keys {
			env.waitService(t, k, "an address", hasAddress)
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
			env.deleteService(t, k)
		}
		for _, k := range keys {
			env.deleteServiceAndWait(t, k)
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
		first := env.createService(t, lbService("az-first", 80))
		s.waitLB(t, first, []int32{80}, i1, i2)
		// An operator adds a probe of their own to the shared load
		// balancer just before the manager's next write of it reaches
		// ARM: that write's If-Match is stale for sure, so ARM answers
		// 412 and the manager must read again and re-apply its change.
		const put = "network:LoadBalancers_CreateOrUpdate"
		operator := make(chan error, 1)
		emu.BeforeNext(put, func() {
			lb, _ := emu.LoadBalancer(fx.ResourceGroup, lbName)
			lb.Properties.Probes = append(lb.Properties.Probes, &armnetwork.Probe{Name: to.Ptr("operator-probe"), Properties: &armnetwork.ProbePropertiesFormat{
				Protocol: to.Ptr(armnetwork.ProbeProtocolTCP), Port: to.Ptr[int32](22),
			}})
			operator <- c.PutLoadBalancer(context.Background(), lb)
		})
		const conflictSeries = `code="412",operation="loadBalancers.createOrUpdate"`
		emu412, seen412 := emu.Answers(put, http.StatusPreconditionFailed), s.metricSum("multicloud_ccm_cloud_api_requests_total", conflictSeries)
		second := env.createService(t, lbService("az-second", 81))
		s.waitLB(t, second, []int32{81}, i1, i2)
		select {
		case err := <-operator:
			if err != nil {
				t.Fatalf("the operator's write: %v", err)
			}
		default:
			t.Fatal("the manager made the second Service's frontend without writing the load balancer")
		}
		if n := emu.Answers(put, http.StatusPreconditionFailed) - emu412; n != 1 {
			t.Errorf("ARM answered %d load balancer writes with 412, want 1 (the manager's, stale by the operator's write)", n)
		}
		if n := s.metricSum("multicloud_ccm_cloud_api_requests_total", conflictSeries) - seen412; n != 1 {
			t.Errorf("the manager counted %d 412s on /metrics, want 1", n)
		}
		lb, _ := emu.LoadBalancer(fx.ResourceGroup, lbName)
		var probes []string
		for _, p := range lb.Properties.Probes {
			probes = append(probes, *p.Name)
		}
		if !slices.Contains(probes, "operator-probe") {
			t.Errorf("the operator's probe was overwritten: probes %v", probes)
		}
		if got := s.cloud.LoadBalancers(first); len(got) != 1 {
			t.Errorf("the first Service's frontend: %+v", got)
		}
		// Handled in the sync: the writer read again and re-applied, the
		// Service saw no failure.
		if warns, err := env.warnings(context.Background(), second); err != nil || len(warns) != 0 {
			t.Errorf("Warning events on %s: %v %v", second, warns, err)
		}
		env.deleteServiceAndWait(t, second)
		env.deleteServiceAndWait(t, first)
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
		k := env.createService(t, svc)
		env.waitService(t, k, "the user's address", func(s *corev1.Service) (bool, string) {
			ing := s.Status.LoadBalancer.Ingress
			return len(ing) == 1 && ing[0].IP == addr, fmt.Sprint(ing)
		})
		env.deleteServiceAndWait(t, k)
		if pip, ok := emu.PublicIP(fx.ResourceGroup, "team-ip"); !ok || *pip.Tags["owner"] != "team-a" {
			t.Errorf("the user's public IP was deleted or changed: %v", ok)
		}
		if _, ok := emu.LoadBalancer(fx.ResourceGroup, lbName); ok {
			t.Error("the load balancer outlived its last Service")
		}
	})

	t.Run("annotations", a.annotations)
	t.Run("a control-plane Node stays out of the backend pool", a.controlPlaneExcluded)
}

// Upstream's Service annotations (cloud-provider-azure pkg/consts), as the
// Azure backend reads them.
const (
	annIPv4              = "service.beta.kubernetes.io/azure-load-balancer-ipv4"
	annPIPResourceGroup  = "service.beta.kubernetes.io/azure-load-balancer-resource-group"
	annPIPTags           = "service.beta.kubernetes.io/azure-pip-tags"
	annProbeProtocol     = "service.beta.kubernetes.io/azure-load-balancer-health-probe-protocol"
	annProbeRequestPath  = "service.beta.kubernetes.io/azure-load-balancer-health-probe-request-path"
	annProbeInterval     = "service.beta.kubernetes.io/azure-load-balancer-health-probe-interval"
	annProbeNumOfProbe   = "service.beta.kubernetes.io/azure-load-balancer-health-probe-num-of-probe"
	annDisableNSGRule    = "service.beta.kubernetes.io/azure-disable-load-balancer-nsg-rule"
	annDenyAllExcept     = "service.beta.kubernetes.io/azure-deny-all-except-load-balancer-source-ranges"
	annAzureInternal     = "service.beta.kubernetes.io/azure-load-balancer-internal"
	annHAPorts           = "service.beta.kubernetes.io/azure-load-balancer-enable-high-availability-ports"
	annDisableTCPReset   = "service.beta.kubernetes.io/azure-load-balancer-disable-tcp-reset"
	annDisableFloatingIP = "service.beta.kubernetes.io/azure-disable-load-balancer-floating-ip"
	// A port's, "{port}" its number.
	annPortProbeProtocol = "service.beta.kubernetes.io/port_{port}_health-probe_protocol"
	annPortProbeInterval = "service.beta.kubernetes.io/port_{port}_health-probe_interval"
	annPortNoLBRule      = "service.beta.kubernetes.io/port_{port}_no_lb_rule"

	// tagService lists the Services on a public IP.
	tagService = "k8s-azure-service"
	// controlPlaneLabel marks a control-plane Node (kubeadm's).
	controlPlaneLabel = "node-role.kubernetes.io/control-plane"
)

// forPort is a port annotation's key for one port.
func forPort(ann string, port int32) string {
	return strings.Replace(ann, "{port}", strconv.Itoa(int(port)), 1)
}

// azureSuite is what TestAzure's Azure-only subtests read: the emulator
// behind the suite's manager and the Nodes every Service's pool holds.
type azureSuite struct {
	*suiteCloud
	c      *confazure.Cloud
	emu    *cloudsimazure.Emulator
	fx     cloudsimazure.Fixture
	lbName string
	nodes  []conformance.Instance
}

// pipGroup is the resource group azure-load-balancer-resource-group
// names.
const pipGroup = "conf-ips"

// annotations runs one Service per annotation at once, each on ports of
// its own so the security group's shared rules stay apart, then compares
// the emulator's whole inventory with what it was before: every Service
// took all it made with it.
func (a *azureSuite) annotations(t *testing.T) {
	// The user's: made before the snapshot, kept after.
	userPIP, userAddr, err := a.emu.CreatePublicIP(a.fx.ResourceGroup, "team-ipv4", map[string]string{"owner": "team-b"})
	if err != nil {
		t.Fatal(err)
	}
	a.emu.AddResourceGroup(pipGroup)
	before := a.cloud.Inventory()
	scenarios := []struct {
		name string
		run  func(*testing.T)
	}{
		{"azure-load-balancer-ipv4 puts the frontend on the user's public IP, which stays", func(t *testing.T) { a.userAddress(t, userPIP, userAddr) }},
		{"azure-load-balancer-resource-group makes the public IP in that group", a.publicIPGroup},
		{"azure-pip-tags tag the public IP", a.publicIPTags},
		{"health probe annotations, per Service and per port, and port_n_no_lb_rule", a.probes},
		{"azure-disable-load-balancer-nsg-rule admits nothing", a.noSecurityRule},
		{"azure-deny-all-except-load-balancer-source-ranges refuses all but the ranges", a.denyAllExcept},
		{"azure-load-balancer-enable-high-availability-ports on an internal Service is one rule for every port", a.haPorts},
		{"azure-load-balancer-disable-tcp-reset turns TCP reset off", a.noTCPReset},
		{"floating IP on by default, off with azure-disable-load-balancer-floating-ip", a.floatingIP},
		{"two Services share one address on distinct ports", a.sharedAddress},
	}
	var wg sync.WaitGroup
	for _, sc := range scenarios {
		wg.Go(func() { t.Run(sc.name, sc.run) })
	}
	wg.Wait()
	waitInventory(t, a.cloud, before, "the cloud's whole inventory back to what it was before the annotated Services")
	if pip, ok := a.emu.PublicIP(a.fx.ResourceGroup, "team-ipv4"); !ok || val(pip.Tags["owner"]) != "team-b" || val(pip.Properties.IPAddress) != userAddr {
		t.Errorf("the user's public IP was deleted or changed: %v", ok)
	}
}

func (a *azureSuite) userAddress(t *testing.T, pipID, addr string) {
	svc := lbService("az-ipv4", 8101)
	svc.Annotations = map[string]string{annIPv4: addr}
	k := env.createService(t, svc)
	env.waitService(t, k, "the user's address "+addr, hasIP(addr))
	got := serviceOf(t, k)
	fe := confazure.FrontendName(got)
	settle(t, "the Service's frontend on the user's public IP, with its rule", func() []string {
		lb, ok := a.emu.LoadBalancer(a.fx.ResourceGroup, a.lbName)
		if !ok {
			return []string{"no load balancer"}
		}
		var bad []string
		if f := lbFrontend(lb, fe); f == nil || f.PublicIPAddress == nil || !strings.EqualFold(val(f.PublicIPAddress.ID), pipID) {
			bad = append(bad, fmt.Sprintf("frontend %s is %s, want on %s", fe, describeFrontend(f), pipID))
		}
		if r := lbRule(lb, confazure.RuleName(got, got.Spec.Ports[0])); r == nil || !onFrontend(r, fe) {
			bad = append(bad, "no rule for port 8101 on the frontend")
		}
		return bad
	})
	if _, ok := a.emu.PublicIP(a.fx.ResourceGroup, confazure.PublicIPName(a.lbName, got)); ok {
		t.Error("the manager made a public IP of its own beside the user's")
	}
	noWarnings(t, k)
	env.deleteServiceAndWait(t, k)
	if pip, ok := a.emu.PublicIP(a.fx.ResourceGroup, "team-ipv4"); !ok || val(pip.Tags["owner"]) != "team-b" {
		t.Errorf("the user's public IP was deleted or changed: %v", ok)
	}
}

func (a *azureSuite) publicIPGroup(t *testing.T) {
	svc := lbService("az-pip-group", 8102)
	svc.Annotations = map[string]string{annPIPResourceGroup: pipGroup}
	k := env.createService(t, svc)
	addr := ingressIP(env.waitService(t, k, "an address", hasAddress))
	a.waitLB(t, k, []int32{8102}, a.nodes...)
	name := confazure.PublicIPName(a.lbName, serviceOf(t, k))
	if pip, ok := a.emu.PublicIP(pipGroup, name); !ok || val(pip.Properties.IPAddress) != addr {
		t.Errorf("public IP %s in %s: %v, want it with the Service's address %s", name, pipGroup, ok, addr)
	}
	if _, ok := a.emu.PublicIP(a.fx.ResourceGroup, name); ok {
		t.Errorf("public IP %s made in %s too", name, a.fx.ResourceGroup)
	}
	noWarnings(t, k)
	env.deleteServiceAndWait(t, k)
	if _, ok := a.emu.PublicIP(pipGroup, name); ok {
		t.Errorf("public IP %s in %s outlived its Service", name, pipGroup)
	}
}

func (a *azureSuite) publicIPTags(t *testing.T) {
	svc := lbService("az-pip-tags", 8103)
	svc.Annotations = map[string]string{annPIPTags: "team=web, env = prod"}
	k := env.createService(t, svc)
	env.waitService(t, k, "an address", hasAddress)
	a.waitLB(t, k, []int32{8103}, a.nodes...)
	name := confazure.PublicIPName(a.lbName, serviceOf(t, k))
	pip, _ := a.emu.PublicIP(a.fx.ResourceGroup, name)
	if got, want := tagList(pip.Tags), "env=prod,k8s-azure-cluster-name="+a.lbName+",k8s-azure-service=default/az-pip-tags,team=web"; got != want {
		t.Errorf("public IP %s tags %s, want %s", name, got, want)
	}
	noWarnings(t, k)
	env.deleteServiceAndWait(t, k)
}

// probes: the Service's probe settings on one port, a port's own on the
// next, and a port without a rule.
func (a *azureSuite) probes(t *testing.T) {
	svc := lbService("az-probes", 8104, 8105, 8106)
	svc.Annotations = map[string]string{
		annProbeProtocol: "Http", annProbeRequestPath: "/ready", annProbeInterval: "10", annProbeNumOfProbe: "3",
		forPort(annPortProbeProtocol, 8105): "Tcp",
		forPort(annPortProbeInterval, 8105): "7",
		forPort(annPortNoLBRule, 8106):      "true",
	}
	k := env.createService(t, svc)
	env.waitService(t, k, "an address", hasAddress)
	a.waitLB(t, k, []int32{8104, 8105}, a.nodes...)
	got := serviceOf(t, k)
	p := got.Spec.Ports
	want := map[string]string{
		confazure.RuleName(got, p[0]): fmt.Sprintf("Http /ready :%d every 10s x3", p[0].NodePort),
		confazure.RuleName(got, p[1]): fmt.Sprintf("Tcp  :%d every 7s x3", p[1].NodePort),
	}
	settle(t, "probes as annotated, each its rule's", func() []string {
		lb, _ := a.emu.LoadBalancer(a.fx.ResourceGroup, a.lbName)
		var bad []string
		for name, w := range want {
			if g := describeProbe(lbProbe(lb, name)); g != w {
				bad = append(bad, fmt.Sprintf("probe %s is %q, want %q", name, g, w))
			}
			if r := lbRule(lb, name); r == nil || r.Probe == nil || !strings.HasSuffix(strings.ToLower(val(r.Probe.ID)), "/probes/"+strings.ToLower(name)) {
				bad = append(bad, "rule "+name+" does not use its probe")
			}
		}
		if name := confazure.RuleName(got, p[2]); lbRule(lb, name) != nil || lbProbe(lb, name) != nil {
			bad = append(bad, "port 8106 has a rule or probe despite port_8106_no_lb_rule")
		}
		return bad
	})
	noWarnings(t, k)
	env.deleteServiceAndWait(t, k)
}

func (a *azureSuite) noSecurityRule(t *testing.T) {
	svc := lbService("az-no-nsg-rule", 8107)
	svc.Annotations = map[string]string{annDisableNSGRule: "true"}
	k := env.createService(t, svc)
	addr := ingressIP(env.waitService(t, k, "an address", hasAddress))
	a.waitLB(t, k, []int32{8107}, a.nodes...)
	if r := a.securityRule(confazure.AllowRuleName("Tcp", []string{"Internet"}, 8107)); r != "" {
		t.Errorf("a rule admits port 8107: %s", r)
	}
	if rs := a.securityRulesTo(addr); len(rs) != 0 {
		t.Errorf("security rules for the Service's address %s: %v", addr, rs)
	}
	noWarnings(t, k)
	env.deleteServiceAndWait(t, k)
}

func (a *azureSuite) denyAllExcept(t *testing.T) {
	svc := lbService("az-deny-all", 8108)
	svc.Spec.LoadBalancerSourceRanges = []string{"203.0.113.0/24"}
	svc.Annotations = map[string]string{annDenyAllExcept: "true"}
	k := env.createService(t, svc)
	addr := ingressIP(env.waitService(t, k, "an address", hasAddress))
	a.waitLB(t, k, []int32{8108}, a.nodes...)
	allow := confazure.AllowRuleName("Tcp", []string{"203.0.113.0/24"}, 8108)
	settle(t, "the ranges admitted, everything else refused", func() []string {
		var bad []string
		for name, want := range map[string]string{
			allow:                     "Tcp 203.0.113.0/24->" + addr + ":8108 Allow",
			confazure.DenyAllRuleName: "* *->" + addr + ":* Deny",
			confazure.AllowRuleName("Tcp", []string{"Internet"}, 8108): "",
		} {
			if got := a.securityRule(name); got != want {
				bad = append(bad, fmt.Sprintf("rule %s is %q, want %q", name, got, want))
			}
		}
		return bad
	})
	if pa, pd := a.securityRulePriority(allow), a.securityRulePriority(confazure.DenyAllRuleName); pa >= pd {
		t.Errorf("the allow rule's priority %d is not ahead of the deny rule's %d", pa, pd)
	}
	noWarnings(t, k)
	env.deleteServiceAndWait(t, k)
}

func (a *azureSuite) haPorts(t *testing.T) {
	svc := lbService("az-ha-ports", 8109, 8110)
	svc.Annotations = map[string]string{annAzureInternal: "true", annHAPorts: "true"}
	k := env.createService(t, svc)
	addr := ingressIP(env.waitService(t, k, "an address", hasAddress))
	if ip, err := netip.ParseAddr(addr); err != nil || !netip.MustParsePrefix(cloudsimazure.FixtureSubnetCIDR).Contains(ip) {
		t.Errorf("internal address %s not in the nodes' subnet %s", addr, cloudsimazure.FixtureSubnetCIDR)
	}
	got := serviceOf(t, k)
	fe, name := confazure.FrontendName(got), confazure.RuleName(got, got.Spec.Ports[0])
	settle(t, "one HA-ports rule, probed by the first port's probe, to the nodes", func() []string {
		lb, ok := a.emu.LoadBalancer(a.fx.ResourceGroup, a.lbName+"-internal")
		if !ok {
			return []string{"no internal load balancer"}
		}
		var bad []string
		if rs := rulesOn(lb, fe); len(rs) != 1 || rs[0] != name {
			bad = append(bad, fmt.Sprintf("rules %v on the frontend, want the one HA rule %s", rs, name))
		}
		r := lbRule(lb, name)
		if r == nil {
			return append(bad, "no rule "+name)
		}
		if g := fmt.Sprintf("%s %d->%d floating %v", val(r.Protocol), val(r.FrontendPort), val(r.BackendPort), val(r.EnableFloatingIP)); g != "All 0->0 floating true" {
			bad = append(bad, "rule "+g+", want All 0->0 floating true")
		}
		if r.Probe == nil || !strings.HasSuffix(strings.ToLower(val(r.Probe.ID)), "/probes/"+strings.ToLower(name)) {
			bad = append(bad, "the rule is not probed by "+name)
		}
		if r.BackendAddressPool == nil {
			return append(bad, "the rule has no pool")
		}
		if g, w := poolIPs(lb, val(r.BackendAddressPool.ID)), a.nodeIPs(t, a.nodes...); g != w {
			bad = append(bad, fmt.Sprintf("pool %s, want the nodes %s", g, w))
		}
		return bad
	})
	noWarnings(t, k)
	env.deleteServiceAndWait(t, k)
}

func (a *azureSuite) noTCPReset(t *testing.T) {
	svc := lbService("az-no-tcp-reset", 8111)
	svc.Annotations = map[string]string{annDisableTCPReset: "true"}
	k := env.createService(t, svc)
	env.waitService(t, k, "an address", hasAddress)
	a.waitLB(t, k, []int32{8111}, a.nodes...)
	got := serviceOf(t, k)
	lb, _ := a.emu.LoadBalancer(a.fx.ResourceGroup, a.lbName)
	if r := lbRule(lb, confazure.RuleName(got, got.Spec.Ports[0])); r == nil || val(r.EnableTCPReset) {
		t.Errorf("rule of port 8111: TCP reset still on (rule found: %v)", r != nil)
	}
	noWarnings(t, k)
	env.deleteServiceAndWait(t, k)
}

// floatingIP: on, the rule keeps the Service port and the security rule
// admits clients to the frontend's address; switched off, the rule sends
// to the NodePort and the security rule admits clients to the nodes on
// it, and the old security rule goes.
func (a *azureSuite) floatingIP(t *testing.T) {
	k := env.createService(t, lbService("az-floating-ip", 8112))
	addr := ingressIP(env.waitService(t, k, "an address", hasAddress))
	a.waitLB(t, k, []int32{8112}, a.nodes...)
	got := serviceOf(t, k)
	name, np := confazure.RuleName(got, got.Spec.Ports[0]), got.Spec.Ports[0].NodePort
	servicePortRule := confazure.AllowRuleName("Tcp", []string{"Internet"}, 8112)
	nodePortRule := confazure.AllowRuleName("Tcp", []string{"Internet"}, np)
	shape := func(floating bool, backend int32, allowed map[string]string) func() []string {
		return func() []string {
			lb, _ := a.emu.LoadBalancer(a.fx.ResourceGroup, a.lbName)
			var bad []string
			r := lbRule(lb, name)
			if r == nil {
				return []string{"no rule " + name}
			}
			if g, w := fmt.Sprintf("floating %v backend %d reset %v", val(r.EnableFloatingIP), val(r.BackendPort), val(r.EnableTCPReset)),
				fmt.Sprintf("floating %v backend %d reset true", floating, backend); g != w {
				bad = append(bad, fmt.Sprintf("rule %s: %s, want %s", name, g, w))
			}
			for rule, want := range allowed {
				if g := a.securityRule(rule); g != want {
					bad = append(bad, fmt.Sprintf("security rule %s is %q, want %q", rule, g, want))
				}
			}
			return bad
		}
	}
	settle(t, "floating IP on: the Service port, clients admitted to the frontend's address", shape(true, 8112, map[string]string{
		servicePortRule: "Tcp Internet->" + addr + ":8112 Allow",
		nodePortRule:    "",
	}))
	env.updateService(t, k, func(s *corev1.Service) { metav1.SetMetaDataAnnotation(&s.ObjectMeta, annDisableFloatingIP, "true") })
	settle(t, "floating IP off: the NodePort, clients admitted to the nodes on it", shape(false, np, map[string]string{
		servicePortRule: "",
		nodePortRule:    fmt.Sprintf("Tcp Internet->%s:%d Allow", a.nodeIPs(t, a.nodes...), np),
	}))
	env.waitService(t, k, "the same address "+addr, hasIP(addr))
	noWarnings(t, k)
	env.deleteServiceAndWait(t, k)
}

// sharedAddress: the second Service asks for the first's address; both
// are on the first's frontend and public IP, which lists both; the first
// going leaves the second served on the same address.
func (a *azureSuite) sharedAddress(t *testing.T) {
	first := env.createService(t, lbService("az-share-a", 8114))
	addr := ingressIP(env.waitService(t, first, "an address", hasAddress))
	svc := lbService("az-share-b", 8115)
	svc.Annotations = map[string]string{annIPv4: addr}
	second := env.createService(t, svc)
	env.waitService(t, second, "the first Service's address "+addr, hasIP(addr))
	a.waitLB(t, first, []int32{8114, 8115}, a.nodes...)
	a.waitLB(t, second, []int32{8114, 8115}, a.nodes...)
	g1, g2 := serviceOf(t, first), serviceOf(t, second)
	fe, pipName := confazure.FrontendName(g1), confazure.PublicIPName(a.lbName, g1)
	pip, ok := a.emu.PublicIP(a.fx.ResourceGroup, pipName)
	if !ok {
		t.Fatalf("no public IP %s", pipName)
	}
	shape := func(services string, allowed map[string]string) func() []string {
		return func() []string {
			lb, _ := a.emu.LoadBalancer(a.fx.ResourceGroup, a.lbName)
			var bad []string
			if fes := frontendsOn(lb, val(pip.ID)); len(fes) != 1 || fes[0] != fe {
				bad = append(bad, fmt.Sprintf("frontends on the public IP %v, want only %s", fes, fe))
			}
			if r := lbRule(lb, confazure.RuleName(g2, g2.Spec.Ports[0])); r == nil || !onFrontend(r, fe) {
				bad = append(bad, "the second Service's rule is not on the first's frontend")
			}
			p, _ := a.emu.PublicIP(a.fx.ResourceGroup, pipName)
			if g := val(p.Tags[tagService]); g != services {
				bad = append(bad, fmt.Sprintf("public IP lists %q, want %q", g, services))
			}
			for rule, want := range allowed {
				if g := a.securityRule(rule); g != want {
					bad = append(bad, fmt.Sprintf("security rule %s is %q, want %q", rule, g, want))
				}
			}
			return bad
		}
	}
	rule8114 := confazure.AllowRuleName("Tcp", []string{"Internet"}, 8114)
	rule8115 := confazure.AllowRuleName("Tcp", []string{"Internet"}, 8115)
	settle(t, "one frontend and public IP for both", shape("default/az-share-a,default/az-share-b", map[string]string{
		rule8114: "Tcp Internet->" + addr + ":8114 Allow",
		rule8115: "Tcp Internet->" + addr + ":8115 Allow",
	}))
	noWarnings(t, first)
	noWarnings(t, second)

	env.deleteServiceAndWait(t, first)
	a.waitLB(t, second, []int32{8115}, a.nodes...)
	settle(t, "the second Service alone on the address", shape("default/az-share-b", map[string]string{
		rule8114: "",
		rule8115: "Tcp Internet->" + addr + ":8115 Allow",
	}))
	env.waitService(t, second, "still the address "+addr, hasIP(addr))
	env.deleteServiceAndWait(t, second)
}

// controlPlaneExcluded: a control-plane Node and a worker register
// before the Service; the pool gets the worker, not the control plane
// (upstream's excludeMasterFromStandardLB, on by default).
func (a *azureSuite) controlPlaneExcluded(t *testing.T) {
	zones := a.cloud.Zones()
	cp := a.launch(t, zones[0], "az-control-plane")
	worker := a.launch(t, zones[1], "az-worker")
	n := ccmproc.KubeletNode(cp.NodeName, "")
	n.Labels[controlPlaneLabel] = ""
	env.createNode(t, n)
	env.registerNode(t, worker.NodeName, "", "")
	env.waitInitialized(t, cp.NodeName)
	env.waitInitialized(t, worker.NodeName)
	k := env.createService(t, lbService("az-control-plane", 80))
	env.waitService(t, k, "an address", hasAddress)
	a.waitLB(t, k, []int32{80}, append(slices.Clone(a.nodes), worker)...)
	env.deleteServiceAndWait(t, k)
	env.deleteNode(t, cp.NodeName)
	env.deleteNode(t, worker.NodeName)
	if _, ok := a.emu.LoadBalancer(a.fx.ResourceGroup, a.lbName); ok {
		t.Error("the load balancer outlived its last Service")
	}
}

// TestAzureNICPool runs a second manager configured as a cluster switched
// from the upstream CCM (NIC-based pools, upstream's default) and with
// config tags: a standalone VM's NIC and a uniform scale set instance are
// the pool, the scale set's model names it, an instance joining is added,
// the config's tags are on the load balancer, public IP and security
// group, and deleting the Service releases every member before the load
// balancer goes.
func TestAzureNICPool(t *testing.T) {
	adapter := confazure.Adapter{Options: confazure.Options{ExtraConfig: "  tags: \"team=web, env=e2e\"\n  tagsMap:\n    tier: front\n"}}
	s := startSuiteCloud(t, env.cluster, adapter, "nic-pool", func(o *conformance.Options) { o.Switched = true })
	c := s.cloud.(*confazure.Cloud)
	emu, fx, lbName := c.Emulator(), c.Fixture(), c.ClusterID()
	vm := s.launchNode(t, s.cloud.Zones()[0], "az-nic-vm", "")
	ss, err := emu.CreateScaleSet(cloudsimazure.ScaleSetSpec{Name: "aznicss", Capacity: 2})
	if err != nil {
		t.Fatal(err)
	}
	// A kubelet on an instance registers under its computer name; the
	// emulator and the adapter name it "<scale set>_<instance ID>".
	inst := func(i int) conformance.Instance {
		return conformance.Instance{ID: ss.Instances[i].Name, NodeName: strings.ToLower(ss.Instances[i].ComputerName)}
	}
	ss0, ss1 := inst(0), inst(1)
	env.registerNode(t, ss0.NodeName, "", "")
	env.waitInitialized(t, vm.NodeName)
	env.waitInitialized(t, ss0.NodeName)
	before := s.cloud.Inventory()
	poolSuffix := strings.ToLower("/loadBalancers/" + lbName + "/backendAddressPools/" + lbName)
	inPool := func(pools []string) bool {
		return slices.ContainsFunc(pools, func(p string) bool { return strings.HasSuffix(strings.ToLower(p), poolSuffix) })
	}
	members := func() map[string]bool {
		out := map[string]bool{}
		for _, i := range []conformance.Instance{vm, ss0, ss1} {
			pools, ok := emu.BackendPools(i.ID)
			out[i.ID] = ok && inPool(pools)
		}
		return out
	}
	modelHasPool := func() (bool, string) {
		pools, err := c.ScaleSetModelPools(context.Background(), ss.Name)
		if err != nil {
			return false, err.Error()
		}
		return inPool(pools), fmt.Sprint(pools)
	}

	web := env.createService(t, lbService("az-nic-web", 80))
	t.Run("the VM's and the instance's IP configurations are the pool, the model names it", func(t *testing.T) {
		env.waitService(t, web, "an address", hasAddress)
		s.waitLB(t, web, []int32{80}, vm, ss0)
		settle(t, "the members' own pool references", func() []string {
			if m := members(); !m[vm.ID] || !m[ss0.ID] || m[ss1.ID] {
				return []string{fmt.Sprintf("in the pool: %v, want %s and %s", m, vm.ID, ss0.ID)}
			}
			if ok, seen := modelHasPool(); !ok {
				return []string{"the scale set's model names " + seen}
			}
			return nil
		})
		lb, _ := emu.LoadBalancer(fx.ResourceGroup, lbName)
		for _, p := range lb.Properties.BackendAddressPools {
			for _, ad := range p.Properties.LoadBalancerBackendAddresses {
				if ad.Properties != nil && val(ad.Properties.IPAddress) != "" {
					t.Errorf("the NIC-based pool %s lists the address %s", val(p.Name), val(ad.Properties.IPAddress))
				}
			}
		}
		noWarnings(t, web)
	})
	t.Run("an instance joining is added", func(t *testing.T) {
		env.registerNode(t, ss1.NodeName, "", "")
		env.waitInitialized(t, ss1.NodeName)
		s.waitLB(t, web, []int32{80}, vm, ss0, ss1)
		settle(t, "the joined instance's pool reference", func() []string {
			if m := members(); !m[ss1.ID] {
				return []string{fmt.Sprintf("in the pool: %v", m)}
			}
			return nil
		})
	})
	t.Run("config tags on the load balancer, public IP and security group", func(t *testing.T) {
		config := map[string]string{"team": "web", "env": "e2e", "tier": "front"}
		lb, _ := emu.LoadBalancer(fx.ResourceGroup, lbName)
		if got, want := tagList(lb.Tags), "env=e2e,k8s-azure-cluster-name="+lbName+",team=web,tier=front"; got != want {
			t.Errorf("load balancer tags %s, want %s", got, want)
		}
		pipName := confazure.PublicIPName(lbName, serviceOf(t, web))
		pip, _ := emu.PublicIP(fx.ResourceGroup, pipName)
		if got, want := tagList(pip.Tags), "env=e2e,k8s-azure-cluster-name="+lbName+",k8s-azure-service=default/az-nic-web,team=web,tier=front"; got != want {
			t.Errorf("public IP tags %s, want %s", got, want)
		}
		g, _ := emu.SecurityGroup(fx.SecurityGroupResourceGroup, fx.SecurityGroupName)
		for k, v := range config {
			if val(g.Tags[k]) != v {
				t.Errorf("security group tags %s lack %s=%s", tagList(g.Tags), k, v)
			}
		}
	})
	t.Run("deleting the Service releases every member, then the load balancer goes", func(t *testing.T) {
		env.deleteServiceAndWait(t, web)
		settle(t, "no pool reference left", func() []string {
			var bad []string
			if m := members(); m[vm.ID] || m[ss0.ID] || m[ss1.ID] {
				bad = append(bad, fmt.Sprintf("still in the pool: %v", m))
			}
			if ok, seen := modelHasPool(); ok {
				bad = append(bad, "the scale set's model still names "+seen)
			}
			return bad
		})
		if _, ok := emu.LoadBalancer(fx.ResourceGroup, lbName); ok {
			t.Error("the load balancer outlived its last Service")
		}
		waitInventory(t, s.cloud, before, "the cloud's whole inventory back to what it was before the Service")
	})
	if s.ccm.exited() {
		t.Fatalf("the manager exited: %v", s.ccm.Err())
	}
}

// serviceOf reads a Service (its UID names its parts).
func serviceOf(t *testing.T, k types.NamespacedName) *corev1.Service {
	t.Helper()
	svc, err := env.getService(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// settle waits until problems finds none, and reports the last it found
// otherwise (the subtest goes on to what does not depend on it).
func settle(t *testing.T, what string, problems func() []string) bool {
	t.Helper()
	return eventually(t, converge, what, func(context.Context) (bool, string, error) {
		p := problems()
		return len(p) == 0, strings.Join(p, "; "), nil
	})
}

func noWarnings(t *testing.T, k types.NamespacedName) {
	t.Helper()
	if ws, err := env.warnings(context.Background(), k); err != nil || len(ws) != 0 {
		t.Errorf("Warning events on %s: %v %v", k, ws, err)
	}
}

func hasIP(addr string) func(*corev1.Service) (bool, string) {
	return func(s *corev1.Service) (bool, string) {
		ing := s.Status.LoadBalancer.Ingress
		return len(ing) == 1 && ing[0].IP == addr, fmt.Sprint(ing)
	}
}

func ingressIP(s *corev1.Service) string {
	if len(s.Status.LoadBalancer.Ingress) == 0 {
		return ""
	}
	return s.Status.LoadBalancer.Ingress[0].IP
}

// nodeIPs are the instances' private addresses, sorted and joined by
// ",", as a security rule lists its destinations.
func (a *azureSuite) nodeIPs(t *testing.T, insts ...conformance.Instance) string {
	t.Helper()
	var out []string
	for _, i := range insts {
		vm, ok := a.emu.VM(i.ID)
		if !ok {
			t.Fatalf("no VM %s", i.ID)
		}
		out = append(out, vm.PrivateIP)
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// securityRule is a rule of the fixture's security group as
// "<protocol> <sources>-><destinations>:<ports> <access>", each list
// sorted and joined by ","; "" when there is none.
func (a *azureSuite) securityRule(name string) string {
	r := a.findSecurityRule(name)
	if r == nil {
		return ""
	}
	p := r.Properties
	list := func(one *string, many []*string) string {
		var out []string
		if one != nil {
			out = append(out, *one)
		}
		for _, v := range many {
			out = append(out, val(v))
		}
		slices.Sort(out)
		return strings.Join(out, ",")
	}
	return fmt.Sprintf("%s %s->%s:%s %s", val(p.Protocol), list(p.SourceAddressPrefix, p.SourceAddressPrefixes),
		list(p.DestinationAddressPrefix, p.DestinationAddressPrefixes), list(p.DestinationPortRange, p.DestinationPortRanges), val(p.Access))
}

func (a *azureSuite) securityRulePriority(name string) int32 {
	if r := a.findSecurityRule(name); r != nil {
		return val(r.Properties.Priority)
	}
	return -1
}

func (a *azureSuite) findSecurityRule(name string) *armnetwork.SecurityRule {
	g, _ := a.emu.SecurityGroup(a.fx.SecurityGroupResourceGroup, a.fx.SecurityGroupName)
	if g.Properties == nil {
		return nil
	}
	for _, r := range g.Properties.SecurityRules {
		if val(r.Name) == name && r.Properties != nil {
			return r
		}
	}
	return nil
}

// securityRulesTo are the security rules with addr among their
// destinations.
func (a *azureSuite) securityRulesTo(addr string) []string {
	g, _ := a.emu.SecurityGroup(a.fx.SecurityGroupResourceGroup, a.fx.SecurityGroupName)
	var out []string
	if g.Properties == nil {
		return nil
	}
	for _, r := range g.Properties.SecurityRules {
		p := r.Properties
		if p != nil && (val(p.DestinationAddressPrefix) == addr || slices.ContainsFunc(p.DestinationAddressPrefixes, func(d *string) bool { return val(d) == addr })) {
			out = append(out, val(r.Name))
		}
	}
	return out
}

func lbFrontend(lb armnetwork.LoadBalancer, name string) *armnetwork.FrontendIPConfigurationPropertiesFormat {
	if lb.Properties == nil {
		return nil
	}
	for _, f := range lb.Properties.FrontendIPConfigurations {
		if strings.EqualFold(val(f.Name), name) {
			return f.Properties
		}
	}
	return nil
}

func describeFrontend(f *armnetwork.FrontendIPConfigurationPropertiesFormat) string {
	switch {
	case f == nil:
		return "missing"
	case f.PublicIPAddress == nil:
		return "without a public IP"
	}
	return "on " + val(f.PublicIPAddress.ID)
}

// frontendsOn are the frontends on the public IP pipID.
func frontendsOn(lb armnetwork.LoadBalancer, pipID string) []string {
	var out []string
	if lb.Properties == nil {
		return nil
	}
	for _, f := range lb.Properties.FrontendIPConfigurations {
		if f.Properties != nil && f.Properties.PublicIPAddress != nil && strings.EqualFold(val(f.Properties.PublicIPAddress.ID), pipID) {
			out = append(out, val(f.Name))
		}
	}
	return out
}

func lbRule(lb armnetwork.LoadBalancer, name string) *armnetwork.LoadBalancingRulePropertiesFormat {
	if lb.Properties == nil {
		return nil
	}
	for _, r := range lb.Properties.LoadBalancingRules {
		if strings.EqualFold(val(r.Name), name) {
			return r.Properties
		}
	}
	return nil
}

// rulesOn are the names of the rules on the frontend fe.
func rulesOn(lb armnetwork.LoadBalancer, fe string) []string {
	var out []string
	if lb.Properties == nil {
		return nil
	}
	for _, r := range lb.Properties.LoadBalancingRules {
		if r.Properties != nil && onFrontend(r.Properties, fe) {
			out = append(out, val(r.Name))
		}
	}
	slices.Sort(out)
	return out
}

func onFrontend(r *armnetwork.LoadBalancingRulePropertiesFormat, fe string) bool {
	return r.FrontendIPConfiguration != nil && strings.HasSuffix(strings.ToLower(val(r.FrontendIPConfiguration.ID)), "/frontendipconfigurations/"+strings.ToLower(fe))
}

func lbProbe(lb armnetwork.LoadBalancer, name string) *armnetwork.ProbePropertiesFormat {
	if lb.Properties == nil {
		return nil
	}
	for _, p := range lb.Properties.Probes {
		if strings.EqualFold(val(p.Name), name) {
			return p.Properties
		}
	}
	return nil
}

// describeProbe is "<protocol> <path> :<port> every <interval>s x<threshold>".
func describeProbe(p *armnetwork.ProbePropertiesFormat) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprintf("%s %s :%d every %ds x%d", val(p.Protocol), val(p.RequestPath), val(p.Port), val(p.IntervalInSeconds), val(p.ProbeThreshold))
}

// poolIPs are the addresses of an IP-based pool, sorted and joined by ",".
func poolIPs(lb armnetwork.LoadBalancer, poolID string) string {
	var out []string
	if lb.Properties == nil {
		return ""
	}
	for _, p := range lb.Properties.BackendAddressPools {
		if !strings.EqualFold(val(p.ID), poolID) || p.Properties == nil {
			continue
		}
		for _, ad := range p.Properties.LoadBalancerBackendAddresses {
			if ad.Properties != nil {
				out = append(out, val(ad.Properties.IPAddress))
			}
		}
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// tagList is tags as "k=v" sorted by key and joined by ",".
func tagList(tags map[string]*string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		out = append(out, k+"="+val(tags[k]))
	}
	return strings.Join(out, ",")
}

func val[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// TestAzureDualStack: a dual-stack cluster (every VM with an IPv6
// address), Services asking for both families through the real
// apiserver: an address of each family in status, in the Service's
// order, the Nodes with both InternalIPs, the IPv6 pool holding every
// node, and nothing left after deletion.
func TestAzureDualStack(t *testing.T) {
	s := startSuiteCloud(t, env.cluster, confazure.Adapter{Options: confazure.Options{DualStack: true}}, "dual-stack")
	c := s.cloud.(*confazure.Cloud)
	emu, fx, lbName := c.Emulator(), c.Fixture(), c.ClusterID()
	zones := s.cloud.Zones()
	i1 := s.launchNode(t, zones[0], "az-ds-1", "")
	i2 := s.launchNode(t, zones[1], "az-ds-2", "")
	for _, i := range []conformance.Instance{i1, i2} {
		n := env.waitInitialized(t, i.NodeName)
		var v4, v6 bool
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				v6 = v6 || strings.Contains(a.Address, ":")
				v4 = v4 || !strings.Contains(a.Address, ":")
			}
		}
		if !v4 || !v6 {
			t.Errorf("node %s addresses %v: want an InternalIP of each family", i.NodeName, n.Status.Addresses)
		}
	}
	// The user's own IPv6 public IP, for azure-pip-name-ipv6.
	_, teamIP6, err := emu.CreatePublicIPv6(fx.ResourceGroup, "team-ip6")
	if err != nil {
		t.Fatal(err)
	}
	before := s.cloud.Inventory()
	require := corev1.IPFamilyPolicyRequireDualStack
	dual := func(name string, families ...corev1.IPFamily) *corev1.Service {
		svc := lbService(name, 80)
		svc.Spec.IPFamilyPolicy = &require
		svc.Spec.IPFamilies = families
		return svc
	}
	publicSvc := dual("az-ds-web", corev1.IPv4Protocol, corev1.IPv6Protocol)
	publicSvc.Annotations = map[string]string{"service.beta.kubernetes.io/azure-pip-name-ipv6": "team-ip6"}
	public := env.createService(t, publicSvc)
	// A pinned private IPv6 address from the subnet's IPv6 prefix.
	pinned6 := strings.TrimSuffix(cloudsimazure.FixtureSubnetCIDRv6, "/64") + "99"
	internalSvc := dual("az-ds-int", corev1.IPv6Protocol, corev1.IPv4Protocol)
	internalSvc.Annotations = map[string]string{
		"service.beta.kubernetes.io/azure-load-balancer-internal": "true",
		"service.beta.kubernetes.io/azure-load-balancer-ipv6":     pinned6,
	}
	internal := env.createService(t, internalSvc)
	// bothFamilies waits for an address of each family in the Service's
	// order, the IPv6 one v6 when set.
	bothFamilies := func(first6 bool, v6 string) func(*corev1.Service) (bool, string) {
		return func(s *corev1.Service) (bool, string) {
			ing := s.Status.LoadBalancer.Ingress
			ok := len(ing) == 2 && strings.Contains(ing[0].IP, ":") == first6 && strings.Contains(ing[1].IP, ":") != first6
			for _, in := range ing {
				if strings.Contains(in.IP, ":") && v6 != "" && in.IP != v6 {
					ok = false
				}
			}
			return ok, fmt.Sprint(ing)
		}
	}
	t.Run("an address of each family, in the Service's order; the pinned IPv6 ones", func(t *testing.T) {
		env.waitService(t, public, "an IPv4 then the team-ip6 address", bothFamilies(false, teamIP6))
		env.waitService(t, internal, "the pinned IPv6 then an IPv4 address", bothFamilies(true, pinned6))
		noWarnings(t, public)
		noWarnings(t, internal)
	})
	t.Run("both load balancers' IPv6 pools hold every node", func(t *testing.T) {
		settle(t, "the IPv6 pools", func() []string {
			var problems []string
			for _, name := range []string{lbName, lbName + "-internal"} {
				lb, ok := emu.LoadBalancer(fx.ResourceGroup, name)
				if !ok {
					problems = append(problems, "no load balancer "+name)
					continue
				}
				var found bool
				for _, p := range lb.Properties.BackendAddressPools {
					if val(p.Name) != lbName+"-IPv6" {
						continue
					}
					found = true
					var v6 int
					for _, a := range p.Properties.LoadBalancerBackendAddresses {
						if a.Properties != nil && strings.Contains(val(a.Properties.IPAddress), ":") {
							v6++
						}
					}
					if v6 != 2 {
						problems = append(problems, fmt.Sprintf("%s's pool %s has %d IPv6 addresses, want 2", name, val(p.Name), v6))
					}
				}
				if !found {
					problems = append(problems, name+" has no pool "+lbName+"-IPv6")
				}
			}
			return problems
		})
	})
	t.Run("deleting the Services leaves nothing", func(t *testing.T) {
		env.deleteServiceAndWait(t, public)
		env.deleteServiceAndWait(t, internal)
		waitInventory(t, s.cloud, before, "the cloud's whole inventory back to what it was before the dual-stack Services")
	})
}
