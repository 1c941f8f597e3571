package gce

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	gceemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/gce"
)

var (
	fam4  = []v1.IPFamily{v1.IPv4Protocol}
	fam6  = []v1.IPFamily{v1.IPv6Protocol}
	fam46 = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
	fam64 = []v1.IPFamily{v1.IPv6Protocol, v1.IPv4Protocol}
)

func withFamilies(svc *v1.Service, fams []v1.IPFamily, policy v1.IPFamilyPolicy) *v1.Service {
	svc.Spec.IPFamilies = fams
	if policy != "" {
		svc.Spec.IPFamilyPolicy = &policy
	}
	return svc
}

// TestIPv6Names: the IPv6 parts' names, ingress-gce's "-ipv6" after ours
// (and upstream's) IPv4 names. These MUST NOT change.
func TestIPv6Names(t *testing.T) {
	base := "a2c4d7d4e1b9a4f3e9d5c0a1b2c3d4e5"
	for got, want := range map[string]string{
		ipv6RuleName(base): base + "-ipv6",
		ipv6RuleName(forwardingRuleName(base, "UDP", false)):   base + "-udp-ipv6",
		backendServiceOf(base + "-udp-ipv6"):                   base + "-udp",
		ipv6FirewallName(base):                                 "k8s-fw-" + base + "-ipv6",
		ipv6HealthCheckFirewallName(base):                      base + "-hc-ipv6",
		ipv6HealthCheckFirewallName(nodeHealthCheckName("c1")): "k8s-c1-node-hc-ipv6",
	} {
		if got != want {
			t.Errorf("name %s, want %s", got, want)
		}
	}
}

// TestServiceFamilies: the families a Service is served on and each
// family's client ranges, or a refusal naming what to change.
func TestServiceFamilies(t *testing.T) {
	s := &Section{ProjectID: "p", Region: "us-central1", SubnetworkName: "nodes"}
	internal := map[string]string{string(annotationLBType): "Internal"}
	udp := []v1.ServicePort{{Port: 53, Protocol: v1.ProtocolUDP, NodePort: 30053}, {Port: 53, Protocol: v1.ProtocolTCP, NodePort: 30054}}
	for _, tt := range []struct {
		name      string
		svc       *v1.Service
		v4, v6    bool
		prefer    bool
		src, src6 string
		err       string
	}{
		{name: "no families", svc: svcWith(internal), v4: true, src: "[0.0.0.0/0]", src6: "[::/0]"},
		{name: "internal dual-stack, IPv6 first", svc: withFamilies(svcWith(internal), fam64, v1.IPFamilyPolicyRequireDualStack), v4: true, v6: true, src: "[0.0.0.0/0]", src6: "[::/0]"},
		{name: "internal PreferDualStack", svc: withFamilies(svcWith(internal), fam46, v1.IPFamilyPolicyPreferDualStack), v4: true, v6: true, prefer: true, src: "[0.0.0.0/0]", src6: "[::/0]"},
		{name: "internal IPv6 only", svc: withFamilies(svcWith(internal), fam6, v1.IPFamilyPolicySingleStack), v6: true, src: "[0.0.0.0/0]", src6: "[::/0]"},
		{name: "ranges split by family", svc: func() *v1.Service {
			svc := withFamilies(svcWith(internal), fam46, v1.IPFamilyPolicyRequireDualStack)
			svc.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8", "fd00::/8"}
			return svc
		}(), v4: true, v6: true, src: "[10.0.0.0/8]", src6: "[fd00::/8]"},
		{name: "IPv4 ranges only: no IPv6 client is admitted", svc: func() *v1.Service {
			svc := withFamilies(svcWith(internal), fam46, v1.IPFamilyPolicyRequireDualStack)
			svc.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"}
			return svc
		}(), v4: true, v6: true, src: "[10.0.0.0/8]", src6: "[]"},
		{name: "external dual-stack served on IPv4", svc: withFamilies(svcWith(nil), fam64, v1.IPFamilyPolicyRequireDualStack), v4: true, src: "[0.0.0.0/0]", src6: "[::/0]"},
		{name: "external IPv6 only", svc: withFamilies(svcWith(nil), fam6, v1.IPFamilyPolicySingleStack), err: "a target pool, which takes IPv4 only"},
		{name: "IPv6 with TCP and UDP", svc: withFamilies(svcWith(internal, udp...), fam46, v1.IPFamilyPolicyRequireDualStack), err: "TCP and UDP ports"},
		{name: "PreferDualStack with TCP and UDP served on IPv4", svc: withFamilies(svcWith(internal, udp...), fam46, v1.IPFamilyPolicyPreferDualStack), v4: true, prefer: true, src: "[0.0.0.0/0]", src6: "[::/0]"},
		{name: "IPv6 only with an IPv4 loadBalancerIP", svc: func() *v1.Service {
			svc := withFamilies(svcWith(internal), fam6, v1.IPFamilyPolicySingleStack)
			svc.Spec.LoadBalancerIP = "10.128.0.50"
			return svc
		}(), err: "spec.loadBalancerIP 10.128.0.50 is IPv4"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sp, err := serviceSpec(s, tt.svc)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sp.v4 != tt.v4 || sp.v6 != tt.v6 || sp.preferDual != tt.prefer || fmt.Sprint(sp.sources) != tt.src || fmt.Sprint(sp.sources6) != tt.src6 {
				t.Errorf("v4 %v v6 %v prefer %v sources %v %v", sp.v4, sp.v6, sp.preferDual, sp.sources, sp.sources6)
			}
		})
	}
}

