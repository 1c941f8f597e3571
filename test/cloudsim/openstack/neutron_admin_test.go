package openstack_test

import (
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

func TestNeutronAdminAPI(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	ids := e.launch(t, cloudsimopenstack.LaunchSpec{PublicIP: true})
	c := e.networkClient(t)
	pairs := []ports.AddressPair{{IPAddress: "10.0.50.0/24"}}
	srv, _ := e.emu.Server(ids[0])
	_, err := ports.Update(ctx(t), c, srv.PortID, ports.UpdateOpts{AllowedAddressPairs: &pairs}).Extract()
	ok(t, err)
	routes := routeList("10.100.1.0/24", srv.PrivateIP)
	_, err = extraroutes.Add(ctx(t), c, e.fx.RouterID, extraroutes.Opts{Routes: &routes}).Extract()
	ok(t, err)
	base := e.srv.URL() + "/admin/openstack"

	var serverPorts []cloudsimopenstack.PortInfo
	status, err := cloudsim.AdminCall(ctx(t), base, "GET", "/neutron/ports?deviceId="+ids[0], "", &serverPorts)
	ok(t, err)
	if status != 200 || len(serverPorts) != 1 {
		t.Fatalf("server ports: %d %+v", status, serverPorts)
	}
	p := serverPorts[0]
	if p.ID != srv.PortID || p.FloatingIP != srv.PublicIP || p.RevisionNumber != 2 || !p.PortSecurityEnabled ||
		!slices.Equal(p.SecurityGroups, []string{e.fx.DefaultSecurityGroupID}) || len(p.AllowedAddressPairs) != 1 ||
		p.AllowedAddressPairs[0] != (cloudsimopenstack.AddressPairInfo{IPAddress: "10.0.50.0/24", MACAddress: srv.MAC}) {
		t.Errorf("server port %+v", p)
	}
	var all []cloudsimopenstack.PortInfo
	_, err = cloudsim.AdminCall(ctx(t), base, "GET", "/neutron/ports", "", &all)
	ok(t, err)
	if len(all) != 3 { // the router's two and the server's
		t.Errorf("%d ports", len(all))
	}
	var sgs []cloudsimopenstack.SecurityGroupInfo
	_, err = cloudsim.AdminCall(ctx(t), base, "GET", "/neutron/security-groups", "", &sgs)
	ok(t, err)
	if len(sgs) != 1 || !sgs[0].Default || len(sgs[0].Rules) != 4 || !slices.Equal(sgs[0].PortIDs, []string{srv.PortID}) {
		t.Errorf("security groups %+v", sgs)
	}
	var fips []cloudsimopenstack.FloatingIPInfo
	_, err = cloudsim.AdminCall(ctx(t), base, "GET", "/neutron/floating-ips", "", &fips)
	ok(t, err)
	if len(fips) != 1 || fips[0].Address != srv.PublicIP || fips[0].PortID != srv.PortID || fips[0].Status != "ACTIVE" ||
		fips[0].RouterID != e.fx.RouterID || fips[0].FixedIP != srv.PrivateIP {
		t.Errorf("floating IPs %+v", fips)
	}
	var rs []cloudsimopenstack.RouterInfo
	_, err = cloudsim.AdminCall(ctx(t), base, "GET", "/neutron/routers", "", &rs)
	ok(t, err)
	if len(rs) != 1 || rs[0].ExternalNetworkID != e.fx.ExternalNetworkID || !slices.Equal(rs[0].InterfaceSubnetIDs, []string{e.fx.SubnetID}) ||
		len(rs[0].Routes) != 1 || rs[0].Routes[0] != (cloudsimopenstack.RouteInfo{Destination: "10.100.1.0/24", NextHop: srv.PrivateIP}) {
		t.Errorf("routers %+v", rs)
	}

	// Another actor changes the floating IP: the CCM's If-Match fails.
	var bumped map[string]int
	status, err = cloudsim.AdminCall(ctx(t), base, "POST", "/neutron/revisions/bump", `{"resource": "floatingips", "id": "`+fips[0].ID+`"}`, &bumped)
	ok(t, err)
	if status != 200 || bumped["revisionNumber"] != fips[0].RevisionNumber+1 {
		t.Errorf("bump: %d %v", status, bumped)
	}
	_, err = floatingips.Update(ctx(t), c, fips[0].ID, floatingips.UpdateOpts{RevisionNumber: &fips[0].RevisionNumber}).Extract()
	wantNeutronErr(t, err, http.StatusPreconditionFailed, "RevisionNumberConstraintFailed", "")
	for body, want := range map[string]int{
		`{"resource": "ports", "id": "nope"}`:             404,
		`{"resource": "servers", "id": "` + ids[0] + `"}`: 400,
		`{"resource": "ports"`:                            400,
	} {
		if status, _ := cloudsim.AdminCall(ctx(t), base, "POST", "/neutron/revisions/bump", body, nil); status != want {
			t.Errorf("bump %s: %d, want %d", body, status, want)
		}
	}
	if _, err := e.emu.BumpRevision("routers", "nope"); !errors.Is(err, cloudsimopenstack.ErrNeutronNotFound) {
		t.Errorf("bump of an unknown router: %v", err)
	}

	// A network and a router through the admin API.
	var n cloudsimopenstack.NetworkInfo
	status, err = cloudsim.AdminCall(ctx(t), base, "POST", "/neutron/networks", `{"name": "extra", "cidr": "10.60.0.0/24"}`, &n)
	ok(t, err)
	if status != 200 || n.CIDR != "10.60.0.0/24" {
		t.Fatalf("network: %d %+v", status, n)
	}
	var r cloudsimopenstack.RouterInfo
	status, err = cloudsim.AdminCall(ctx(t), base, "POST", "/neutron/routers",
		`{"name": "r2", "externalNetworkId": "`+e.fx.ExternalNetworkID+`", "subnetIds": ["`+n.SubnetID+`"]}`, &r)
	ok(t, err)
	if status != 200 || r.Name != "r2" || r.ProjectID != e.fx.ProjectID {
		t.Errorf("router: %d %+v", status, r)
	}
	for path, body := range map[string]string{
		"/neutron/networks": `{"name": "bad", "cidr": "10.70.0.0/30"}`,
		"/neutron/routers":  `{"name": "bad", "subnetIds": ["nope"]}`,
	} {
		if status, _ := cloudsim.AdminCall(ctx(t), base, "POST", path, body, nil); status != 400 && status != 404 {
			t.Errorf("%s %s: %d", path, body, status)
		}
	}

	// Terminating the server leaves nothing of it in Neutron.
	before := e.srv.Resources()
	ok(t, e.emu.Terminate(ids...))
	added, removed := cloudsim.DiffResources(before, e.srv.Resources())
	if len(added) != 0 || len(removed) != 3 { // server, port, floating IP
		t.Errorf("terminate: added %v, removed %v", added, removed)
	}
}
