package openstack

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

// drainEvents drains the recorder.
func drainEvents(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case ev := <-rec.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

// TestDualStackAdditionalVIP: at Octavia API 2.26 a dual-stack Service
// gets one load balancer with a VIP of each family, the first family's
// primary (in the nodes' subnet of it) and the other's an additional VIP
// in the nodes' subnet of that family; members of both families, each in
// its family's subnet; member security group rules of both; status the
// first family's address (the floating IP for IPv4) then the other's,
// in spec.ipFamilies order; no Warning (the IPv4 address has its
// floating IP either way). A node joining adds its two members; deleting
// leaves nothing.
func TestDualStackAdditionalVIP(t *testing.T) {
	for _, tc := range []struct {
		name     string
		families []v1.IPFamily
	}{
		{"ipv4-ipv6", fam46},
		{"ipv6-ipv4", fam64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, rec := newDualStackLBEnvAt(t, "v2.26", 2, func(s *Section) {
				s.LoadBalancer.ManageSecurityGroups = true
				s.LoadBalancer.CreateMonitor = true
			})
			before := e.srv.Resources()
			svc := withFamilies(service("web", 80), tc.families)
			st, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes)
			if err != nil {
				t.Fatal(err)
			}
			lb := e.lbOf(t, svc)
			subnetOf := map[v1.IPFamily]string{v1.IPv4Protocol: e.fx.SubnetID, v1.IPv6Protocol: e.fx.SubnetIPv6ID}
			first, second := tc.families[0], tc.families[1]
			if lb.VIPSubnetID != subnetOf[first] || len(lb.AdditionalVIPs) != 1 || ipFamily(netip.MustParseAddr(lb.AdditionalVIPs[0])) != second {
				t.Fatalf("VIP %s on %s, additional VIPs %v: want the %s VIP on %s and an %s additional VIP", lb.VIPAddress, lb.VIPSubnetID, lb.AdditionalVIPs, first, subnetOf[first], second)
			}
			np := svc.Spec.Ports[0].NodePort
			want := append(familyMembers(e, e.nodes, v1.IPv4Protocol, np), familyMembers(e, e.nodes, v1.IPv6Protocol, np)...)
			slices.Sort(want)
			if got := memberAddrs(lb.Pools[0]); !slices.Equal(got, want) {
				t.Errorf("members %v, want both families' %v", got, want)
			}
			for _, m := range lb.Pools[0].Members {
				if m.SubnetID != subnetOf[ipFamily(netip.MustParseAddr(m.Address))] {
					t.Errorf("member %s on subnet %s, want its family's", m.Address, m.SubnetID)
				}
			}
			fips := e.emu.FloatingIPs()
			if len(fips) != 1 {
				t.Fatalf("floating IPs %+v, want one for the IPv4 address", fips)
			}
			v6 := lb.VIPAddress
			if first == v1.IPv4Protocol {
				v6 = lb.AdditionalVIPs[0]
			}
			wantStatus := []string{fips[0].Address, v6}
			if first == v1.IPv6Protocol {
				wantStatus = []string{v6, fips[0].Address}
			}
			var got []string
			for _, in := range st.Ingress {
				got = append(got, in.IP)
			}
			if !slices.Equal(got, wantStatus) {
				t.Errorf("status %v, want %v", got, wantStatus)
			}
			if evs := drainEvents(rec); len(evs) != 0 {
				t.Errorf("events %q, want none", evs)
			}
			ethers := map[string]bool{}
			for _, g := range e.emu.SecurityGroups() {
				for _, r := range g.Rules {
					if r.Description == "kube_service=default/web" {
						ethers[r.Ethertype] = true
					}
				}
			}
			if !ethers["IPv4"] || !ethers["IPv6"] {
				t.Errorf("rule ethertypes %v, want both", ethers)
			}
			gst, exists, err := e.lb.GetLoadBalancer(t.Context(), "", svc)
			if err != nil || !exists || !slices.Equal(ingressIPs(gst), wantStatus) {
				t.Errorf("GetLoadBalancer %+v %v %v, want %v", gst, exists, err, wantStatus)
			}
			if n := e.srv.CallCount("octavia:ListVersions"); n != 1 {
				t.Errorf("%d version discoveries, want 1", n)
			}

			nodes := append(slices.Clone(e.nodes), e.addDualStackNodes(t, 1)...)
			if err := e.lb.UpdateLoadBalancer(t.Context(), "", svc, nodes); err != nil {
				t.Fatal(err)
			}
			want = append(familyMembers(e, nodes, v1.IPv4Protocol, np), familyMembers(e, nodes, v1.IPv6Protocol, np)...)
			slices.Sort(want)
			if got := memberAddrs(e.lbOf(t, svc).Pools[0]); !slices.Equal(got, want) {
				t.Errorf("members after a node joined %v, want %v", got, want)
			}

			if err := e.lb.EnsureLoadBalancerDeleted(t.Context(), "", svc); err != nil {
				t.Fatal(err)
			}
			waitGone(t, e, lb.ID)
			if after := e.srv.Resources(); len(after) != len(before)+2 { // the joining node's server and port
				t.Errorf("left behind: %d resources before, %d after", len(before), len(after))
			}
		})
	}
}

func ingressIPs(st *v1.LoadBalancerStatus) []string {
	var out []string
	for _, in := range st.Ingress {
		out = append(out, in.IP)
	}
	return out
}

