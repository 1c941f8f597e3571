package openstack

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	osemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

var (
	fam4  = []v1.IPFamily{v1.IPv4Protocol}
	fam6  = []v1.IPFamily{v1.IPv6Protocol}
	fam46 = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
	fam64 = []v1.IPFamily{v1.IPv6Protocol, v1.IPv4Protocol}
)

// newDualStackLBEnv is newLBEnv on a node network with an IPv4 and a
// stateful IPv6 subnet (the router on both), nodes with an address of
// each, and an Event recorder, with an Octavia before additional_vips
// (API 2.25): a load balancer of the Service's first family, as upstream.
// existingLB makes a load balancer as another client would (the upstream
// CCM, a person) and waits until it is ACTIVE.
func (e *lbEnv) existingLB(t *testing.T, opts loadbalancers.CreateOpts) *loadbalancers.LoadBalancer {
	t.Helper()
	made, err := loadbalancers.Create(t.Context(), e.api.lb, opts).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.lb.waitActive(t.Context(), made.ID); err != nil {
		t.Fatal(err)
	}
	return made
}

func newDualStackLBEnv(t *testing.T, nodeCount int, edit func(*Section)) (*lbEnv, *record.FakeRecorder) {
	t.Helper()
	return newDualStackLBEnvAt(t, "v2.25", nodeCount, edit)
}

// newDualStackLBEnvAt is newDualStackLBEnv with Octavia's API at version.
func newDualStackLBEnvAt(t *testing.T, version string, nodeCount int, edit func(*Section)) (*lbEnv, *record.FakeRecorder) {
	t.Helper()
	env := newTestEnv(t, osemu.Config{
		NodeIPv6CIDR: "fd00:10::/64", NodeIPv6Mode: "dhcpv6-stateful",
		Octavia: osemu.OctaviaConfig{ProvisioningDelay: 20 * time.Millisecond, MaxVersion: version},
	}, func(s *Section) {
		s.LoadBalancer.WaitActiveTimeout = 5 * time.Second
		if edit != nil {
			edit(s)
		}
	})
	e := &lbEnv{testEnv: env, t: t, lb: env.cloud.lb}
	e.lb.firstPoll = 10 * time.Millisecond
	rec := record.NewFakeRecorder(20)
	e.lb.recorder = rec
	e.nodes = e.addDualStackNodes(t, nodeCount)
	env.srv.ResetCalls()
	return e, rec
}

// addDualStackNodes launches servers with an address on both subnets and
// returns their Nodes with both InternalIPs, IPv4 first as Neutron lists
// them.
func (e *lbEnv) addDualStackNodes(t *testing.T, n int) []*v1.Node {
	t.Helper()
	var out []*v1.Node
	for _, id := range e.launch(t, osemu.LaunchSpec{Count: n, Name: fmt.Sprintf("node%d", len(e.emu.Servers())), MoreSubnetIDs: []string{e.fx.SubnetIPv6ID}}) {
		info, _ := e.emu.Server(id)
		out = append(out, &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: info.Name},
			Spec:       v1.NodeSpec{ProviderID: "openstack:///" + id},
			Status: v1.NodeStatus{Addresses: []v1.NodeAddress{
				{Type: v1.NodeInternalIP, Address: info.PrivateIP}, {Type: v1.NodeInternalIP, Address: info.PrivateIPv6},
			}},
		})
	}
	return out
}

func withFamilies(svc *v1.Service, fams []v1.IPFamily) *v1.Service {
	svc.Spec.IPFamilies = fams
	policy := v1.IPFamilyPolicySingleStack
	if len(fams) > 1 {
		policy = v1.IPFamilyPolicyRequireDualStack
	}
	svc.Spec.IPFamilyPolicy = &policy
	return svc
}

// familyMembers are the nodes' addresses of the family on the node port.
func familyMembers(e *lbEnv, nodes []*v1.Node, f v1.IPFamily, nodePort int32) []string {
	var out []string
	for _, n := range nodes {
		id, _ := serverIDParser("RegionOne")(n.Spec.ProviderID)
		info, _ := e.emu.Server(id)
		a := info.PrivateIP
		if f == v1.IPv6Protocol {
			a = info.PrivateIPv6
		}
		out = append(out, fmt.Sprintf("%s:%d", a, nodePort))
	}
	slices.Sort(out)
	return out
}

