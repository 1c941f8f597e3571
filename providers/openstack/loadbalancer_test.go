package openstack

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cloud-provider/api"

	osemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

// lbEnv is the load balancer code against the emulator, with Octavia
// provisioning taking 20 ms.
type lbEnv struct {
	*testEnv
	t     *testing.T
	lb    *loadBalancers
	nodes []*v1.Node
}

func newLBEnv(t *testing.T, nodeCount int, edit func(*Section)) *lbEnv {
	t.Helper()
	return newLBEnvWith(t, nodeCount, osemu.OctaviaConfig{}, edit)
}

// newLBEnvWith is newLBEnv on an Octavia with oc's flavors, zones and
// versions.
func newLBEnvWith(t *testing.T, nodeCount int, oc osemu.OctaviaConfig, edit func(*Section)) *lbEnv {
	t.Helper()
	oc.ProvisioningDelay = 20 * time.Millisecond
	env := newTestEnv(t, osemu.Config{Octavia: oc}, func(s *Section) {
		s.LoadBalancer.WaitActiveTimeout = 5 * time.Second
		if edit != nil {
			edit(s)
		}
	})
	e := &lbEnv{testEnv: env, t: t, lb: env.cloud.lb}
	e.lb.firstPoll = 10 * time.Millisecond
	if nodeCount > 0 {
		e.nodes = e.addNodes(t, nodeCount)
	}
	env.srv.ResetCalls()
	return e
}

// addNodes launches servers and returns their Nodes, as the node
// controller would have initialised them.
func (e *lbEnv) addNodes(t *testing.T, n int) []*v1.Node {
	t.Helper()
	var out []*v1.Node
	for _, id := range e.launch(t, osemu.LaunchSpec{Count: n, Name: fmt.Sprintf("node%d", len(e.emu.Servers()))}) {
		info, _ := e.emu.Server(id)
		out = append(out, &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: info.Name},
			Spec:       v1.NodeSpec{ProviderID: "openstack:///" + id},
			Status:     v1.NodeStatus{Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: info.PrivateIP}}},
		})
	}
	return out
}

func service(name string, ports ...int32) *v1.Service {
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), Annotations: map[string]string{}},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer},
	}
	for i, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Name: fmt.Sprint(i), Protocol: v1.ProtocolTCP, Port: p, NodePort: 30000 + p%1000 + int32(i)})
	}
	return svc
}

// lbOf is the Service's load balancer in the emulator.
func (e *lbEnv) lbOf(t *testing.T, svc *v1.Service) osemu.LoadBalancerInfo {
	t.Helper()
	for _, lb := range e.emu.LoadBalancers() {
		if lb.Name == lbName("kubernetes", svc) {
			return lb
		}
	}
	t.Fatalf("no load balancer for %s", svc.Name)
	return osemu.LoadBalancerInfo{}
}

func memberAddrs(p osemu.PoolInfo) []string {
	var out []string
	for _, m := range p.Members {
		out = append(out, fmt.Sprintf("%s:%d", m.Address, m.ProtocolPort))
	}
	slices.Sort(out)
	return out
}

func (e *lbEnv) wantMembers(nodes []*v1.Node, nodePort int32) []string {
	var out []string
	for _, n := range nodes {
		id, _ := serverIDParser("RegionOne")(n.Spec.ProviderID)
		info, _ := e.emu.Server(id)
		out = append(out, fmt.Sprintf("%s:%d", info.PrivateIP, nodePort))
	}
	slices.Sort(out)
	return out
}

