package openstack_test

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsecurity"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

// portWithSecurity is a port with port_security_enabled.
type portWithSecurity struct {
	ports.Port
	portsecurity.PortSecurityExt
}

func listPorts(t *testing.T, c *gophercloud.ServiceClient, opts ports.ListOpts) []ports.Port {
	t.Helper()
	pages, err := ports.List(c, opts).AllPages(ctx(t))
	ok(t, err)
	ps, err := ports.ExtractPorts(pages)
	ok(t, err)
	return ps
}

func portIDs(ps []ports.Port) []string {
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.ID)
	}
	return ids
}

func TestNeutronServerPorts(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	ids := e.launch(t, cloudsimopenstack.LaunchSpec{Count: 2, Name: "node"})
	c := e.networkClient(t)
	srv, _ := e.emu.Server(ids[0])

	var p portWithSecurity
	ok(t, ports.Get(ctx(t), c, srv.PortID).ExtractInto(&p))
	if p.DeviceID != ids[0] || p.DeviceOwner != "compute:"+srv.Zone || p.Status != "ACTIVE" || p.MACAddress != srv.MAC ||
		len(p.FixedIPs) != 1 || p.FixedIPs[0].IPAddress != srv.PrivateIP || p.FixedIPs[0].SubnetID != e.fx.SubnetID ||
		!slices.Equal(p.SecurityGroups, []string{e.fx.DefaultSecurityGroupID}) || !p.PortSecurityEnabled ||
		p.RevisionNumber != 1 || p.ProjectID != e.fx.ProjectID || p.AllowedAddressPairs == nil {
		t.Errorf("server port %+v", p)
	}

	// The router's interface is a port of the project too.
	routerPorts := listPorts(t, c, ports.ListOpts{DeviceOwner: "network:router_interface"})
	if len(routerPorts) != 1 || routerPorts[0].DeviceID != e.fx.RouterID || routerPorts[0].FixedIPs[0].IPAddress != "10.0.0.1" ||
		len(routerPorts[0].SecurityGroups) != 0 {
		t.Errorf("router ports %+v", routerPorts)
	}
	srv2, _ := e.emu.Server(ids[1])
	for _, tc := range []struct {
		name string
		opts ports.ListOpts
		want []string
	}{
		{"device", ports.ListOpts{DeviceID: ids[1]}, []string{srv2.PortID}},
		{"fixed IP", ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{IPAddress: srv.PrivateIP}}}, []string{srv.PortID}},
		{"fixed IP and subnet", ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{IPAddress: srv.PrivateIP, SubnetID: e.fx.SubnetID}}}, []string{srv.PortID}},
		{"fixed IP on another subnet", ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{IPAddress: srv.PrivateIP, SubnetID: e.fx.ExternalSubnetID}}}, nil},
		{"IP substring", ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{IPAddressSubstr: "10.0.0.1"}}}, []string{routerPorts[0].ID, srv.PortID, srv2.PortID}},
		{"subnet", ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{SubnetID: e.fx.SubnetID}}, DeviceOwner: "compute:" + srv.Zone}, []string{srv.PortID}},
		{"network and status", ports.ListOpts{NetworkID: e.fx.NetworkID, Status: "ACTIVE"}, []string{routerPorts[0].ID, srv.PortID, srv2.PortID}},
		{"security group", ports.ListOpts{SecurityGroups: []string{e.fx.DefaultSecurityGroupID}}, []string{srv.PortID, srv2.PortID}},
		{"MAC", ports.ListOpts{MACAddress: srv2.MAC}, []string{srv2.PortID}},
		{"down", ports.ListOpts{Status: "DOWN"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := portIDs(listPorts(t, c, tc.opts)); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	// The gateway port belongs to no project: nobody sees it.
	if got := listPorts(t, c, ports.ListOpts{NetworkID: e.fx.ExternalNetworkID}); len(got) != 0 {
		t.Errorf("external ports visible: %+v", got)
	}
	_, err := ports.Get(ctx(t), c, "nope").Extract()
	wantNeutronErr(t, err, http.StatusNotFound, "PortNotFound", "=Port nope could not be found.")
	err = ports.Delete(ctx(t), c, routerPorts[0].ID).ExtractErr()
	wantNeutronErr(t, err, http.StatusConflict, "ServicePortInUse",
		"=Port "+routerPorts[0].ID+" cannot be deleted directly via the port API: has device owner network:router_interface.")
}

func TestNeutronPortLifecycle(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	c := e.networkClient(t)
	sgs := []string{e.fx.DefaultSecurityGroupID}
	up := true
	var p portWithSecurity
	ok(t, ports.Create(ctx(t), c, portsecurity.PortCreateOptsExt{
		CreateOptsBuilder: ports.CreateOpts{
			NetworkID: e.fx.NetworkID, Name: "vip", Description: "a VIP", DeviceOwner: "cloudsim", AdminStateUp: &up,
			FixedIPs: []ports.IP{{SubnetID: e.fx.SubnetID, IPAddress: "10.0.3.3"}}, SecurityGroups: &sgs,
			AllowedAddressPairs: []ports.AddressPair{{IPAddress: "10.0.9.0/24"}},
		},
	}).ExtractInto(&p))
	if p.Name != "vip" || p.Description != "a VIP" || p.FixedIPs[0].IPAddress != "10.0.3.3" || p.Status != "DOWN" ||
		!p.PortSecurityEnabled || len(p.AllowedAddressPairs) != 1 || p.AllowedAddressPairs[0].MACAddress != p.MACAddress ||
		p.RevisionNumber != 1 || p.CreatedAt.IsZero() {
		t.Fatalf("created %+v", p)
	}
	// Tags in POST are taken for ports (tag-ports-during-bulk-creation).
	w := e.do(t, "POST", "/network/v2.0/ports", `{"port": {"network_id": "`+e.fx.NetworkID+`", "tags": ["a", "b"]}}`,
		"X-Auth-Token", e.token(t))
	if w.status != 201 || !slices.Equal(toStrings(w.body["port"].(map[string]any)["tags"]), []string{"a", "b"}) {
		t.Errorf("port with tags: %d %s", w.status, w.raw)
	}
	// The address is taken now.
	_, err := ports.Create(ctx(t), c, ports.CreateOpts{NetworkID: e.fx.NetworkID, FixedIPs: []ports.IP{{IPAddress: "10.0.3.3"}}}).Extract()
	wantNeutronErr(t, err, http.StatusConflict, "IpAddressAlreadyAllocated", "=IP address 10.0.3.3 already allocated in subnet "+e.fx.SubnetID)

	name, desc, owner, device := "renamed", "", "compute:nova", "server-1"
	pairs := []ports.AddressPair{{IPAddress: "10.0.8.8", MACAddress: "fa:16:3e:aa:bb:cc"}, {IPAddress: "10.0.9.0/24"}}
	up1, err := ports.Update(ctx(t), c, p.ID, ports.UpdateOpts{
		Name: &name, Description: &desc, DeviceOwner: &owner, DeviceID: &device, AllowedAddressPairs: &pairs,
	}).Extract()
	ok(t, err)
	if up1.Name != name || up1.Description != "" || up1.DeviceID != device || up1.Status != "ACTIVE" || up1.RevisionNumber != 2 ||
		len(up1.AllowedAddressPairs) != 2 || up1.AllowedAddressPairs[0].MACAddress != "fa:16:3e:aa:bb:cc" {
		t.Errorf("updated %+v", up1)
	}
	// An update that changes nothing leaves the revision.
	up2, err := ports.Update(ctx(t), c, p.ID, ports.UpdateOpts{Name: &name}).Extract()
	ok(t, err)
	if up2.RevisionNumber != 2 {
		t.Errorf("no-op update bumped the revision to %d", up2.RevisionNumber)
	}

	// Security groups: unknown ones are a 404 naming them.
	bad := []string{e.fx.DefaultSecurityGroupID, "0d0f6a0f-1b3e-4f3b-9a47-6a4c8b5f0f01"}
	_, err = ports.Update(ctx(t), c, p.ID, ports.UpdateOpts{SecurityGroups: &bad}).Extract()
	wantNeutronErr(t, err, http.StatusNotFound, "SecurityGroupNotFound", "=Security group 0d0f6a0f-1b3e-4f3b-9a47-6a4c8b5f0f01 does not exist")

	// Port security can go off only with the groups and pairs.
	off := false
	_, err = ports.Update(ctx(t), c, p.ID, portsecurity.PortUpdateOptsExt{UpdateOptsBuilder: ports.UpdateOpts{}, PortSecurityEnabled: &off}).Extract()
	wantNeutronErr(t, err, http.StatusConflict, "AddressPairAndPortSecurityRequired", "Port Security must be enabled")
	none := []ports.AddressPair{}
	_, err = ports.Update(ctx(t), c, p.ID, portsecurity.PortUpdateOptsExt{
		UpdateOptsBuilder: ports.UpdateOpts{AllowedAddressPairs: &none}, PortSecurityEnabled: &off,
	}).Extract()
	wantNeutronErr(t, err, http.StatusConflict, "PortSecurityPortHasSecurityGroup", "Port has security group associated.")
	noGroups := []string{}
	var p2 portWithSecurity
	ok(t, ports.Update(ctx(t), c, p.ID, portsecurity.PortUpdateOptsExt{
		UpdateOptsBuilder: ports.UpdateOpts{AllowedAddressPairs: &none, SecurityGroups: &noGroups}, PortSecurityEnabled: &off,
	}).ExtractInto(&p2))
	if p2.PortSecurityEnabled || len(p2.SecurityGroups) != 0 || len(p2.AllowedAddressPairs) != 0 || p2.RevisionNumber != 3 {
		t.Errorf("port security off: %+v", p2)
	}
	_, err = ports.Update(ctx(t), c, p.ID, ports.UpdateOpts{SecurityGroups: &sgs}).Extract()
	wantNeutronErr(t, err, http.StatusBadRequest, "PortSecurityAndIPRequiredForSecurityGroups", "Port security must be enabled")

	ok(t, ports.Delete(ctx(t), c, p.ID).ExtractErr())
	err = ports.Delete(ctx(t), c, p.ID).ExtractErr()
	wantNeutronErr(t, err, http.StatusNotFound, "PortNotFound", "could not be found")
	// Its address is free again.
	_, err = ports.Create(ctx(t), c, ports.CreateOpts{NetworkID: e.fx.NetworkID, FixedIPs: []ports.IP{{IPAddress: "10.0.3.3"}}}).Extract()
	ok(t, err)
}

func toStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

func TestNeutronPortRequestErrors(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{Neutron: cloudsimopenstack.NeutronConfig{MaxAllowedAddressPairs: 2}})
	tok := e.token(t)
	net := `"network_id": "` + e.fx.NetworkID + `"`
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		typ, msg                 string
	}{
		{"no network", "POST", "", `{"port": {"name": "x"}}`, 400, "HTTPBadRequest", "Failed to parse request. Required attribute 'network_id' not specified"},
		{"unknown network", "POST", "", `{"port": {"network_id": "nope"}}`, 404, "NetworkNotFound", "Network nope could not be found."},
		{"external network", "POST", "", `{"port": {"network_id": "` + e.fx.ExternalNetworkID + `"}}`, 404, "HTTPNotFound", "The resource could not be found."},
		{"unknown attribute", "POST", "", `{"port": {` + net + `, "colour": "red", "size": 1}}`, 400, "HTTPBadRequest", "Unrecognized attribute(s) 'colour, size'"},
		{"read-only attribute", "POST", "", `{"port": {` + net + `, "status": "ACTIVE"}}`, 400, "HTTPBadRequest", "Attribute 'status' not allowed in POST"},
		{"other project", "POST", "", `{"port": {` + net + `, "project_id": "someone"}}`, 400, "HTTPBadRequest", "Specifying 'project_id' or 'tenant_id' other than the authenticated project in request requires admin privileges"},
		{"name not a string", "POST", "", `{"port": {` + net + `, "name": 7}}`, 400, "HTTPBadRequest", "Invalid input for name. Reason: '7' is not a valid string."},
		{"bad boolean", "POST", "", `{"port": {` + net + `, "admin_state_up": "perhaps"}}`, 400, "InvalidInput", "Invalid input for operation: 'perhaps' cannot be converted to boolean."},
		{"IP off the network", "POST", "", `{"port": {` + net + `, "fixed_ips": [{"ip_address": "192.168.1.1"}]}}`, 400, "InvalidIpForNetwork", "IP address 192.168.1.1 is not a valid IP for any of the subnets on the specified network."},
		{"IP off the subnet", "POST", "", `{"port": {` + net + `, "fixed_ips": [{"subnet_id": "` + e.fx.SubnetID + `", "ip_address": "10.0.255.255"}]}}`, 400, "InvalidIpForSubnet", "IP address 10.0.255.255 is not a valid IP for the specified subnet."},
		{"subnet of another network", "POST", "", `{"port": {` + net + `, "fixed_ips": [{"subnet_id": "` + e.fx.ExternalSubnetID + `"}]}}`, 400, "InvalidInput", "because fixed_ips included invalid subnet " + e.fx.ExternalSubnetID},
		{"bad IP", "POST", "", `{"port": {` + net + `, "fixed_ips": [{"ip_address": "10.0.0.010"}]}}`, 400, "HTTPBadRequest", "Invalid input for fixed_ips. Reason: '10.0.0.010' is not a valid IP address."},
		{"pair without IP", "POST", "", `{"port": {` + net + `, "allowed_address_pairs": [{"mac_address": "fa:16:3e:00:00:01"}]}}`, 400, "AllowedAddressPairsMissingIP", "AllowedAddressPair must contain ip_address"},
		{"pair with a bad IP", "POST", "", `{"port": {` + net + `, "allowed_address_pairs": [{"ip_address": "10.0.0.300"}]}}`, 400, "HTTPBadRequest", "'10.0.0.300' is not a valid IP address"},
		{"pair with a bad CIDR", "POST", "", `{"port": {` + net + `, "allowed_address_pairs": [{"ip_address": "10.0.0.0/33"}]}}`, 400, "HTTPBadRequest", "'10.0.0.0/33' is not a valid IP subnet"},
		{"duplicate pair", "POST", "", `{"port": {` + net + `, "allowed_address_pairs": [{"ip_address": "10.0.0.5"}, {"ip_address": "10.0.0.5"}]}}`, 400, "DuplicateAddressPairInRequest", "Request contains duplicate address pair: mac_address None ip_address 10.0.0.5."},
		{"too many pairs", "POST", "", `{"port": {` + net + `, "allowed_address_pairs": [{"ip_address": "10.0.0.5"}, {"ip_address": "10.0.0.6"}, {"ip_address": "10.0.0.7"}]}}`, 400, "AllowedAddressPairExhausted", "The number of allowed address pair exceeds the maximum 2."},
		{"pairs without port security", "POST", "", `{"port": {` + net + `, "port_security_enabled": false, "allowed_address_pairs": [{"ip_address": "10.0.0.5"}]}}`, 409, "AddressPairAndPortSecurityRequired", "Port Security must be enabled in order to have allowed address pairs on a port."},
		{"bad group ID", "POST", "", `{"port": {` + net + `, "security_groups": ["nope"]}}`, 400, "HTTPBadRequest", "Invalid input for security_groups. Reason: 'nope' is not a valid UUID."},
		{"two fixed IPs", "POST", "", `{"port": {` + net + `, "fixed_ips": [{"subnet_id": "` + e.fx.SubnetID + `"}, {"subnet_id": "` + e.fx.SubnetID + `"}]}}`, 400, "HTTPBadRequest", "exactly one fixed IP"},
		{"read-only on update", "PUT", "/x", `{"port": {"network_id": "n"}}`, 400, "HTTPBadRequest", "Cannot update read-only attribute network_id"},
		{"update of unknown port", "PUT", "/x", `{"port": {"name": "n"}}`, 404, "PortNotFound", "Port x could not be found."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := e.do(t, tc.method, "/network/v2.0/ports"+tc.path, tc.body, "X-Auth-Token", tok)
			ne, _ := w.body["NeutronError"].(map[string]any)
			msg, _ := ne["message"].(string)
			if w.status != tc.status || ne["type"] != tc.typ || !strings.Contains(msg, tc.msg) {
				t.Errorf("%d %s", w.status, w.raw)
			}
		})
	}
}