// TestDualStackLoadBalancers: one load balancer of the Service's first
// family, as upstream (loadbalancer.go:1305-1309): its VIP in the nodes'
// subnet of that family, members the nodes' addresses of that family,
// the member security group's rules of that ethertype; an IPv4 one gets
// a floating IP, an IPv6 one none, with upstream's Warning Event, its
// VIP being the Service's address. Deleting leaves nothing.
func TestDualStackLoadBalancers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		families []v1.IPFamily
		want     v1.IPFamily
	}{
		{"ipv4-ipv6", fam46, v1.IPv4Protocol},
		{"ipv6-ipv4", fam64, v1.IPv6Protocol},
		{"ipv6-only", fam6, v1.IPv6Protocol},
		{"ipv4-only", fam4, v1.IPv4Protocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, rec := newDualStackLBEnv(t, 2, func(s *Section) {
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
			subnet, cidr := e.fx.SubnetID, e.fx.SubnetCIDR
			if tc.want == v1.IPv6Protocol {
				subnet, cidr = e.fx.SubnetIPv6ID, e.fx.SubnetIPv6CIDR
			}
			if lb.VIPSubnetID != subnet {
				t.Errorf("VIP %s on subnet %s, want %s (%s)", lb.VIPAddress, lb.VIPSubnetID, subnet, cidr)
			}
			if got, want := memberAddrs(lb.Pools[0]), familyMembers(e, e.nodes, tc.want, svc.Spec.Ports[0].NodePort); !slices.Equal(got, want) {
				t.Errorf("members %v, want %v", got, want)
			}
			if lb.Pools[0].Members[0].SubnetID != subnet {
				t.Errorf("member subnet %s, want %s", lb.Pools[0].Members[0].SubnetID, subnet)
			}
			fips := e.emu.FloatingIPs()
			switch tc.want {
			case v1.IPv4Protocol:
				if len(fips) != 1 || st.Ingress[0].IP != fips[0].Address {
					t.Errorf("status %+v, floating IPs %+v: want the floating IP", st, fips)
				}
			case v1.IPv6Protocol:
				if len(fips) != 0 || len(st.Ingress) != 1 || st.Ingress[0].IP != lb.VIPAddress {
					t.Errorf("status %+v, floating IPs %+v: want the IPv6 VIP %s and no floating IP", st, fips, lb.VIPAddress)
				}
				select {
				case ev := <-rec.Events:
					want := "Warning LoadBalancerFloatingIPSkipped Floating IP not supported for IPv6 Service default/web. Using IPv6 address instead " + lb.VIPAddress + "."
					if ev != want {
						t.Errorf("event %q, want %q", ev, want)
					}
				default:
					t.Error("no Warning event for the IPv6 VIP")
				}
			}
			var rules int
			for _, g := range e.emu.SecurityGroups() {
				for _, r := range g.Rules {
					if r.Description != "kube_service=default/web" {
						continue
					}
					rules++
					p := netip.MustParsePrefix(r.RemoteIPPrefix)
					if ether := map[bool]string{false: "IPv4", true: "IPv6"}[p.Addr().Is6()]; r.Ethertype != ether || ipFamily(p.Addr()) != tc.want {
						t.Errorf("rule %+v, want %s rules", r, tc.want)
					}
				}
			}
			if rules == 0 {
				t.Error("no member security group rules for the Service")
			}
			// GetLoadBalancer reports the same address.
			got, exists, err := e.lb.GetLoadBalancer(t.Context(), "", svc)
			if err != nil || !exists || got.Ingress[0].IP != st.Ingress[0].IP {
				t.Errorf("GetLoadBalancer %+v %v %v, want %+v", got, exists, err, st)
			}
			// A node joins: one member update of the family.
			nodes := append(slices.Clone(e.nodes), e.addDualStackNodes(t, 1)...)
			if err := e.lb.UpdateLoadBalancer(t.Context(), "", svc, nodes); err != nil {
				t.Fatal(err)
			}
			if got, want := memberAddrs(e.lbOf(t, svc).Pools[0]), familyMembers(e, nodes, tc.want, svc.Spec.Ports[0].NodePort); !slices.Equal(got, want) {
				t.Errorf("members after a node joined %v, want %v", got, want)
			}
			if err := e.lb.EnsureLoadBalancerDeleted(t.Context(), "", svc); err != nil {
				t.Fatal(err)
			}
			waitGone(t, e, lb.ID)
			after := e.srv.Resources()
			if len(after) != len(before)+2 { // the joining node's server and port
				t.Errorf("left behind: %d resources before, %d after", len(before), len(after))
			}
		})
	}
}

// waitGone waits for the emulator to finish deleting a load balancer.
func waitGone(t *testing.T, e *lbEnv, id string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if !slices.ContainsFunc(e.emu.LoadBalancers(), func(lb osemu.LoadBalancerInfo) bool { return lb.ID == id }) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("load balancer %s still there", id)
}

