package azure

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	azemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/azure"
)

// The names of upstream's security rules, pinned: they are how a cluster
// switched from the upstream CCM finds and shares its rules. MUST NOT
// change. md5("Tcp_Internet_443,80"): ports sorted as strings.
func TestSecurityRuleNamesGolden(t *testing.T) {
	for got, want := range map[string]string{
		allowRuleName(armnetwork.SecurityRuleProtocolTCP, false, []string{"Internet"}, []int32{80, 443}):                            "k8s-azure-lb_allow_IPv4_556f7044ec033071ec0dfcf7cd85bc93",
		allowRuleName(armnetwork.SecurityRuleProtocolUDP, false, []string{"AzureFrontDoor.Backend", "203.0.113.0/24"}, []int32{53}): "k8s-azure-lb_allow_IPv4_e0b1c45a7dd8fe92d925195b060e9d77",
		denyAllRuleName(false): "k8s-azure-lb_deny-all_IPv4",
		// IPv6: the family in the name, the hash the same.
		allowRuleName(armnetwork.SecurityRuleProtocolTCP, true, []string{"Internet"}, []int32{80, 443}): "k8s-azure-lb_allow_IPv6_556f7044ec033071ec0dfcf7cd85bc93",
		denyAllRuleName(true): "k8s-azure-lb_deny-all_IPv6",
	} {
		if got != want {
			t.Errorf("rule name %q, want %q", got, want)
		}
	}
}

func TestAggregatePrefixes(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.0/25,10.0.0.128/25":                 "10.0.0.0/24",
		"10.0.0.0/24,10.0.0.1/32":                   "10.0.0.0/24",
		"10.0.0.0/32,10.0.0.1/32,10.0.0.2/31":       "10.0.0.0/30",
		"10.0.0.1/32,10.0.0.2/32":                   "10.0.0.1/32,10.0.0.2/32",
		"192.0.2.0/24,198.51.100.0/24,0.0.0.0/0":    "0.0.0.0/0",
		"203.0.113.128/25,203.0.113.0/25,1.0.0.0/8": "1.0.0.0/8,203.0.113.0/24",
	} {
		var ps []netip.Prefix
		for _, s := range strings.Split(in, ",") {
			ps = append(ps, netip.MustParsePrefix(s))
		}
		var got []string
		for _, p := range aggregatePrefixes(ps) {
			got = append(got, p.String())
		}
		if strings.Join(got, ",") != want {
			t.Errorf("aggregate(%s) = %v, want %s", in, got, want)
		}
	}
}

// putUpstreamRules makes rules the fixture NSG's only ones, written as
// another client (the upstream CCM) would.
func (e *testEnv) putUpstreamRules(t *testing.T, rules ...*armnetwork.SecurityRule) {
	t.Helper()
	resp, err := e.api.nsgs.Get(t.Context(), e.fx.SecurityGroupResourceGroup, e.fx.SecurityGroupName, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := resp.SecurityGroup
	g.Properties.SecurityRules = rules
	g.Properties.DefaultSecurityRules = nil
	p, err := e.api.nsgs.BeginCreateOrUpdate(t.Context(), e.fx.SecurityGroupResourceGroup, e.fx.SecurityGroupName, g, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.PollUntilDone(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
}

func upstreamRule(name string, prio int32, proto armnetwork.SecurityRuleProtocol, src string, ports []string, dsts ...string) *armnetwork.SecurityRule {
	p := &armnetwork.SecurityRulePropertiesFormat{
		Protocol: to.Ptr(proto), Access: to.Ptr(armnetwork.SecurityRuleAccessAllow), Direction: to.Ptr(armnetwork.SecurityRuleDirectionInbound),
		Priority: to.Ptr(prio), SourceAddressPrefix: to.Ptr(src), SourcePortRange: to.Ptr("*"),
		DestinationPortRanges: to.SliceOfPtrs(ports...),
	}
	setDestinations(p, dsts)
	return &armnetwork.SecurityRule{Name: to.Ptr(name), Properties: p}
}

// withServices gives the backend a Service informer over svcs, as the
// manager's SetInformers does.
func (e *testEnv) withServices(t *testing.T, svcs ...*v1.Service) {
	t.Helper()
	var objs []runtime.Object
	for _, s := range svcs {
		objs = append(objs, s)
	}
	f := informers.NewSharedInformerFactory(fake.NewClientset(objs...), 0)
	e.cloud.lb.setInformers(f)
	f.Start(t.Context().Done())
	if !cache.WaitForCacheSync(t.Context().Done(), f.Core().V1().Services().Informer().HasSynced) {
		t.Fatal("Service informer did not sync")
	}
}

// A cluster switched from the upstream CCM: its shared rule (this
// Service's address and another's), its pre-v1.29 per-Service rule and a
// rule of the user's are in the group. The sync keeps the shared rule
// with both destinations, removes the per-Service rule and the address
// of a Service that is gone, leaves the user's rule, and a second sync
// writes nothing.
func TestSecurityRulesAdoptUpstream(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	nodes := env.lbNodes(t, 1)
	ctx := t.Context()
	svc := lbService("adopt", 80)
	// Made once to learn its address, then the rules as upstream left them.
	st, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes)
	if err != nil {
		t.Fatal(err)
	}
	addr := st.Ingress[0].IP
	svc.Status.LoadBalancer.Ingress = st.Ingress
	other := lbService("other", 80)
	other.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "20.0.0.7"}}
	shared := allowRuleName(armnetwork.SecurityRuleProtocolTCP, false, []string{"Internet"}, []int32{80})
	base := upstreamNames("kubernetes", svc).base
	env.putUpstreamRules(t,
		// Upstream shares the rule; ours is replaced by it.
		upstreamRule(shared, 500, armnetwork.SecurityRuleProtocolTCP, "Internet", []string{"80"}, addr, "20.0.0.7", "20.0.0.99"),
		upstreamRule(base+"-TCP-80-Internet", 501, armnetwork.SecurityRuleProtocolTCP, "Internet", []string{"80"}, addr),
		upstreamRule("users-ssh", 300, armnetwork.SecurityRuleProtocolTCP, "10.0.0.0/8", []string{"22"}, "*"),
	)
	env.withServices(t, svc, other)
	env.cloud.lb.nsg.forget()
	if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if got := env.nsgRules(t); !slices.Equal(got, sortedStrings(shared, "users-ssh")) {
		t.Errorf("rules %v, want %s and users-ssh", got, shared)
	}
	// 20.0.0.99 belongs to no Service or node: it goes.
	if got, want := env.nsgRule(t, shared), fmt.Sprintf("Tcp Internet->%s:80 Allow", strings.Join(sortedStrings("20.0.0.7", addr), ",")); got != want {
		t.Errorf("shared rule %q, want %q", got, want)
	}
	env.srv.ResetCalls()
	if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if n := env.srv.CallCount(cloudsim.MutatingOps); n != 0 {
		t.Errorf("second sync made %d writes: %v", n, env.srv.Calls())
	}
	// Deleting the Service takes only its address out of the shared rule.
	if err := env.cloud.lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", svc); err != nil {
		t.Fatal(err)
	}
	if got := env.nsgRule(t, shared); got != "Tcp Internet->20.0.0.7:80 Allow" {
		t.Errorf("shared rule after delete %q", got)
	}
}