// dualStackEnv is ilbEnv with dual-stack nodes.
func dualStackEnv(t *testing.T) (*testEnv, *loadBalancers, []*v1.Node) {
	t.Helper()
	env := newTestEnv(t, gceemu.Config{}, func(s *Section) { s.NodeTags = []string{"k8s-node"} })
	nodes := env.launch(t, cloudsim.InstanceSpec{Name: "ds-node-0", IPv6: true}, cloudsim.InstanceSpec{Name: "ds-node-1", IPv6: true})
	for _, nd := range nodes {
		initNode(t, env, nd)
	}
	return env, env.cloud.lb, nodes
}

func statusIPs(st *v1.LoadBalancerStatus) []string {
	var out []string
	for _, in := range st.Ingress {
		out = append(out, in.IP)
	}
	return out
}

// TestDualStackInternalLoadBalancer: a dual-stack internal Service, of
// either order, gets an IPv4 and an IPv6 forwarding rule on one backend
// service, a client firewall rule and a health-check rule per family, and
// the status IPv4 then IPv6; ensuring again writes nothing; a port change
// makes the IPv6 rule again on the /96 it had; a family dropped loses its
// parts in the same sync, the other's untouched; deletion leaves what was
// there before.
func TestDualStackInternalLoadBalancer(t *testing.T) {
	env, lb, nodes := dualStackEnv(t)
	ctx := t.Context()
	before := env.srv.Resources()
	svc := withFamilies(internalSvc("", nil), fam64, v1.IPFamilyPolicyRequireDualStack)
	base := lbName(svc)
	st, err := lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes)
	if err != nil {
		t.Fatal(err)
	}
	ips := statusIPs(st)
	if len(ips) != 2 || !netip.MustParseAddr(ips[0]).Is4() || !netip.MustParseAddr(ips[1]).Is6() || netip.MustParseAddr(ips[1]).String() != ips[1] {
		t.Fatalf("status %v, want IPv4 then canonical IPv6", ips)
	}
	if !netip.MustParsePrefix(env.emu.Fixture().SubnetworkIPv6CIDR).Contains(netip.MustParseAddr(ips[1])) {
		t.Errorf("IPv6 %s outside the subnetwork's %s", ips[1], env.emu.Fixture().SubnetworkIPv6CIDR)
	}
	v6, ok := env.emu.ForwardingRule(ipv6RuleName(base))
	if !ok || v6.GetIpVersion() != "IPV6" || !strings.HasSuffix(v6.GetBackendService(), "/backendServices/"+base) || fmt.Sprint(v6.GetPorts()) != "[80]" {
		t.Fatalf("IPv6 rule %v", v6)
	}
	fws := firewallsNow(env)
	for name, want := range map[string]string{
		firewallName(base):     "[0.0.0.0/0] -> [" + ips[0] + "]",
		ipv6FirewallName(base): "[::/0] -> [" + ips[1] + "]",
		internalHealthCheckFirewallName(nodeHealthCheckName("kubernetes")): fmt.Sprint(healthCheckRanges) + " -> []",
		ipv6HealthCheckFirewallName(nodeHealthCheckName("kubernetes")):     "[2600:2d00:1:b029::/64] -> []",
	} {
		if got := fmt.Sprint(fws[name].GetSourceRanges()) + " -> " + fmt.Sprint(fws[name].GetDestinationRanges()); got != want {
			t.Errorf("firewall %s: %s, want %s", name, got, want)
		}
	}
	if got, _, err := lb.GetLoadBalancer(ctx, "kubernetes", svc); err != nil || !slices.Equal(statusIPs(got), ips) {
		t.Errorf("GetLoadBalancer %v, %v; want %v", got, err, ips)
	}

	env.srv.ResetCalls()
	if _, err := lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if n := env.srv.CallCount(cloudsim.MutatingOps); n != 0 {
		t.Errorf("a repeated ensure made %d writes: %v", n, env.srv.Calls())
	}

	// A port change: both rules made again, each on its address.
	svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Name: "alt", Port: 8080, Protocol: v1.ProtocolTCP, NodePort: 30081})
	if st, err = lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil || !slices.Equal(statusIPs(st), ips) {
		t.Fatalf("after a port change: %v, %v; want %v", st, err, ips)
	}
	if v6, _ = env.emu.ForwardingRule(ipv6RuleName(base)); fmt.Sprint(v6.GetPorts()) != "[80 8080]" {
		t.Errorf("IPv6 rule ports %v", v6.GetPorts())
	}

	// IPv6 dropped: its rule and client rule go, IPv4 stays as it was.
	v4Rule, _ := env.emu.ForwardingRule(base)
	svc = withFamilies(svc, fam4, v1.IPFamilyPolicySingleStack)
	if st, err = lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil || !slices.Equal(statusIPs(st), ips[:1]) {
		t.Fatalf("IPv4 alone: %v, %v", st, err)
	}
	if _, ok := env.emu.ForwardingRule(ipv6RuleName(base)); ok {
		t.Error("the IPv6 rule stayed")
	}
	if fws := firewallsNow(env); fws[ipv6FirewallName(base)] != nil {
		t.Error("the IPv6 client rule stayed")
	}
	if now, _ := env.emu.ForwardingRule(base); now.GetId() != v4Rule.GetId() {
		t.Error("the IPv4 rule was made again")
	}

	// IPv6 alone: the IPv4 rule, its client rule and address go.
	svc = withFamilies(svc, fam6, v1.IPFamilyPolicySingleStack)
	st, err = lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes)
	if err != nil || len(st.Ingress) != 1 || !netip.MustParseAddr(st.Ingress[0].IP).Is6() {
		t.Fatalf("IPv6 alone: %v, %v", st, err)
	}
	if _, ok := env.emu.ForwardingRule(base); ok {
		t.Error("the IPv4 rule stayed")
	}
	if fws := firewallsNow(env); fws[firewallName(base)] != nil || fws[ipv6FirewallName(base)] == nil {
		t.Errorf("client rules %v", slices.Sorted(func(yield func(string) bool) {
			for n := range fws {
				if !yield(n) {
					return
				}
			}
		}))
	}
	if got, exists, err := lb.GetLoadBalancer(ctx, "kubernetes", svc); err != nil || !exists || !slices.Equal(statusIPs(got), statusIPs(st)) {
		t.Errorf("GetLoadBalancer %v %v %v", got, exists, err)
	}

	if err := lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", svc); err != nil {
		t.Fatal(err)
	}
	if added, removed := cloudsim.DiffResources(before, env.srv.Resources()); len(added)+len(removed) != 0 {
		t.Errorf("left behind %v, removed %v", added, removed)
	}
}

