package openstack_test

import (
	"net/http"
	"net/netip"
	"slices"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"

	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

// portIPs are a port's fixed IPs as gophercloud reads them, in order.
func portIPs(t *testing.T, e *env, id string) []ports.IP {
	t.Helper()
	p, err := ports.Get(ctx(t), e.networkClient(t), id).Extract()
	ok(t, err)
	return p.FixedIPs
}

// serverAddrs are the server's Nova addresses on network name, as
// (addr, version) pairs.
func serverAddrs(t *testing.T, e *env, id, name string) [][2]any {
	t.Helper()
	s, err := servers.Get(ctx(t), e.compute(t, ""), id).Extract()
	ok(t, err)
	var out [][2]any
	l, _ := s.Addresses[name].([]any)
	for _, a := range l {
		m := a.(map[string]any)
		out = append(out, [2]any{m["addr"], m["version"]})
	}
	return out
}

// TestNeutronIPv6SLAAC: on a node network with a SLAAC subnet, a server's
// port has its IPv4 address and its EUI-64 IPv6 one (from its MAC), in
// Neutron's fixed_ips order; Nova reports both with their versions; the
// subnet shows its modes and pool.
func TestNeutronIPv6SLAAC(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{NodeIPv6CIDR: "fd00:10::/64", NodeIPv6Mode: "slaac"})
	id := e.launch(t, cloudsimopenstack.LaunchSpec{Name: "ds"})[0]
	info, _ := e.emu.Server(id)
	// fa:16:3e:xx:yy:zz -> f816:3eff:fexx:yyzz, the U/L bit flipped.
	mac := info.MAC
	want6 := netip.MustParseAddr("fd00:10::f816:3eff:fe" + mac[9:11] + ":" + mac[12:14] + mac[15:17]).String()
	got := portIPs(t, e, info.PortID)
	if len(got) != 2 || got[0].IPAddress != info.PrivateIP || got[0].SubnetID != e.fx.SubnetID ||
		got[1].IPAddress != want6 || got[1].SubnetID != e.fx.SubnetIPv6ID || info.PrivateIPv6 != want6 {
		t.Errorf("fixed IPs %+v (MAC %s), server %+v; want %s then %s", got, mac, info, info.PrivateIP, want6)
	}
	if a := serverAddrs(t, e, id, e.fx.NetworkName); !slices.Equal(a, [][2]any{{info.PrivateIP, 4.0}, {want6, 6.0}}) {
		t.Errorf("Nova addresses %v", a)
	}
	sn, err := subnets.Get(ctx(t), e.networkClient(t), e.fx.SubnetIPv6ID).Extract()
	ok(t, err)
	if sn.IPVersion != 6 || sn.IPv6AddressMode != "slaac" || sn.IPv6RAMode != "slaac" || sn.GatewayIP != "fd00:10::1" ||
		len(sn.AllocationPools) != 1 || sn.AllocationPools[0].Start != "fd00:10::2" || sn.AllocationPools[0].End != "fd00:10::ffff:ffff:ffff:ffff" {
		t.Errorf("subnet %+v", sn)
	}
	// The router's interface on it is its gateway, with no EUI-64
	// address.
	for _, p := range e.emu.DevicePorts(e.fx.RouterID) {
		if p.SubnetID == e.fx.SubnetIPv6ID && (p.FixedIP != "fd00:10::1" || len(p.FixedIPs) != 1) {
			t.Errorf("router port %+v", p)
		}
	}
	// The ip6 filter of a server listing finds it.
	pages, err := servers.List(e.compute(t, ""), servers.ListOpts{IP6: "fd00:10::"}).AllPages(ctx(t))
	ok(t, err)
	if l, _ := servers.ExtractServers(pages); len(l) != 1 {
		t.Errorf("ip6 filter: %d servers", len(l))
	}
}

