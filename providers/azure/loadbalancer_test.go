package azure

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/svcopts"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	azemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/azure"
)

// nextNodePort hands out NodePorts as the API server does: unique in
// the cluster (Azure refuses two rules to one backend port and pool).
var nextNodePort atomic.Int32

// nextNode numbers the VMs lbNodes launches.
var nextNode atomic.Int32

func init() { nextNodePort.Store(30000) }

// lbService is a LoadBalancer Service with a UID and NodePorts, as the
// API server hands it to the service controller.
func lbService(name string, ports ...int32) *v1.Service {
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(fmt.Sprintf("0000%04x-1111-2222-3333-444455556666", len(name)*7919+int(name[len(name)-1])))},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer},
	}
	for _, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{
			Name: fmt.Sprintf("p%d", p), Protocol: v1.ProtocolTCP, Port: p, TargetPort: intstr.FromInt32(p), NodePort: nextNodePort.Add(1),
		})
	}
	return svc
}

// uniqueUIDs gives each Service its own UID (lbService's is only
// name-derived, which collides across long lists).
func uniqueUIDs(svcs []*v1.Service) {
	for i, s := range svcs {
		s.UID = types.UID(fmt.Sprintf("%08x-1111-2222-3333-444455556666", i+1))
	}
}

// lbNodes launches n VMs and returns their initialized Nodes.
func (e *testEnv) lbNodes(t *testing.T, n int) []*v1.Node {
	t.Helper()
	var specs []azemu.VMSpec
	for range n {
		specs = append(specs, azemu.VMSpec{Name: fmt.Sprintf("lbnode-%d", nextNode.Add(1))})
	}
	var out []*v1.Node
	for _, nd := range e.launch(t, specs...) {
		out = append(out, e.initialized(t, nd))
	}
	return out
}

func (e *testEnv) lb(t *testing.T, name string) (armnetwork.LoadBalancer, bool) {
	t.Helper()
	return e.emu.LoadBalancer(e.fx.ResourceGroup, name)
}

func (e *testEnv) nsgRules(t *testing.T) []string {
	t.Helper()
	g, ok := e.emu.SecurityGroup(e.fx.SecurityGroupResourceGroup, e.fx.SecurityGroupName)
	if !ok {
		t.Fatal("fixture NSG gone")
	}
	var out []string
	for _, r := range g.Properties.SecurityRules {
		out = append(out, deref(r.Name))
	}
	slices.Sort(out)
	return out
}

// nsgRule is a security rule as tests compare it: "<protocol>
// <sources>-><destinations>:<ports> <access>".
func (e *testEnv) nsgRule(t *testing.T, name string) string {
	t.Helper()
	g, _ := e.emu.SecurityGroup(e.fx.SecurityGroupResourceGroup, e.fx.SecurityGroupName)
	for _, r := range g.Properties.SecurityRules {
		if deref(r.Name) == name {
			p := r.Properties
			ports := []string{}
			for _, v := range p.DestinationPortRanges {
				ports = append(ports, *v)
			}
			if p.DestinationPortRange != nil {
				ports = append(ports, *p.DestinationPortRange)
			}
			return fmt.Sprintf("%s %s->%s:%s %s", deref(p.Protocol), strings.Join(sources(p), ","), strings.Join(destinations(p), ","), strings.Join(ports, ","), deref(p.Access))
		}
	}
	return ""
}

func names[T any](items []*T, name func(*T) *string) []string {
	var out []string
	for _, it := range items {
		out = append(out, deref(name(it)))
	}
	slices.Sort(out)
	return out
}

func poolAddresses(lb armnetwork.LoadBalancer) []string {
	var out []string
	for _, p := range lb.Properties.BackendAddressPools {
		for _, a := range p.Properties.LoadBalancerBackendAddresses {
			out = append(out, deref(a.Properties.IPAddress))
		}
	}
	slices.Sort(out)
	return out
}

