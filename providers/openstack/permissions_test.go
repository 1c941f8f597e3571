package openstack

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/cloudmetrics"
	decl "github.com/multicloud-ccm/multicloud-ccm/providers/permissions"
	osemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

// TestPermissionsDeclared: the declaration is well-formed, every
// optional feature is one a setting turns on, and a config naming its
// floating network (or making every Service internal) needs no network
// lookup.
func TestPermissionsDeclared(t *testing.T) {
	d := Permissions()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	on := PermissionFeatures(&Section{
		LoadBalancer: LoadBalancerSection{ManageSecurityGroups: true},
		Routes:       RoutesSection{RouterID: "5f0d1e1c-9a4b-4c43-9f57-1d5e3a7b2c10"},
	}, true)
	for _, f := range d.Features {
		if !slices.Contains(on, f.Name) {
			t.Errorf("feature %s: no config turns it on", f.Name)
		}
	}
	for _, lb := range []LoadBalancerSection{{FloatingNetworkID: "5f0d1e1c-9a4b-4c43-9f57-1d5e3a7b2c10"}, {InternalLB: true}} {
		if got := PermissionFeatures(&Section{LoadBalancer: lb}, false); slices.Contains(got, "floating-network-lookup") || slices.Contains(got, "orphan-deletion") {
			t.Errorf("%+v: features %v", lb, got)
		}
	}
	if _, err := d.Grants(on...); err != nil {
		t.Error(err)
	}
}

// TestDeniedNamesPermissionAndFeature: a call a service refuses by
// policy is an error naming the rule and the features that need it,
// through the real gophercloud clients: tried once, still the 403
// gophercloud reads, never "the server is gone".
func TestDeniedNamesPermissionAndFeature(t *testing.T) {
	all, _ := Permissions().Grants()
	without := func(rules ...string) []string {
		return slices.DeleteFunc(decl.Permissions(all), func(p string) bool { return slices.Contains(rules, p) })
	}
	check := func(t *testing.T, err error, rule, feature string) {
		t.Helper()
		var denied *decl.DeniedError
		if !errors.As(err, &denied) || denied.Permission != rule || !strings.Contains(denied.Features, feature) {
			t.Fatalf("error %v; want a DeniedError naming %s and the %s feature", err, rule, feature)
		}
		if !gophercloud.ResponseCodeIs(err, http.StatusForbidden) || statusOf(err) != http.StatusForbidden || isNotFound(err) || isConflict(err) {
			t.Errorf("error %v: want the 403 it is", err)
		}
		if !strings.Contains(err.Error(), rule) || !strings.Contains(err.Error(), feature) {
			t.Errorf("message does not say what to grant: %v", err)
		}
		t.Logf("%v", err)
	}

	t.Run("nova", func(t *testing.T) {
		env := newTestEnv(t, osemu.Config{}, nil)
		id := env.launch(t, osemu.LaunchSpec{Name: "w"})[0]
		env.srv.SetPolicy(env.fx.UserID, without("os_compute_api:servers:show"))
		exists, err := env.cloud.instances.InstanceExists(t.Context(), node("w", "openstack:///"+id))
		if err == nil || exists {
			t.Fatalf("InstanceExists without os_compute_api:servers:show = %v, %v; want an error", exists, err)
		}
		check(t, err, "os_compute_api:servers:show", "nodes")
		if n := env.srv.CallCount("nova:GetServer"); n != 1 {
			t.Errorf("%d GETs of the server: a denial must not be retried", n)
		}
	})

	t.Run("octavia", func(t *testing.T) {
		e := newLBEnv(t, 2, nil)
		e.srv.SetPolicy(e.fx.UserID, without("os_load-balancer_api:loadbalancer:post"))
		_, err := e.lb.EnsureLoadBalancer(t.Context(), "", service("web", 80), e.nodes)
		check(t, err, "os_load-balancer_api:loadbalancer:post", "load-balancers")
		if n := e.srv.CallCount("octavia:CreateLoadBalancer"); n != 1 {
			t.Errorf("%d creates: a denial must not be retried", n)
		}
		if lbs := e.emu.LoadBalancers(); len(lbs) != 0 {
			t.Errorf("load balancers %+v after a denied create", lbs)
		}
	})

	t.Run("neutron", func(t *testing.T) {
		env := newTestEnv(t, osemu.Config{}, nil)
		env.srv.SetPolicy(env.fx.UserID, without("create_floatingip"))
		_, err := floatingips.Create(t.Context(), env.api.network, floatingips.CreateOpts{FloatingNetworkID: env.fx.ExternalNetworkID}).Extract()
		check(t, err, "create_floatingip", "load-balancers")
		if n := env.srv.CallCount("neutron:CreateFloatingIP"); n != 1 {
			t.Errorf("%d creates: a denial must not be retried", n)
		}
	})
}