// Another client changing a port between our read and our write: the
// If-Match constraint fails with 412 and the change is not made.
func TestNeutronPortRevisionConstraint(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	c := e.networkClient(t)
	p, err := ports.Create(ctx(t), c, ports.CreateOpts{NetworkID: e.fx.NetworkID}).Extract()
	ok(t, err)
	rev := p.RevisionNumber
	name := "mine"
	got, err := ports.Update(ctx(t), c, p.ID, ports.UpdateOpts{Name: &name, RevisionNumber: &rev}).Extract()
	ok(t, err)
	if got.RevisionNumber != rev+1 {
		t.Fatalf("revision %d after update from %d", got.RevisionNumber, rev)
	}
	rev = got.RevisionNumber
	bumped, err := e.emu.BumpRevision("ports", p.ID)
	ok(t, err)
	if bumped != rev+1 {
		t.Errorf("bumped to %d", bumped)
	}
	name = "lost"
	_, err = ports.Update(ctx(t), c, p.ID, ports.UpdateOpts{Name: &name, RevisionNumber: &rev}).Extract()
	wantNeutronErr(t, err, http.StatusPreconditionFailed, "RevisionNumberConstraintFailed",
		"=Constrained to "+strconv.Itoa(rev)+", but current revision is "+strconv.Itoa(bumped))
	if info, _ := e.emu.Port(p.ID); info.Name != "mine" {
		t.Errorf("port changed to %q", info.Name)
	}
	tok := e.token(t)
	if w := e.do(t, "DELETE", "/network/v2.0/ports/"+p.ID, "", "X-Auth-Token", tok, "If-Match", "revision_number="+strconv.Itoa(rev)); w.status != 412 {
		t.Errorf("delete with a stale revision: %d %s", w.status, w.raw)
	}
	for _, h := range []string{"revision_number=x", "revision_number=1, revision_number=2"} {
		w := e.do(t, "DELETE", "/network/v2.0/ports/"+p.ID, "", "X-Auth-Token", tok, "If-Match", h)
		if ne, _ := w.body["NeutronError"].(map[string]any); w.status != 400 || ne["type"] != "BadRequest" {
			t.Errorf("If-Match %q: %d %s", h, w.status, w.raw)
		}
	}
	if w := e.do(t, "DELETE", "/network/v2.0/ports/"+p.ID, "", "X-Auth-Token", tok, "If-Match", `"revision_number=`+strconv.Itoa(bumped)+`"`); w.status != 204 {
		t.Errorf("delete with the current revision: %d %s", w.status, w.raw)
	}

	// Without revision-if-match the header is refused.
	e = newEnv(t, cloudsimopenstack.Config{Neutron: cloudsimopenstack.NeutronConfig{DisabledExtensions: []string{"revision-if-match"}}})
	c = e.networkClient(t)
	p, err = ports.Create(ctx(t), c, ports.CreateOpts{NetworkID: e.fx.NetworkID}).Extract()
	ok(t, err)
	_, err = ports.Update(ctx(t), c, p.ID, ports.UpdateOpts{Name: &name, RevisionNumber: &p.RevisionNumber}).Extract()
	wantNeutronErr(t, err, http.StatusBadRequest, "BadRequest",
		"=Bad if-match request: This server does not support constraining operations based on revision numbers.")
}
