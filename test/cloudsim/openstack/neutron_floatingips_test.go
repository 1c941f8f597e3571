package openstack_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

// fipWithDetails is a floating IP with fip-port-details.
type fipWithDetails struct {
	floatingips.FloatingIP
	FIPPortDetails
}

type FIPPortDetails struct {
	PortDetails *struct {
		DeviceID    string `json:"device_id"`
		DeviceOwner string `json:"device_owner"`
		NetworkID   string `json:"network_id"`
		Status      string `json:"status"`
	} `json:"port_details"`
}

func TestNeutronFloatingIPs(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	ids := e.launch(t, cloudsimopenstack.LaunchSpec{Count: 2})
	srv, _ := e.emu.Server(ids[0])
	srv2, _ := e.emu.Server(ids[1])
	c := e.networkClient(t)

	f, err := floatingips.Create(ctx(t), c, floatingips.CreateOpts{FloatingNetworkID: e.fx.ExternalNetworkID, Description: "lb"}).Extract()
	ok(t, err)
	if f.Status != "DOWN" || f.PortID != "" || f.RouterID != "" || f.Description != "lb" || f.ProjectID != e.fx.ProjectID || f.FloatingIP == "" {
		t.Fatalf("created %+v", f)
	}
	// Associate: ACTIVE, the router that serves it, the port's details;
	// Nova shows the address on the server.
	var a fipWithDetails
	ok(t, floatingips.Update(ctx(t), c, f.ID, floatingips.UpdateOpts{PortID: &srv.PortID}).ExtractInto(&a))
	if a.Status != "ACTIVE" || a.PortID != srv.PortID || a.FixedIP != srv.PrivateIP || a.RouterID != e.fx.RouterID ||
		a.PortDetails == nil || a.PortDetails.DeviceID != ids[0] || a.RevisionNumber != f.RevisionNumber+1 {
		t.Errorf("associated %+v %+v", a.FloatingIP, a.PortDetails)
	}
	if s, _ := e.emu.Server(ids[0]); s.PublicIP != f.FloatingIP || s.FloatingIPID != f.ID {
		t.Errorf("server shows %q", s.PublicIP)
	}
	server, err := servers.Get(ctx(t), e.compute(t, "2.1"), ids[0]).Extract()
	ok(t, err)
	var floating []string
	for _, addrs := range server.Addresses {
		for _, addr := range addrs.([]any) {
			if m := addr.(map[string]any); m["OS-EXT-IPS:type"] == "floating" {
				floating = append(floating, m["addr"].(string))
			}
		}
	}
	if !slices.Equal(floating, []string{f.FloatingIP}) {
		t.Errorf("Nova's floating addresses %v", floating)
	}

	// A second floating IP for the same port is a conflict.
	f2, err := floatingips.Create(ctx(t), c, floatingips.CreateOpts{FloatingNetworkID: e.fx.ExternalNetworkID}).Extract()
	ok(t, err)
	_, err = floatingips.Update(ctx(t), c, f2.ID, floatingips.UpdateOpts{PortID: &srv.PortID}).Extract()
	wantNeutronErr(t, err, http.StatusConflict, "FloatingIPPortAlreadyAssociated",
		"=Cannot associate floating IP "+f2.FloatingIP+" ("+f2.ID+") with port "+srv.PortID+" using fixed IP "+srv.PrivateIP+
			", as that fixed IP already has a floating IP on external network "+e.fx.ExternalNetworkID+".")
	_, err = floatingips.Create(ctx(t), c, floatingips.CreateOpts{FloatingNetworkID: e.fx.ExternalNetworkID, PortID: srv.PortID}).Extract()
	wantNeutronErr(t, err, http.StatusConflict, "FloatingIPPortAlreadyAssociated", "already has a floating IP")
	// Moving the first to the other server is fine.
	moved, err := floatingips.Update(ctx(t), c, f.ID, floatingips.UpdateOpts{PortID: &srv2.PortID}).Extract()
	ok(t, err)
	if moved.PortID != srv2.PortID || moved.FixedIP != srv2.PrivateIP {
		t.Errorf("moved %+v", moved)
	}
	if s, _ := e.emu.Server(ids[0]); s.PublicIP != "" {
		t.Errorf("old server still shows %q", s.PublicIP)
	}

	for _, tc := range []struct {
		name string
		opts floatingips.ListOpts
		want []string
	}{
		{"all", floatingips.ListOpts{}, []string{f.ID, f2.ID}},
		{"by port", floatingips.ListOpts{PortID: srv2.PortID}, []string{f.ID}},
		{"by fixed IP", floatingips.ListOpts{FixedIP: srv2.PrivateIP}, []string{f.ID}},
		{"by address", floatingips.ListOpts{FloatingIP: f2.FloatingIP}, []string{f2.ID}},
		{"by network", floatingips.ListOpts{FloatingNetworkID: e.fx.ExternalNetworkID}, []string{f.ID, f2.ID}},
		{"by status", floatingips.ListOpts{Status: "DOWN"}, []string{f2.ID}},
		{"by description", floatingips.ListOpts{Description: "lb"}, []string{f.ID}},
		{"by router", floatingips.ListOpts{RouterID: e.fx.RouterID}, []string{f.ID}},
		{"by project", floatingips.ListOpts{ProjectID: e.fx.ProjectID, SortKey: "floating_ip_address", SortDir: "desc"}, []string{f2.ID, f.ID}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pages, err := floatingips.List(c, tc.opts).AllPages(ctx(t))
			ok(t, err)
			fs, err := floatingips.ExtractFloatingIPs(pages)
			ok(t, err)
			var got []string
			for _, f := range fs {
				got = append(got, f.ID)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}

	// Disassociate with a null port_id.
	w := e.do(t, "PUT", "/network/v2.0/floatingips/"+f.ID, `{"floatingip": {"port_id": null}}`, "X-Auth-Token", e.token(t))
	fip := w.body["floatingip"].(map[string]any)
	if w.status != 200 || fip["port_id"] != nil || fip["status"] != "DOWN" || fip["port_details"] != nil || fip["router_id"] != nil {
		t.Errorf("disassociated: %d %s", w.status, w.raw)
	}
	// Deleting a port keeps its floating IP, unassociated.
	p, err := ports.Create(ctx(t), c, ports.CreateOpts{NetworkID: e.fx.NetworkID, DeviceID: "vip"}).Extract()
	ok(t, err)
	_, err = floatingips.Update(ctx(t), c, f2.ID, floatingips.UpdateOpts{PortID: &p.ID}).Extract()
	ok(t, err)
	ok(t, ports.Delete(ctx(t), c, p.ID).ExtractErr())
	if got, err := floatingips.Get(ctx(t), c, f2.ID).Extract(); err != nil || got.PortID != "" || got.Status != "DOWN" {
		t.Errorf("after its port went: %+v %v", got, err)
	}

	ok(t, floatingips.Delete(ctx(t), c, f.ID).ExtractErr())
	_, err = floatingips.Get(ctx(t), c, f.ID).Extract()
	wantNeutronErr(t, err, http.StatusNotFound, "FloatingIPNotFound", "=Floating IP "+f.ID+" could not be found")
	err = floatingips.Delete(ctx(t), c, f.ID).ExtractErr()
	wantNeutronErr(t, err, http.StatusNotFound, "FloatingIPNotFound", "could not be found")
	// Its address can be asked for again.
	again, err := floatingips.Create(ctx(t), c, floatingips.CreateOpts{FloatingNetworkID: e.fx.ExternalNetworkID, FloatingIP: f.FloatingIP}).Extract()
	ok(t, err)
	if again.FloatingIP != f.FloatingIP {
		t.Errorf("asked for %s, got %s", f.FloatingIP, again.FloatingIP)
	}
}

func TestNeutronFloatingIPErrors(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	ids := e.launch(t, cloudsimopenstack.LaunchSpec{})
	srv, _ := e.emu.Server(ids[0])
	c := e.networkClient(t)
	taken, err := floatingips.Create(ctx(t), c, floatingips.CreateOpts{FloatingNetworkID: e.fx.ExternalNetworkID, SubnetID: e.fx.ExternalSubnetID}).Extract()
	ok(t, err)
	// A network without a router to the external one.
	isolated, err := e.emu.CreateNetwork(cloudsimopenstack.NetworkSpec{Name: "isolated", CIDR: "10.50.0.0/24"})
	ok(t, err)
	lonely, err := ports.Create(ctx(t), c, ports.CreateOpts{NetworkID: isolated.ID}).Extract()
	ok(t, err)
	for _, tc := range []struct {
		name     string
		opts     floatingips.CreateOpts
		status   int
		typ, msg string
	}{
		{"unknown network", floatingips.CreateOpts{FloatingNetworkID: "0d0f6a0f-1b3e-4f3b-9a47-6a4c8b5f0f01"}, 404, "NetworkNotFound", "=Network 0d0f6a0f-1b3e-4f3b-9a47-6a4c8b5f0f01 could not be found."},
		{"internal network", floatingips.CreateOpts{FloatingNetworkID: e.fx.NetworkID}, 400, "BadRequest", "=Bad floatingip request: Network " + e.fx.NetworkID + " is not a valid external network."},
		{"address taken", floatingips.CreateOpts{FloatingNetworkID: e.fx.ExternalNetworkID, FloatingIP: taken.FloatingIP}, 409, "IpAddressAlreadyAllocated", "=IP address " + taken.FloatingIP + " already allocated in subnet " + e.fx.ExternalSubnetID},
		{"address elsewhere", floatingips.CreateOpts{FloatingNetworkID: e.fx.ExternalNetworkID, FloatingIP: "10.0.0.200"}, 400, "InvalidIpForNetwork", "IP address 10.0.0.200 is not a valid IP"},
		{"fixed IP without port", floatingips.CreateOpts{FloatingNetworkID: e.fx.ExternalNetworkID, FixedIP: srv.PrivateIP}, 400, "BadRequest", "=Bad floatingip request: fixed_ip_address cannot be specified without a port_id."},
		{"unknown port", floatingips.CreateOpts{FloatingNetworkID: e.fx.ExternalNetworkID, PortID: "0d0f6a0f-1b3e-4f3b-9a47-6a4c8b5f0f01"}, 404, "PortNotFound", "=Port 0d0f6a0f-1b3e-4f3b-9a47-6a4c8b5f0f01 could not be found."},
		{"wrong fixed IP", floatingips.CreateOpts{FloatingNetworkID: e.fx.ExternalNetworkID, PortID: srv.PortID, FixedIP: "10.0.9.9"}, 400, "BadRequest", "=Bad floatingip request: Port " + srv.PortID + " does not have fixed ip 10.0.9.9."},
		{"unreachable", floatingips.CreateOpts{FloatingNetworkID: e.fx.ExternalNetworkID, PortID: lonely.ID}, 404, "ExternalGatewayForFloatingIPNotFound",
			"=External network " + e.fx.ExternalNetworkID + " is not reachable from subnet " + isolated.SubnetID + ".  Therefore, cannot associate Port " + lonely.ID + " with a Floating IP."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(e.emu.FloatingIPs())
			_, err := floatingips.Create(ctx(t), c, tc.opts).Extract()
			wantNeutronErr(t, err, tc.status, tc.typ, tc.msg)
			if n := len(e.emu.FloatingIPs()); n != before {
				t.Errorf("%d floating IPs, was %d", n, before)
			}
		})
	}
	// With a fixed IP and port it works, and the address is freed on
	// failure: the failed creations above took none.
	f, err := floatingips.Create(ctx(t), c, floatingips.CreateOpts{FloatingNetworkID: e.fx.ExternalNetworkID, PortID: srv.PortID, FixedIP: srv.PrivateIP}).Extract()
	ok(t, err)
	if f.Status != "ACTIVE" || f.FixedIP != srv.PrivateIP {
		t.Errorf("created associated %+v", f)
	}
	rev := f.RevisionNumber - 1
	_, err = floatingips.Update(ctx(t), c, f.ID, floatingips.UpdateOpts{RevisionNumber: &rev}).Extract()
	wantNeutronErr(t, err, http.StatusPreconditionFailed, "RevisionNumberConstraintFailed", "Constrained to")
}