// TestIPv6LoadBalancerOptions: source ranges of the other family are left
// out of allowed_cidrs; none of the load balancer's family is an error
// (admitting everyone would open what the Service closed);
// spec.loadBalancerIP is an IPv6 Service's VIP (upstream :270-275), and
// one of the other family is refused.
func TestIPv6LoadBalancerOptions(t *testing.T) {
	e, _ := newDualStackLBEnv(t, 1, nil)
	svc := withFamilies(service("ranges", 80), fam64)
	svc.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8", "2001:db8::/32"}
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes); err != nil {
		t.Fatal(err)
	}
	if got := e.lbOf(t, svc).Listeners[0].AllowedCIDRs; !slices.Equal(got, []string{"2001:db8::/32"}) {
		t.Errorf("allowed CIDRs %v, want the IPv6 range only", got)
	}

	only4 := withFamilies(service("only4", 80), fam6)
	only4.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"}
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", only4, e.nodes); err == nil || !strings.Contains(err.Error(), "have no IPv6 range") {
		t.Errorf("IPv4 ranges only on an IPv6 Service: %v", err)
	}

	vip := netip.MustParsePrefix(e.fx.SubnetIPv6CIDR).Addr().Next().Next().Next().Next().Next().Next().Next().Next().Next().String()
	asked := withFamilies(service("asked", 80), fam6)
	asked.Spec.LoadBalancerIP = vip
	st, err := e.lb.EnsureLoadBalancer(t.Context(), "", asked, e.nodes)
	if err != nil {
		t.Fatal(err)
	}
	if lb := e.lbOf(t, asked); lb.VIPAddress != vip || st.Ingress[0].IP != vip {
		t.Errorf("VIP %s status %+v, want spec.loadBalancerIP %s", lb.VIPAddress, st, vip)
	}

	wrong := withFamilies(service("wrong", 80), fam6)
	wrong.Spec.LoadBalancerIP = "10.0.0.200"
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", wrong, e.nodes); err == nil || !strings.Contains(err.Error(), "spec.loadBalancerIP 10.0.0.200 is IPv4") {
		t.Errorf("IPv4 spec.loadBalancerIP on an IPv6 Service: %v", err)
	}
}

// TestLoadBalancerKeepsItsFamily: a load balancer that exists (here one
// the upstream CCM made with an IPv4 VIP for a dual-stack Service whose
// first family is IPv6, as its network-id placement does: upstream
// issue #2333) keeps serving its VIP's family; a Service without that
// family is refused with the way out.
func TestLoadBalancerKeepsItsFamily(t *testing.T) {
	e, _ := newDualStackLBEnv(t, 2, nil)
	svc := withFamilies(service("kept", 80), fam64)
	made := e.existingLB(t, loadbalancers.CreateOpts{Name: lbName("kubernetes", svc), VipSubnetID: e.fx.SubnetID})
	st, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes)
	if err != nil {
		t.Fatal(err)
	}
	lb := e.lbOf(t, svc)
	if lb.ID != made.ID || lb.VIPAddress != made.VipAddress {
		t.Fatalf("load balancer %s %s, want the existing %s", lb.ID, lb.VIPAddress, made.ID)
	}
	if got, want := memberAddrs(lb.Pools[0]), familyMembers(e, e.nodes, v1.IPv4Protocol, svc.Spec.Ports[0].NodePort); !slices.Equal(got, want) {
		t.Errorf("members %v, want the IPv4 ones %v", got, want)
	}
	if fips := e.emu.FloatingIPs(); len(fips) != 1 || st.Ingress[0].IP != fips[0].Address {
		t.Errorf("status %+v floating IPs %+v, want the IPv4 VIP's floating IP", st, fips)
	}

	only6 := withFamilies(service("kept6", 80), fam6)
	if _, err := loadbalancers.Create(t.Context(), e.api.lb, loadbalancers.CreateOpts{
		Name: lbName("kubernetes", only6), VipSubnetID: e.fx.SubnetID,
	}).Extract(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", only6, e.nodes); err == nil || !strings.Contains(err.Error(), "Octavia cannot change a VIP's family") {
		t.Errorf("IPv6-only Service on an IPv4 load balancer: %v", err)
	}
}

