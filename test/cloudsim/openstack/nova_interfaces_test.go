package openstack_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/external"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

// addressKeys reads the network names of a server's "addresses" in the
// order the JSON holds them (Nova's VIF order), which a Go map loses.
func addressKeys(t *testing.T, raw string) []string {
	t.Helper()
	var doc struct {
		Server struct {
			Addresses json.RawMessage `json:"addresses"`
		} `json:"server"`
	}
	ok(t, json.Unmarshal([]byte(raw), &doc))
	dec := json.NewDecoder(strings.NewReader(string(doc.Server.Addresses)))
	var keys []string
	if _, err := dec.Token(); err != nil { // {
		t.Fatal(err)
	}
	for dec.More() {
		tok, err := dec.Token()
		ok(t, err)
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		ok(t, dec.Decode(&skip))
	}
	return keys
}

// TestServerWithSeveralInterfaces: a server launched with extra subnets
// has a port on each, in order; Nova lists its addresses network by
// network in that order (fixed ones, then floating), reports the access
// IPs it was booted with, and Neutron lists its ports by device_id.
// Deleting it deletes every port.
func TestServerWithSeveralInterfaces(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	zeta, err := e.emu.CreateNetwork(cloudsimopenstack.NetworkSpec{Name: "zeta-storage", CIDR: "10.20.0.0/24"})
	ok(t, err)
	alpha, err := e.emu.CreateNetwork(cloudsimopenstack.NetworkSpec{Name: "alpha-backend", CIDR: "10.30.0.0/24"})
	ok(t, err)
	id := e.launch(t, cloudsimopenstack.LaunchSpec{
		Name: "multi", PublicIP: true, AccessIPv4: "203.0.113.7", AccessIPv6: "2001:db8::7",
		// A second port on the node network too: its addresses join the
		// network's list.
		ExtraSubnetIDs: []string{zeta.SubnetID, alpha.SubnetID, e.fx.SubnetID},
	})[0]
	info, _ := e.emu.Server(id)
	if len(info.PortIDs) != 4 || info.PortIDs[0] != info.PortID || info.AccessIPv4 != "203.0.113.7" || info.AccessIPv6 != "2001:db8::7" {
		t.Fatalf("server info %+v", info)
	}

	w := e.do(t, "GET", "/compute/v2.1/servers/"+id, "", "X-Auth-Token", e.token(t))
	if got, want := addressKeys(t, w.raw), []string{e.fx.NetworkName, "zeta-storage", "alpha-backend"}; !slices.Equal(got, want) {
		t.Errorf("address networks %q, want %q (attachment order)", got, want)
	}
	srv := w.body["server"].(map[string]any)
	if srv["accessIPv4"] != "203.0.113.7" || srv["accessIPv6"] != "2001:db8::7" {
		t.Errorf("access IPs %v %v", srv["accessIPv4"], srv["accessIPv6"])
	}
	var types, addrs []string
	for _, a := range srv["addresses"].(map[string]any)[e.fx.NetworkName].([]any) {
		m := a.(map[string]any)
		types, addrs = append(types, m["OS-EXT-IPS:type"].(string)), append(addrs, m["addr"].(string))
	}
	if !slices.Equal(types, []string{"fixed", "fixed", "floating"}) || addrs[0] != info.PrivateIP || addrs[2] != info.PublicIP {
		t.Errorf("node network addresses %q %q", types, addrs)
	}
	for name, net := range map[string]cloudsimopenstack.NetworkInfo{"zeta-storage": zeta, "alpha-backend": alpha} {
		list := srv["addresses"].(map[string]any)[name].([]any)
		if len(list) != 1 || !strings.HasPrefix(list[0].(map[string]any)["addr"].(string), strings.TrimSuffix(net.CIDR, "0/24")) {
			t.Errorf("%s addresses %v", name, list)
		}
	}

	// Nova's ip filter matches any of the server's fixed addresses.
	list, err := servers.List(e.compute(t, ""), servers.ListOpts{IP: "10.30.0."}).AllPages(ctx(t))
	ok(t, err)
	if got, _ := servers.ExtractServers(list); len(got) != 1 || got[0].ID != id {
		t.Errorf("ip filter found %v", got)
	}

	nc := e.networkClient(t)
	pages, err := ports.List(nc, ports.ListOpts{DeviceID: id}).AllPages(ctx(t))
	ok(t, err)
	ps, err := ports.ExtractPorts(pages)
	ok(t, err)
	var got []string
	for _, p := range ps {
		got = append(got, p.ID)
		if p.Status != "ACTIVE" || !strings.HasPrefix(p.DeviceOwner, "compute:") {
			t.Errorf("port %+v", p)
		}
	}
	if !slices.Equal(got, info.PortIDs) {
		t.Errorf("ports %q, want %q", got, info.PortIDs)
	}

	ok(t, e.emu.Terminate(id))
	if left := e.emu.DevicePorts(id); len(left) != 0 {
		t.Errorf("ports left after delete: %+v", left)
	}
}

// TestLaunchRefusals: access IPs of the wrong family, unknown subnets and
// full ones are refused, and nothing is made.
func TestLaunchRefusals(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	small, err := e.emu.CreateNetwork(cloudsimopenstack.NetworkSpec{Name: "small", CIDR: "10.40.0.0/29"})
	ok(t, err)
	for name, spec := range map[string]cloudsimopenstack.LaunchSpec{
		"IPv6 as accessIPv4":  {AccessIPv4: "2001:db8::1"},
		"IPv4 as accessIPv6":  {AccessIPv6: "10.0.0.1"},
		"not an address":      {AccessIPv4: "host.example.com"},
		"unknown extra":       {ExtraSubnetIDs: []string{"no-such-subnet"}},
		"extra subnet full":   {Count: 6, ExtraSubnetIDs: []string{small.SubnetID}},
		"same subnet twice":   {Count: 3, ExtraSubnetIDs: []string{small.SubnetID, small.SubnetID}},
		"no subnet to extend": {SubnetID: "nope"},
	} {
		if _, err := e.emu.Launch(spec); err == nil {
			t.Errorf("%s: launched", name)
		}
	}
	if n := len(e.emu.Servers()); n != 0 {
		t.Errorf("%d servers after refused launches", n)
	}
}

// TestNoExternalNetwork: a cloud without an external network lists none,
// its router has no gateway, and servers get no floating IP.
func TestNoExternalNetwork(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{NoExternalNetwork: true})
	if e.fx.ExternalNetworkID != "" || e.fx.FloatingCIDR != "" {
		t.Errorf("fixture %+v", e.fx)
	}
	nc := e.networkClient(t)
	yes := true
	pages, err := networks.List(nc, external.ListOptsExt{ListOptsBuilder: networks.ListOpts{}, External: &yes}).AllPages(ctx(t))
	ok(t, err)
	if nets, _ := networks.ExtractNetworks(pages); len(nets) != 0 {
		t.Errorf("external networks %+v", nets)
	}
	r, err := routers.Get(ctx(t), nc, e.fx.RouterID).Extract()
	ok(t, err)
	if r.GatewayInfo.NetworkID != "" {
		t.Errorf("router gateway %+v", r.GatewayInfo)
	}
	if _, err := e.emu.Launch(cloudsimopenstack.LaunchSpec{PublicIP: true}); err == nil {
		t.Error("launched a server with a floating IP")
	}
	e.launch(t, cloudsimopenstack.LaunchSpec{})
}