// TestDeniedRules: the rules are read from each service's policy
// denial, derived from the path for Octavia, and nothing is read from
// the services' other 403s.
func TestDeniedRules(t *testing.T) {
	const lb, pool, member = "7b2f3a4e-1c6d-4e65-9b79-3f7a5c9d4e32", "8c3a4b5f-2d7e-4f76-8c8a-4a8b6d0e5f43", "9d4b5c6a-3e8f-4a87-9d9b-5b9c7e1f6a54"
	octavia := `{"faultcode": "Client", "faultstring": "Policy does not allow this request to be performed.", "debuginfo": null}`
	for _, c := range []struct {
		service, method, path, body string
		want                        []string
	}{
		{"compute", "GET", "/servers/" + lb, `{"forbidden": {"code": 403, "message": "Policy doesn't allow os_compute_api:servers:show to be performed."}}`, []string{"os_compute_api:servers:show"}},
		{"compute", "POST", "/servers", `{"forbidden": {"code": 403, "message": "Quota exceeded for instances: Requested 1, but already used 10 of 10 instances"}}`, nil},
		{"network", "POST", "/v2.0/floatingips", `{"NeutronError": {"type": "PolicyNotAuthorized", "message": "rule:create_floatingip is disallowed by policy", "detail": ""}}`, []string{"create_floatingip"}},
		{"network", "POST", "/v2.0/floatingips", `{"NeutronError": {"type": "PolicyNotAuthorized", "message": "create_floatingip is disallowed by policy", "detail": ""}}`, []string{"create_floatingip"}},
		{"network", "PUT", "/v2.0/ports/" + lb, `{"NeutronError": {"type": "PolicyNotAuthorized", "message": "((rule:update_port and rule:update_port:allowed_address_pairs) and (rule:update_port:allowed_address_pairs:ip_address and rule:update_port:allowed_address_pairs:mac_address)) is disallowed by policy", "detail": ""}}`,
			[]string{"update_port", "update_port:allowed_address_pairs", "update_port:allowed_address_pairs:ip_address", "update_port:allowed_address_pairs:mac_address"}},
		{"network", "POST", "/v2.0/ports", `{"NeutronError": {"type": "HTTPForbidden", "message": "Not allowed", "detail": ""}}`, nil},
		{"load-balancer", "POST", "/v2/lbaas/loadbalancers", octavia, []string{"os_load-balancer_api:loadbalancer:post"}},
		{"load-balancer", "GET", "/v2.0/lbaas/loadbalancers", octavia, []string{"os_load-balancer_api:loadbalancer:get_all"}},
		{"load-balancer", "GET", "/v2/lbaas/loadbalancers/" + lb, octavia, []string{"os_load-balancer_api:loadbalancer:get_one"}},
		{"load-balancer", "PUT", "/v2/lbaas/loadbalancers/" + lb, octavia, []string{"os_load-balancer_api:loadbalancer:put"}},
		{"load-balancer", "DELETE", "/v2/lbaas/loadbalancers/" + lb, octavia, []string{"os_load-balancer_api:loadbalancer:delete"}},
		{"load-balancer", "GET", "/v2/lbaas/loadbalancers/" + lb + "/status", octavia, []string{"os_load-balancer_api:loadbalancer:get_status"}},
		{"load-balancer", "GET", "/v2/lbaas/listeners/" + lb + "/stats", octavia, []string{"os_load-balancer_api:listener:get_stats"}},
		{"load-balancer", "PUT", "/v2/lbaas/loadbalancers/" + lb + "/failover", octavia, []string{"os_load-balancer_api:loadbalancer:put_failover"}},
		{"load-balancer", "GET", "/v2/lbaas/pools/" + pool + "/members", octavia, []string{"os_load-balancer_api:member:get_all"}},
		{"load-balancer", "PUT", "/v2/lbaas/pools/" + pool + "/members", octavia,
			[]string{"os_load-balancer_api:member:post", "os_load-balancer_api:member:put", "os_load-balancer_api:member:delete"}},
		{"load-balancer", "PUT", "/v2/lbaas/pools/" + pool + "/members?additive_only=True", octavia, []string{"os_load-balancer_api:member:post", "os_load-balancer_api:member:put"}},
		{"load-balancer", "DELETE", "/v2/lbaas/pools/" + pool + "/members/" + member, octavia, []string{"os_load-balancer_api:member:delete"}},
		{"load-balancer", "POST", "/v2/lbaas/healthmonitors", octavia, []string{"os_load-balancer_api:healthmonitor:post"}},
		{"load-balancer", "GET", "/v2/lbaas/pools/" + pool + "/other", octavia, nil},
		{"load-balancer", "GET", "/v2/octavia/amphorae", octavia, nil},
		{"load-balancer", "POST", "/v2/lbaas/loadbalancers", `{"faultcode": "Client", "faultstring": "Quota has been met for resources: load_balancer", "debuginfo": null}`, nil},
		{"identity", "GET", "/v3/auth/tokens", `{"error": {"code": 403, "message": "You are not authorized to perform the requested action: identity:validate_token.", "title": "Forbidden"}}`, []string{"identity:validate_token"}},
		{"identity", "GET", "/v3/users", `{"error": {"code": 403, "message": "You are not authorized to perform the requested action.", "title": "Forbidden"}}`, nil},
		{"compute", "GET", "/servers", `<html>Forbidden</html>`, nil},
	} {
		u, _ := url.Parse(c.path)
		if got := deniedRules(c.service, c.method, u.Path, u.Query(), []byte(c.body)); !slices.Equal(got, c.want) {
			t.Errorf("%s %s %s %s: %q; want %q", c.service, c.method, c.path, c.body, got, c.want)
		}
	}
}