// TestNeutronIPv6Stateful: a stateful IPv6 subnet gives addresses from
// its pool to the ports that ask for it (a launch naming it, a port
// created without fixed_ips); and a server on an IPv4 subnet whose
// addresses sort after its IPv6 one lists the IPv6 one first, as Neutron
// orders fixed_ips by their text.
func TestNeutronIPv6Stateful(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{NodeIPv6CIDR: "fd00:10::/64", NodeIPv6Mode: "dhcpv6-stateful"})
	plain := e.launch(t, cloudsimopenstack.LaunchSpec{Name: "v4"})[0]
	if info, _ := e.emu.Server(plain); info.PrivateIPv6 != "" {
		t.Errorf("a launch that names no IPv6 subnet got %s", info.PrivateIPv6)
	}
	ds := e.launch(t, cloudsimopenstack.LaunchSpec{Name: "ds", MoreSubnetIDs: []string{e.fx.SubnetIPv6ID}})[0]
	info, _ := e.emu.Server(ds)
	if got := portIPs(t, e, info.PortID); len(got) != 2 || got[1].IPAddress != "fd00:10::a" || got[1].SubnetID != e.fx.SubnetIPv6ID {
		t.Errorf("fixed IPs %+v", got)
	}
	p, err := ports.Create(ctx(t), e.networkClient(t), ports.CreateOpts{NetworkID: e.fx.NetworkID}).Extract()
	ok(t, err)
	if len(p.FixedIPs) != 2 || p.FixedIPs[1].IPAddress != "fd00:10::b" {
		t.Errorf("port without fixed_ips %+v", p.FixedIPs)
	}

	net, err := e.emu.CreateNetwork(cloudsimopenstack.NetworkSpec{Name: "doc", CIDR: "203.0.113.0/24"})
	ok(t, err)
	s6, err := e.emu.AddSubnet(cloudsimopenstack.SubnetSpec{NetworkID: net.ID, Name: "doc-v6", CIDR: "2001:db8::/64"})
	ok(t, err)
	id := e.launch(t, cloudsimopenstack.LaunchSpec{Name: "doc", SubnetID: net.SubnetID, MoreSubnetIDs: []string{s6}})[0]
	info, _ = e.emu.Server(id)
	if got := portIPs(t, e, info.PortID); len(got) != 2 || got[0].IPAddress != "2001:db8::a" || got[1].IPAddress != "203.0.113.10" {
		t.Errorf("fixed IPs %+v, want the IPv6 one first", got)
	}
	if a := serverAddrs(t, e, id, "doc"); len(a) != 2 || a[0] != [2]any{"2001:db8::a", 6.0} {
		t.Errorf("Nova addresses %v", a)
	}
}

// TestNeutronIPv6Only: a server on an IPv6-only SLAAC network has one
// fixed IP, its EUI-64 address; it can have no floating IP.
func TestNeutronIPv6Only(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	net, err := e.emu.CreateNetwork(cloudsimopenstack.NetworkSpec{Name: "v6only", CIDR: "fd00:20::/64", IPv6AddressMode: "slaac", IPv6RAMode: "slaac"})
	ok(t, err)
	id := e.launch(t, cloudsimopenstack.LaunchSpec{Name: "six", SubnetID: net.SubnetID})[0]
	info, _ := e.emu.Server(id)
	got := portIPs(t, e, info.PortID)
	if len(got) != 1 || got[0].IPAddress != info.PrivateIP || info.PrivateIPv6 != info.PrivateIP || !netip.MustParsePrefix("fd00:20::/64").Contains(netip.MustParseAddr(info.PrivateIP)) {
		t.Errorf("fixed IPs %+v, server %+v", got, info)
	}
	if a := serverAddrs(t, e, id, "v6only"); len(a) != 1 || a[0][1] != 6.0 {
		t.Errorf("Nova addresses %v", a)
	}
	if _, err := e.emu.Launch(cloudsimopenstack.LaunchSpec{SubnetID: net.SubnetID, PublicIP: true}); err == nil {
		t.Error("a floating IP for an IPv6-only server")
	}
	f, err := floatingips.Create(ctx(t), e.networkClient(t), floatingips.CreateOpts{FloatingNetworkID: e.fx.ExternalNetworkID}).Extract()
	ok(t, err)
	_, err = floatingips.Update(ctx(t), e.networkClient(t), f.ID, floatingips.UpdateOpts{PortID: &info.PortID}).Extract()
	wantNeutronErr(t, err, http.StatusBadRequest, "BadRequest",
		"=Bad floatingip request: Cannot add floating IP to port "+info.PortID+" that has no fixed IPv4 addresses.")
}

