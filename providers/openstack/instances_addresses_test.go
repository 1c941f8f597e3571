package openstack

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	osemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

func internalIP(a string) v1.NodeAddress { return v1.NodeAddress{Type: v1.NodeInternalIP, Address: a} }
func externalIP(a string) v1.NodeAddress { return v1.NodeAddress{Type: v1.NodeExternalIP, Address: a} }
func hostname(a string) v1.NodeAddress   { return v1.NodeAddress{Type: v1.NodeHostName, Address: a} }

func activePort(ips ...string) attachedPort {
	p := attachedPort{Status: "ACTIVE"}
	for _, ip := range ips {
		p.FixedIPs = append(p.FixedIPs, struct {
			IPAddress string `json:"ip_address"`
		}{ip})
	}
	return p
}

// TestNodeAddressesAsUpstream runs upstream's own nodeAddresses cases
// (kubernetes/cloud-provider-openstack pkg/openstack/openstack_test.go,
// TestNodeAddresses*) and a few more.
func TestNodeAddressesAsUpstream(t *testing.T) {
	const (
		access4 = "50.56.176.99"
		access6 = "2001:4800:790e:510:be76:4eff:fe04:82a8"
		pub6    = "2001:4800:780e:510:be76:4eff:fe04:84a8"
		meta    = "a1-yinvcez57-0-bvynoyawrhcg-kube-minion-fg5i4jwcc2yy.novalocal"
	)
	// server is upstream's test server, its public network named pub.
	server := func(pub string, metadata bool) *novaServer {
		s := &novaServer{
			AccessIPv4: access4, AccessIPv6: access6,
			Addresses: map[string][]novaAddress{
				"private": {{Addr: "10.0.0.32", Type: "fixed"}, {Addr: "50.56.176.36", Type: "floating"}, {Addr: "10.0.0.31"}},
				pub:       {{Addr: "50.56.176.35"}, {Addr: pub6}},
			},
		}
		if metadata {
			s.Metadata = map[string]string{"name": "a1", metadataHostname: meta}
		}
		return s
	}
	ports := []attachedPort{activePort("10.0.0.32", "10.0.0.31")}
	withAlsoPrivate := func() *novaServer {
		s := server("pub-net", false)
		s.Addresses["also-private"] = []novaAddress{{Addr: "10.0.0.64"}}
		return s
	}
	for _, tt := range []struct {
		name  string
		s     *novaServer
		ports []attachedPort
		opts  NetworkingSection
		want  []v1.NodeAddress
	}{
		{
			name: "TestNodeAddresses", s: server("public", true), ports: ports,
			opts: NetworkingSection{PublicNetworkNames: []string{"public"}},
			want: []v1.NodeAddress{internalIP("10.0.0.32"), internalIP("10.0.0.31"), externalIP(access4), externalIP(access6), hostname(meta),
				externalIP("50.56.176.36"), externalIP("50.56.176.35"), externalIP(pub6)},
		},
		{
			name: "TestNodeAddressesCustomPublicNetwork", s: server("pub-net", false), ports: ports,
			opts: NetworkingSection{PublicNetworkNames: []string{"pub-net"}},
			want: []v1.NodeAddress{internalIP("10.0.0.32"), internalIP("10.0.0.31"), externalIP(access4), externalIP(access6),
				externalIP("50.56.176.36"), externalIP("50.56.176.35"), externalIP(pub6)},
		},
		{
			name: "TestNodeAddressesCustomPublicNetworkWithIntersectingFixedIP",
			s: &novaServer{AccessIPv4: access4, AccessIPv6: access6, Addresses: map[string][]novaAddress{
				"private": {{Addr: "10.0.0.32", Type: "fixed"}, {Addr: "10.0.0.31"}},
				"pub-net": {{Addr: "50.56.176.36"}, {Addr: pub6}},
			}},
			ports: []attachedPort{activePort("10.0.0.32", "10.0.0.31", "50.56.176.36")},
			opts:  NetworkingSection{PublicNetworkNames: []string{"pub-net"}},
			want: []v1.NodeAddress{internalIP("10.0.0.32"), internalIP("10.0.0.31"), externalIP(access4), externalIP(access6),
				externalIP("50.56.176.36"), externalIP(pub6)},
		},
		{
			name: "TestNodeAddressesMultipleCustomInternalNetworks", s: withAlsoPrivate(), ports: ports,
			opts: NetworkingSection{InternalNetworkNames: []string{"private", "also-private"}},
			want: []v1.NodeAddress{internalIP("10.0.0.32"), internalIP("10.0.0.31"), externalIP(access4), externalIP(access6),
				internalIP("10.0.0.64"), externalIP("50.56.176.36")},
		},
		{
			name: "TestNodeAddressesOneInternalNetwork", s: withAlsoPrivate(), ports: ports,
			opts: NetworkingSection{InternalNetworkNames: []string{"also-private"}},
			want: []v1.NodeAddress{externalIP(access4), externalIP(access6), internalIP("10.0.0.64"), externalIP("50.56.176.36")},
		},
		{
			name: "TestNodeAddressesIPv6Disabled", s: server("public", false), ports: ports,
			opts: NetworkingSection{PublicNetworkNames: []string{"public"}, IPv6SupportDisabled: true},
			want: []v1.NodeAddress{internalIP("10.0.0.32"), internalIP("10.0.0.31"), externalIP(access4),
				externalIP("50.56.176.36"), externalIP("50.56.176.35")},
		},
		{
			name: "TestNodeAddressesWithAddressSortOrderOptions", s: server("public", true), ports: ports,
			opts: NetworkingSection{PublicNetworkNames: []string{"public"}, AddressSortOrder: []string{"10.0.0.0/8", "50.56.176.0/24", "2001:4800::/32"}},
			want: []v1.NodeAddress{internalIP("10.0.0.31"), internalIP("10.0.0.32"), externalIP("50.56.176.35"), externalIP("50.56.176.36"),
				externalIP(access4), externalIP(pub6), externalIP(access6), hostname(meta)},
		},
		{
			// A port that is not ACTIVE contributes nothing: its
			// address comes with Nova's, after the access IPs.
			name: "port down", s: server("public", false), ports: []attachedPort{{Status: "DOWN", FixedIPs: activePort("10.0.0.32").FixedIPs}, activePort("10.0.0.31")},
			opts: NetworkingSection{PublicNetworkNames: []string{"public"}, IPv6SupportDisabled: true},
			want: []v1.NodeAddress{internalIP("10.0.0.31"), externalIP(access4), internalIP("10.0.0.32"),
				externalIP("50.56.176.36"), externalIP("50.56.176.35")},
		},
		{
			// Without upstream's metadata, the server's name is the
			// Hostname, last; IPv6 fixed addresses of ports go too.
			name: "server name and IPv6 port", s: &novaServer{Name: "worker-1", Addresses: map[string][]novaAddress{
				"nodes": {{Addr: "10.0.0.5", Type: "fixed"}, {Addr: "fd00::5", Type: "fixed"}},
			}},
			ports: []attachedPort{activePort("fd00::5", "10.0.0.5")},
			opts:  NetworkingSection{IPv6SupportDisabled: true},
			want:  []v1.NodeAddress{internalIP("10.0.0.5"), hostname("worker-1")},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := nodeAddresses(tt.s, tt.ports, &tt.opts); !slices.Equal(got, tt.want) {
				t.Errorf("addresses\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

// TestAssumedPorts: a server with one fixed address needs no port
// listing; its address stands for its one ACTIVE port.
func TestAssumedPorts(t *testing.T) {
	one := &novaServer{ID: "s1", Addresses: map[string][]novaAddress{"nodes": {{Addr: "10.0.0.5", Type: "fixed"}, {Addr: "172.24.0.5", Type: "floating"}}}}
	if one.needsPorts() {
		t.Error("one fixed address needs ports")
	}
	if got := one.assumedPorts(); len(got) != 1 || got[0].Status != "ACTIVE" || len(got[0].FixedIPs) != 1 || got[0].FixedIPs[0].IPAddress != "10.0.0.5" {
		t.Errorf("assumed ports %+v", got)
	}
	two := &novaServer{Addresses: map[string][]novaAddress{"a": {{Addr: "10.0.0.5", Type: "fixed"}}, "b": {{Addr: "10.1.0.5", Type: "fixed"}}}}
	if !two.needsPorts() {
		t.Error("two fixed addresses need no ports")
	}
	if got := (&novaServer{}).assumedPorts(); got != nil {
		t.Errorf("assumed ports of a server without addresses %+v", got)
	}
}

// multiNICEnv is a cloud whose servers each have three interfaces: on
// the node network, then zeta-storage (10.20.0.0/24), then alpha-backend
// (10.30.0.0/24), and a floating IP on the first.
type multiNICEnv struct {
	*testEnv
	ids []string
}

func newMultiNICEnv(t *testing.T, servers int, edit func(*Section)) *multiNICEnv {
	t.Helper()
	env := newTestEnv(t, osemu.Config{}, edit)
	zeta, err := env.emu.CreateNetwork(osemu.NetworkSpec{Name: "zeta-storage", CIDR: "10.20.0.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	alpha, err := env.emu.CreateNetwork(osemu.NetworkSpec{Name: "alpha-backend", CIDR: "10.30.0.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	ids := env.launch(t, osemu.LaunchSpec{
		Count: servers, Name: "multi", PublicIP: true, AccessIPv6: "2001:db8::7",
		ExtraSubnetIDs: []string{zeta.SubnetID, alpha.SubnetID},
	})
	env.srv.ResetCalls()
	return &multiNICEnv{testEnv: env, ids: ids}
}

// addrs are server i's addresses: on the node network, zeta, alpha, and
// its floating IP.
func (e *multiNICEnv) addrs(t *testing.T, i int) (nodes, zeta, alpha, fip string) {
	t.Helper()
	for _, p := range e.emu.DevicePorts(e.ids[i]) {
		switch p.NetworkID {
		case e.fx.NetworkID:
			nodes, fip = p.FixedIP, p.FloatingIP
		default:
			if p.FixedIP[:5] == "10.20" {
				zeta = p.FixedIP
			} else {
				alpha = p.FixedIP
			}
		}
	}
	return nodes, zeta, alpha, fip
}

// TestMultiNICNodeAddresses: the Node addresses of servers with several
// interfaces, as upstream computes them, through the real clients: the
// interfaces' addresses first in their order (not the networks' names),
// and [Networking]'s choices applied; the ports of every server come
// from one listing.
func TestMultiNICNodeAddresses(t *testing.T) {
	const access6 = "2001:db8::7"
	for _, tt := range []struct {
		name string
		opts NetworkingSection
		want func(nodes, zeta, alpha, fip string) []v1.NodeAddress
	}{
		{"defaults", NetworkingSection{}, func(nodes, zeta, alpha, fip string) []v1.NodeAddress {
			return []v1.NodeAddress{internalIP(nodes), internalIP(zeta), internalIP(alpha), externalIP(access6), externalIP(fip), hostname("multi-0")}
		}},
		{"one internal network", NetworkingSection{InternalNetworkNames: []string{"zeta-storage"}}, func(nodes, zeta, alpha, fip string) []v1.NodeAddress {
			return []v1.NodeAddress{internalIP(zeta), externalIP(access6), externalIP(fip), hostname("multi-0")}
		}},
		{"a public network", NetworkingSection{PublicNetworkNames: []string{"alpha-backend"}}, func(nodes, zeta, alpha, fip string) []v1.NodeAddress {
			return []v1.NodeAddress{internalIP(nodes), internalIP(zeta), externalIP(access6), externalIP(alpha), externalIP(fip), hostname("multi-0")}
		}},
		{"sort order, no IPv6", NetworkingSection{AddressSortOrder: []string{"10.30.0.0/24", "10.20.0.0/16"}, IPv6SupportDisabled: true}, func(nodes, zeta, alpha, fip string) []v1.NodeAddress {
			return []v1.NodeAddress{internalIP(alpha), internalIP(zeta), internalIP(nodes), externalIP(fip), hostname("multi-0")}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newMultiNICEnv(t, 3, func(s *Section) { s.Networking = tt.opts })
			for i, id := range e.ids {
				md, err := e.cloud.instances.InstanceMetadata(t.Context(), node(fmt.Sprintf("multi-%d", i), "openstack:///"+id))
				if err != nil {
					t.Fatal(err)
				}
				want := tt.want(e.addrs(t, i))
				want[len(want)-1] = hostname(fmt.Sprintf("multi-%d", i))
				if !slices.Equal(md.NodeAddresses, want) {
					t.Errorf("server %d addresses\n got %v\nwant %v", i, md.NodeAddresses, want)
				}
			}
			if calls := e.srv.Calls(); calls["nova:ListServersDetail"] != 1 || calls["neutron:ListPorts"] != 1 {
				t.Errorf("calls %v, want one server listing and one port listing", calls)
			}
		})
	}
}

// TestMultiNICLookups: a server the listing lacks (looked up by ID or by
// name) has its ports read with it, so its addresses are the same.
func TestMultiNICLookups(t *testing.T) {
	e := newMultiNICEnv(t, 1, nil)
	nodes, zeta, alpha, fip := e.addrs(t, 0)
	want := []v1.NodeAddress{internalIP(nodes), internalIP(zeta), internalIP(alpha), externalIP("2001:db8::7"), externalIP(fip), hostname("multi")}
	byID, err := e.cloud.instances.Snap.ByIDs(t.Context(), e.ids)
	if err != nil || len(byID) != 1 {
		t.Fatalf("by ID: %v, %v", byID, err)
	}
	for _, s := range byID {
		if !slices.Equal(s.addresses, want) {
			t.Errorf("by ID\n got %v\nwant %v", s.addresses, want)
		}
	}
	r := serverReader{compute: e.api.compute, network: e.api.network, networking: &e.s.Networking}
	for name, lookup := range map[string]func() (map[string]*server, error){
		"id":   func() (map[string]*server, error) { return r.lookupIDs(t.Context(), e.ids) },
		"name": func() (map[string]*server, error) { return r.lookupNames(t.Context(), []string{"multi"}) },
	} {
		e.srv.ResetCalls()
		found, err := lookup()
		if err != nil || len(found) != 1 {
			t.Fatalf("%s: %v, %v", name, found, err)
		}
		for _, s := range found {
			if !slices.Equal(s.addresses, want) {
				t.Errorf("%s\n got %v\nwant %v", name, s.addresses, want)
			}
		}
		if n := e.srv.CallCount("neutron:ListPorts"); n != 1 {
			t.Errorf("%s: %d port listings", name, n)
		}
	}
}

// TestSingleNICNoPortListing: servers with one fixed address each cost
// no port listing.
func TestSingleNICNoPortListing(t *testing.T) {
	env := newTestEnv(t, osemu.Config{}, nil)
	ids := env.launch(t, osemu.LaunchSpec{Count: 5, Name: "w", PublicIP: true})
	for i, id := range ids {
		if _, err := env.cloud.instances.InstanceMetadata(t.Context(), node(fmt.Sprintf("w-%d", i), "openstack:///"+id)); err != nil {
			t.Fatal(err)
		}
	}
	if calls := env.srv.Calls(); calls["neutron:ListPorts"] != 0 {
		t.Errorf("calls %v, want no port listing", calls)
	}
}

// TestNodeAddressesIPv6: upstream's nodeAddresses on IPv6 and dual-stack
// servers (kubernetes/cloud-provider-openstack@c453fb7c
// pkg/openstack/instances_addresses.go:142-293), pinned address by
// address.
func TestNodeAddressesIPv6(t *testing.T) {
	const fip, access6 = "172.24.0.5", "2001:db8:a::1"
	dual := func() *novaServer {
		return &novaServer{Name: "ds", AccessIPv6: access6, Addresses: map[string][]novaAddress{
			"nodes":  {{Addr: "10.0.0.5", Type: "fixed"}, {Addr: "fd00::5", Type: "fixed"}, {Addr: fip, Type: "floating"}},
			"public": {{Addr: "2001:db8:b::5", Type: "fixed"}},
		}}
	}
	v6only := &novaServer{Name: "six", Addresses: map[string][]novaAddress{"v6": {{Addr: "fd00::6", Type: "fixed"}}}}
	for _, tt := range []struct {
		name  string
		s     *novaServer
		ports []attachedPort
		opts  NetworkingSection
		want  []v1.NodeAddress
	}{
		{
			// Both fixed IPs of the one port, in Neutron's order, then
			// the access IP, then Nova's addresses network by network.
			name: "dual-stack port", s: dual(), ports: []attachedPort{activePort("10.0.0.5", "fd00::5")},
			want: []v1.NodeAddress{internalIP("10.0.0.5"), internalIP("fd00::5"), externalIP(access6), externalIP(fip),
				internalIP("2001:db8:b::5"), hostname("ds")},
		},
		{
			// Neutron lists 2001:db8::5 before 203.0.113.5 (text order):
			// the IPv6 address is the first InternalIP, upstream too.
			name: "dual-stack port, IPv6 first", s: &novaServer{Name: "doc", Addresses: map[string][]novaAddress{
				"doc": {{Addr: "203.0.113.5", Type: "fixed"}, {Addr: "2001:db8::5", Type: "fixed"}},
			}},
			ports: []attachedPort{activePort("2001:db8::5", "203.0.113.5")},
			want:  []v1.NodeAddress{internalIP("2001:db8::5"), internalIP("203.0.113.5"), hostname("doc")},
		},
		{
			name: "public network", s: dual(), ports: []attachedPort{activePort("10.0.0.5", "fd00::5")},
			opts: NetworkingSection{PublicNetworkNames: []string{"public"}},
			want: []v1.NodeAddress{internalIP("10.0.0.5"), internalIP("fd00::5"), externalIP(access6), externalIP(fip),
				externalIP("2001:db8:b::5"), hostname("ds")},
		},
		{
			// The only fixed address needs no port listing.
			name: "IPv6 only", s: v6only, ports: v6only.assumedPorts(),
			want: []v1.NodeAddress{internalIP("fd00::6"), hostname("six")},
		},
		{
			name: "IPv6 only, IPv6 disabled", s: v6only, ports: v6only.assumedPorts(), opts: NetworkingSection{IPv6SupportDisabled: true},
			want: []v1.NodeAddress{hostname("six")},
		},
		{
			// Neither the port's IPv6 address, nor accessIPv6, nor
			// Nova's.
			name: "IPv6 disabled", s: dual(), ports: []attachedPort{activePort("10.0.0.5", "fd00::5")},
			opts: NetworkingSection{IPv6SupportDisabled: true, PublicNetworkNames: []string{"public"}},
			want: []v1.NodeAddress{internalIP("10.0.0.5"), externalIP(fip), hostname("ds")},
		},
		{
			// A DOWN port gives nothing, so the addresses come from Nova,
			// where the second IPv6 filter (upstream :275-283) applies.
			name: "IPv6 disabled, port down", s: dual(), ports: []attachedPort{{Status: "DOWN", FixedIPs: activePort("10.0.0.5", "fd00::5").FixedIPs}},
			opts: NetworkingSection{IPv6SupportDisabled: true},
			want: []v1.NodeAddress{internalIP("10.0.0.5"), externalIP(fip), hostname("ds")},
		},
		{
			// An IPv6 CIDR first: its addresses lead, ascending as bytes
			// (fd00::9 before fd00::10, which text order reverses); those
			// in no CIDR keep their order after; the hostname stays last.
			name: "sort order, IPv6 CIDR first",
			s: &novaServer{Name: "ds", AccessIPv6: access6, Addresses: map[string][]novaAddress{
				"nodes": {{Addr: "10.0.0.7"}, {Addr: "fd00::10"}, {Addr: "10.0.0.5"}, {Addr: "fd00::9"}, {Addr: fip, Type: "floating"}},
			}},
			ports: []attachedPort{activePort("10.0.0.7", "fd00::10"), activePort("10.0.0.5", "fd00::9")},
			opts:  NetworkingSection{AddressSortOrder: []string{"fd00::/64", "10.0.0.0/8"}},
			want: []v1.NodeAddress{internalIP("fd00::9"), internalIP("fd00::10"), internalIP("10.0.0.5"), internalIP("10.0.0.7"),
				externalIP(access6), externalIP(fip), hostname("ds")},
		},
		{
			// ::/0 holds no IPv4 address (net.IPNet.Contains); in it,
			// byte order whatever the address type.
			name: "sort order ::/0", s: dual(), ports: []attachedPort{activePort("10.0.0.5", "fd00::5")},
			opts: NetworkingSection{AddressSortOrder: []string{"::/0"}},
			want: []v1.NodeAddress{externalIP(access6), internalIP("2001:db8:b::5"), internalIP("fd00::5"),
				internalIP("10.0.0.5"), externalIP(fip), hostname("ds")},
		},
		{
			// ::ffff:0:0/96 holds every IPv4 address.
			name: "sort order ::ffff:0:0/96", s: dual(), ports: []attachedPort{activePort("10.0.0.5", "fd00::5")},
			opts: NetworkingSection{AddressSortOrder: []string{"::ffff:0:0/96"}},
			want: []v1.NodeAddress{internalIP("10.0.0.5"), externalIP(fip), internalIP("fd00::5"), externalIP(access6),
				internalIP("2001:db8:b::5"), hostname("ds")},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := nodeAddresses(tt.s, tt.ports, &tt.opts); !slices.Equal(got, tt.want) {
				t.Errorf("addresses\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

// TestIPv6NodeAddresses: through the real clients, servers of a
// dual-stack node network (a SLAAC subnet: Neutron gives each port its
// EUI-64 address) have both fixed IPs as InternalIPs, in Neutron's
// order, read with one port listing; an IPv6-only server has its one
// address without a port listing; ipv6SupportDisabled leaves IPv6 out.
func TestIPv6NodeAddresses(t *testing.T) {
	for _, disabled := range []bool{false, true} {
		t.Run(fmt.Sprintf("ipv6SupportDisabled=%v", disabled), func(t *testing.T) {
			env := newTestEnv(t, osemu.Config{NodeIPv6CIDR: "fd00:10::/64", NodeIPv6Mode: "slaac"},
				func(s *Section) { s.Networking.IPv6SupportDisabled = disabled })
			ids := env.launch(t, osemu.LaunchSpec{Count: 3, Name: "ds", PublicIP: true})
			net6, err := env.emu.CreateNetwork(osemu.NetworkSpec{Name: "v6only", CIDR: "fd00:20::/64", IPv6AddressMode: "slaac", IPv6RAMode: "slaac"})
			if err != nil {
				t.Fatal(err)
			}
			six := env.launch(t, osemu.LaunchSpec{Name: "six", SubnetID: net6.SubnetID})[0]
			env.srv.ResetCalls()
			for i, id := range append(ids, six) {
				info, _ := env.emu.Server(id)
				var want []v1.NodeAddress
				switch {
				case id == six && disabled:
					want = []v1.NodeAddress{hostname("six")}
				case id == six:
					want = []v1.NodeAddress{internalIP(info.PrivateIP), hostname("six")}
				case disabled:
					want = []v1.NodeAddress{internalIP(info.PrivateIP), externalIP(info.PublicIP), hostname(info.Name)}
				default:
					want = []v1.NodeAddress{internalIP(info.PrivateIP), internalIP(info.PrivateIPv6), externalIP(info.PublicIP), hostname(info.Name)}
				}
				md, err := env.cloud.instances.InstanceMetadata(t.Context(), node(info.Name, osemu.ProviderID(id)))
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(md.NodeAddresses, want) {
					t.Errorf("server %d addresses\n got %v\nwant %v", i, md.NodeAddresses, want)
				}
			}
			if calls := env.srv.Calls(); calls["nova:ListServersDetail"] != 1 || calls["neutron:ListPorts"] != 1 {
				t.Errorf("calls %v, want one server listing and one port listing", calls)
			}
		})
	}
}
