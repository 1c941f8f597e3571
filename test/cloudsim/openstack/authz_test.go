package openstack_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

// TestPolicyDeniesAsOpenStackDoes: under a policy for the fixture user,
// each service answers a call whose rule the policy lacks as it does:
// Nova 403 "Policy doesn't allow <rule> to be performed.", Neutron an
// empty listing, a 404 for a GET and a 403 PolicyNotAuthorized naming
// the action and attribute rules for a write, Octavia 403 "Policy does
// not allow this request to be performed.", Keystone 403 naming the
// rule; nothing is served. The rules the user's calls needed are
// recorded; the operator's calls are neither checked nor recorded.
func TestPolicyDeniesAsOpenStackDoes(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	e.launch(t, cloudsimopenstack.LaunchSpec{Name: "n1"})
	p := e.provider(t)
	eo := gophercloud.EndpointOpts{Region: "RegionOne"}
	compute := computeFor(t, p, "2.47")
	network, err := openstack.NewNetworkV2(p, eo)
	ok(t, err)
	lb, err := openstack.NewLoadBalancerV2(p, eo)
	ok(t, err)

	e.srv.SetPolicy(e.fx.UserID, []string{"os_compute_api:servers:detail", "get_port", "update_port", "create_floatingip", "get_floatingip", "delete_floatingip"})

	// Nova.
	pages, err := servers.List(compute, servers.ListOpts{}).AllPages(ctx(t))
	ok(t, err)
	list, err := servers.ExtractServers(pages)
	ok(t, err)
	if len(list) != 1 {
		t.Fatalf("an allowed listing: %d servers", len(list))
	}
	_, err = servers.Get(ctx(t), compute, list[0].ID).Extract()
	ce := codeError(t, err)
	if key, f := faultBody(t, ce.Body); ce.Actual != 403 || key != "forbidden" || f["message"] != "Policy doesn't allow os_compute_api:servers:show to be performed." {
		t.Errorf("Nova's denial: %d %s", ce.Actual, ce.Body)
	}

	// Neutron: a listing hides what the policy does not show, a GET is
	// a 404, a write a 403 naming the rules oslo.policy checked.
	nets, err := networks.List(network, networks.ListOpts{}).AllPages(ctx(t))
	ok(t, err)
	if got, _ := networks.ExtractNetworks(nets); len(got) != 0 {
		t.Errorf("a listing without get_network shows %d networks", len(got))
	}
	_, err = networks.Get(ctx(t), network, e.fx.NetworkID).Extract()
	if ce := codeError(t, err); ce.Actual != 404 || !strings.Contains(string(ce.Body), `"type":"HTTPNotFound"`) {
		t.Errorf("a GET without get_network: %d %s", ce.Actual, ce.Body)
	}
	portPages, err := ports.List(network, ports.ListOpts{NetworkID: e.fx.NetworkID}).AllPages(ctx(t))
	ok(t, err)
	ps, err := ports.ExtractPorts(portPages)
	ok(t, err)
	if len(ps) == 0 {
		t.Fatal("an allowed port listing is empty")
	}
	pairs := []ports.AddressPair{{IPAddress: "10.244.1.0/24"}}
	_, err = ports.Update(ctx(t), network, ps[0].ID, ports.UpdateOpts{AllowedAddressPairs: &pairs}).Extract()
	ce = codeError(t, err)
	want := "(rule:update_port and (rule:update_port:allowed_address_pairs and (rule:update_port:allowed_address_pairs:ip_address))) is disallowed by policy"
	if key, f := faultBody(t, ce.Body); ce.Actual != 403 || key != "NeutronError" || f["type"] != "PolicyNotAuthorized" || f["message"] != want {
		t.Errorf("Neutron's denial of an attribute: %d %s", ce.Actual, ce.Body)
	}
	fip, err := floatingips.Create(ctx(t), network, floatingips.CreateOpts{FloatingNetworkID: e.fx.ExternalNetworkID}).Extract()
	ok(t, err)
	ok(t, floatingips.Delete(ctx(t), network, fip.ID).ExtractErr())
	_, err = floatingips.Create(ctx(t), network, floatingips.CreateOpts{FloatingNetworkID: e.fx.ExternalNetworkID, FloatingIP: "172.24.4.77"}).Extract()
	ce = codeError(t, err)
	if !strings.Contains(string(ce.Body), "(rule:create_floatingip and rule:create_floatingip:floating_ip_address) is disallowed by policy") {
		t.Errorf("Neutron's denial of floating_ip_address: %d %s", ce.Actual, ce.Body)
	}

	// Octavia.
	_, err = loadbalancers.List(lb, loadbalancers.ListOpts{}).AllPages(ctx(t))
	ce = codeError(t, err)
	if ce.Actual != 403 || !strings.Contains(string(ce.Body), `"faultstring":"Policy does not allow this request to be performed."`) {
		t.Errorf("Octavia's denial: %d %s", ce.Actual, ce.Body)
	}

	// Keystone.
	id, err := openstack.NewIdentityV3(p, eo)
	ok(t, err)
	_, err = tokens.Get(ctx(t), id, p.Token()).Extract()
	ce = codeError(t, err)
	if ce.Actual != 403 || !strings.Contains(string(ce.Body), "You are not authorized to perform the requested action: identity:validate_token.") {
		t.Errorf("Keystone's denial: %d %s", ce.Actual, ce.Body)
	}

	wantUsed := []string{
		"create_floatingip", "create_floatingip:floating_ip_address", "delete_floatingip",
		"get_network", "get_port", "identity:validate_token",
		"os_compute_api:servers:detail", "os_compute_api:servers:show",
		"os_load-balancer_api:loadbalancer:get_all",
		"update_port", "update_port:allowed_address_pairs", "update_port:allowed_address_pairs:ip_address",
	}
	if got := e.srv.Used(); !slices.Equal(got, wantUsed) {
		t.Errorf("used\n %v, want\n %v", got, wantUsed)
	}
	wantDenied := []string{
		"create_floatingip:floating_ip_address", "get_network", "identity:validate_token",
		"os_compute_api:servers:show", "os_load-balancer_api:loadbalancer:get_all", "update_port:allowed_address_pairs",
	}
	if got := e.srv.Denied(); !slices.Equal(got, wantDenied) {
		t.Errorf("denied\n %v, want\n %v", got, wantDenied)
	}

	// The operator is not the policy's.
	e.srv.ResetUsed()
	e.srv.SetPolicy(e.fx.UserID, []string{})
	op, err := openstack.AuthenticatedClient(ctx(t), gophercloud.AuthOptions{
		IdentityEndpoint: e.fx.IdentityEndpoint(e.srv.URL()), Username: e.fx.OperatorUsername, Password: e.fx.OperatorPassword,
		DomainName: e.fx.DomainName, Scope: &gophercloud.AuthScope{ProjectName: e.fx.ProjectName, DomainID: e.fx.DomainID},
	})
	ok(t, err)
	opLB, err := openstack.NewLoadBalancerV2(op, eo)
	ok(t, err)
	if _, err := loadbalancers.List(opLB, loadbalancers.ListOpts{}).AllPages(ctx(t)); err != nil {
		t.Errorf("the operator's call: %v", err)
	}
	if got := e.srv.Used(); len(got) != 0 {
		t.Errorf("the operator's calls recorded: %v", got)
	}
	// No policy: everything is served.
	e.srv.SetPolicy("", nil)
	if _, err := servers.Get(ctx(t), compute, list[0].ID).Extract(); err != nil {
		t.Errorf("without a policy: %v", err)
	}
}