// TestDualStackRefusedAndIPv4: what is refused, naming the field or the
// subnetwork, and what is served on IPv4 alone.
func TestDualStackRefusedAndIPv4(t *testing.T) {
	env, lb, nodes := dualStackEnv(t)
	ctx := t.Context()
	v4net, err := env.emu.AddNetwork(gceemu.NetworkSpec{Name: "v4only", SubnetCIDR: "10.9.0.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	onV4 := map[string]string{string(annotationILBSubnet): v4net.SubnetworkName}
	// The subnetwork is in another network than the nodes': for the
	// refusal only, which comes before anything is made.
	svc := withFamilies(internalSvc("1a1a1a1a-1b9a-4f3e-9d5c-0a1b2c3d4e5f", onV4), fam46, v1.IPFamilyPolicyRequireDualStack)
	if _, err := lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err == nil || !strings.Contains(err.Error(), "subnet v4only-subnet does not have internal IPv6 ranges") {
		t.Errorf("RequireDualStack on an IPv4 subnetwork: %v", err)
	}
	if n := len(env.emu.ForwardingRules()); n != 0 {
		t.Errorf("%d rules made for a refused Service", n)
	}

	ext := withFamilies(svcWith(nil), fam64, v1.IPFamilyPolicyRequireDualStack)
	st, err := lb.EnsureLoadBalancer(ctx, "kubernetes", ext, nodes)
	if err != nil || len(st.Ingress) != 1 || !netip.MustParseAddr(st.Ingress[0].IP).Is4() {
		t.Fatalf("external dual-stack: %v, %v; want its IPv4 alone", st, err)
	}
	for _, fr := range env.emu.ForwardingRules() {
		if fr.GetIpVersion() == "IPV6" {
			t.Errorf("an IPv6 rule %s for an external Service", fr.GetName())
		}
	}
	ext6 := withFamilies(svcWith(nil), fam6, v1.IPFamilyPolicySingleStack)
	ext6.UID, ext6.Name = "3c3c3c3c-1b9a-4f3e-9d5c-0a1b2c3d4e5f", "web6"
	if _, err := lb.EnsureLoadBalancer(ctx, "kubernetes", ext6, nodes); err == nil || !strings.Contains(err.Error(), "spec.ipFamilies is [IPv6]") {
		t.Errorf("external IPv6-only: %v", err)
	}
}

// TestDualStackPreferOnIPv4Subnet: PreferDualStack on a subnetwork
// without internal IPv6 is served on IPv4, and gets IPv6 once asked on
// one with it.
func TestDualStackPreferOnIPv4Subnet(t *testing.T) {
	emu := gceemu.New(gceemu.Config{})
	srv, err := cloudsim.Start(emu)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	v4net, err := emu.AddNetwork(gceemu.NetworkSpec{Name: "v4only", SubnetCIDR: "10.9.0.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	env := newTestEnvOn(t, emu, srv, func(s *Section) {
		s.NodeTags, s.NetworkName, s.SubnetworkName = []string{"k8s-node"}, v4net.NetworkName, v4net.SubnetworkName
	})
	if _, err := emu.Launch(gceemu.InstanceSpec{Name: "n-0", Subnetwork: v4net.SubnetworkName, Tags: []string{"k8s-node"}}); err != nil {
		t.Fatal(err)
	}
	nodes := []*v1.Node{{}}
	nodes[0].Name = "n-0"
	initNode(t, env, nodes[0])
	svc := withFamilies(internalSvc("", nil), fam46, v1.IPFamilyPolicyPreferDualStack)
	st, err := env.cloud.lb.EnsureLoadBalancer(t.Context(), "kubernetes", svc, nodes)
	if err != nil || len(st.Ingress) != 1 || !strings.HasPrefix(st.Ingress[0].IP, "10.9.0.") {
		t.Fatalf("PreferDualStack on an IPv4 subnetwork: %v, %v", st, err)
	}
}

// TestDualStackSwitchKeepsUpstreamIPv4: a dual-stack internal Service
// whose IPv4 load balancer the upstream CCM made keeps every IPv4 part as
// upstream made it and gains no IPv6 parts: the switch widens nothing.
func TestDualStackSwitchKeepsUpstreamIPv4(t *testing.T) {
	env, c, insts, nodes := switchEnv(t)
	ctx := t.Context()
	svc := withFamilies(switchSvc("ds", "4234abcd-0000-1111-2222-333344445555", map[string]string{string(annotationLBType): "Internal"}, false), fam46, v1.IPFamilyPolicyRequireDualStack)
	up, err := c.MakeUpstreamLoadBalancer(svc, "kubernetes", insts)
	if err != nil {
		t.Fatal(err)
	}
	base := lbName(svc)
	rule, _ := env.emu.ForwardingRule(base)
	fw := firewallsNow(env)[firewallName(base)]
	st, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if ips := statusIPs(st); len(ips) != 1 || ips[0] != up.Status.Ingress[0].IP {
		t.Errorf("status %v, want upstream's %s alone", ips, up.Status.Ingress[0].IP)
	}
	if now, _ := env.emu.ForwardingRule(base); now.GetId() != rule.GetId() || now.GetDescription() != rule.GetDescription() {
		t.Errorf("upstream's rule changed: %v -> %v", rule, now)
	}
	if now := firewallsNow(env)[firewallName(base)]; now.GetDescription() != fw.GetDescription() || fmt.Sprint(now.GetSourceRanges()) != fmt.Sprint(fw.GetSourceRanges()) {
		t.Errorf("upstream's firewall rule changed: %v -> %v", fw, now)
	}
	if _, ok := env.emu.ForwardingRule(ipv6RuleName(base)); ok {
		t.Error("an IPv6 rule beside upstream's: the switch widened what upstream made")
	}
	if _, ok := firewallsNow(env)[ipv6FirewallName(base)]; ok {
		t.Error("an IPv6 firewall rule beside upstream's")
	}
}

// TestDualStackInternalServicesAtOnce: eight dual-stack internal Services
// ensured by eight workers at once share the node health check and its
// two firewall rules (IPv4 and IPv6, each made once, whichever worker
// comes first); deleted at once, they leave nothing, the shared IPv6
// rule gone with the last of them.
func TestDualStackInternalServicesAtOnce(t *testing.T) {
	env, lb, nodes := dualStackEnv(t)
	ctx := t.Context()
	before := env.srv.Resources()
	var svcs []*v1.Service
	for i := range 8 {
		svc := internalSvc(fmt.Sprintf("%02db9b9b-1b9a-4f3e-9d5c-0a1b2c3d4e5f", i), nil, v1.ServicePort{Port: int32(8000 + i), Protocol: v1.ProtocolTCP, NodePort: int32(30100 + i)})
		svcs = append(svcs, withFamilies(svc, fam46, v1.IPFamilyPolicyRequireDualStack))
	}
	env.emu.SetOperationDelay(20 * time.Millisecond)
	all := func(f func(svc *v1.Service) error) {
		t.Helper()
		errs := make(chan error, len(svcs))
		for _, svc := range svcs {
			go func() { errs <- f(svc) }()
		}
		for range svcs {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
	}
	all(func(svc *v1.Service) error {
		st, err := lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes)
		if err == nil && len(statusIPs(st)) != 2 {
			err = fmt.Errorf("%s: status %v, want an address of each family", svc.Name, statusIPs(st))
		}
		return err
	})
	shared := ipv6HealthCheckFirewallName(nodeHealthCheckName("kubernetes"))
	if _, ok := firewallsNow(env)[shared]; !ok {
		t.Fatalf("no shared IPv6 health-check rule %s", shared)
	}
	if n := env.srv.CallCount("compute:Firewalls.Insert"); n != 2*len(svcs)+2 {
		t.Errorf("%d firewall rules made, want a client rule per family per Service and the two shared health-check rules once", n)
	}
	all(func(svc *v1.Service) error { return lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", svc) })
	if added, removed := cloudsim.DiffResources(before, env.srv.Resources()); len(added)+len(removed) != 0 {
		t.Errorf("after deleting them at once: added %v, removed %v", added, removed)
	}
}