// TestEnsureCreatesWholeTreeInOneCall: a new Service's load balancer,
// listeners, pools, members and monitors come from one fully-populated
// create; its floating IP is ours and is the Service's address; the
// load balancer carries the upstream name, description and our tags.
func TestEnsureCreatesWholeTreeInOneCall(t *testing.T) {
	e := newLBEnv(t, 3, func(s *Section) { s.LoadBalancer.CreateMonitor = true })
	svc := service("web", 80, 443)
	st, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes)
	if err != nil {
		t.Fatal(err)
	}
	lb := e.lbOf(t, svc)
	if lb.ProvisioningStatus != "ACTIVE" || lb.Description != "Kubernetes external service default/web from cluster kubernetes" ||
		!slices.Contains(lb.Tags, "kube_cluster=kubernetes") || !slices.Contains(lb.Tags, "kube_service=default/web") {
		t.Errorf("load balancer %+v", lb)
	}
	if len(lb.Listeners) != 2 || len(lb.Pools) != 2 {
		t.Fatalf("listeners %+v pools %+v", lb.Listeners, lb.Pools)
	}
	for _, p := range lb.Pools {
		port := svc.Spec.Ports[0]
		if strings.HasPrefix(p.Name, "pool_1_") {
			port = svc.Spec.Ports[1]
		}
		if got, want := memberAddrs(p), e.wantMembers(e.nodes, port.NodePort); !slices.Equal(got, want) {
			t.Errorf("pool %s members %v, want %v", p.Name, got, want)
		}
		if p.HealthMonitor == nil || p.HealthMonitor.Type != "TCP" || p.LBAlgorithm != "ROUND_ROBIN" {
			t.Errorf("pool %+v", p)
		}
	}
	fips := e.emu.FloatingIPs()
	if len(fips) != 1 || fips[0].PortID != lb.VIPPortID || fips[0].Description != fipDescription("kubernetes", svc) {
		t.Fatalf("floating IPs %+v, want one of ours on VIP port %s", fips, lb.VIPPortID)
	}
	if len(st.Ingress) != 1 || st.Ingress[0].IP != fips[0].Address {
		t.Errorf("status %+v, want the floating IP %s", st, fips[0].Address)
	}
	calls := e.srv.Calls()
	if calls["octavia:CreateLoadBalancer"] != 1 || calls["octavia:CreateListener"] != 0 || calls["octavia:CreatePool"] != 0 ||
		calls["octavia:BatchUpdateMembers"] != 0 || calls["octavia:CreateHealthMonitor"] != 0 {
		t.Errorf("calls %v: want the tree in one create", calls)
	}

	// A second ensure with nothing changed writes nothing.
	e.srv.ResetCalls()
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes); err != nil {
		t.Fatal(err)
	}
	for op, n := range e.srv.Calls() {
		if e.emu.Mutating(op) {
			t.Errorf("steady ensure made %d %s", n, op)
		}
	}
}

// TestNodeChangeOneBatchPerPool: a node joining costs one batch member
// update per pool and no read, from the record of the last sync; a sync
// with the same nodes costs nothing.
func TestNodeChangeOneBatchPerPool(t *testing.T) {
	e := newLBEnv(t, 2, nil)
	svc := service("web", 80, 8080)
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes); err != nil {
		t.Fatal(err)
	}
	nodes := append(slices.Clone(e.nodes), e.addNodes(t, 1)...)
	e.srv.ResetCalls()
	if err := e.lb.UpdateLoadBalancer(t.Context(), "", svc, nodes); err != nil {
		t.Fatal(err)
	}
	calls := e.srv.Calls()
	if calls["octavia:BatchUpdateMembers"] != 2 || calls["octavia:ListLoadBalancers"] != 0 || calls["octavia:ListPools"] != 0 || calls["octavia:ListMembers"] != 0 {
		t.Errorf("calls %v: want two batch updates and no listing", calls)
	}
	for _, p := range e.lbOf(t, svc).Pools {
		if len(p.Members) != 3 {
			t.Errorf("pool %s has %d members", p.Name, len(p.Members))
		}
	}
	e.srv.ResetCalls()
	if err := e.lb.UpdateLoadBalancer(t.Context(), "", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if calls := e.srv.Calls(); calls["octavia:BatchUpdateMembers"] != 0 {
		t.Errorf("unchanged nodes: calls %v", calls)
	}
	// An update that waited behind the Service's deletion creates
	// nothing.
	if err := e.lb.EnsureLoadBalancerDeleted(t.Context(), "", svc); err != nil {
		t.Fatal(err)
	}
	if err := e.lb.UpdateLoadBalancer(t.Context(), "", svc, e.nodes); err != nil {
		t.Fatal(err)
	}
	if lbs := e.emu.LoadBalancers(); len(lbs) != 0 {
		t.Errorf("an update after the deletion made %d load balancers", len(lbs))
	}
}