// TestDualStackAdditionalVIPKeepsShapes: at API 2.26 a load balancer
// that exists with one VIP (here as the upstream CCM makes it for a
// dual-stack Service) is not widened: same VIP, members of its family,
// no Warning; so is one it did not make that has a VIP of each family.
// A Service that drops its second family keeps its
// two-VIP load balancer, which then serves the family it has left.
// Source ranges without the second family keep a new load balancer to
// the first.
func TestDualStackAdditionalVIPKeepsShapes(t *testing.T) {
	e, rec := newDualStackLBEnvAt(t, "v2.26", 2, nil)
	up := withFamilies(service("upstream", 80), fam46)
	made := e.existingLB(t, loadbalancers.CreateOpts{Name: lbName("kubernetes", up), VipSubnetID: e.fx.SubnetID})
	st, err := e.lb.EnsureLoadBalancer(t.Context(), "", up, e.nodes)
	if err != nil {
		t.Fatal(err)
	}
	lb := e.lbOf(t, up)
	if lb.ID != made.ID || len(lb.AdditionalVIPs) != 0 || len(st.Ingress) != 1 {
		t.Errorf("load balancer %s additional VIPs %v status %v, want %s as it was, one address", lb.ID, lb.AdditionalVIPs, st.Ingress, made.ID)
	}
	if got, want := memberAddrs(lb.Pools[0]), familyMembers(e, e.nodes, v1.IPv4Protocol, up.Spec.Ports[0].NodePort); !slices.Equal(got, want) {
		t.Errorf("members %v, want the IPv4 ones %v", got, want)
	}
	if evs := drainEvents(rec); len(evs) != 0 {
		t.Errorf("events %q, want none", evs)
	}

	// One not made by this manager with a VIP of each family (as
	// Octavia reports a SLAAC address of the VIP port) keeps one too.
	other := withFamilies(service("notours", 80), fam46)
	e.existingLB(t, loadbalancers.CreateOpts{
		Name: lbName("kubernetes", other), VipSubnetID: e.fx.SubnetID,
		AdditionalVips: []loadbalancers.AdditionalVip{{SubnetID: e.fx.SubnetIPv6ID}},
	})
	if st, err = e.lb.EnsureLoadBalancer(t.Context(), "", other, e.nodes); err != nil {
		t.Fatal(err)
	}
	if got, want := memberAddrs(e.lbOf(t, other).Pools[0]), familyMembers(e, e.nodes, v1.IPv4Protocol, other.Spec.Ports[0].NodePort); len(st.Ingress) != 1 || !slices.Equal(got, want) {
		t.Errorf("status %v members %v, want one address and the IPv4 members %v", st.Ingress, got, want)
	}

	svc := withFamilies(service("drops", 80), fam46)
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes); err != nil {
		t.Fatal(err)
	}
	dual := e.lbOf(t, svc)
	svc = withFamilies(svc, fam4)
	st, err = e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes)
	if err != nil {
		t.Fatal(err)
	}
	after := e.lbOf(t, svc)
	if after.ID != dual.ID || len(st.Ingress) != 1 || ipFamily(netip.MustParseAddr(st.Ingress[0].IP)) != v1.IPv4Protocol {
		t.Errorf("load balancer %s (was %s), status %v: want the same one, its IPv4 address only", after.ID, dual.ID, st.Ingress)
	}
	if got, want := memberAddrs(after.Pools[0]), familyMembers(e, e.nodes, v1.IPv4Protocol, svc.Spec.Ports[0].NodePort); !slices.Equal(got, want) {
		t.Errorf("members %v, want the IPv4 ones %v", got, want)
	}

	ranged := withFamilies(service("ranged", 80), fam46)
	ranged.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"}
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", ranged, e.nodes); err != nil {
		t.Fatal(err)
	}
	if lb := e.lbOf(t, ranged); len(lb.AdditionalVIPs) != 0 {
		t.Errorf("additional VIPs %v for a Service admitting IPv4 clients only", lb.AdditionalVIPs)
	}
	if evs := drainEvents(rec); len(evs) != 1 || !strings.Contains(evs[0], "Warning LoadBalancerFirstFamilyOnly The load balancer serves IPv4 only, not IPv6: the Service's source ranges [10.0.0.0/8] have no IPv6 range") {
		t.Errorf("events %q, want the Warning that only IPv4 is served", evs)
	}
}

// TestDualStackBeforeAdditionalVIPs: below API 2.26 a Service that
// requires dual-stack gets the first family with a Warning naming the
// version; one that prefers it gets no Warning.
func TestDualStackBeforeAdditionalVIPs(t *testing.T) {
	e, rec := newDualStackLBEnvAt(t, "v2.25", 1, nil)
	req := withFamilies(service("required", 80), fam46)
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", req, e.nodes); err != nil {
		t.Fatal(err)
	}
	want := "Warning LoadBalancerFirstFamilyOnly The load balancer serves IPv4 only, not IPv6: the cloud's Octavia API is version 2.25, and a VIP of each family (additional_vips) needs 2.26"
	if evs := drainEvents(rec); !slices.Equal(evs, []string{want}) {
		t.Errorf("events %q, want %q", evs, want)
	}
	pref := withFamilies(service("preferred", 80), fam46)
	policy := v1.IPFamilyPolicyPreferDualStack
	pref.Spec.IPFamilyPolicy = &policy
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", pref, e.nodes); err != nil {
		t.Fatal(err)
	}
	if evs := drainEvents(rec); len(evs) != 0 {
		t.Errorf("events %q for a Service preferring dual-stack, want none", evs)
	}
	if lb := e.lbOf(t, req); len(lb.AdditionalVIPs) != 0 {
		t.Errorf("additional VIPs %v below 2.26", lb.AdditionalVIPs)
	}
}
