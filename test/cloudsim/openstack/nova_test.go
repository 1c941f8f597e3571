package openstack_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/utils"

	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

// gophercloud's microversion discovery reads GET /compute/v2.1/.
func TestNovaMicroversionDiscovery(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	c := e.compute(t, "")
	mv, err := utils.GetSupportedMicroversions(t.Context(), c)
	ok(t, err)
	if mv.MinMajor != 2 || mv.MinMinor != 1 || mv.MaxMajor != 2 || mv.MaxMinor != 96 {
		t.Fatalf("supported microversions %+v", mv)
	}
	c47, err := utils.RequireMicroversion(t.Context(), *c, "2.47")
	ok(t, err)
	if c47.Microversion != "2.47" {
		t.Errorf("microversion %q", c47.Microversion)
	}
	if _, err := utils.RequireMicroversion(t.Context(), *c, "2.97"); err == nil {
		t.Error("2.97 reported as supported")
	}

	// The root lists both major versions; the version documents need no
	// token.
	w := e.do(t, "GET", "/compute/", "")
	vs := w.body["versions"].([]any)
	if w.status != 200 || len(vs) != 2 {
		t.Fatalf("GET /compute/: %d %s", w.status, w.raw)
	}
	v21 := vs[1].(map[string]any)
	if v21["id"] != "v2.1" || v21["status"] != "CURRENT" || v21["version"] != "2.96" || v21["min_version"] != "2.1" ||
		v21["links"].([]any)[0].(map[string]any)["href"] != e.srv.URL()+"/compute/v2.1/" {
		t.Errorf("v2.1 %v", v21)
	}
	w = e.do(t, "GET", "/compute/v2.1", "")
	if w.status != 200 || w.body["version"].(map[string]any)["version"] != "2.96" {
		t.Errorf("GET /compute/v2.1: %d %s", w.status, w.raw)
	}
	if w := e.do(t, "GET", "/compute/v3/servers", ""); w.status != http.StatusMultipleChoices || w.body["choices"] == nil {
		t.Errorf("GET /compute/v3/servers: %d %s", w.status, w.raw)
	}
}

// The version asked for in either header is echoed in both, with Vary,
// on successes and errors alike.
func TestNovaMicroversionHeaders(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	tok := e.token(t)
	cases := []struct {
		name    string
		headers []string
		status  int
		echo    string
	}{
		{"none: the minimum", nil, 200, "2.1"},
		{"new header", []string{"OpenStack-API-Version", "compute 2.60"}, 200, "2.60"},
		{"among other services", []string{"OpenStack-API-Version", "volume 3.59, compute 2.53"}, 200, "2.53"},
		{"legacy header", []string{"X-OpenStack-Nova-API-Version", "2.26"}, 200, "2.26"},
		{"new header wins", []string{"X-OpenStack-Nova-API-Version", "2.26", "OpenStack-API-Version", "compute 2.30"}, 200, "2.30"},
		{"latest", []string{"OpenStack-API-Version", "compute latest"}, 200, "2.96"},
		{"too new", []string{"OpenStack-API-Version", "compute 2.97"}, 406, "2.97"},
		{"too old", []string{"X-OpenStack-Nova-API-Version", "2.0"}, 406, "2.0"},
		{"malformed", []string{"OpenStack-API-Version", "compute 2.x"}, 400, ""},
		{"leading zero", []string{"OpenStack-API-Version", "compute 2.01"}, 400, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := e.do(t, "GET", "/compute/v2.1/servers", "", append([]string{"X-Auth-Token", tok}, tc.headers...)...)
			if w.status != tc.status {
				t.Fatalf("status %d, want %d: %s", w.status, tc.status, w.raw)
			}
			if got := w.header.Get("X-OpenStack-Nova-API-Version"); got != tc.echo {
				t.Errorf("legacy echo %q, want %q", got, tc.echo)
			}
			if tc.echo != "" {
				if got := w.header.Get("OpenStack-API-Version"); got != "compute "+tc.echo {
					t.Errorf("echo %q", got)
				}
				if vary := w.header.Values("Vary"); !slices.Contains(vary, "OpenStack-API-Version") || !slices.Contains(vary, "X-OpenStack-Nova-API-Version") {
					t.Errorf("Vary %v", vary)
				}
			}
			switch tc.status {
			case 406:
				f := w.body["computeFault"].(map[string]any)
				if f["code"] != float64(406) || f["message"] != "Version "+tc.echo+" is not supported by the API. Minimum is 2.1 and maximum is 2.96." {
					t.Errorf("fault %v", f)
				}
			case 400:
				if w.body["badRequest"] == nil {
					t.Errorf("body %s", w.raw)
				}
			}
			if w.header.Get("X-Openstack-Request-Id") == "" || w.header.Get("X-Compute-Request-Id") == "" {
				t.Errorf("no request IDs: %v", w.header)
			}
		})
	}

	// gophercloud sends both headers.
	c := e.compute(t, "2.97")
	_, err := servers.List(c, nil).AllPages(t.Context())
	if !gophercloud.ResponseCodeIs(err, http.StatusNotAcceptable) {
		t.Fatalf("2.97 through gophercloud: %v", err)
	}
}

func TestNovaUnknownRoutes(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	tok := e.token(t)
	for _, tc := range []struct{ method, path string }{
		{"GET", "/compute/v2.1/os-hypervisors"},
		{"PUT", "/compute/v2.1/servers/detail"},
		{"GET", "/compute/v2/servers"},
	} {
		w := e.do(t, tc.method, tc.path, "", "X-Auth-Token", tok)
		if w.status != 404 || w.body["itemNotFound"] == nil {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, w.status, w.raw)
		}
	}
	if w := e.do(t, "GET", "/compute/v2.1/os-hypervisors", ""); w.status != 401 {
		t.Errorf("unknown route without a token: %d (auth comes first)", w.status)
	}
	if n := e.srv.CallCount("nova:Unsupported"); n != 4 {
		t.Errorf("%d unsupported calls counted", n)
	}
}
