package openstack_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

// dualStackOctavia is an Octavia on a node network with an IPv4 and a
// stateful IPv6 subnet.
func dualStackOctavia(t *testing.T) *octaviaEnv {
	return newOctaviaEnv(t, cloudsimopenstack.Config{NodeIPv6CIDR: "fd00:10::/64", NodeIPv6Mode: "dhcpv6-stateful"})
}

// TestOctaviaIPv6VIP: a VIP asked for on the IPv6 subnet is an IPv6
// address of it; with the network alone Octavia picks the IPv4 subnet
// even when the IPv6 one comes first in the network, and an IPv6 VIP
// address given with the network places it in the IPv6 subnet.
func TestOctaviaIPv6VIP(t *testing.T) {
	e := dualStackOctavia(t)
	v6 := netip.MustParsePrefix(e.fx.SubnetIPv6CIDR)

	lb := e.createLB(t, loadbalancers.CreateOpts{Name: "v6", VipSubnetID: e.fx.SubnetIPv6ID})
	if a, err := netip.ParseAddr(lb.VipAddress); err != nil || !v6.Contains(a) || lb.VipSubnetID != e.fx.SubnetIPv6ID || lb.VipNetworkID != e.fx.NetworkID {
		t.Errorf("VIP %s on subnet %s network %s, want an address of %s", lb.VipAddress, lb.VipSubnetID, lb.VipNetworkID, v6)
	}

	byNet := e.createLB(t, loadbalancers.CreateOpts{Name: "by-network", VipNetworkID: e.fx.NetworkID})
	if byNet.VipSubnetID != e.fx.SubnetID {
		t.Errorf("network-only VIP on subnet %s (%s), want the IPv4 subnet %s", byNet.VipSubnetID, byNet.VipAddress, e.fx.SubnetID)
	}

	at := netip.MustParseAddr(e.fx.SubnetIPv6CIDR[:strings.Index(e.fx.SubnetIPv6CIDR, "/")]).Next().Next().Next().Next().Next().Next().Next()
	byAddr := e.createLB(t, loadbalancers.CreateOpts{Name: "by-address", VipNetworkID: e.fx.NetworkID, VipAddress: at.String()})
	if byAddr.VipSubnetID != e.fx.SubnetIPv6ID || byAddr.VipAddress != at.String() {
		t.Errorf("VIP %s on %s, want %s on the IPv6 subnet", byAddr.VipAddress, byAddr.VipSubnetID, at)
	}
}

// TestOctaviaNetworkPrefersIPv4: on a network whose first subnet is
// IPv6, Octavia still takes the IPv4 one; on an IPv6-only network, the
// IPv6 one.
func TestOctaviaNetworkPrefersIPv4(t *testing.T) {
	e := newOctaviaEnv(t, cloudsimopenstack.Config{})
	n, err := e.emu.CreateNetwork(cloudsimopenstack.NetworkSpec{Name: "v6-first", CIDR: "fd00:20::/64"})
	ok(t, err)
	s4, err := e.emu.AddSubnet(cloudsimopenstack.SubnetSpec{NetworkID: n.ID, Name: "v4", CIDR: "10.20.0.0/24"})
	ok(t, err)
	lb := e.createLB(t, loadbalancers.CreateOpts{Name: "a", VipNetworkID: n.ID})
	if lb.VipSubnetID != s4 {
		t.Errorf("VIP subnet %s (%s), want the IPv4 subnet %s, not %s", lb.VipSubnetID, lb.VipAddress, s4, n.SubnetID)
	}
	only6, err := e.emu.CreateNetwork(cloudsimopenstack.NetworkSpec{Name: "v6-only", CIDR: "fd00:30::/64"})
	ok(t, err)
	lb = e.createLB(t, loadbalancers.CreateOpts{Name: "b", VipNetworkID: only6.ID})
	if lb.VipSubnetID != only6.SubnetID {
		t.Errorf("VIP subnet %s, want the network's only subnet %s", lb.VipSubnetID, only6.SubnetID)
	}
}