func nodeIPs(nodes []*v1.Node) []string {
	var out []string
	for _, n := range nodes {
		for _, a := range n.Status.Addresses {
			if a.Type == v1.NodeInternalIP {
				out = append(out, a.Address)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestLoadBalancerLifecycle: two public Services share the cluster's
// Standard load balancer, each with its own frontend, public IP, rule and
// probe per port, and NSG rules; the pool holds the nodes' IPs; deleting
// one leaves the other whole, deleting the last removes the load balancer.
func TestLoadBalancerLifecycle(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	nodes := env.lbNodes(t, 3)
	ctx := t.Context()
	web, dns := lbService("web", 80, 443), lbService("dns", 53)
	dns.Spec.Ports[0].Protocol = v1.ProtocolUDP
	var addrs []string
	for _, svc := range []*v1.Service{web, dns} {
		st, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes)
		if err != nil {
			t.Fatalf("ensure %s: %v", svc.Name, err)
		}
		if len(st.Ingress) != 1 || st.Ingress[0].IP == "" {
			t.Fatalf("%s status %+v", svc.Name, st)
		}
		pip, ok := env.emu.PublicIP(env.fx.ResourceGroup, upstreamNames(env.cloud.lb.clusterID, svc).pip)
		if !ok || deref(pip.Properties.IPAddress) != st.Ingress[0].IP || deref(pip.Tags[tagService]) != "default/"+svc.Name {
			t.Errorf("%s: public IP %+v for status %s", svc.Name, pip, st.Ingress[0].IP)
		}
		if *pip.SKU.Name != armnetwork.PublicIPAddressSKUNameStandard || *pip.Properties.PublicIPAllocationMethod != armnetwork.IPAllocationMethodStatic {
			t.Errorf("%s: public IP sku %v allocation %v", svc.Name, *pip.SKU.Name, *pip.Properties.PublicIPAllocationMethod)
		}
		addrs = append(addrs, st.Ingress[0].IP)
	}
	if addrs[0] == addrs[1] {
		t.Errorf("both Services got %s", addrs[0])
	}
	lb, ok := env.lb(t, "kubernetes")
	if !ok {
		t.Fatal("no load balancer kubernetes")
	}
	if *lb.SKU.Name != armnetwork.LoadBalancerSKUNameStandard {
		t.Errorf("sku %v", *lb.SKU.Name)
	}
	wn, dn := upstreamNames("", web).base, upstreamNames("", dns).base
	wantFE := []string{dn, wn}
	slices.Sort(wantFE)
	if got := names(lb.Properties.FrontendIPConfigurations, func(f *armnetwork.FrontendIPConfiguration) *string { return f.Name }); fmt.Sprint(got) != fmt.Sprint(wantFE) {
		t.Errorf("frontends %v", got)
	}
	wantRules := []string{dn + "-UDP-53", wn + "-TCP-443", wn + "-TCP-80"}
	slices.Sort(wantRules)
	if got := names(lb.Properties.LoadBalancingRules, func(r *armnetwork.LoadBalancingRule) *string { return r.Name }); fmt.Sprint(got) != fmt.Sprint(wantRules) {
		t.Errorf("rules %v, want %v", got, wantRules)
	}
	for _, r := range lb.Properties.LoadBalancingRules {
		// Floating IP is on, as upstream's default; a UDP port of a
		// Cluster-policy Service has no probe.
		if !deref(r.Properties.EnableFloatingIP) || deref(r.Properties.BackendPort) != deref(r.Properties.FrontendPort) || (r.Properties.Probe == nil) != strings.HasSuffix(*r.Name, "-UDP-53") || r.Properties.BackendAddressPool == nil {
			t.Errorf("rule %s: floating %v probe %v pool %v", *r.Name, deref(r.Properties.EnableFloatingIP), r.Properties.Probe, r.Properties.BackendAddressPool)
		}
	}
	if len(lb.Properties.Probes) != 2 {
		t.Errorf("%d probes, want one per TCP port", len(lb.Properties.Probes))
	}
	if got, want := poolAddresses(lb), nodeIPs(nodes); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("pool %v, want node IPs %v", got, want)
	}
	// Upstream's shared rules: one per protocol, sources and ports, to
	// the Service's address (floating IP: the Service port).
	tcpRule := allowRuleName(armnetwork.SecurityRuleProtocolTCP, false, []string{"Internet"}, []int32{80, 443})
	udpRule := allowRuleName(armnetwork.SecurityRuleProtocolUDP, false, []string{"Internet"}, []int32{53})
	if got := env.nsgRules(t); !slices.Equal(got, sortedStrings(tcpRule, udpRule)) {
		t.Errorf("NSG rules %v, want %s and %s", got, tcpRule, udpRule)
	}
	if got, want := env.nsgRule(t, tcpRule), "Tcp Internet->"+addrs[0]+":443,80 Allow"; got != want {
		t.Errorf("rule %s is %q, want %q", tcpRule, got, want)
	}
	if got, want := env.nsgRule(t, udpRule), "Udp Internet->"+addrs[1]+":53 Allow"; got != want {
		t.Errorf("rule %s is %q, want %q", udpRule, got, want)
	}

	// GetLoadBalancer reads the address back.
	st, found, err := env.cloud.lb.GetLoadBalancer(ctx, "kubernetes", web)
	if err != nil || !found || st.Ingress[0].IP != addrs[0] {
		t.Errorf("GetLoadBalancer(web) = %+v, %v, %v", st, found, err)
	}

	// Ensuring again changes nothing.
	env.srv.ResetCalls()
	if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", web, nodes); err != nil {
		t.Fatal(err)
	}
	if n := env.srv.CallCount(cloudsim.MutatingOps); n != 0 {
		t.Errorf("a repeated ensure made %d writes: %v", n, env.srv.Calls())
	}

	if err := env.cloud.lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", web); err != nil {
		t.Fatal(err)
	}
	lb, _ = env.lb(t, "kubernetes")
	if got := names(lb.Properties.FrontendIPConfigurations, func(f *armnetwork.FrontendIPConfiguration) *string { return f.Name }); fmt.Sprint(got) != fmt.Sprint([]string{dn}) {
		t.Errorf("after deleting web: frontends %v", got)
	}
	if len(lb.Properties.LoadBalancingRules) != 1 || len(lb.Properties.Probes) != 0 {
		t.Errorf("after deleting web: %d rules %d probes", len(lb.Properties.LoadBalancingRules), len(lb.Properties.Probes))
	}
	if _, ok := env.emu.PublicIP(env.fx.ResourceGroup, upstreamNames(env.cloud.lb.clusterID, web).pip); ok {
		t.Error("web's public IP outlived it")
	}
	if got := env.nsgRules(t); !slices.Equal(got, []string{udpRule}) {
		t.Errorf("NSG rules %v after deleting web, want only %s", got, udpRule)
	}
	if _, found, _ := env.cloud.lb.GetLoadBalancer(ctx, "kubernetes", web); found {
		t.Error("GetLoadBalancer still finds web")
	}

	if err := env.cloud.lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", dns); err != nil {
		t.Fatal(err)
	}
	if _, ok := env.lb(t, "kubernetes"); ok {
		t.Error("the load balancer outlived its last Service")
	}
	if got := env.emu.ListNetwork("publicIPAddresses"); len(got) != 0 {
		t.Errorf("public IPs left: %v", got)
	}
	if rules := env.nsgRules(t); len(rules) != 0 {
		t.Errorf("NSG rules left: %v", rules)
	}
	// Deleting again is fine.
	if err := env.cloud.lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", dns); err != nil {
		t.Fatal(err)
	}
}