// TestIPv6VIPPlacement: network-id alone puts an IPv6 VIP in the
// network's IPv6 subnet (Octavia would take the IPv4 one); the
// cloud-config's IPv4 subnet is not used for an IPv6 Service; a
// subnet-id annotation naming an IPv6 subnet makes a dual-stack
// Service's load balancer IPv6; one of a family the Service lacks is
// refused, naming the annotation.
func TestIPv6VIPPlacement(t *testing.T) {
	e, _ := newDualStackLBEnv(t, 1, func(s *Section) {
		s.LoadBalancer.SubnetID = "" // set below
	})
	e.lb.cfg.LoadBalancer.SubnetID = e.fx.SubnetID
	e.lb.cfg.LoadBalancer.MemberSubnetID = e.fx.SubnetID

	cfg6 := withFamilies(service("cfg6", 80), fam6)
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", cfg6, e.nodes); err != nil {
		t.Fatal(err)
	}
	if lb := e.lbOf(t, cfg6); lb.VIPSubnetID != e.fx.SubnetIPv6ID || lb.Pools[0].Members[0].SubnetID != e.fx.SubnetIPv6ID {
		t.Errorf("VIP subnet %s member subnet %s, want the IPv6 node subnet", lb.VIPSubnetID, lb.Pools[0].Members[0].SubnetID)
	}

	byNet := withFamilies(service("bynet", 80), fam64)
	byNet.Annotations[annotationNetworkID.String()] = e.fx.NetworkID
	e.lb.cfg.LoadBalancer.SubnetID = ""
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", byNet, e.nodes); err != nil {
		t.Fatal(err)
	}
	if lb := e.lbOf(t, byNet); lb.VIPSubnetID != e.fx.SubnetIPv6ID {
		t.Errorf("network-id VIP on %s (%s), want the IPv6 subnet", lb.VIPSubnetID, lb.VIPAddress)
	}

	annotated := withFamilies(service("annotated", 80), fam46)
	annotated.Annotations[annotationSubnetID.String()] = e.fx.SubnetIPv6ID
	annotated.Annotations[annotationMemberSubnetID.String()] = e.fx.SubnetIPv6ID
	st, err := e.lb.EnsureLoadBalancer(t.Context(), "", annotated, e.nodes)
	if err != nil {
		t.Fatal(err)
	}
	if lb := e.lbOf(t, annotated); lb.VIPSubnetID != e.fx.SubnetIPv6ID || st.Ingress[0].IP != lb.VIPAddress {
		t.Errorf("VIP %s on %s, status %+v: want an IPv6 load balancer", lb.VIPAddress, lb.VIPSubnetID, st)
	}

	refused := withFamilies(service("refused", 80), fam4)
	refused.Annotations[annotationSubnetID.String()] = e.fx.SubnetIPv6ID
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", refused, e.nodes); err == nil || !strings.Contains(err.Error(), annotationSubnetID.String()) {
		t.Errorf("IPv6 subnet-id on an IPv4 Service: %v", err)
	}
	mixed := withFamilies(service("mixed", 80), fam6)
	mixed.Annotations[annotationMemberSubnetID.String()] = e.fx.SubnetID
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", mixed, e.nodes); err == nil || !strings.Contains(err.Error(), annotationMemberSubnetID.String()) {
		t.Errorf("IPv4 member-subnet-id on an IPv6 Service: %v", err)
	}
}

// TestIPv6LoadBalancerWithoutIPv6Nodes: an IPv6 Service on nodes without
// IPv6 addresses is refused with what to do, as upstream cannot make it
// either ("load balancer can not be created").
func TestIPv6LoadBalancerWithoutIPv6Nodes(t *testing.T) {
	e := newLBEnv(t, 1, nil)
	svc := withFamilies(service("v6", 80), fam6)
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes); err == nil || !strings.Contains(err.Error(), "holds a node's IPv6 InternalIP") {
		t.Errorf("IPv6 Service on IPv4 nodes: %v", err)
	}
	if n := len(e.emu.LoadBalancers()); n != 0 {
		t.Errorf("%d load balancers made", n)
	}
}