// TestFloatingIPsReleasedOnlyWhenOurs: spec.loadBalancerIP's floating IP
// is used and survives the Service; ours is released, unless
// keep-floatingip; an internal Service gets its VIP and no floating IP.
func TestFloatingIPsReleasedOnlyWhenOurs(t *testing.T) {
	e := newLBEnv(t, 2, nil)
	user, err := floatingips.Create(t.Context(), e.api.network, floatingips.CreateOpts{FloatingNetworkID: e.fx.ExternalNetworkID, Description: "reserved by a person"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	pinned := service("pinned", 80)
	pinned.Spec.LoadBalancerIP = user.FloatingIP
	ours := service("ours", 80)
	kept := service("kept", 80)
	kept.Annotations[annotationKeepFloatingIP.String()] = "true"
	internal := service("internal", 80)
	internal.Annotations[annotationInternal.String()] = "true"

	for _, svc := range []*v1.Service{pinned, ours, kept, internal} {
		st, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes)
		if err != nil {
			t.Fatalf("%s: %v", svc.Name, err)
		}
		lb := e.lbOf(t, svc)
		want := ""
		switch svc {
		case pinned:
			want = user.FloatingIP
		case internal:
			want = lb.VIPAddress
		}
		if len(st.Ingress) != 1 || (want != "" && st.Ingress[0].IP != want) {
			t.Errorf("%s: status %+v, want %s", svc.Name, st, want)
		}
		if svc == internal && e.lb.mustFIPOnPort(t, lb.VIPPortID) {
			t.Errorf("internal Service has a floating IP")
		}
	}
	for _, svc := range []*v1.Service{pinned, ours, kept, internal} {
		if err := e.lb.EnsureLoadBalancerDeleted(t.Context(), "", svc); err != nil {
			t.Fatalf("delete %s: %v", svc.Name, err)
		}
	}
	if lbs := e.emu.LoadBalancers(); len(lbs) != 0 {
		t.Errorf("load balancers left: %+v", lbs)
	}
	var left []string
	for _, f := range e.emu.FloatingIPs() {
		if f.PortID != "" {
			t.Errorf("floating IP %s still associated with %s", f.Address, f.PortID)
		}
		left = append(left, f.Description)
	}
	slices.Sort(left)
	if want := []string{fipDescription("kubernetes", kept), "reserved by a person"}; !slices.Equal(left, want) {
		t.Errorf("floating IPs left %q, want %q", left, want)
	}
}

func (l *loadBalancers) mustFIPOnPort(t *testing.T, port string) bool {
	t.Helper()
	f, err := l.floatingIPOnPort(t.Context(), port)
	if err != nil {
		t.Fatal(err)
	}
	return f != nil
}

// TestPendingAndError: a load balancer held PENDING past waitActiveTimeout
// is a RetryError, not a failure; one in ERROR is an error naming it.
func TestPendingAndError(t *testing.T) {
	e := newLBEnv(t, 2, func(s *Section) { s.LoadBalancer.WaitActiveTimeout = 300 * time.Millisecond })
	svc := service("web", 80)
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes); err != nil {
		t.Fatal(err)
	}
	id := e.lbOf(t, svc).ID
	// Someone else's change is being applied, and takes long.
	if err := e.emu.HoldLoadBalancer(id); err != nil {
		t.Fatal(err)
	}
	e.lb.records.Forget(serviceKey(svc))
	nodes := append(slices.Clone(e.nodes), e.addNodes(t, 1)...)
	err := e.lb.UpdateLoadBalancer(t.Context(), "", svc, nodes)
	var re *api.RetryError
	if !errors.As(err, &re) {
		t.Fatalf("update of a pending load balancer: %v, want a RetryError", err)
	}
	if err := e.emu.ReleaseLoadBalancer(id); err != nil {
		t.Fatal(err)
	}
	if err := e.emu.SetLoadBalancerStatus(id, "ERROR"); err != nil {
		t.Fatal(err)
	}
	_, err = e.lb.EnsureLoadBalancer(t.Context(), "", svc, nodes)
	if err == nil || !strings.Contains(err.Error(), "ERROR") || errors.As(err, &re) {
		t.Fatalf("ensure of an ERROR load balancer: %v", err)
	}
	// Deleting it still works: cascade delete is allowed from ERROR.
	if err := e.lb.EnsureLoadBalancerDeleted(t.Context(), "", svc); err != nil {
		t.Fatal(err)
	}
}