// Source ranges with azure-deny-all-except-load-balancer-source-ranges:
// the allow rule takes the lowest free priority from 500, the deny rule
// the highest below 4096; azure-disable-load-balancer-nsg-rule then
// removes the Service's rules and adds none.
func TestSecurityRulesDenyAllAndDisable(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	nodes := env.lbNodes(t, 1)
	ctx := t.Context()
	svc := lbService("deny", 443)
	svc.Spec.LoadBalancerSourceRanges = []string{"203.0.113.0/24"}
	svc.Annotations = map[string]string{string(annotationDenyAllExceptSourceRanges): "true"}
	st, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes)
	if err != nil {
		t.Fatal(err)
	}
	addr := st.Ingress[0].IP
	allow := allowRuleName(armnetwork.SecurityRuleProtocolTCP, false, []string{"203.0.113.0/24"}, []int32{443})
	g, _ := env.emu.SecurityGroup(env.fx.SecurityGroupResourceGroup, env.fx.SecurityGroupName)
	prio := map[string]int32{}
	for _, r := range g.Properties.SecurityRules {
		prio[deref(r.Name)] = deref(r.Properties.Priority)
	}
	if prio[allow] != 500 || prio[denyAllRuleName(false)] != 4095 || len(prio) != 2 {
		t.Errorf("priorities %v, want %s at 500 and the deny rule at 4095", prio, allow)
	}
	if got := env.nsgRule(t, denyAllRuleName(false)); got != "* *->"+addr+":* Deny" {
		t.Errorf("deny rule %q", got)
	}
	if got := env.nsgRule(t, allow); got != "Tcp 203.0.113.0/24->"+addr+":443 Allow" {
		t.Errorf("allow rule %q", got)
	}

	svc.Annotations = map[string]string{string(annotationDisableNSGRule): "true"}
	if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if got := env.nsgRules(t); len(got) != 0 {
		t.Errorf("rules %v with the NSG rule disabled", got)
	}
}

// Without floating IP the rule's destinations are the nodes: a node
// joining or leaving is written into it by UpdateLoadBalancer.
func TestSecurityRulesFollowNodesWithoutFloatingIP(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	nodes := env.lbNodes(t, 2)
	ctx := t.Context()
	svc := lbService("nofip", 80)
	svc.Annotations = map[string]string{string(annotationDisableFloatingIP): "true"}
	if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	rule := allowRuleName(armnetwork.SecurityRuleProtocolTCP, false, []string{"Internet"}, []int32{svc.Spec.Ports[0].NodePort})
	check := func(nodes []*v1.Node) {
		t.Helper()
		if got, want := env.nsgRule(t, rule), fmt.Sprintf("Tcp Internet->%s:%d Allow", strings.Join(nodeIPs(nodes), ","), svc.Spec.Ports[0].NodePort); got != want {
			t.Errorf("rule %q, want %q", got, want)
		}
	}
	check(nodes)
	nodes = append(nodes[1:], env.lbNodes(t, 1)...)
	if err := env.cloud.lb.UpdateLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	check(nodes)
}
