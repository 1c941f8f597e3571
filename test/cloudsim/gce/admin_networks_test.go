package gce

import (
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
)

// wantAdminAPIError fails unless err is the admin API's form of the API
// error with reason on field.
func wantAdminAPIError(t *testing.T, err error, reason, field string) {
	t.Helper()
	var aerr *apiError
	if !errors.As(err, &aerr) {
		t.Fatalf("want %s on %s, got %v", reason, field, err)
	}
	if aerr.Reason != reason || !strings.Contains(aerr.Message, "'"+field+"'") {
		t.Errorf("want %s on %s, got %s: %s", reason, field, aerr.Reason, aerr.Message)
	}
}

// TestAddNetwork: networks with one subnetwork each, checked as
// subnetworks.insert checks them, read back through the real client
// with the API's IPv6 fields.
func TestAddNetwork(t *testing.T) {
	env := newTestEnv(t, Config{})
	for _, tt := range []struct {
		name   string
		spec   NetworkSpec
		reason string
		field  string
	}{
		{"IPv6 access type without IPv6", NetworkSpec{Name: "n1", SubnetCIDR: "10.1.0.0/24", IPv6AccessType: IPv6External}, "invalid", "resource.ipv6AccessType"},
		{"IPv6 stack without an access type", NetworkSpec{Name: "n1", SubnetCIDR: "10.1.0.0/24", StackType: StackDual}, "required", "resource.ipv6AccessType"},
		{"unknown access type", NetworkSpec{Name: "n1", SubnetCIDR: "10.1.0.0/24", StackType: StackDual, IPv6AccessType: "PUBLIC"}, "invalid", "resource.ipv6AccessType"},
		{"unknown stack type", NetworkSpec{Name: "n1", SubnetCIDR: "10.1.0.0/24", StackType: "IPV6"}, "invalid", "resource.stackType"},
		{"IPv4 range missing", NetworkSpec{Name: "n1"}, "required", "resource.ipCidrRange"},
		{"IPv6-only with an IPv4 range", NetworkSpec{Name: "n1", SubnetCIDR: "10.1.0.0/24", StackType: StackIPv6Only, IPv6AccessType: IPv6Internal}, "invalid", "resource.ipCidrRange"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := env.emu.AddNetwork(tt.spec)
			wantAdminAPIError(t, err, tt.reason, tt.field)
		})
	}
	if _, err := env.emu.AddNetwork(NetworkSpec{Name: "n1", SubnetCIDR: DefaultSubnetCIDR}); err == nil {
		t.Error("a range overlapping the fixture's was taken")
	}

	ext, err := env.emu.AddNetwork(NetworkSpec{Name: "ext", SubnetCIDR: "10.1.0.0/24", StackType: StackDual, IPv6AccessType: IPv6External})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.emu.AddNetwork(NetworkSpec{Name: "ext", SubnetCIDR: "10.2.0.0/24"}); err == nil {
		t.Error("a second network named ext")
	}
	sn, err := env.subnetworks(t).Get(t.Context(), &computepb.GetSubnetworkRequest{Project: env.project, Region: env.region, Subnetwork: ext.SubnetworkName})
	if err != nil {
		t.Fatal(err)
	}
	p, perr := netip.ParsePrefix(sn.GetExternalIpv6Prefix())
	if perr != nil || p.Bits() != 64 || !externalIPv6Space.Contains(p.Addr()) || sn.GetStackType() != StackDual ||
		sn.GetIpv6AccessType() != IPv6External || sn.InternalIpv6Prefix != nil || sn.GetIpCidrRange() != "10.1.0.0/24" ||
		sn.GetNetwork() != ext.NetworkURL || p.String() != ext.IPv6CIDR {
		t.Errorf("subnetwork %v", sn)
	}

	// Over HTTP: 201 and the network, 400 with the API's words.
	var info NetworkInfo
	code := adminJSON(t, env, "POST", "/admin/gce/networks",
		strings.NewReader(`{"name":"int","subnetCidr":"10.3.0.0/24","stackType":"IPV4_IPV6","ipv6AccessType":"INTERNAL"}`), &info)
	if code != http.StatusCreated || !strings.HasPrefix(info.IPv6CIDR, "fd20:") || info.SubnetworkName != "int-subnet" {
		t.Errorf("admin add network: %d %+v", code, info)
	}
	var body struct {
		Error string `json:"error"`
	}
	code = adminJSON(t, env, "POST", "/admin/gce/networks", strings.NewReader(`{"name":"v4","subnetCidr":"10.4.0.0/24","ipv6AccessType":"INTERNAL"}`), &body)
	if code != http.StatusBadRequest || !strings.Contains(body.Error, "resource.ipv6AccessType") {
		t.Errorf("admin add network: %d %+v", code, body)
	}
}