// TestPortChange: a port added and one removed cost a listener and pool
// created and a pool and listener deleted, nothing else.
func TestPortChange(t *testing.T) {
	e := newLBEnv(t, 2, nil)
	svc := service("web", 80, 443)
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes); err != nil {
		t.Fatal(err)
	}
	svc.Spec.Ports = []v1.ServicePort{svc.Spec.Ports[0], {Name: "dns", Protocol: v1.ProtocolUDP, Port: 53, NodePort: 31053}}
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range e.lbOf(t, svc).Listeners {
		got = append(got, fmt.Sprintf("%s:%d", l.Protocol, l.ProtocolPort))
	}
	slices.Sort(got)
	if want := []string{"TCP:80", "UDP:53"}; !slices.Equal(got, want) {
		t.Errorf("listeners %v, want %v", got, want)
	}
	for _, p := range e.lbOf(t, svc).Pools {
		if len(p.Members) != 2 {
			t.Errorf("pool %s members %v", p.Name, memberAddrs(p))
		}
	}
	// A node joining after the port change reaches every pool.
	nodes := append(slices.Clone(e.nodes), e.addNodes(t, 1)...)
	if err := e.lb.UpdateLoadBalancer(t.Context(), "", svc, nodes); err != nil {
		t.Fatal(err)
	}
	for _, p := range e.lbOf(t, svc).Pools {
		if len(p.Members) != 3 {
			t.Errorf("after a node joined: pool %s members %v", p.Name, memberAddrs(p))
		}
	}
}

// TestManagedSecurityGroupConcurrent: 20 Services synced 10 at a time
// with manageSecurityGroups share one cluster group, attached once to
// each node port (one port write per node, not per Service); each
// Service's rules admit its NodePort from the VIP subnet; deleting them
// all at once leaves no load balancer, floating IP, rule or member group
// behind, and the node ports only their own groups.
func TestManagedSecurityGroupConcurrent(t *testing.T) {
	e := newLBEnv(t, 4, func(s *Section) { s.LoadBalancer.ManageSecurityGroups = true })
	var svcs []*v1.Service
	for i := range 20 {
		svcs = append(svcs, service(fmt.Sprintf("s%02d", i), 80))
		svcs[i].Spec.Ports[0].NodePort = int32(30100 + i)
	}
	run := func(f func(*v1.Service) error) {
		t.Helper()
		sem := make(chan struct{}, 10)
		var wg sync.WaitGroup
		for _, svc := range svcs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				retryWhileAsked(t, svc, f)
			}()
		}
		wg.Wait()
	}
	run(func(svc *v1.Service) error {
		_, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes)
		return err
	})
	groups := e.emu.SecurityGroups()
	var member *osemu.SecurityGroupInfo
	for i := range groups {
		if groups[i].Name == memberGroupName("kubernetes") {
			if member != nil {
				t.Fatalf("two member groups")
			}
			member = &groups[i]
		}
	}
	if member == nil {
		t.Fatal("no member security group")
	}
	if calls := e.srv.Calls()["neutron:UpdatePort"]; calls != len(e.nodes) {
		t.Errorf("%d port updates, want one per node (%d)", calls, len(e.nodes))
	}
	vipCIDR := e.fx.SubnetCIDR
	for _, svc := range svcs {
		found := false
		for _, r := range member.Rules {
			if r.Description == ruleDescription(svc) && r.PortRangeMin != nil && *r.PortRangeMin == int(svc.Spec.Ports[0].NodePort) && r.RemoteIPPrefix == vipCIDR {
				found = true
			}
		}
		if !found {
			t.Errorf("no rule for %s's NodePort from %s", svc.Name, vipCIDR)
		}
	}
	for _, n := range e.nodes {
		ip := n.Status.Addresses[0].Address
		for _, p := range e.emu.Ports() {
			if p.FixedIP == ip && strings.HasPrefix(p.DeviceOwner, "compute:") {
				if want := []string{e.fx.DefaultSecurityGroupID, member.ID}; !slices.Equal(slices.Sorted(slices.Values(p.SecurityGroups)), slices.Sorted(slices.Values(want))) {
					t.Errorf("port of %s has groups %v, want %v", n.Name, p.SecurityGroups, want)
				}
			}
		}
	}

	run(func(svc *v1.Service) error { return e.lb.EnsureLoadBalancerDeleted(t.Context(), "", svc) })
	if lbs := e.emu.LoadBalancers(); len(lbs) != 0 {
		t.Errorf("%d load balancers left", len(lbs))
	}
	if fips := e.emu.FloatingIPs(); len(fips) != 0 {
		t.Errorf("floating IPs left: %+v", fips)
	}
	for _, g := range e.emu.SecurityGroups() {
		if g.Name == memberGroupName("kubernetes") {
			t.Errorf("the member group outlived the last Service: %+v", g)
		}
	}
	e.wantPortGroups(t, e.fx.DefaultSecurityGroupID)
}

