package openstack

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	v1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/svcopts"
	osemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

// Issue 20's annotations against the emulator, through gophercloud: what
// each does to the Octavia objects, that a change is a PUT where Octavia
// allows one and a replacement only where it does not, and that nothing
// is left behind.

// ensure runs EnsureLoadBalancer and fails the test on an error.
func (e *lbEnv) ensure(t *testing.T, svc *v1.Service) *v1.LoadBalancerStatus {
	t.Helper()
	st, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// wantCalls checks the Octavia writes of the last operation: want lists
// the mutating operations expected with their counts; every other one
// must be absent.
func (e *lbEnv) wantCalls(t *testing.T, want map[string]int) {
	t.Helper()
	got := map[string]int{}
	for op, n := range e.srv.Calls() {
		if e.emu.Mutating(op) && strings.HasPrefix(op, "octavia:") {
			got[op] = n
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("Octavia writes %v, want %v", got, want)
	}
}

// poolOf is the default pool of a listener.
func poolOf(t *testing.T, lb osemu.LoadBalancerInfo, l osemu.ListenerInfo) osemu.PoolInfo {
	t.Helper()
	for _, p := range lb.Pools {
		if p.ID == l.DefaultPoolID {
			return p
		}
	}
	t.Fatalf("listener %s has no pool", l.Name)
	return osemu.PoolInfo{}
}

func listenerIDs(lb osemu.LoadBalancerInfo) []string {
	var ids []string
	for _, l := range lb.Listeners {
		ids = append(ids, l.ID)
	}
	slices.Sort(ids)
	return ids
}

// wantTree checks every listener and its pool: protocols, members on the
// nodes, a monitor when monitored, and no pool without a listener.
func (e *lbEnv) wantTree(t *testing.T, svc *v1.Service, listenerProto, poolProto string, monitored bool) osemu.LoadBalancerInfo {
	t.Helper()
	lb := e.lbOf(t, svc)
	if len(lb.Listeners) != len(svc.Spec.Ports) || len(lb.Pools) != len(svc.Spec.Ports) {
		t.Fatalf("%d listeners and %d pools for %d ports", len(lb.Listeners), len(lb.Pools), len(svc.Spec.Ports))
	}
	for _, l := range lb.Listeners {
		p := poolOf(t, lb, l)
		if l.Protocol != listenerProto || p.Protocol != poolProto {
			t.Errorf("listener %s %s with pool %s, want %s with %s", l.Name, l.Protocol, p.Protocol, listenerProto, poolProto)
		}
		if len(p.Members) != len(e.nodes) {
			t.Errorf("pool %s has %d members, want %d", p.Name, len(p.Members), len(e.nodes))
		}
		if (p.HealthMonitor != nil) != monitored {
			t.Errorf("pool %s monitor %+v, want monitored %v", p.Name, p.HealthMonitor, monitored)
		}
	}
	return lb
}

// TestProxyProtocolAnnotation: "true" makes every pool PROXY and the
// status ipMode Proxy; "v2" replaces the pools with PROXYV2 ones (members
// and monitor included) and keeps the listeners; removing it goes back to
// TCP pools; a steady sync writes nothing.
func TestProxyProtocolAnnotation(t *testing.T) {
	e := newLBEnv(t, 2, func(s *Section) { s.LoadBalancer.CreateMonitor = true })
	svc := service("ingress", 80, 443)
	svc.Annotations[annotationProxyProtocol.String()] = "true"
	st := e.ensure(t, svc)
	lb := e.wantTree(t, svc, "TCP", "PROXY", true)
	fips := e.emu.FloatingIPs()
	if len(st.Ingress) != 1 || st.Ingress[0].IP != fips[0].Address || st.Ingress[0].IPMode == nil || *st.Ingress[0].IPMode != v1.LoadBalancerIPModeProxy {
		t.Errorf("status %+v, want the floating IP with ipMode Proxy", st.Ingress)
	}
	if got, _, err := e.lb.GetLoadBalancer(t.Context(), "", svc); err != nil || got.Ingress[0].IPMode == nil || *got.Ingress[0].IPMode != v1.LoadBalancerIPModeProxy {
		t.Errorf("GetLoadBalancer %+v, %v: want the same status", got, err)
	}
	listeners := listenerIDs(lb)

	svc.Annotations[annotationProxyProtocol.String()] = "v2"
	e.srv.ResetCalls()
	e.ensure(t, svc)
	e.wantCalls(t, map[string]int{
		"octavia:DeletePool": 2, "octavia:CreatePool": 2, "octavia:BatchUpdateMembers": 2, "octavia:CreateHealthMonitor": 2,
	})
	if lb := e.wantTree(t, svc, "TCP", "PROXYV2", true); !slices.Equal(listenerIDs(lb), listeners) {
		t.Errorf("listeners %v replaced, want %v kept", listenerIDs(lb), listeners)
	}

	e.srv.ResetCalls()
	e.ensure(t, svc)
	e.wantCalls(t, map[string]int{})

	delete(svc.Annotations, annotationProxyProtocol.String())
	st = e.ensure(t, svc)
	e.wantTree(t, svc, "TCP", "TCP", true)
	if st.Ingress[0].IPMode != nil {
		t.Errorf("status %+v without the PROXY protocol", st.Ingress)
	}
	if err := e.lb.EnsureLoadBalancerDeleted(t.Context(), "", svc); err != nil {
		t.Fatal(err)
	}
	if n := len(e.emu.LoadBalancers()) + len(e.emu.FloatingIPs()); n != 0 {
		t.Errorf("%d load balancers and floating IPs left", n)
	}
}

// TestXForwardedForAnnotation: "true" makes the listeners HTTP with the
// X-Forwarded-For header and HTTP pools. Octavia changes neither
// protocol, so turning it off (or on) replaces each listener and pool:
// the pool first, then the listener, leaving one of each.
func TestXForwardedForAnnotation(t *testing.T) {
	e := newLBEnv(t, 2, nil)
	svc := service("web", 80)
	svc.Annotations[annotationXForwardedFor.String()] = "true"
	e.ensure(t, svc)
	lb := e.wantTree(t, svc, "HTTP", "HTTP", false)
	if h := lb.Listeners[0].InsertHeaders; !maps.Equal(h, map[string]string{"X-Forwarded-For": "true"}) {
		t.Errorf("insert headers %v", h)
	}
	e.srv.ResetCalls()
	e.ensure(t, svc)
	e.wantCalls(t, map[string]int{})

	for _, on := range []string{"false", "true"} {
		before := e.lbOf(t, svc).Listeners[0].ID
		svc.Annotations[annotationXForwardedFor.String()] = on
		e.srv.ResetCalls()
		e.ensure(t, svc)
		e.wantCalls(t, map[string]int{
			"octavia:DeletePool": 1, "octavia:DeleteListener": 1, "octavia:CreateListener": 1, "octavia:CreatePool": 1, "octavia:BatchUpdateMembers": 1,
		})
		proto := map[string]string{"false": "TCP", "true": "HTTP"}[on]
		lb := e.wantTree(t, svc, proto, proto, false)
		if lb.Listeners[0].ID == before {
			t.Errorf("x-forwarded-for=%s: listener %s kept, want it replaced", on, before)
		}
		if got := lb.Listeners[0].InsertHeaders["X-Forwarded-For"]; (got == "true") != (on == "true") {
			t.Errorf("x-forwarded-for=%s: insert headers %v", on, lb.Listeners[0].InsertHeaders)
		}
	}
}

// TestListenerAnnotationsUpdatedInPlace: timeouts and connection limit
// are set on create (upstream's defaults when absent), changed with one
// PUT per listener, and restored to the defaults when removed.
func TestListenerAnnotationsUpdatedInPlace(t *testing.T) {
	e := newLBEnv(t, 1, nil)
	svc := service("web", 80, 443)
	want := func(t *testing.T, client, connect, member, inspect, limit int) {
		t.Helper()
		for _, l := range e.lbOf(t, svc).Listeners {
			if l.TimeoutClientData != client || l.TimeoutMemberConnect != connect || l.TimeoutMemberData != member ||
				l.TimeoutTCPInspect != inspect || l.ConnectionLimit != limit {
				t.Errorf("listener %s: timeouts %d/%d/%d/%d limit %d, want %d/%d/%d/%d limit %d", l.Name,
					l.TimeoutClientData, l.TimeoutMemberConnect, l.TimeoutMemberData, l.TimeoutTCPInspect, l.ConnectionLimit,
					client, connect, member, inspect, limit)
			}
		}
	}
	set := func(kv ...string) {
		for i := 0; i < len(kv); i += 2 {
			svc.Annotations[kv[i]] = kv[i+1]
		}
	}
	set(annotationTimeoutClientData.String(), "3600000", annotationTimeoutMemberConnect.String(), "3000",
		annotationTimeoutMemberData.String(), "3600000", annotationTimeoutTCPInspect.String(), "100",
		annotationConnectionLimit.String(), "2000")
	e.ensure(t, svc)
	want(t, 3600000, 3000, 3600000, 100, 2000)
	ids := listenerIDs(e.lbOf(t, svc))

	set(annotationTimeoutClientData.String(), "600000", annotationConnectionLimit.String(), "-1")
	e.srv.ResetCalls()
	e.ensure(t, svc)
	e.wantCalls(t, map[string]int{"octavia:UpdateListener": 2})
	want(t, 600000, 3000, 3600000, 100, -1)

	for _, a := range []svcopts.Annotation{annotationTimeoutClientData, annotationTimeoutMemberConnect, annotationTimeoutMemberData, annotationTimeoutTCPInspect, annotationConnectionLimit} {
		delete(svc.Annotations, a.String())
	}
	e.srv.ResetCalls()
	e.ensure(t, svc)
	e.wantCalls(t, map[string]int{"octavia:UpdateListener": 2})
	want(t, 50000, 5000, 50000, 0, -1)
	if got := listenerIDs(e.lbOf(t, svc)); !slices.Equal(got, ids) {
		t.Errorf("listeners %v, want %v updated in place", got, ids)
	}
	e.srv.ResetCalls()
	e.ensure(t, svc)
	e.wantCalls(t, map[string]int{})
}

// TestHealthMonitorAnnotations: the per-Service settings override the
// config's on create, and a change is one PUT per monitor.
func TestHealthMonitorAnnotations(t *testing.T) {
	e := newLBEnv(t, 2, func(s *Section) { s.LoadBalancer.CreateMonitor = true })
	svc := service("web", 80)
	svc.Annotations[annotationHealthMonitorDelay.String()] = "10"
	svc.Annotations[annotationHealthMonitorTimeout.String()] = "4"
	svc.Annotations[annotationHealthMonitorMaxRetries.String()] = "2"
	svc.Annotations[annotationHealthMonitorMaxRetriesDown.String()] = "5"
	e.ensure(t, svc)
	m := e.lbOf(t, svc).Pools[0].HealthMonitor
	if m == nil || m.Delay != 10 || m.Timeout != 4 || m.MaxRetries != 2 || m.MaxRetriesDown != 5 || m.Type != "TCP" {
		t.Fatalf("monitor %+v", m)
	}

	svc.Annotations[annotationHealthMonitorDelay.String()] = "15"
	delete(svc.Annotations, annotationHealthMonitorMaxRetriesDown.String())
	e.srv.ResetCalls()
	e.ensure(t, svc)
	e.wantCalls(t, map[string]int{"octavia:UpdateHealthMonitor": 1})
	got := e.lbOf(t, svc).Pools[0].HealthMonitor
	if got == nil || got.ID != m.ID || got.Delay != 15 || got.Timeout != 4 || got.MaxRetries != 2 || got.MaxRetriesDown != 3 {
		t.Errorf("monitor %+v, want %s updated in place with delay 15 and the default 3 retries down", got, m.ID)
	}

	// externalTrafficPolicy Local makes it HTTP: Octavia cannot change
	// a monitor's type, so it is replaced.
	svc.Spec.ExternalTrafficPolicy, svc.Spec.HealthCheckNodePort = v1.ServiceExternalTrafficPolicyLocal, 32100
	e.srv.ResetCalls()
	e.ensure(t, svc)
	e.wantCalls(t, map[string]int{"octavia:DeleteHealthMonitor": 1, "octavia:CreateHealthMonitor": 1, "octavia:BatchUpdateMembers": 1})
	if got := e.lbOf(t, svc).Pools[0].HealthMonitor; got == nil || got.Type != "HTTP" || got.Delay != 15 {
		t.Errorf("monitor %+v, want HTTP with the annotated delay", got)
	}
}

// TestFlavorAndAvailabilityZone: the load balancer is created with the
// annotated flavor and the config's zone; a later change has no effect
// (upstream reads them at creation only); Octavia's refusal of an
// unknown flavor or zone reaches the Service, and leaves nothing.
func TestFlavorAndAvailabilityZone(t *testing.T) {
	const flavor, other = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9", "1a2b3c4d-5e6f-4071-8293-a4b5c6d7e8f9"
	e := newLBEnvWith(t, 2, osemu.OctaviaConfig{
		Flavors:           []osemu.OctaviaFlavor{{ID: flavor, Name: "amphora-ha", Metadata: map[string]string{"loadbalancer_topology": "ACTIVE_STANDBY"}}, {ID: other, Name: "small"}},
		AvailabilityZones: []osemu.OctaviaAvailabilityZone{{Name: "lb-az-1", ComputeZone: "az-1"}, {Name: "lb-az-2", ComputeZone: "az-2"}},
	}, func(s *Section) { s.LoadBalancer.AvailabilityZone = "lb-az-1" })
	svc := service("web", 80)
	svc.Annotations[annotationFlavorID.String()] = flavor
	e.ensure(t, svc)
	if lb := e.lbOf(t, svc); lb.FlavorID != flavor || lb.AvailabilityZone != "lb-az-1" {
		t.Errorf("flavor %q zone %q", lb.FlavorID, lb.AvailabilityZone)
	}

	svc.Annotations[annotationFlavorID.String()] = other
	svc.Annotations[annotationAvailabilityZone.String()] = "lb-az-2"
	e.srv.ResetCalls()
	e.ensure(t, svc)
	e.wantCalls(t, map[string]int{})
	if lb := e.lbOf(t, svc); lb.FlavorID != flavor || lb.AvailabilityZone != "lb-az-1" {
		t.Errorf("after a change: flavor %q zone %q, want the creation's", lb.FlavorID, lb.AvailabilityZone)
	}

	for ann, v := range map[string]string{
		annotationFlavorID.String():         "2b3c4d5e-6f70-4182-93a4-b5c6d7e8f901",
		annotationAvailabilityZone.String(): "lb-az-9",
	} {
		bad := service("bad", 80)
		bad.Annotations[ann] = v
		_, err := e.lb.EnsureLoadBalancer(t.Context(), "", bad, e.nodes)
		want := map[string]string{annotationFlavorID.String(): "Invalid flavor_id.", annotationAvailabilityZone.String(): "Invalid availability zone."}[ann]
		if err == nil || !strings.Contains(err.Error(), "Octavia refused the request") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s=%s: %v, want Octavia's %q", ann, v, err, want)
		}
	}
	if n, f := len(e.emu.LoadBalancers()), len(e.emu.FloatingIPs()); n != 1 || f != 1 {
		t.Errorf("%d load balancers and %d floating IPs, want only the first Service's", n, f)
	}
}

// TestHostnameAnnotation: the status holds the hostname alone, in
// EnsureLoadBalancer and GetLoadBalancer; with the PROXY protocol and
// enableIngressHostname, <floating IP>.nip.io.
func TestHostnameAnnotation(t *testing.T) {
	e := newLBEnv(t, 1, func(s *Section) { s.LoadBalancer.EnableIngressHostname = true })
	named := service("named", 80)
	named.Annotations[annotationHostname.String()] = "web.example.com"
	named.Annotations[annotationProxyProtocol.String()] = "v1"
	proxied := service("proxied", 80)
	proxied.Annotations[annotationProxyProtocol.String()] = "true"
	plain := service("plain", 80)
	for _, tt := range []struct {
		svc  *v1.Service
		want func(fip string) v1.LoadBalancerIngress
	}{
		{named, func(string) v1.LoadBalancerIngress { return v1.LoadBalancerIngress{Hostname: "web.example.com"} }},
		{proxied, func(fip string) v1.LoadBalancerIngress { return v1.LoadBalancerIngress{Hostname: fip + ".nip.io"} }},
		{plain, func(fip string) v1.LoadBalancerIngress { return v1.LoadBalancerIngress{IP: fip} }},
	} {
		st := e.ensure(t, tt.svc)
		fip, err := e.lb.floatingIPOnPort(t.Context(), e.lbOf(t, tt.svc).VIPPortID)
		if err != nil || fip == nil {
			t.Fatalf("%s: floating IP %v, %v", tt.svc.Name, fip, err)
		}
		want := tt.want(fip.FloatingIP)
		got, exists, err := e.lb.GetLoadBalancer(t.Context(), "", tt.svc)
		if err != nil || !exists {
			t.Fatalf("%s: GetLoadBalancer %v %v", tt.svc.Name, exists, err)
		}
		for _, s := range []*v1.LoadBalancerStatus{st, got} {
			if len(s.Ingress) != 1 || s.Ingress[0].IP != want.IP || s.Ingress[0].Hostname != want.Hostname || s.Ingress[0].IPMode != nil {
				t.Errorf("%s: status %+v, want %+v", tt.svc.Name, s.Ingress, want)
			}
		}
	}
}

// TestIssue20AnnotationsTogether: a Service with every listener, pool and
// monitor annotation is created in one call, a steady sync writes
// nothing, and deleting it leaves nothing.
func TestIssue20AnnotationsTogether(t *testing.T) {
	const flavor = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"
	e := newLBEnvWith(t, 3, osemu.OctaviaConfig{Flavors: []osemu.OctaviaFlavor{{ID: flavor, Name: "small"}}},
		func(s *Section) { s.LoadBalancer.CreateMonitor = true })
	svc := service("all", 80, 443)
	for k, v := range map[string]string{
		annotationProxyProtocol.String(): "v2", annotationTimeoutClientData.String(): "120000", annotationTimeoutMemberData.String(): "120000",
		annotationConnectionLimit.String(): "500", annotationFlavorID.String(): flavor,
		annotationHealthMonitorDelay.String(): "7", annotationHealthMonitorMaxRetriesDown.String(): "4",
	} {
		svc.Annotations[k] = v
	}
	e.ensure(t, svc)
	e.wantCalls(t, map[string]int{"octavia:CreateLoadBalancer": 1})
	lb := e.wantTree(t, svc, "TCP", "PROXYV2", true)
	for _, l := range lb.Listeners {
		if l.TimeoutClientData != 120000 || l.TimeoutMemberData != 120000 || l.ConnectionLimit != 500 {
			t.Errorf("listener %+v", l)
		}
		if m := poolOf(t, lb, l).HealthMonitor; m.Delay != 7 || m.MaxRetriesDown != 4 {
			t.Errorf("monitor %+v", m)
		}
	}
	e.lb.records.Forget(serviceKey(svc)) // read it all back
	e.srv.ResetCalls()
	e.ensure(t, svc)
	e.wantCalls(t, map[string]int{})
	if err := e.lb.EnsureLoadBalancerDeleted(t.Context(), "", svc); err != nil {
		t.Fatal(err)
	}
	if n := len(e.emu.LoadBalancers()) + len(e.emu.FloatingIPs()); n != 0 {
		t.Errorf("%d load balancers and floating IPs left", n)
	}
}

// memberRuleSources are the remote prefixes of the member security
// group's rules for svc.
func (e *lbEnv) memberRuleSources(t *testing.T, svc *v1.Service) []string {
	t.Helper()
	var out []string
	for _, g := range e.emu.SecurityGroups() {
		if g.Name != memberGroupName("kubernetes") {
			continue
		}
		for _, r := range g.Rules {
			if r.Description == ruleDescription(svc) {
				out = append(out, r.RemoteIPPrefix)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestVIPNetworkAnnotation: network-id places the VIP in that network
// (in the subnet Octavia picks, or subnet-id's), members stay on the
// nodes' subnet, and the member security group admits the VIP subnet
// Octavia chose and the members' subnet. A subnet outside the network is refused before any
// call.
func TestVIPNetworkAnnotation(t *testing.T) {
	e := newLBEnv(t, 2, func(s *Section) { s.LoadBalancer.ManageSecurityGroups = true })
	vips, err := e.emu.CreateNetwork(osemu.NetworkSpec{Name: "vips", CIDR: "10.77.0.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	svc := service("by-network", 80)
	svc.Annotations[annotationInternal.String()] = "true"
	svc.Annotations[annotationNetworkID.String()] = vips.ID
	st := e.ensure(t, svc)
	lb := e.wantTree(t, svc, "TCP", "TCP", false)
	if lb.VIPNetworkID != vips.ID || lb.VIPSubnetID != vips.SubnetID {
		t.Errorf("VIP in network %s subnet %s, want %s %s", lb.VIPNetworkID, lb.VIPSubnetID, vips.ID, vips.SubnetID)
	}
	if len(st.Ingress) != 1 || st.Ingress[0].IP != lb.VIPAddress || !strings.HasPrefix(lb.VIPAddress, "10.77.0.") {
		t.Errorf("status %+v, VIP %s, want the VIP in %s", st.Ingress, lb.VIPAddress, vips.CIDR)
	}
	if got := memberAddrs(lb.Pools[0]); !slices.Equal(got, e.wantMembers(e.nodes, svc.Spec.Ports[0].NodePort)) {
		t.Errorf("members %v", got)
	}
	for _, m := range lb.Pools[0].Members {
		if m.SubnetID != e.fx.SubnetID {
			t.Errorf("member %s on subnet %q, want the nodes' %s", m.Address, m.SubnetID, e.fx.SubnetID)
		}
	}
	// The member subnet too: an amphora sends to members from its port
	// there, and upstream admits it (loadbalancer_sg.go:240-251).
	if got, want := e.memberRuleSources(t, svc), slices.Sorted(slices.Values([]string{vips.CIDR, e.fx.SubnetCIDR})); !slices.Equal(got, want) {
		t.Errorf("member rules admit %v, want the VIP subnet and the member subnet %v", got, want)
	}
	e.srv.ResetCalls()
	e.ensure(t, svc)
	e.wantCalls(t, map[string]int{})

	bad := service("bad-subnet", 80)
	bad.Annotations[annotationInternal.String()] = "true"
	bad.Annotations[annotationNetworkID.String()] = vips.ID
	bad.Annotations[annotationSubnetID.String()] = e.fx.SubnetID
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", bad, e.nodes); err == nil || !strings.Contains(err.Error(), "not in the VIP network "+vips.ID) {
		t.Errorf("subnet outside the network: %v", err)
	}
	if err := e.lb.EnsureLoadBalancerDeleted(t.Context(), "", svc); err != nil {
		t.Fatal(err)
	}
	if n := len(e.emu.LoadBalancers()); n != 0 {
		t.Errorf("%d load balancers left", n)
	}
}

// TestVIPPortAnnotation: port-id makes the user's port the VIP port. An
// external Service takes the floating IP already on it (none allocated),
// or gets one allocated when it has none; deleting the Service leaves the
// port and the user's floating IP, and releases only the one allocated.
func TestVIPPortAnnotation(t *testing.T) {
	e := newLBEnv(t, 2, nil)
	newPort := func(name string) ports.Port {
		p, err := ports.Create(t.Context(), e.api.network, ports.CreateOpts{NetworkID: e.fx.NetworkID, Name: name}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		return *p
	}
	reserved, bare := newPort("reserved-vip"), newPort("bare-vip")
	userFIP, err := floatingips.Create(t.Context(), e.api.network, floatingips.CreateOpts{
		FloatingNetworkID: e.fx.ExternalNetworkID, PortID: reserved.ID, Description: "reserved by a person",
	}).Extract()
	if err != nil {
		t.Fatal(err)
	}

	withFIP := service("with-fip", 80)
	withFIP.Annotations[annotationPortID.String()] = reserved.ID
	st := e.ensure(t, withFIP)
	lb := e.lbOf(t, withFIP)
	if lb.VIPPortID != reserved.ID || lb.VIPAddress != reserved.FixedIPs[0].IPAddress {
		t.Errorf("VIP port %s address %s, want the user's %s %s", lb.VIPPortID, lb.VIPAddress, reserved.ID, reserved.FixedIPs[0].IPAddress)
	}
	if len(st.Ingress) != 1 || st.Ingress[0].IP != userFIP.FloatingIP {
		t.Errorf("status %+v, want the port's floating IP %s", st.Ingress, userFIP.FloatingIP)
	}
	if n := len(e.emu.FloatingIPs()); n != 1 {
		t.Errorf("%d floating IPs, want only the user's", n)
	}

	noFIP := service("no-fip", 80)
	noFIP.Annotations[annotationPortID.String()] = bare.ID
	st = e.ensure(t, noFIP)
	owned, err := e.lb.ownedFloatingIPs(t.Context(), noFIP)
	if err != nil || len(owned) != 1 || owned[0].PortID != bare.ID || len(st.Ingress) != 1 || st.Ingress[0].IP != owned[0].FloatingIP {
		t.Fatalf("status %+v, allocated %+v (%v), want one floating IP on port %s", st.Ingress, owned, err, bare.ID)
	}
	e.srv.ResetCalls()
	e.ensure(t, withFIP)
	e.ensure(t, noFIP)
	e.wantCalls(t, map[string]int{})

	for _, svc := range []*v1.Service{withFIP, noFIP} {
		if err := e.lb.EnsureLoadBalancerDeleted(t.Context(), "", svc); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(e.emu.LoadBalancers()); n != 0 {
		t.Errorf("%d load balancers left", n)
	}
	for _, p := range []ports.Port{reserved, bare} {
		if _, ok := e.emu.Port(p.ID); !ok {
			t.Errorf("the user's port %s was deleted", p.Name)
		}
	}
	fips := e.emu.FloatingIPs()
	if len(fips) != 1 || fips[0].ID != userFIP.ID || fips[0].PortID != reserved.ID {
		t.Errorf("floating IPs left %+v, want only the user's, still on its port", fips)
	}
}