// TestNeutronIPv6FloatingIP: a floating IP goes to a dual-stack port's
// IPv4 address; asking for its IPv6 one is refused with Neutron's
// message (neutron/db/l3_db.py:1365-1371).
func TestNeutronIPv6FloatingIP(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{NodeIPv6CIDR: "fd00:10::/64", NodeIPv6Mode: "slaac"})
	info, _ := e.emu.Server(e.launch(t, cloudsimopenstack.LaunchSpec{Name: "ds"})[0])
	c := e.networkClient(t)
	_, err := floatingips.Create(ctx(t), c, floatingips.CreateOpts{
		FloatingNetworkID: e.fx.ExternalNetworkID, PortID: info.PortID, FixedIP: info.PrivateIPv6,
	}).Extract()
	wantNeutronErr(t, err, http.StatusBadRequest, "BadRequest",
		"=Bad floatingip request: Cannot process floating IP association with "+info.PrivateIPv6+", since that is not an IPv4 address.")
	f, err := floatingips.Create(ctx(t), c, floatingips.CreateOpts{FloatingNetworkID: e.fx.ExternalNetworkID, PortID: info.PortID}).Extract()
	ok(t, err)
	if f.FixedIP != info.PrivateIP || f.RouterID != e.fx.RouterID {
		t.Errorf("floating IP %+v, want it on %s", f, info.PrivateIP)
	}
}

// TestNeutronIPv6Routes: IPv6 extra routes need a router interface on
// a subnet holding the next hop, which must not be the router's own
// address (neutron/db/extraroute_db.py:83-95); allowed address pairs
// take IPv6 CIDRs.
func TestNeutronIPv6Routes(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{NodeIPv6CIDR: "fd00:10::/64", NodeIPv6Mode: "slaac"})
	info, _ := e.emu.Server(e.launch(t, cloudsimopenstack.LaunchSpec{Name: "ds"})[0])
	c := e.networkClient(t)
	add := func(rs []routers.Route) error {
		return extraroutes.Add(ctx(t), c, e.fx.RouterID, extraroutes.Opts{Routes: &rs}).Err
	}
	ok(t, add(routeList("fd00:244:1::/64", info.PrivateIPv6, "10.244.1.0/24", info.PrivateIP)))
	r, err := routers.Get(ctx(t), c, e.fx.RouterID).Extract()
	ok(t, err)
	if !slices.Equal(r.Routes, routeList("fd00:244:1::/64", info.PrivateIPv6, "10.244.1.0/24", info.PrivateIP)) {
		t.Errorf("routes %+v", r.Routes)
	}
	// The destination keeps its text, the next hop is made canonical.
	ok(t, add(routeList("fd00:244:0::/64", "FD00:10:0::1:5")))
	r, err = routers.Get(ctx(t), c, e.fx.RouterID).Extract()
	ok(t, err)
	if last := r.Routes[len(r.Routes)-1]; last != (routers.Route{DestinationCIDR: "fd00:244:0::/64", NextHop: "fd00:10::1:5"}) {
		t.Errorf("route stored as %+v", last)
	}
	err = add(routeList("fd00:244:2::/64", "fd00:10::1"))
	wantNeutronErr(t, err, http.StatusBadRequest, "InvalidRoutes", "the nexthop is used by router")
	err = add(routeList("fd00:244:2::/64", "fd00:99::5"))
	wantNeutronErr(t, err, http.StatusBadRequest, "InvalidRoutes", "the nexthop is not connected with router")

	// A network whose IPv6 subnet the router has no interface on.
	net, err := e.emu.CreateNetwork(cloudsimopenstack.NetworkSpec{Name: "other6", CIDR: "fd00:30::/64", IPv6AddressMode: "slaac", IPv6RAMode: "slaac"})
	ok(t, err)
	other, _ := e.emu.Server(e.launch(t, cloudsimopenstack.LaunchSpec{Name: "o", SubnetID: net.SubnetID})[0])
	err = add(routeList("fd00:244:3::/64", other.PrivateIP))
	wantNeutronErr(t, err, http.StatusBadRequest, "InvalidRoutes", "the nexthop is not connected with router")
	_, err = e.emu.AddRouterInterface(e.fx.RouterID, net.SubnetID)
	ok(t, err)
	ok(t, add(routeList("fd00:244:3::/64", other.PrivateIP)))

	pairs := []ports.AddressPair{{IPAddress: "fd00:244:1::/64"}, {IPAddress: "10.244.1.0/24"}}
	p, err := ports.Update(ctx(t), c, info.PortID, ports.UpdateOpts{AllowedAddressPairs: &pairs}).Extract()
	ok(t, err)
	if len(p.AllowedAddressPairs) != 2 || p.AllowedAddressPairs[0].IPAddress != "fd00:244:1::/64" || p.AllowedAddressPairs[0].MACAddress != info.MAC {
		t.Errorf("pairs %+v", p.AllowedAddressPairs)
	}
	// PUT fixed_ips naming every fixed IP changes nothing.
	same := []ports.IP{{SubnetID: e.fx.SubnetID, IPAddress: info.PrivateIP}, {SubnetID: e.fx.SubnetIPv6ID}}
	_, err = ports.Update(ctx(t), c, info.PortID, ports.UpdateOpts{FixedIPs: same}).Extract()
	ok(t, err)
}