// TestInstanceInterfaces: an instance with an interface on each of three
// networks, read through the real client as GCE returns it: nic0 on the
// fixture's dual-stack subnetwork with an internal IPv6 /96, nic1 on an
// EXTERNAL-IPv6 subnetwork with an external IPv4 address and an external
// IPv6 /96 in an IPv6 access config (no ipv6Address), nic2 IPv4 only.
// Deleting the instance frees its /96s.
func TestInstanceInterfaces(t *testing.T) {
	env := newTestEnv(t, Config{})
	ext, err := env.emu.AddNetwork(NetworkSpec{Name: "ext", SubnetCIDR: "10.1.0.0/24", StackType: StackDual, IPv6AccessType: IPv6External})
	if err != nil {
		t.Fatal(err)
	}
	v4, err := env.emu.AddNetwork(NetworkSpec{Name: "v4", SubnetCIDR: "10.2.0.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	spec := InstanceSpec{Name: "multi", Zone: "a", StackType: StackDual, Interfaces: []InterfaceSpec{
		{Subnetwork: ext.SubnetworkName, StackType: StackDual, ExternalIP: true, ExternalIPv6: true},
		{Subnetwork: v4.SubnetworkName},
	}}
	info := env.launch(t, spec)
	in, err := env.getInstance(t, info.Zone, "multi")
	if err != nil {
		t.Fatal(err)
	}
	nics := in.GetNetworkInterfaces()
	if len(nics) != 3 || len(info.Interfaces) != 3 {
		t.Fatalf("%d interfaces (%d reported)", len(nics), len(info.Interfaces))
	}
	fx := env.emu.Fixture()
	n0, n1, n2 := nics[0], nics[1], nics[2]
	if n0.GetName() != "nic0" || n0.GetStackType() != StackDual || n0.GetIpv6AccessType() != IPv6Internal ||
		!netip.MustParsePrefix(fx.SubnetworkIPv6CIDR).Contains(netip.MustParseAddr(n0.GetIpv6Address())) || len(n0.GetIpv6AccessConfigs()) != 0 {
		t.Errorf("nic0 %v", n0)
	}
	ac := n1.GetIpv6AccessConfigs()
	if n1.GetName() != "nic1" || n1.GetNetwork() != ext.NetworkURL || n1.GetSubnetwork() != ext.SubnetworkURL || n1.GetStackType() != StackDual ||
		n1.GetIpv6AccessType() != IPv6External || n1.Ipv6Address != nil || len(ac) != 1 || ac[0].GetType() != "DIRECT_IPV6" ||
		ac[0].GetExternalIpv6PrefixLength() != 96 || !netip.MustParsePrefix(ext.IPv6CIDR).Contains(netip.MustParseAddr(ac[0].GetExternalIpv6())) ||
		len(n1.GetAccessConfigs()) != 1 || n1.GetAccessConfigs()[0].GetNatIP() == "" ||
		!netip.MustParsePrefix("10.1.0.0/24").Contains(netip.MustParseAddr(n1.GetNetworkIP())) {
		t.Errorf("nic1 %v", n1)
	}
	if n2.GetName() != "nic2" || n2.GetStackType() != StackIPv4Only || n2.Ipv6AccessType != nil || n2.Ipv6Address != nil ||
		!netip.MustParsePrefix("10.2.0.0/24").Contains(netip.MustParseAddr(n2.GetNetworkIP())) {
		t.Errorf("nic2 %v", n2)
	}
	if info.Interfaces[1].ExternalIPv6 != ac[0].GetExternalIpv6() || info.Interfaces[1].ExternalIP != n1.GetAccessConfigs()[0].GetNatIP() {
		t.Errorf("admin info %+v", info.Interfaces[1])
	}
	// The /96s are the instance's until it is deleted.
	if err := env.emu.Terminate("multi"); err != nil {
		t.Fatal(err)
	}
	again := env.launch(t, spec)
	if again.Interfaces[1].ExternalIPv6 != ac[0].GetExternalIpv6() || again.IPv6Address != n0.GetIpv6Address() {
		t.Errorf("after delete: %+v, want the freed /96s again", again.Interfaces)
	}
}