// TestBadAnnotations: malformed or unsupported options are errors that
// name the annotation, before any cloud call.
func TestBadAnnotations(t *testing.T) {
	e := newLBEnv(t, 1, nil)
	for ann, value := range map[string]string{
		annotationInternal.String():          "maybe",
		annotationFloatingNetworkID.String(): "public",
		annotationLBMethod.String():          "SOURCE_IP_PORT",
		annotationHealthMonitor.String():     "yes please",
		// Issue 20's.
		annotationProxyProtocol.String():           "on",
		annotationXForwardedFor.String():           "X-Forwarded-For",
		annotationTimeoutClientData.String():       "60s",
		annotationConnectionLimit.String():         "unlimited",
		annotationFlavorID.String():                "m1.amphora",
		annotationAvailabilityZone.String():        "",
		annotationHealthMonitorDelay.String():      "5s",
		annotationHealthMonitorMaxRetries.String(): "0",
		annotationHostname.String():                "10.0.0.1",
		annotationNetworkID.String():               "private",
		annotationPortID.String():                  "vip-port",
	} {
		svc := service("bad", 80)
		svc.Annotations[ann] = value
		_, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes)
		if err == nil || !strings.Contains(err.Error(), ann) {
			t.Errorf("%s=%s: %v, want an error naming it", ann, value, err)
		}
	}
	if n := len(e.srv.Calls()); n != 0 {
		t.Errorf("calls for malformed Services: %v", e.srv.Calls())
	}
}

// TestUninitializedNodeIsMember: a Node the node controller has not given
// addresses yet (the service controller syncs it once, with no address)
// is a member through its server's fixed address.
func TestUninitializedNodeIsMember(t *testing.T) {
	e := newLBEnv(t, 2, nil)
	svc := service("web", 80)
	fresh := e.addNodes(t, 1)[0]
	want := e.wantMembers(append(slices.Clone(e.nodes), fresh), svc.Spec.Ports[0].NodePort)
	fresh.Status.Addresses = nil
	fresh.Spec.ProviderID = "" // found by its server name
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, append(slices.Clone(e.nodes), fresh)); err != nil {
		t.Fatal(err)
	}
	if got := memberAddrs(e.lbOf(t, svc).Pools[0]); !slices.Equal(got, want) {
		t.Errorf("members %v, want %v", got, want)
	}
}

// TestLocalTrafficAndSourceRanges: externalTrafficPolicy Local probes
// kube-proxy's health check (HTTP /healthz on healthCheckNodePort, as each
// member's monitor_port); source ranges become the listeners'
// allowed_cidrs, and clearing them clears those.
func TestLocalTrafficAndSourceRanges(t *testing.T) {
	e := newLBEnv(t, 2, func(s *Section) { s.LoadBalancer.CreateMonitor = true })
	svc := service("local", 80)
	svc.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	svc.Spec.HealthCheckNodePort = 32123
	svc.Spec.LoadBalancerSourceRanges = []string{"203.0.113.0/24", "198.51.100.0/24"}
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes); err != nil {
		t.Fatal(err)
	}
	lb := e.lbOf(t, svc)
	p := lb.Pools[0]
	if m := p.HealthMonitor; m == nil || m.Type != "HTTP" || m.URLPath != "/healthz" {
		t.Errorf("monitor %+v, want HTTP /healthz", m)
	}
	for _, m := range p.Members {
		if m.MonitorPort != 32123 {
			t.Errorf("member %s monitor port %d, want the healthCheckNodePort", m.Address, m.MonitorPort)
		}
	}
	if got := slices.Sorted(slices.Values(lb.Listeners[0].AllowedCIDRs)); !slices.Equal(got, []string{"198.51.100.0/24", "203.0.113.0/24"}) {
		t.Errorf("allowed CIDRs %v", got)
	}
	svc.Spec.LoadBalancerSourceRanges = nil
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes); err != nil {
		t.Fatal(err)
	}
	if got := e.lbOf(t, svc).Listeners[0].AllowedCIDRs; len(got) != 0 {
		t.Errorf("allowed CIDRs %v after the ranges were removed", got)
	}
}

// retryWhileAsked calls f for svc until it succeeds, again after each
// api.RetryError (the backend waiting for Octavia), as the service
// controller would, up to 20 times; any other error fails the test.
func retryWhileAsked(t *testing.T, svc *v1.Service, f func(*v1.Service) error) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		err := f(svc)
		var re *api.RetryError
		if err == nil {
			return
		}
		if !errors.As(err, &re) || attempt > 20 {
			t.Errorf("%s: %v", svc.Name, err)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