// TestNeutronIPv6Subnets: IPv6 subnets are checked as Neutron checks
// them; a SLAAC subnet added to a network gives its ports (not the
// router's) their EUI-64 addresses at once; a subnet taking RAs from an
// outside router cannot be a router interface (l3_db.py:137-144).
func TestNeutronIPv6Subnets(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	for _, tc := range []cloudsimopenstack.SubnetSpec{
		{CIDR: "fd00:40::/64", IPv6AddressMode: "slaac", IPv6RAMode: "dhcpv6-stateful"},
		{CIDR: "fd00:40::/80", IPv6AddressMode: "slaac"},
		{CIDR: "10.9.0.0/24", IPv6RAMode: "slaac"},
		{CIDR: "fd00:40::/64", IPv6AddressMode: "eui64"},
	} {
		tc.NetworkID = e.fx.NetworkID
		if _, err := e.emu.AddSubnet(tc); err == nil {
			t.Errorf("%+v accepted", tc)
		}
	}
	info, _ := e.emu.Server(e.launch(t, cloudsimopenstack.LaunchSpec{Name: "before"})[0])
	s6, err := e.emu.AddSubnet(cloudsimopenstack.SubnetSpec{NetworkID: e.fx.NetworkID, Name: "late", CIDR: "fd00:50::/64", IPv6AddressMode: "dhcpv6-stateless", IPv6RAMode: "dhcpv6-stateless"})
	ok(t, err)
	if got := portIPs(t, e, info.PortID); len(got) != 2 || got[1].SubnetID != s6 {
		t.Errorf("fixed IPs after a SLAAC subnet came %+v", got)
	}
	for _, p := range e.emu.DevicePorts(e.fx.RouterID) {
		if len(p.FixedIPs) != 1 {
			t.Errorf("router port %+v", p)
		}
	}
	ra, err := e.emu.AddSubnet(cloudsimopenstack.SubnetSpec{NetworkID: e.fx.NetworkID, Name: "ra", CIDR: "fd00:60::/64", IPv6AddressMode: "slaac"})
	ok(t, err)
	if _, err := e.emu.AddRouterInterface(e.fx.RouterID, ra); err == nil {
		t.Error("an interface on a subnet whose RAs come from elsewhere")
	}
}