// TestInstanceInterfacesRefused: what instances.insert refuses about
// interfaces, with the API's reason and field.
func TestInstanceInterfacesRefused(t *testing.T) {
	env := newTestEnv(t, Config{})
	ext, err := env.emu.AddNetwork(NetworkSpec{Name: "ext", SubnetCIDR: "10.1.0.0/24", StackType: StackDual, IPv6AccessType: IPv6External})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		spec   InstanceSpec
		reason string
		field  string
	}{
		{"two interfaces on one network", InstanceSpec{Interfaces: []InterfaceSpec{{Subnetwork: env.emu.Fixture().SubnetworkName}}},
			"invalid", "resource.networkInterfaces[1].network"},
		{"external IPv6 on an INTERNAL subnetwork", InstanceSpec{StackType: StackDual, ExternalIPv6: true},
			"invalid", "resource.networkInterfaces[0].ipv6AccessConfigs"},
		{"internal IPv6 address on an EXTERNAL subnetwork", InstanceSpec{Interfaces: []InterfaceSpec{{Subnetwork: ext.SubnetworkName, StackType: StackDual, IPv6Address: "2600:1900:4000::"}}},
			"invalid", "resource.networkInterfaces[1].ipv6Address"},
		{"IPv6-only on an EXTERNAL subnetwork without an access config", InstanceSpec{Interfaces: []InterfaceSpec{{Subnetwork: ext.SubnetworkName, StackType: StackIPv6Only}}},
			"invalid", "resource.networkInterfaces[1].ipv6AccessConfigs"},
		{"IPv6-only with an external IPv4", InstanceSpec{Interfaces: []InterfaceSpec{{Subnetwork: ext.SubnetworkName, StackType: StackIPv6Only, ExternalIP: true, ExternalIPv6: true}}},
			"invalid", "resource.networkInterfaces[1].accessConfigs"},
		{"no such subnetwork", InstanceSpec{Interfaces: []InterfaceSpec{{Subnetwork: "nowhere"}}},
			"notFound", "projects/test-project/regions/us-central1/subnetworks/nowhere"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.Name = "refused"
			_, err := env.emu.Launch(tt.spec)
			var aerr *apiError
			if tt.reason == "notFound" {
				if !errors.As(err, &aerr) || aerr.Status != http.StatusNotFound || !strings.Contains(aerr.Message, tt.field) {
					t.Errorf("want 404, got %v", err)
				}
				return
			}
			wantAdminAPIError(t, err, tt.reason, tt.field)
		})
	}
	if _, err := env.emu.Launch(InstanceSpec{Name: "ok", Interfaces: []InterfaceSpec{{Subnetwork: ext.SubnetworkName, StackType: StackDual, ExternalIPv6: true}}}); err != nil {
		t.Errorf("after the refusals: %v (a refused launch must release what it claimed)", err)
	}
	if list := env.emu.Instances(); len(list) != 1 {
		t.Errorf("%d instances after refused launches", len(list))
	}
}
