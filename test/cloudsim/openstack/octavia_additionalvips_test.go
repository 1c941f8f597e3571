package openstack_test

import (
	"net/netip"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"

	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

// TestOctaviaAdditionalVIPs: at API 2.26 a load balancer created with an
// additional VIP on the network's IPv6 subnet gets an IPv6 address of it
// as a second fixed IP of its one VIP port, shown on GET and in the
// list; listeners then take allowed_cidrs of either family and LVS pools
// members of either; the address goes with the load balancer.
func TestOctaviaAdditionalVIPs(t *testing.T) {
	e := dualStackOctavia(t)
	v6 := netip.MustParsePrefix(e.fx.SubnetIPv6CIDR)
	lb := e.activeLB(t, loadbalancers.CreateOpts{
		Name: "dual", VipSubnetID: e.fx.SubnetID,
		AdditionalVips: []loadbalancers.AdditionalVip{{SubnetID: e.fx.SubnetIPv6ID}},
	})
	if len(lb.AdditionalVips) != 1 || lb.AdditionalVips[0].SubnetID != e.fx.SubnetIPv6ID {
		t.Fatalf("additional VIPs %+v, want one on %s", lb.AdditionalVips, e.fx.SubnetIPv6ID)
	}
	a, err := netip.ParseAddr(lb.AdditionalVips[0].IPAddress)
	if err != nil || !v6.Contains(a) {
		t.Fatalf("additional VIP %q, want an address of %s", lb.AdditionalVips[0].IPAddress, v6)
	}
	port, found := e.emu.Port(lb.VipPortID)
	if !found || len(port.FixedIPs) != 2 || port.FixedIP != lb.VipAddress {
		t.Fatalf("VIP port %+v, want the VIP %s and the additional VIP %s", port, lb.VipAddress, a)
	}
	pages, err := loadbalancers.List(e.lb, loadbalancers.ListOpts{}).AllPages(ctx(t))
	ok(t, err)
	all, err := loadbalancers.ExtractLoadBalancers(pages)
	ok(t, err)
	if len(all) != 1 || len(all[0].AdditionalVips) != 1 || all[0].AdditionalVips[0].IPAddress != a.String() {
		t.Errorf("list shows %+v, want the additional VIP %s", all, a)
	}

	_, err = listeners.Create(ctx(t), e.lb, listeners.CreateOpts{
		LoadbalancerID: lb.ID, Protocol: listeners.ProtocolUDP, ProtocolPort: 53,
		AllowedCIDRs: []string{"10.0.0.0/8", "fd00::/8"},
	}).Extract()
	ok(t, err)
	e.settle()
	lis, err := listeners.List(e.lb, listeners.ListOpts{LoadbalancerID: lb.ID}).AllPages(ctx(t))
	ok(t, err)
	ls, err := listeners.ExtractListeners(lis)
	ok(t, err)
	pool, err := pools.Create(ctx(t), e.lb, pools.CreateOpts{ListenerID: ls[0].ID, Protocol: pools.ProtocolUDP, LBMethod: pools.LBMethodRoundRobin}).Extract()
	ok(t, err)
	e.settle()
	// The amphora driver lets an LVS pool have members of each family
	// its VIPs have (amphora_driver/v2/driver.py:343-367).
	for _, addr := range []string{"10.0.0.9", "fd00:10::9"} {
		_, err := pools.CreateMember(ctx(t), e.lb, pool.ID, pools.CreateMemberOpts{Address: addr, ProtocolPort: 30053}).Extract()
		ok(t, err)
		e.settle()
	}

	ok(t, loadbalancers.Delete(ctx(t), e.lb, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).ExtractErr())
	e.settle()
	if _, found := e.emu.Port(lb.VipPortID); found {
		t.Errorf("the VIP port %s outlived its load balancer", lb.VipPortID)
	}
	// The address is free again.
	again := e.activeLB(t, loadbalancers.CreateOpts{
		Name: "again", VipSubnetID: e.fx.SubnetID,
		AdditionalVips: []loadbalancers.AdditionalVip{{SubnetID: e.fx.SubnetIPv6ID, IPAddress: a.String()}},
	})
	if again.AdditionalVips[0].IPAddress != a.String() {
		t.Errorf("additional VIP %s, want the address asked for, %s", again.AdditionalVips[0].IPAddress, a)
	}
}

// TestOctaviaAdditionalVIPsRefused: Octavia's validation texts
// (load_balancer.py:249-277), an address in use, a PUT (the attribute is
// create-only), and a deployment before 2.26 (the attribute is unknown).
// Nothing refused leaves a port behind.
func TestOctaviaAdditionalVIPsRefused(t *testing.T) {
	e := dualStackOctavia(t)
	other, err := e.emu.CreateNetwork(cloudsimopenstack.NetworkSpec{Name: "other", CIDR: "fd00:99::/64"})
	ok(t, err)
	ports := len(e.emu.Ports())
	used := e.activeLB(t, loadbalancers.CreateOpts{Name: "v6", VipSubnetID: e.fx.SubnetIPv6ID})
	ports++
	const missing = "00000000-0000-4000-8000-000000000000"
	for _, tc := range []struct {
		name   string
		add    []loadbalancers.AdditionalVip
		status int
		want   string
	}{
		{"the primary subnet again", []loadbalancers.AdditionalVip{{SubnetID: e.fx.SubnetID}}, 400,
			"Validation failure: Duplicate VIP subnet(s) specified. Only one IP can be bound per subnet."},
		{"one subnet twice", []loadbalancers.AdditionalVip{{SubnetID: e.fx.SubnetIPv6ID}, {SubnetID: e.fx.SubnetIPv6ID}}, 400,
			"Validation failure: Duplicate VIP subnet(s) specified. Only one IP can be bound per subnet."},
		{"an unknown subnet", []loadbalancers.AdditionalVip{{SubnetID: missing}}, 400,
			"Validation failure: Subnet " + missing + " not found"},
		{"another network", []loadbalancers.AdditionalVip{{SubnetID: other.SubnetID}}, 400,
			"Validation failure: All VIP subnets must belong to the same network."},
		{"an address in use", []loadbalancers.AdditionalVip{{SubnetID: e.fx.SubnetIPv6ID, IPAddress: used.VipAddress}}, 409,
			"The VIP IP address is already in use: IP address " + used.VipAddress + " already allocated in subnet " + e.fx.SubnetIPv6ID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadbalancers.Create(ctx(t), e.lb, loadbalancers.CreateOpts{VipSubnetID: e.fx.SubnetID, AdditionalVips: tc.add}).Extract()
			wantFault(t, err, tc.status, tc.want)
		})
	}
	if n := len(e.emu.Ports()) - ports; n != 0 {
		t.Errorf("refused creates left %d ports", n)
	}

	var out map[string]any
	_, err = e.lb.Put(ctx(t), e.lb.ServiceURL("lbaas", "loadbalancers", used.ID),
		map[string]any{"loadbalancer": map[string]any{"additional_vips": []any{map[string]any{"subnet_id": e.fx.SubnetID}}}},
		&out, &gophercloud.RequestOpts{OkCodes: []int{200}})
	wantFault(t, err, 400, "Unknown attribute for argument load_balancer.loadbalancer: additional_vips")

	old := newOctaviaEnv(t, cloudsimopenstack.Config{NodeIPv6CIDR: "fd00:10::/64", NodeIPv6Mode: "dhcpv6-stateful",
		Octavia: cloudsimopenstack.OctaviaConfig{MaxVersion: "v2.25"}})
	_, err = loadbalancers.Create(ctx(t), old.lb, loadbalancers.CreateOpts{
		VipSubnetID: old.fx.SubnetID, AdditionalVips: []loadbalancers.AdditionalVip{{SubnetID: old.fx.SubnetIPv6ID}},
	}).Extract()
	wantFault(t, err, 400, "Unknown attribute for argument load_balancer.loadbalancer: additional_vips")
}
