package openstack_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"

	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

func TestFlavors(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	c := e.compute(t, "")
	pages, err := flavors.ListDetail(c, flavors.ListOpts{Limit: 2}).AllPages(t.Context())
	ok(t, err)
	list, err := flavors.ExtractFlavors(pages)
	ok(t, err)
	var names []string
	for _, f := range list {
		names = append(names, f.Name)
	}
	if !slices.Equal(names, []string{"m1.tiny", "m1.small", "m1.medium", "m1.large", "m1.xlarge"}) {
		t.Fatalf("flavors %v", names)
	}
	if n := e.srv.CallCount("nova:ListFlavorsDetail"); n != 3 {
		t.Errorf("%d pages", n)
	}
	small := list[1]
	if small.ID != "2" || small.VCPUs != 1 || small.RAM != 2048 || small.Disk != 20 || small.Swap != 0 ||
		!small.IsPublic || small.RxTxFactor != 1 || small.ExtraSpecs != nil {
		t.Errorf("m1.small at 2.1: %+v", small)
	}
	pages, err = flavors.ListDetail(c, flavors.ListOpts{MinRAM: 8192, SortDir: "desc"}).AllPages(t.Context())
	ok(t, err)
	big, _ := flavors.ExtractFlavors(pages)
	if len(big) != 2 || big[0].Name != "m1.xlarge" {
		t.Errorf("minRam and desc: %+v", big)
	}

	f, err := flavors.Get(t.Context(), e.compute(t, "2.61"), "4").Extract()
	ok(t, err)
	if f.Name != "m1.large" || f.ExtraSpecs["hw:cpu_policy"] != "shared" {
		t.Errorf("m1.large at 2.61: %+v", f)
	}
	_, err = flavors.Get(t.Context(), c, "nope").Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Fatalf("unknown flavor: %v", err)
	}
	key, fault := faultBody(t, codeError(t, err).Body)
	if key != "itemNotFound" || fault["message"] != "Flavor nope could not be found." {
		t.Errorf("fault %s %v", key, fault)
	}

	tok := c.Token()
	w := e.do(t, "GET", "/compute/v2.1/flavors/detail?limit=1", "", "X-Auth-Token", tok)
	fl := w.body["flavors"].([]any)[0].(map[string]any)
	if fl["swap"] != "" || fl["OS-FLV-EXT-DATA:ephemeral"] != float64(0) || fl["OS-FLV-DISABLED:disabled"] != false {
		t.Errorf("2.1 flavor %v", fl)
	}
	if next := w.body["flavors_links"].([]any)[0].(map[string]any)["href"]; next != e.srv.URL()+"/compute/v2.1/flavors/detail?limit=1&marker=1" {
		t.Errorf("next %v", next)
	}
	w = e.do(t, "GET", "/compute/v2.1/flavors/detail?limit=1", "", "X-Auth-Token", tok, "OpenStack-API-Version", "compute 2.75")
	if fl := w.body["flavors"].([]any)[0].(map[string]any); fl["swap"] != float64(0) || fl["description"] != nil {
		t.Errorf("2.75 flavor %v", fl)
	}
	w = e.do(t, "GET", "/compute/v2.1/flavors", "", "X-Auth-Token", tok)
	if brief := w.body["flavors"].([]any)[0].(map[string]any); len(brief) != 3 || brief["links"] == nil {
		t.Errorf("brief flavor %v", brief)
	}
	for q, status := range map[string]int{"marker=zz": 400, "minRam=big": 400, "sort_dir=up": 400, "sort_key=name": 200} {
		if w := e.do(t, "GET", "/compute/v2.1/flavors/detail?"+q, "", "X-Auth-Token", tok); w.status != status {
			t.Errorf("%s: %d %s", q, w.status, w.raw)
		}
	}
}