// TestSetFamily: the options of a load balancer of one family, from the
// Service's source ranges and spec.loadBalancerIP.
func TestSetFamily(t *testing.T) {
	p := func(s ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, x := range s {
			out = append(out, netip.MustParsePrefix(x))
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		o      lbOptions
		f      v1.IPFamily
		ranges []string
		vip    string
		err    string
	}{
		{name: "no ranges v4", o: lbOptions{}, f: v1.IPv4Protocol},
		{name: "no ranges v6", o: lbOptions{}, f: v1.IPv6Protocol},
		{name: "both /0 on v6", o: lbOptions{ranges: p("0.0.0.0/0", "::/0")}, f: v1.IPv6Protocol},
		{name: "mixed on v4", o: lbOptions{ranges: p("10.0.0.0/8", "2001:db8::/32")}, f: v1.IPv4Protocol, ranges: []string{"10.0.0.0/8"}},
		{name: "mixed on v6", o: lbOptions{ranges: p("10.0.0.0/8", "2001:db8::/32", "fd00::/8")}, f: v1.IPv6Protocol, ranges: []string{"2001:db8::/32", "fd00::/8"}},
		{name: "v4 only on v6", o: lbOptions{ranges: p("10.0.0.0/8")}, f: v1.IPv6Protocol, err: "have no IPv6 range"},
		{name: "internal v4 VIP", o: lbOptions{internal: true, loadBalancerIP: "10.0.0.9"}, f: v1.IPv4Protocol, vip: "10.0.0.9"},
		{name: "external v4 floating IP", o: lbOptions{loadBalancerIP: "172.24.0.9"}, f: v1.IPv4Protocol},
		{name: "external v6 VIP", o: lbOptions{loadBalancerIP: "fd00::9"}, f: v1.IPv6Protocol, vip: "fd00::9"},
		{name: "v4 address on v6", o: lbOptions{loadBalancerIP: "10.0.0.9"}, f: v1.IPv6Protocol, err: "spec.loadBalancerIP 10.0.0.9 is IPv4"},
		{name: "v6 address on v4", o: lbOptions{loadBalancerIP: "fd00::9"}, f: v1.IPv4Protocol, err: "spec.loadBalancerIP fd00::9 is IPv6"},
		{name: "no floating network on v4", o: lbOptions{floatingNetworkErr: fmt.Errorf("no floating network")}, f: v1.IPv4Protocol, err: "no floating network"},
		{name: "no floating network on v6", o: lbOptions{floatingNetworkErr: fmt.Errorf("no floating network")}, f: v1.IPv6Protocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.families = fam46
			err := o.setFamily(tc.f)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(o.sourceRanges, tc.ranges) || o.vipAddress() != tc.vip {
				t.Errorf("ranges %v vip %q, want %v %q", o.sourceRanges, o.vipAddress(), tc.ranges, tc.vip)
			}
		})
	}
}

// TestDualStackMemberGroupConcurrent: Services of every family order,
// ensured by ten workers at once, share the cluster's member group, each
// with its NodePort rule from the VIP subnet of every family it is
// served on (IPv6 rules ethertype IPv6); deleted at once, they leave
// nothing, the member group with them.
func TestDualStackMemberGroupConcurrent(t *testing.T) {
	e, _ := newDualStackLBEnvAt(t, "v2.26", 2, func(s *Section) { s.LoadBalancer.ManageSecurityGroups = true })
	before := e.srv.Resources()
	fams := [][]v1.IPFamily{fam46, fam64, fam6, fam4}
	var svcs []*v1.Service
	for i := range 12 {
		svc := withFamilies(service(fmt.Sprintf("d%02d", i), 80), fams[i%len(fams)])
		svc.Spec.Ports[0].NodePort = int32(30200 + i)
		svcs = append(svcs, svc)
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
	var member *osemu.SecurityGroupInfo
	for _, g := range e.emu.SecurityGroups() {
		if g.Name == memberGroupName("kubernetes") {
			member = &g
		}
	}
	if member == nil {
		t.Fatal("no member security group")
	}
	for _, svc := range svcs {
		want := map[string]bool{}
		for _, f := range svc.Spec.IPFamilies {
			want[map[v1.IPFamily]string{v1.IPv4Protocol: e.fx.SubnetCIDR, v1.IPv6Protocol: e.fx.SubnetIPv6CIDR}[f]] = true
		}
		got := map[string]bool{}
		for _, r := range member.Rules {
			if r.Description == ruleDescription(svc) && r.PortRangeMin != nil && *r.PortRangeMin == int(svc.Spec.Ports[0].NodePort) {
				if (r.Ethertype == "IPv6") != strings.Contains(r.RemoteIPPrefix, ":") {
					t.Errorf("%s: rule %s has ethertype %s", svc.Name, r.RemoteIPPrefix, r.Ethertype)
				}
				got[r.RemoteIPPrefix] = true
			}
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s %v: NodePort rules from %v, want %v", svc.Name, svc.Spec.IPFamilies, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
		}
	}
	run(func(svc *v1.Service) error { return e.lb.EnsureLoadBalancerDeleted(t.Context(), "", svc) })
	if added, removed := cloudsim.DiffResources(before, e.srv.Resources()); len(added)+len(removed) != 0 {
		t.Errorf("after deleting them at once: added %v, removed %v", added, removed)
	}
}