// TestOctaviaIPv6Listeners: an IPv6 VIP's listeners take IPv6 allowed
// CIDRs and refuse IPv4 ones with Octavia's message
// (listener.py:172-191); its pool takes IPv6 members on the IPv6 subnet.
func TestOctaviaIPv6Listeners(t *testing.T) {
	e := dualStackOctavia(t)
	ids := e.launch(t, cloudsimopenstack.LaunchSpec{Count: 2, MoreSubnetIDs: []string{e.fx.SubnetIPv6ID}})
	var members []pools.CreateMemberOpts
	for _, id := range ids {
		info, _ := e.emu.Server(id)
		if info.PrivateIPv6 == "" {
			t.Fatalf("server %s has no IPv6 address", id)
		}
		members = append(members, pools.CreateMemberOpts{Address: info.PrivateIPv6, ProtocolPort: 30080, SubnetID: e.fx.SubnetIPv6ID})
	}
	lb := e.createLB(t, loadbalancers.CreateOpts{
		Name: "v6", VipSubnetID: e.fx.SubnetIPv6ID,
		Listeners: []listeners.CreateOpts{{
			Name: "l", Protocol: listeners.ProtocolTCP, ProtocolPort: 80, AllowedCIDRs: []string{"2001:db8::/32"},
			DefaultPool: &pools.CreateOpts{Name: "p", Protocol: pools.ProtocolTCP, LBMethod: pools.LBMethodRoundRobin, Members: members},
		}},
	})
	e.settle()
	_, err := loadbalancers.Create(ctx(t), e.lb, loadbalancers.CreateOpts{
		Name: "mixed", VipSubnetID: e.fx.SubnetIPv6ID,
		Listeners: []listeners.CreateOpts{{Name: "l", Protocol: listeners.ProtocolTCP, ProtocolPort: 80, AllowedCIDRs: []string{"10.0.0.0/8"}}},
	}).Extract()
	if err == nil || !strings.Contains(err.Error(), "CIDR 10.0.0.0/8 IP version incompatible with all VIPs") {
		t.Errorf("IPv4 allowed CIDR on an IPv6 VIP: %v", err)
	}
	lis := lb.Listeners[0]
	v4 := []string{"10.0.0.0/8"}
	if err := listeners.Update(ctx(t), e.lb, lis.ID, listeners.UpdateOpts{AllowedCIDRs: &v4}).Err; err == nil || !strings.Contains(err.Error(), "IP version incompatible") {
		t.Errorf("IPv4 allowed CIDR update on an IPv6 VIP: %v", err)
	}
	got, err := pools.ListMembers(e.lb, lb.Pools[0].ID, pools.ListMembersOpts{}).AllPages(ctx(t))
	ok(t, err)
	ms, err := pools.ExtractMembers(got)
	ok(t, err)
	if len(ms) != 2 || ms[0].SubnetID != e.fx.SubnetIPv6ID {
		t.Errorf("members %+v, want the two IPv6 ones", ms)
	}
}

// TestLaunchInstanceIPv6: the neutral launch with IPv6 gives the server
// an address on the node network's IPv6 subnet, reported as
// PrivateIPv6; without an IPv6 subnet it is refused.
func TestLaunchInstanceIPv6(t *testing.T) {
	e := dualStackOctavia(t)
	info, err := e.emu.LaunchInstance(cloudsim.InstanceSpec{IPv6: true})
	ok(t, err)
	a, err := netip.ParseAddr(info.PrivateIPv6)
	if err != nil || !netip.MustParsePrefix(e.fx.SubnetIPv6CIDR).Contains(a) || info.PrivateIP == "" {
		t.Errorf("instance %+v, want an IPv4 and an IPv6 address of %s", info, e.fx.SubnetIPv6CIDR)
	}
	plain, err := e.emu.LaunchInstance(cloudsim.InstanceSpec{})
	ok(t, err)
	if plain.PrivateIPv6 != "" {
		t.Errorf("instance without IPv6 on a stateful subnet has %s", plain.PrivateIPv6)
	}

	slaac := newOctaviaEnv(t, cloudsimopenstack.Config{NodeIPv6CIDR: "fd00:11::/64", NodeIPv6Mode: "slaac"})
	info, err = slaac.emu.LaunchInstance(cloudsim.InstanceSpec{IPv6: true})
	ok(t, err)
	if info.PrivateIPv6 == "" {
		t.Errorf("SLAAC instance has no IPv6 address: %+v", info)
	}

	v4 := newOctaviaEnv(t, cloudsimopenstack.Config{})
	if _, err := v4.emu.LaunchInstance(cloudsim.InstanceSpec{IPv6: true}); err == nil || !strings.Contains(err.Error(), "no IPv6 subnet") {
		t.Errorf("IPv6 instance on an IPv4-only network: %v", err)
	}
}