// TestLoadBalancerNodeChange: a node-set change for any number of
// Services is one backend pool write, not one per Service or per NIC.
func TestLoadBalancerNodeChange(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	nodes := env.lbNodes(t, 3)
	ctx := t.Context()
	var svcs []*v1.Service
	for i := range 10 {
		svcs = append(svcs, lbService(fmt.Sprintf("svc-%d", i), 80))
	}
	uniqueUIDs(svcs)
	for _, s := range svcs {
		if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", s, nodes); err != nil {
			t.Fatal(err)
		}
	}
	more := env.lbNodes(t, 2)
	nodes = append(nodes[1:], more...)
	env.srv.ResetCalls()
	var wg sync.WaitGroup
	errs := make(chan error, len(svcs))
	for _, s := range svcs {
		wg.Go(func() { errs <- env.cloud.lb.UpdateLoadBalancer(ctx, "kubernetes", s, nodes) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	lb, _ := env.lb(t, "kubernetes")
	if got, want := poolAddresses(lb), nodeIPs(nodes); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("pool %v, want %v", got, want)
	}
	t.Logf("node change for 10 Services: %v", env.srv.Calls())
	if n := env.srv.CallCount(cloudsim.MutatingOps); n != 1 {
		t.Errorf("%d writes for a node change, want 1 pool write: %v", n, env.srv.Calls())
	}
}

// TestLoadBalancerConcurrentServices: 50 Services ensured at once on one
// load balancer and NSG, with writes that take a while, all survive, and
// their writes are coalesced.
func TestLoadBalancerConcurrentServices(t *testing.T) {
	env := newTestEnv(t, azemu.Config{OperationDelay: 200 * time.Millisecond}, nil)
	nodes := env.lbNodes(t, 2)
	ctx := t.Context()
	var svcs []*v1.Service
	for i := range 50 {
		svcs = append(svcs, lbService(fmt.Sprintf("svc-%d", i), 80, 443))
	}
	uniqueUIDs(svcs)
	env.srv.ResetCalls()
	var wg sync.WaitGroup
	errs := make(chan error, len(svcs))
	for _, s := range svcs {
		wg.Go(func() {
			_, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", s, nodes)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	lb, _ := env.lb(t, "kubernetes")
	if n := len(lb.Properties.FrontendIPConfigurations); n != 50 {
		t.Errorf("%d frontends, want 50", n)
	}
	if n := len(lb.Properties.LoadBalancingRules); n != 100 {
		t.Errorf("%d rules, want 100", n)
	}
	// One rule for all: the same sources and ports, 50 destinations.
	if rules := env.nsgRules(t); len(rules) != 1 {
		t.Errorf("NSG rules %v, want the one shared rule", rules)
	} else if dsts := strings.Split(strings.Split(strings.Split(env.nsgRule(t, rules[0]), "->")[1], ":")[0], ","); len(dsts) != 50 {
		t.Errorf("shared rule has %d destinations, want 50", len(dsts))
	}
	g, _ := env.emu.SecurityGroup(env.fx.SecurityGroupResourceGroup, env.fx.SecurityGroupName)
	prio := map[int32]string{}
	for _, r := range g.Properties.SecurityRules {
		p := deref(r.Properties.Priority)
		if other, dup := prio[p]; dup {
			t.Errorf("rules %s and %s share priority %d", other, *r.Name, p)
		}
		prio[p] = *r.Name
	}
	lbWrites, nsgWrites := env.srv.CallCount("network:LoadBalancers_CreateOrUpdate"), env.srv.CallCount("network:NetworkSecurityGroups_CreateOrUpdate")
	t.Logf("50 Services at once: %d load balancer writes, %d NSG writes, %d public IP writes", lbWrites, nsgWrites, env.srv.CallCount("network:PublicIPAddresses_CreateOrUpdate"))
	if lbWrites > 10 || nsgWrites > 10 {
		t.Errorf("%d load balancer and %d NSG writes for 50 Services: not coalesced", lbWrites, nsgWrites)
	}

	// Deleting them all at once leaves nothing.
	wg = sync.WaitGroup{}
	errs = make(chan error, len(svcs))
	for _, s := range svcs {
		wg.Go(func() { errs <- env.cloud.lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", s) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := env.lb(t, "kubernetes"); ok {
		t.Error("load balancer left after every Service went")
	}
	if left := env.emu.ListNetwork("publicIPAddresses"); len(left) != 0 {
		t.Errorf("%d public IPs left", len(left))
	}
	if left := env.nsgRules(t); len(left) != 0 {
		t.Errorf("NSG rules left: %v", left)
	}
}

// TestLoadBalancerETagConflict: someone else changes the shared load
// balancer between the manager's read and its write; the write's If-Match
// gets 412, and the manager re-reads and re-applies, keeping both changes.
func TestLoadBalancerETagConflict(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	nodes := env.lbNodes(t, 2)
	ctx := t.Context()
	a, b := lbService("a", 80), lbService("b", 81)
	b.UID = "bbbbbbbb-1111-2222-3333-444455556666"
	if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", a, nodes); err != nil {
		t.Fatal(err)
	}
	// Another writer (an operator, another controller) adds a probe of
	// its own with a plain client: the manager's cached copy is stale.
	lb, _ := env.lb(t, "kubernetes")
	lb.Properties.Probes = append(lb.Properties.Probes, &armnetwork.Probe{Name: to.Ptr("operator-probe"), Properties: &armnetwork.ProbePropertiesFormat{
		Protocol: to.Ptr(armnetwork.ProbeProtocolTCP), Port: to.Ptr[int32](22),
	}})
	p, err := env.api.lbs.BeginCreateOrUpdate(ctx, env.fx.ResourceGroup, "kubernetes", lb, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.PollUntilDone(ctx, pollOptions); err != nil {
		t.Fatal(err)
	}
	env.srv.ResetCalls()
	if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", b, nodes); err != nil {
		t.Fatal(err)
	}
	t.Logf("calls: %v", env.srv.Calls())
	if n := env.srv.CallCount("network:LoadBalancers_CreateOrUpdate"); n != 2 {
		t.Errorf("%d load balancer writes, want the refused one and the re-applied one", n)
	}
	if n := env.srv.CallCount("network:LoadBalancers_Get"); n < 1 {
		t.Error("no re-read after the 412")
	}
	lb, _ = env.lb(t, "kubernetes")
	got := names(lb.Properties.Probes, func(p *armnetwork.Probe) *string { return p.Name })
	if !slices.Contains(got, "operator-probe") || len(lb.Properties.FrontendIPConfigurations) != 2 {
		t.Errorf("after the conflict: probes %v, %d frontends", got, len(lb.Properties.FrontendIPConfigurations))
	}
}

// TestLoadBalancerUserPublicIP: a Service naming an existing public IP
// (azure-pip-name, or spec.loadBalancerIP) gets its address, and the
// public IP outlives the Service and the load balancer.
func TestLoadBalancerUserPublicIP(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	nodes := env.lbNodes(t, 1)
	ctx := t.Context()
	_, byName, err := env.emu.CreatePublicIP(env.fx.ResourceGroup, "user-pip", map[string]string{"owner": "team-a"})
	if err != nil {
		t.Fatal(err)
	}
	_, byAddr, err := env.emu.CreatePublicIP(env.fx.ResourceGroup, "user-pip-2", nil)
	if err != nil {
		t.Fatal(err)
	}
	named := lbService("named", 80)
	named.Annotations = map[string]string{string(annotationPIPName): "user-pip"}
	static := lbService("static", 80)
	static.Spec.LoadBalancerIP = byAddr
	for svc, want := range map[*v1.Service]string{named: byName, static: byAddr} {
		st, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes)
		if err != nil {
			t.Fatal(err)
		}
		if st.Ingress[0].IP != want {
			t.Errorf("%s: status %s, want the user's %s", svc.Name, st.Ingress[0].IP, want)
		}
	}
	if n := len(env.emu.ListNetwork("publicIPAddresses")); n != 2 {
		t.Errorf("%d public IPs: the manager made its own besides the user's", n)
	}
	for _, svc := range []*v1.Service{named, static} {
		if err := env.cloud.lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", svc); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := env.lb(t, "kubernetes"); ok {
		t.Error("load balancer outlived its Services")
	}
	for _, n := range []string{"user-pip", "user-pip-2"} {
		if pip, ok := env.emu.PublicIP(env.fx.ResourceGroup, n); !ok {
			t.Errorf("the user's public IP %s was deleted", n)
		} else if n == "user-pip" && deref(pip.Tags["owner"]) != "team-a" {
			t.Errorf("the user's public IP %s was changed: tags %v", n, pip.Tags)
		}
	}
	// A missing one is a clear error, and nothing is created.
	missing := lbService("missing", 80)
	missing.Annotations = map[string]string{string(annotationPIPName): "no-such-pip"}
	if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", missing, nodes); err == nil || !strings.Contains(err.Error(), "no-such-pip") {
		t.Errorf("missing public IP: err %v", err)
	}
	if _, ok := env.lb(t, "kubernetes"); ok {
		t.Error("a Service that failed its checks created the load balancer")
	}
}

// TestLoadBalancerInternal: an internal Service gets a private address on
// <name>-internal in the nodes' subnet and no NSG rule; moving
// it to public takes it off the internal load balancer (deleted with its
// last frontend) and moving it back releases the public IP it had.
func TestLoadBalancerInternal(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	nodes := env.lbNodes(t, 2)
	ctx := t.Context()
	svc := lbService("ilb", 80)
	svc.Annotations = map[string]string{string(annotationInternal): "true"}
	st, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if ip := st.Ingress[0].IP; !strings.HasPrefix(ip, "10.240.") {
		t.Errorf("internal address %s not in the subnet %s", ip, azemu.FixtureSubnetCIDR)
	}
	ilb, ok := env.lb(t, "kubernetes-internal")
	if !ok {
		t.Fatal("no kubernetes-internal")
	}
	fe := ilb.Properties.FrontendIPConfigurations[0]
	if !strings.EqualFold(deref(fe.Properties.Subnet.ID), env.fx.SubnetID) || fe.Properties.PublicIPAddress != nil {
		t.Errorf("frontend subnet %s public %v", deref(fe.Properties.Subnet.ID), fe.Properties.PublicIPAddress)
	}
	if _, ok := env.lb(t, "kubernetes"); ok {
		t.Error("an internal Service created the public load balancer")
	}
	// As upstream: the group's AllowVnetInBound admits an internal
	// Service with no source ranges; no rule of its own.
	if rules := env.nsgRules(t); len(rules) != 0 {
		t.Errorf("internal NSG rules %v, want none", rules)
	}

	// Internal -> public.
	svc.Annotations = nil
	st, err = env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := env.lb(t, "kubernetes-internal"); ok {
		t.Error("the internal load balancer outlived its last frontend")
	}
	if _, ok := env.emu.PublicIP(env.fx.ResourceGroup, upstreamNames(env.cloud.lb.clusterID, svc).pip); !ok || strings.HasPrefix(st.Ingress[0].IP, "10.240.") {
		t.Errorf("public status %v", st)
	}
	if rules := env.nsgRules(t); len(rules) != 1 || env.nsgRule(t, rules[0]) != "Tcp Internet->"+st.Ingress[0].IP+":80 Allow" {
		t.Errorf("public NSG rules %v", rules)
	}

	// Public -> internal with a chosen address: the manager's public IP goes.
	svc.Annotations = map[string]string{string(annotationInternal): "true"}
	svc.Spec.LoadBalancerIP = "10.240.100.100"
	st, err = env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if st.Ingress[0].IP != "10.240.100.100" {
		t.Errorf("static internal address: %v", st)
	}
	if _, ok := env.lb(t, "kubernetes"); ok {
		t.Error("the public load balancer outlived its last frontend")
	}
	if left := env.emu.ListNetwork("publicIPAddresses"); len(left) != 0 {
		t.Errorf("public IPs left: %v", left)
	}
}

// TestLoadBalancerOptions: externalTrafficPolicy Local probes HTTP /healthz
// on the health check node port; source ranges, allowed ranges and service
// tags become NSG rule sources; the DNS label lands on our public IP; the
// idle timeout on the rules.
func TestLoadBalancerOptions(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	nodes := env.lbNodes(t, 1)
	ctx := t.Context()
	svc := lbService("opts", 80)
	svc.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	svc.Spec.HealthCheckNodePort = 32100
	svc.Annotations = map[string]string{
		string(annotationAllowedIPRanges):    "198.51.100.0/24,203.0.113.0/25,203.0.113.128/25",
		string(annotationAllowedServiceTags): "AzureFrontDoor.Backend",
		string(annotationDNSLabel):           "my-app",
		string(annotationIdleTimeout):        "15",
	}
	if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	lb, _ := env.lb(t, "kubernetes")
	pr := lb.Properties.Probes[0].Properties
	if deref(pr.Protocol) != armnetwork.ProbeProtocolHTTP || deref(pr.RequestPath) != "/healthz" || deref(pr.Port) != 32100 {
		t.Errorf("Local probe %s %s :%d", deref(pr.Protocol), deref(pr.RequestPath), deref(pr.Port))
	}
	if to := deref(lb.Properties.LoadBalancingRules[0].Properties.IdleTimeoutInMinutes); to != 15 {
		t.Errorf("idle timeout %d", to)
	}
	g, _ := env.emu.SecurityGroup(env.fx.SecurityGroupResourceGroup, env.fx.SecurityGroupName)
	var sources []string
	for _, r := range g.Properties.SecurityRules {
		sources = append(sources, deref(r.Properties.SourceAddressPrefix))
		for _, p := range r.Properties.SourceAddressPrefixes {
			sources = append(sources, *p)
		}
	}
	slices.Sort(sources)
	// The ranges aggregated into one rule, the tag in its own; no
	// Internet rule, as upstream.
	if want := []string{"", "198.51.100.0/24", "203.0.113.0/24", "AzureFrontDoor.Backend"}; fmt.Sprint(sources) != fmt.Sprint(want) {
		t.Errorf("NSG sources %q, want %q", sources, want)
	}
	pip, _ := env.emu.PublicIP(env.fx.ResourceGroup, upstreamNames(env.cloud.lb.clusterID, svc).pip)
	if pip.Properties.DNSSettings == nil || deref(pip.Properties.DNSSettings.DomainNameLabel) != "my-app" {
		t.Errorf("DNS label %+v", pip.Properties.DNSSettings)
	}

	// Dropping the source ranges falls back to Internet and drops the rest.
	delete(svc.Annotations, string(annotationAllowedIPRanges))
	delete(svc.Annotations, string(annotationAllowedServiceTags))
	if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if rules := env.nsgRules(t); len(rules) != 1 || rules[0] != allowRuleName(armnetwork.SecurityRuleProtocolTCP, false, []string{"Internet"}, []int32{80}) {
		t.Errorf("rules after dropping ranges: %v", rules)
	}

	// Both spec.loadBalancerSourceRanges and azure-allowed-ip-ranges is
	// upstream's error, before any call.
	svc.Spec.LoadBalancerSourceRanges = []string{"203.0.113.0/24"}
	svc.Annotations[string(annotationAllowedIPRanges)] = "198.51.100.0/24"
	if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err == nil || !strings.Contains(err.Error(), "set one") {
		t.Errorf("both range sources: %v", err)
	}
}

// TestLoadBalancerBadAnnotations: each bad annotation is an error naming
// it, made before any call, so nothing is created.
func TestLoadBalancerBadAnnotations(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	nodes := env.lbNodes(t, 1)
	for ann, v := range map[svcopts.Annotation]string{
		annotationInternal:           "maybe",
		annotationDNSLabel:           "Not_A_Label",
		annotationIdleTimeout:        "2",
		annotationAllowedIPRanges:    "10.0.0.0/33",
		annotationAllowedServiceTags: "bad tag",
		annotationPIPName:            "bad/name",
	} {
		svc := lbService("bad", 80)
		svc.Annotations = map[string]string{string(ann): v}
		env.srv.ResetCalls()
		_, err := env.cloud.lb.EnsureLoadBalancer(t.Context(), "kubernetes", svc, nodes)
		if err == nil || !strings.Contains(err.Error(), string(ann)) {
			t.Errorf("%s=%q: err %v", ann, v, err)
		}
		if n := env.srv.CallCount(cloudsim.MutatingOps); n != 0 {
			t.Errorf("%s=%q: %d writes", ann, v, n)
		}
	}
}

// TestLoadBalancerCrashConverges: a sync that fails part-way (a write
// refused after the public IP was made, a delete cut off after the NSG
// rules went) leaves a state the next sync completes, with no second
// public IP and nothing left over.
func TestLoadBalancerCrashConverges(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	nodes := env.lbNodes(t, 1)
	ctx := t.Context()
	svc := lbService("crash", 80)
	env.setFault(t, cloudsim.FaultSpec{Op: "network:LoadBalancers_CreateOrUpdate", FailNext: 10})
	if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err == nil {
		t.Fatal("ensure succeeded with every load balancer write failing")
	}
	if _, ok := env.emu.PublicIP(env.fx.ResourceGroup, upstreamNames(env.cloud.lb.clusterID, svc).pip); !ok {
		t.Fatal("the public IP should exist after the failed load balancer write")
	}
	env.setFault(t, cloudsim.FaultSpec{Op: "network:LoadBalancers_CreateOrUpdate"})
	if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if n := len(env.emu.ListNetwork("publicIPAddresses")); n != 1 {
		t.Errorf("%d public IPs after the retry", n)
	}

	// The delete is cut off after the NSG rules went.
	env.setFault(t, cloudsim.FaultSpec{Op: "network:LoadBalancers_CreateOrUpdate", FailNext: 10})
	env.setFault(t, cloudsim.FaultSpec{Op: "network:LoadBalancers_Delete", FailNext: 10})
	if err := env.cloud.lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", svc); err == nil {
		t.Fatal("delete succeeded with load balancer writes failing")
	}
	if rules := env.nsgRules(t); len(rules) != 0 {
		t.Errorf("NSG rules %v", rules)
	}
	env.setFault(t, cloudsim.FaultSpec{Op: "network:LoadBalancers_CreateOrUpdate"})
	env.setFault(t, cloudsim.FaultSpec{Op: "network:LoadBalancers_Delete"})
	if err := env.cloud.lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", svc); err != nil {
		t.Fatal(err)
	}
	if _, ok := env.lb(t, "kubernetes"); ok {
		t.Error("load balancer left")
	}
	if n := len(env.emu.ListNetwork("publicIPAddresses")); n != 0 {
		t.Errorf("%d public IPs left", n)
	}
}

// TestRoutes: pod CIDR routes for many nodes land in few route-table
// writes, the table is associated to the subnet once, other routes are
// left alone, and deleted routes go.
func TestRoutes(t *testing.T) {
	env := newTestEnv(t, azemu.Config{OperationDelay: 100 * time.Millisecond}, func(s *Section) {
		s.RouteTableName = "kubernetes-routetable"
	})
	if env.fx.RouteTableName != "kubernetes-routetable" {
		t.Fatalf("fixture route table %s", env.fx.RouteTableName)
	}
	ctx := t.Context()
	nodes := env.lbNodes(t, 20)
	rt := env.cloud.routes
	// Someone else's route in the table.
	if err := addForeignRoute(ctx, env); err != nil {
		t.Fatal(err)
	}
	env.srv.ResetCalls()
	var wg sync.WaitGroup
	errs := make(chan error, len(nodes))
	for i, n := range nodes {
		wg.Go(func() {
			errs <- rt.CreateRoute(ctx, "kubernetes", "", &cloudprovider.Route{TargetNode: types.NodeName(n.Name), DestinationCIDR: fmt.Sprintf("10.244.%d.0/24", i)})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("20 routes: %v", env.srv.Calls())
	if n := env.srv.CallCount("network:RouteTables_CreateOrUpdate"); n > 4 {
		t.Errorf("%d route table writes for 20 routes", n)
	}
	if n := env.srv.CallCount("network:Subnets_CreateOrUpdate"); n != 1 {
		t.Errorf("%d subnet writes to associate the table, want 1", n)
	}
	sn, _ := env.emu.Subnet(env.fx.VNetResourceGroup, env.fx.VNetName, env.fx.SubnetName)
	if sn.Properties.RouteTable == nil || !strings.HasSuffix(strings.ToLower(deref(sn.Properties.RouteTable.ID)), "/kubernetes-routetable") {
		t.Errorf("subnet route table %+v", sn.Properties.RouteTable)
	}
	listed, err := rt.ListRoutes(ctx, "kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	// The foreign route is listed too (as upstream lists it); the route
	// controller leaves it alone because it is outside the cluster CIDR.
	listed = slices.DeleteFunc(listed, func(r *cloudprovider.Route) bool { return r.Name == "to-firewall" })
	if len(listed) != 20 {
		t.Errorf("listed %d pod routes, want 20", len(listed))
	}
	tbl, _ := env.emu.RouteTable(env.fx.RouteTableResourceGroup, "kubernetes-routetable")
	ips := map[string]string{}
	for _, n := range nodes {
		ips[n.Name] = n.Status.Addresses[0].Address
	}
	for _, r := range tbl.Properties.Routes {
		if *r.Name == "to-firewall" {
			continue
		}
		if deref(r.Properties.NextHopIPAddress) != ips[*r.Name] || deref(r.Properties.NextHopType) != armnetwork.RouteNextHopTypeVirtualAppliance {
			t.Errorf("route %s next hop %s, want %s", *r.Name, deref(r.Properties.NextHopIPAddress), ips[*r.Name])
		}
	}
	for _, r := range listed[:10] {
		if err := rt.DeleteRoute(ctx, "kubernetes", r); err != nil {
			t.Fatal(err)
		}
	}
	tbl, _ = env.emu.RouteTable(env.fx.RouteTableResourceGroup, "kubernetes-routetable")
	got := names(tbl.Properties.Routes, func(r *armnetwork.Route) *string { return r.Name })
	if len(got) != 11 || !slices.Contains(got, "to-firewall") {
		t.Errorf("routes after deleting 10: %v", got)
	}
}

// addForeignRoute puts a route that is not the manager's in the table.
func addForeignRoute(ctx context.Context, env *testEnv) error {
	rg, name := env.fx.RouteTableResourceGroup, env.fx.RouteTableName
	cur, err := env.api.routeTables.Get(ctx, rg, name, nil)
	if err != nil {
		return err
	}
	tbl := cur.RouteTable
	tbl.Properties.Routes = append(tbl.Properties.Routes, &armnetwork.Route{Name: to.Ptr("to-firewall"), Properties: &armnetwork.RoutePropertiesFormat{
		AddressPrefix: to.Ptr("0.0.0.0/0"), NextHopType: to.Ptr(armnetwork.RouteNextHopTypeVirtualAppliance), NextHopIPAddress: to.Ptr("10.1.0.4"),
	}})
	tbl.Properties.Subnets = nil
	p, err := env.api.routeTables.BeginCreateOrUpdate(ctx, rg, name, tbl, nil)
	if err != nil {
		return err
	}
	_, err = p.PollUntilDone(ctx, pollOptions)
	return err
}

// Floating IP as upstream: on by default (rules to the Service port, NSG
// rules for it); azure-disable-load-balancer-floating-ip "true" moves the
// rules to the NodePorts. The security rules for the new ports go in
// before the load balancer moves, and the old ones only after: a load
// balancer write that fails leaves both admitted.
func TestFloatingIPToggle(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	nodes := env.lbNodes(t, 1)
	ctx := t.Context()
	svc := lbService("fip", 80)
	nodePortRule := allowRuleName(armnetwork.SecurityRuleProtocolTCP, false, []string{"Internet"}, []int32{svc.Spec.Ports[0].NodePort})
	servicePortRule := allowRuleName(armnetwork.SecurityRuleProtocolTCP, false, []string{"Internet"}, []int32{80})
	ruleOf := func() *armnetwork.LoadBalancingRulePropertiesFormat {
		lb, _ := env.lb(t, "kubernetes")
		return lb.Properties.LoadBalancingRules[0].Properties
	}
	if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if r := ruleOf(); !deref(r.EnableFloatingIP) || deref(r.BackendPort) != 80 {
		t.Fatalf("default rule: floating %v backend port %d, want on and 80", deref(r.EnableFloatingIP), deref(r.BackendPort))
	}
	if got := env.nsgRules(t); !slices.Equal(got, []string{servicePortRule}) {
		t.Fatalf("NSG rules %v, want %s", got, servicePortRule)
	}

	svc.Annotations = map[string]string{string(annotationDisableFloatingIP): "True"}
	env.setFault(t, cloudsim.FaultSpec{Op: "network:LoadBalancers_CreateOrUpdate", FailNext: 10})
	if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err == nil {
		t.Fatal("ensure succeeded with the load balancer write failing")
	}
	if got := env.nsgRules(t); !slices.Contains(got, nodePortRule) || !slices.Contains(got, servicePortRule) {
		t.Errorf("NSG rules %v while the load balancer still has the old rule: want both %s and %s", got, nodePortRule, servicePortRule)
	}
	env.setFault(t, cloudsim.FaultSpec{Op: "network:LoadBalancers_CreateOrUpdate"})
	if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if r := ruleOf(); deref(r.EnableFloatingIP) || deref(r.BackendPort) != svc.Spec.Ports[0].NodePort {
		t.Errorf("rule: floating %v backend port %d, want off and the NodePort", deref(r.EnableFloatingIP), deref(r.BackendPort))
	}
	if got := env.nsgRules(t); !slices.Equal(got, []string{nodePortRule}) {
		t.Errorf("NSG rules %v, want only %s", got, nodePortRule)
	}
	// Without floating IP the rule admits clients to the nodes.
	if got, want := env.nsgRule(t, nodePortRule), fmt.Sprintf("Tcp Internet->%s:%d Allow", strings.Join(nodeIPs(nodes), ","), svc.Spec.Ports[0].NodePort); got != want {
		t.Errorf("rule %q, want %q", got, want)
	}
	if err := env.cloud.lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", svc); err != nil {
		t.Fatal(err)
	}
	if got := env.nsgRules(t); len(got) != 0 {
		t.Errorf("NSG rules left: %v", got)
	}
}

// Control-plane Nodes stay out of the pool, as upstream's
// excludeMasterFromStandardLB (default true) keeps them, unless the
// config says false.
func TestControlPlaneExcluded(t *testing.T) {
	for _, exclude := range []*bool{nil, to.Ptr(false)} {
		env := newTestEnv(t, azemu.Config{}, func(s *Section) { s.ExcludeMasterFromStandardLB = exclude })
		nodes := env.lbNodes(t, 3)
		nodes[0].Labels = map[string]string{"node-role.kubernetes.io/control-plane": ""}
		nodes[1].Labels = map[string]string{"kubernetes.io/role": "master"}
		if _, err := env.cloud.lb.EnsureLoadBalancer(t.Context(), "kubernetes", lbService("cp", 80), nodes); err != nil {
			t.Fatal(err)
		}
		lb, _ := env.lb(t, "kubernetes")
		want := nodeIPs(nodes[2:])
		if exclude != nil {
			want = nodeIPs(nodes)
		}
		if got := poolAddresses(lb); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("excludeMasterFromStandardLB %v: pool %v, want %v", exclude, got, want)
		}
	}
}

// Public IPs where upstream keeps them: in resourceGroup, or the group
// azure-load-balancer-resource-group names; one an earlier version of
// this manager made in a separate loadBalancerResourceGroup is still
// found there; and one upstream tagged (a comma list of Services, no
// cluster tag) is the Service's own.
func TestPublicIPGroups(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, func(s *Section) { s.LoadBalancerResourceGroup = "lb-group" })
	env.emu.AddResourceGroup("lb-group")
	env.emu.AddResourceGroup("ips")
	nodes := env.lbNodes(t, 1)
	ctx := t.Context()
	l := env.cloud.lb
	rg := env.fx.ResourceGroup

	plain := lbService("plain", 80)
	if _, err := l.EnsureLoadBalancer(ctx, "kubernetes", plain, nodes); err != nil {
		t.Fatal(err)
	}
	if _, ok := env.emu.PublicIP(rg, upstreamNames(l.clusterID, plain).pip); !ok {
		t.Errorf("public IP not in resourceGroup %s", rg)
	}

	annotated := lbService("annotated", 80)
	annotated.Annotations = map[string]string{string(annotationPIPResourceGroup): "ips"}
	if _, err := l.EnsureLoadBalancer(ctx, "kubernetes", annotated, nodes); err != nil {
		t.Fatal(err)
	}
	if _, ok := env.emu.PublicIP("ips", upstreamNames(l.clusterID, annotated).pip); !ok {
		t.Error("public IP not in the annotation's group")
	}

	// Made by an earlier version, in loadBalancerResourceGroup.
	earlier := lbService("earlier", 80)
	n := upstreamNames(l.clusterID, earlier)
	_, addr, err := l.createPublicIP(ctx, earlier, "lb-group", n.pip, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	st, err := l.EnsureLoadBalancer(ctx, "kubernetes", earlier, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if st.Ingress[0].IP != addr {
		t.Errorf("address %s, want the earlier public IP's %s", st.Ingress[0].IP, addr)
	}
	if _, ok := env.emu.PublicIP(rg, n.pip); ok {
		t.Error("a second public IP was made in resourceGroup")
	}

	// Upstream's tags: the Service in a comma list, the legacy key.
	shared := &armnetwork.PublicIPAddress{Tags: map[string]*string{tagLegacyService: to.Ptr("other/a, default/plain")}}
	if !l.ownsPublicIP(shared, plain) || l.ownsPublicIP(shared, earlier) {
		t.Error("ownership of an upstream-tagged public IP")
	}
	foreign := &armnetwork.PublicIPAddress{Tags: map[string]*string{tagService: to.Ptr("default/plain"), tagCluster: to.Ptr("other-cluster")}}
	if l.ownsPublicIP(foreign, plain) {
		t.Error("another cluster's public IP taken as ours")
	}

	for _, svc := range []*v1.Service{plain, annotated, earlier} {
		if err := l.EnsureLoadBalancerDeleted(ctx, "kubernetes", svc); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(env.emu.ListNetwork("publicIPAddresses")); n != 0 {
		t.Errorf("%d public IPs left", n)
	}
}

// azure-load-balancer-ipv4, -disable-tcp-reset and azure-pip-tags as
// upstream: the pinned address ahead of spec.loadBalancerIP, TCP reset
// off, and the user's tags on our public IP, added to one that exists
// without dropping the tags someone else put there.
func TestAddressResetAndTagAnnotations(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	nodes := env.lbNodes(t, 1)
	ctx := t.Context()
	l := env.cloud.lb

	internal := lbService("pinned", 80)
	internal.Spec.LoadBalancerIP = "10.240.0.200"
	internal.Annotations = map[string]string{
		string(annotationInternal): "true", string(annotationIPv4): "10.240.0.100", string(annotationDisableTCPReset): "TRUE",
	}
	st, err := l.EnsureLoadBalancer(ctx, "kubernetes", internal, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if st.Ingress[0].IP != "10.240.0.100" {
		t.Errorf("address %s, want the annotation's 10.240.0.100", st.Ingress[0].IP)
	}
	lb, _ := env.lb(t, "kubernetes-internal")
	if r := lb.Properties.LoadBalancingRules[0].Properties; deref(r.EnableTCPReset) {
		t.Error("TCP reset still on")
	}

	tagged := lbService("tagged", 80)
	tagged.Annotations = map[string]string{string(annotationPIPTags): "team=web, env = prod"}
	if _, err := l.EnsureLoadBalancer(ctx, "kubernetes", tagged, nodes); err != nil {
		t.Fatal(err)
	}
	name := upstreamNames(l.clusterID, tagged).pip
	pip, _ := env.emu.PublicIP(env.fx.ResourceGroup, name)
	if deref(pip.Tags["team"]) != "web" || deref(pip.Tags["env"]) != "prod" || deref(pip.Tags[tagService]) != "default/tagged" {
		t.Errorf("tags %v", pip.Tags)
	}
	// Someone else's tag stays when the annotation adds one.
	pip.Tags["owner"] = to.Ptr("ops")
	pip.Properties.IPAddress = nil
	p, err := l.api.publicIPs.BeginCreateOrUpdate(ctx, env.fx.ResourceGroup, name, pip, nil)
	if err == nil {
		_, err = p.PollUntilDone(ctx, pollOptions)
	}
	if err != nil {
		t.Fatal(err)
	}
	tagged.Annotations[string(annotationPIPTags)] = "team=web,env=prod,tier=front"
	if _, err := l.EnsureLoadBalancer(ctx, "kubernetes", tagged, nodes); err != nil {
		t.Fatal(err)
	}
	pip, _ = env.emu.PublicIP(env.fx.ResourceGroup, name)
	if deref(pip.Tags["tier"]) != "front" || deref(pip.Tags["owner"]) != "ops" {
		t.Errorf("tags after the update %v", pip.Tags)
	}

	bad := lbService("bad", 80)
	bad.Annotations = map[string]string{string(annotationPIPTags): "k8s-azure-service=x"}
	if _, err := serviceSpec(l.cfg, bad); err == nil || !strings.Contains(err.Error(), string(annotationPIPTags)) {
		t.Errorf("the manager's own tag key: %v", err)
	}
}

func sortedStrings(v ...string) []string {
	slices.Sort(v)
	return v
}

// azure-load-balancer-enable-high-availability-ports on an internal
// Service: one rule for every port and protocol (All, ports 0, floating
// IP), named after the first port's rule and probed by the first port's
// probe, as upstream's; on a public Service it changes nothing.
func TestHAPorts(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	nodes := env.lbNodes(t, 1)
	ctx := t.Context()
	svc := lbService("ha", 80, 443)
	svc.Annotations = map[string]string{string(annotationInternal): "true", string(annotationHAPorts): "true"}
	if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	ilb, _ := env.lb(t, "kubernetes-internal")
	n := upstreamNames("kubernetes", svc)
	rules := ilb.Properties.LoadBalancingRules
	if len(rules) != 1 || deref(rules[0].Name) != n.base+"-TCP-80" {
		t.Fatalf("rules %v, want the one HA rule %s-TCP-80", names(rules, func(r *armnetwork.LoadBalancingRule) *string { return r.Name }), n.base)
	}
	r := rules[0].Properties
	if deref(r.Protocol) != armnetwork.TransportProtocolAll || deref(r.FrontendPort) != 0 || deref(r.BackendPort) != 0 || !deref(r.EnableFloatingIP) || !deref(r.EnableTCPReset) {
		t.Errorf("HA rule %s %d->%d floating %v reset %v", deref(r.Protocol), deref(r.FrontendPort), deref(r.BackendPort), deref(r.EnableFloatingIP), deref(r.EnableTCPReset))
	}
	if r.Probe == nil || !strings.HasSuffix(deref(r.Probe.ID), "/probes/"+n.base+"-TCP-80") || len(ilb.Properties.Probes) != 1 {
		t.Errorf("HA rule probe %v, probes %d", r.Probe, len(ilb.Properties.Probes))
	}

	public := lbService("ha-public", 80, 443)
	public.Annotations = map[string]string{string(annotationHAPorts): "true"}
	if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", public, nodes); err != nil {
		t.Fatal(err)
	}
	lb, _ := env.lb(t, "kubernetes")
	if len(lb.Properties.LoadBalancingRules) != 2 {
		t.Errorf("public Service with the HA annotation: %d rules, want one per port", len(lb.Properties.LoadBalancingRules))
	}
}

// Several Services on one address, distinct ports, as upstream allows: a
// Service asking for another's public IP by address puts its rules on
// that Service's frontend and joins the public IP's list of Services;
// deleting the first keeps what the second uses; deleting the last
// removes the frontend and the public IP.
func TestSharedAddress(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	nodes := env.lbNodes(t, 1)
	ctx := t.Context()
	a, b := lbService("share-a", 80), lbService("share-b", 443)
	st, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", a, nodes)
	if err != nil {
		t.Fatal(err)
	}
	addr := st.Ingress[0].IP
	a.Status.LoadBalancer.Ingress = st.Ingress
	b.Annotations = map[string]string{string(annotationIPv4): addr}
	stb, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", b, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if stb.Ingress[0].IP != addr {
		t.Fatalf("b got %s, want the shared %s", stb.Ingress[0].IP, addr)
	}
	b.Status.LoadBalancer.Ingress = stb.Ingress
	lb, _ := env.lb(t, "kubernetes")
	na := upstreamNames("kubernetes", a)
	if got := names(lb.Properties.FrontendIPConfigurations, func(f *armnetwork.FrontendIPConfiguration) *string { return f.Name }); !slices.Equal(got, []string{na.frontend}) {
		t.Errorf("frontends %v, want only a's", got)
	}
	if len(lb.Properties.LoadBalancingRules) != 2 {
		t.Errorf("%d rules, want a's and b's", len(lb.Properties.LoadBalancingRules))
	}
	pip, _ := env.emu.PublicIP(env.fx.ResourceGroup, na.pip)
	if got := deref(pip.Tags[tagService]); got != "default/share-a,default/share-b" {
		t.Errorf("public IP services %q", got)
	}
	if found, ok, err := env.cloud.lb.GetLoadBalancer(ctx, "kubernetes", b); err != nil || !ok || found.Ingress[0].IP != addr {
		t.Errorf("GetLoadBalancer(b) = %v %v %v", found, ok, err)
	}

	if err := env.cloud.lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", a); err != nil {
		t.Fatal(err)
	}
	lb, _ = env.lb(t, "kubernetes")
	if len(lb.Properties.FrontendIPConfigurations) != 1 || len(lb.Properties.LoadBalancingRules) != 1 {
		t.Errorf("after a went: %d frontends %d rules, want the shared frontend and b's rule", len(lb.Properties.FrontendIPConfigurations), len(lb.Properties.LoadBalancingRules))
	}
	pip, ok := env.emu.PublicIP(env.fx.ResourceGroup, na.pip)
	if !ok || deref(pip.Tags[tagService]) != "default/share-b" {
		t.Errorf("after a went: public IP %v services %q", ok, deref(pip.Tags[tagService]))
	}
	rule443 := allowRuleName(armnetwork.SecurityRuleProtocolTCP, false, []string{"Internet"}, []int32{443})
	if got := env.nsgRules(t); !slices.Equal(got, []string{rule443}) {
		t.Errorf("NSG rules %v after a went, want only b's %s", got, rule443)
	}

	if err := env.cloud.lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", b); err != nil {
		t.Fatal(err)
	}
	if _, ok := env.lb(t, "kubernetes"); ok {
		t.Error("load balancer outlived both Services")
	}
	if left := env.emu.ListNetwork("publicIPAddresses"); len(left) != 0 {
		t.Errorf("public IPs left: %v", left)
	}
	if got := env.nsgRules(t); len(got) != 0 {
		t.Errorf("NSG rules left: %v", got)
	}
}