// TestPolicyRules: the rules of calls whose body or query adds some.
func TestPolicyRules(t *testing.T) {
	emu := cloudsimopenstack.NewDefault(cloudsimopenstack.Config{})
	for _, tt := range []struct {
		method, path, body string
		want               []string
	}{
		{"GET", "/compute/v2.1/servers/detail?all_tenants=1", "", []string{"os_compute_api:servers:detail", "os_compute_api:servers:detail:get_all_tenants"}},
		{"GET", "/compute/v2.1/servers?all_tenants=false", "", []string{"os_compute_api:servers:index"}},
		{"POST", "/compute/v2.1/servers/x/action", `{"os-stop": null}`, []string{"os_compute_api:servers:stop"}},
		{"GET", "/compute/v2.1/flavors/detail", "", nil},
		{"GET", "/network/v2.0/extensions", "", nil},
		{"PUT", "/network/v2.0/routers/r1/add_extraroutes", `{"router": {"routes": []}}`, []string{"add_extraroutes"}},
		{"PUT", "/network/v2.0/routers/r1", `{"router": {"routes": [], "external_gateway_info": {"network_id": "n", "enable_snat": false}}}`,
			[]string{"update_router", "update_router:external_gateway_info", "update_router:external_gateway_info:enable_snat", "update_router:external_gateway_info:network_id"}},
		{"POST", "/network/v2.0/ports", `{"port": {"network_id": "n", "device_owner": "", "fixed_ips": [{"subnet_id": "s", "ip_address": "10.0.0.9"}]}}`,
			[]string{"create_port", "create_port:fixed_ips", "create_port:fixed_ips:ip_address", "create_port:fixed_ips:subnet_id"}},
		{"PUT", "/network/v2.0/ports/p1", `{"port": {"security_groups": ["g"]}}`, []string{"update_port"}},
		{"POST", "/network/v2.0/security-group-rules", `{"security_group_rules": [{"security_group_id": "g", "direction": "ingress"}]}`, []string{"create_security_group_rule"}},
		{"PUT", "/network/v2.0/security-groups/g1/tags/a", "", []string{"update_security_group:tags"}},
		{"GET", "/network/v2.0/floatingips/f1/tags", "", []string{"get_floatingip:tags"}},
		{"PUT", "/load-balancer/v2/lbaas/pools/p1/members", `{"members": []}`, []string{"os_load-balancer_api:member:post", "os_load-balancer_api:member:put", "os_load-balancer_api:member:delete"}},
		{"PUT", "/load-balancer/v2/lbaas/pools/p1/members?additive_only=true", `{"members": []}`, []string{"os_load-balancer_api:member:post", "os_load-balancer_api:member:put"}},
		{"POST", "/load-balancer/v2/lbaas/loadbalancers", `{"loadbalancer": {"vip_subnet_id": "s", "vip_sg_ids": []}}`, []string{"os_load-balancer_api:loadbalancer:post", "os_load-balancer_api:loadbalancer:post:vip_sg_ids"}},
		{"DELETE", "/load-balancer/v2/lbaas/loadbalancers/l1?cascade=true", "", []string{"os_load-balancer_api:loadbalancer:delete"}},
		{"POST", "/load-balancer/v2/lbaas/flavorprofiles", `{}`, []string{"os_load-balancer_api:flavor-profile:post"}},
		{"GET", "/load-balancer/v2/lbaas/availabilityzones", "", []string{"os_load-balancer_api:availability-zone:get_all"}},
		{"DELETE", "/identity/v3/auth/tokens", "", []string{"identity:revoke_token"}},
		{"POST", "/identity/v3/auth/tokens", `{}`, nil},
	} {
		r := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
		op, err := emu.Operation(r)
		ok(t, err)
		r = httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
		if got := emu.Permissions(r, op); !slices.Equal(got, tt.want) {
			t.Errorf("%s %s (%s): %v, want %v", tt.method, tt.path, op, got, tt.want)
		}
	}
	// A listing's denial is its empty collection.
	r := httptest.NewRequest(http.MethodGet, "/network/v2.0/security-groups", nil)
	w := httptest.NewRecorder()
	emu.WriteDenied(w, r, "neutron:ListSecurityGroups", "get_security_group")
	if w.Code != 200 || strings.TrimSpace(w.Body.String()) != `{"security_groups":[]}` {
		t.Errorf("denied listing: %d %s", w.Code, w.Body)
	}
}
