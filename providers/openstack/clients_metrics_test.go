package openstack

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"k8s.io/component-base/metrics"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/cloudmetrics"
)

func TestOperationNames(t *testing.T) {
	for _, tt := range []struct{ method, path, want string }{
		{"POST", "/identity/v3/auth/tokens", "identity.auth.tokens.create"},
		{"GET", "/v3/auth/tokens", "auth.tokens.list"},
		{"GET", "/compute/v2.1/servers/detail", "compute.servers.list"},
		{"GET", "/v2.1/servers/detail", "servers.list"},
		{"GET", "/v2.1/servers/5f0d1e1c-9a4b-4c43-9f57-1d5e3a7b2c10", "servers.get"},
		{"POST", "/v2.1/servers/5f0d1e1c-9a4b-4c43-9f57-1d5e3a7b2c10/action", "servers.action"},
		{"GET", "/v2.1/flavors/detail", "flavors.list"},
		{"GET", "/v2.1/", "versions"},
		{"GET", "/", "versions"},
		{"GET", "/v2.0/floatingips", "floatingips.list"},
		{"POST", "/v2.0/floatingips", "floatingips.create"},
		{"PUT", "/v2.0/floatingips/6a1e2f3d-0b5c-4d54-8a68-2e6f4b8c3d21", "floatingips.update"},
		{"PUT", "/v2.0/routers/9d4b5c6a-3e8f-4a87-9d9b-5b9c7e1f6a54/add_extraroutes", "routers.add_extraroutes"},
		{"DELETE", "/v2.0/security-group-rules/0a1b2c3d4e5f40718293a4b5c6d7e8f9", "security-group-rules.delete"},
		{"GET", "/v2/lbaas/loadbalancers/7b2f3a4e-1c6d-4e65-9b79-3f7a5c9d4e32/status", "loadbalancers.status"},
		{"DELETE", "/v2/lbaas/loadbalancers/7b2f3a4e-1c6d-4e65-9b79-3f7a5c9d4e32", "loadbalancers.delete"},
		{"PUT", "/v2/lbaas/pools/8c3a4b5f-2d7e-4f76-8c8a-4a8b6d0e5f43/members", "pools.members.replace"},
		{"GET", "/v2/lbaas/pools/8c3a4b5f-2d7e-4f76-8c8a-4a8b6d0e5f43/members/8c3a4b5f-2d7e-4f76-8c8a-4a8b6d0e5f43", "pools.members.get"},
		{"GET", "/v2.1/servers/my-server-name-with-digits-01", "servers.get"},
		{"GET", "/v2.0/ports/" + strings.Repeat("a", 40), "ports.get"},
	} {
		if got := operationName(tt.method, tt.path); got != tt.want {
			t.Errorf("%s %s = %q, want %q", tt.method, tt.path, got, tt.want)
		}
	}
}

// TestServiceRouter: requests are counted under the service whose
// endpoint they are under, named below it; the rest (authentication)
// under identity, named below the auth URL.
func TestServiceRouter(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }))
	defer ts.Close()
	rec := cloudmetrics.NewRecorder()
	reg := metrics.NewKubeRegistry()
	reg.MustRegister(rec.Collectors()...)
	router := newServiceRouter(http.DefaultTransport, ts.URL+"/identity/v3", rec)
	router.route(ts.URL+"/compute/v2.1", "compute")
	router.route(ts.URL+"/compute/v2.1/nested/", "other")
	c := &http.Client{Transport: router}
	for _, path := range []string{"/compute/v2.1/servers/detail", "/compute/v2.1/nested/things", "/identity/v3/auth/tokens", "/identity/v3/auth/tokens"} {
		resp, err := c.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	want := map[[2]string]float64{
		{"compute", "servers.list"}:      1,
		{"other", "things.list"}:         1,
		{"identity", "auth.tokens.list"}: 2,
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[[2]string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != cloudmetrics.RequestsName {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["provider"] != ProviderName || l["code"] != "200" {
				t.Errorf("labels %v", l)
			}
			got[[2]string{l["service"], l["operation"]}] += m.GetCounter().GetValue()
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
}