// TestDeniedSeveralRules: a denial the service cannot pin on one rule
// names each, and the features of any.
func TestDeniedSeveralRules(t *testing.T) {
	perm, features := denied([]string{"update_port", "update_port:allowed_address_pairs"})
	if perm != "update_port or update_port:allowed_address_pairs" || features != "load-balancers,member-security-group,routes" {
		t.Errorf("%q, %q", perm, features)
	}
	if perm, features := denied([]string{"os_compute_api:servers:detail"}); perm != "os_compute_api:servers:detail" || features != "nodes" {
		t.Errorf("%q, %q", perm, features)
	}
}

// TestOtherForbiddenPassesThrough: a 403 that is no policy denial (a
// quota) reaches gophercloud as it came, body and all.
func TestOtherForbiddenPassesThrough(t *testing.T) {
	const quota = `{"forbidden": {"code": 403, "message": "Quota exceeded for instances"}}`
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, quota)
	}))
	defer ts.Close()
	rec := cloudmetrics.NewRecorder()
	router := newServiceRouter(http.DefaultTransport, ts.URL+"/identity/v3", rec)
	router.route(ts.URL+"/compute/v2.1", "compute")
	resp, err := (&http.Client{Transport: router}).Post(ts.URL+"/compute/v2.1/servers", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusForbidden || string(body) != quota {
		t.Errorf("%d %s; want the 403 as it came", resp.StatusCode, body)
	}
}
