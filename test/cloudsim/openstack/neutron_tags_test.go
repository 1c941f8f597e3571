package openstack_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

func TestNeutronTags(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	c := e.networkClient(t)
	p, err := ports.Create(ctx(t), c, ports.CreateOpts{NetworkID: e.fx.NetworkID}).Extract()
	ok(t, err)
	g, err := groups.Create(ctx(t), c, groups.CreateOpts{Name: "g"}).Extract()
	ok(t, err)
	f, err := floatingips.Create(ctx(t), c, floatingips.CreateOpts{FloatingNetworkID: e.fx.ExternalNetworkID}).Extract()
	ok(t, err)

	// revision reads a resource's revision_number.
	revision := func(kind, id string) float64 {
		t.Helper()
		w := e.do(t, "GET", "/network/v2.0/"+kind+"/"+id, "", "X-Auth-Token", e.token(t))
		for _, v := range w.body {
			return v.(map[string]any)["revision_number"].(float64)
		}
		return -1
	}
	for _, tc := range []struct{ kind, id string }{
		{"networks", e.fx.NetworkID}, {"subnets", e.fx.SubnetID}, {"ports", p.ID}, {"floatingips", f.ID},
		{"security-groups", g.ID}, {"routers", e.fx.RouterID},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			rev := revision(tc.kind, tc.id)
			tags, err := attributestags.ReplaceAll(ctx(t), c, tc.kind, tc.id, attributestags.ReplaceAllOpts{Tags: []string{"cluster=k", "svc"}}).Extract()
			ok(t, err)
			if !slices.Equal(tags, []string{"cluster=k", "svc"}) || revision(tc.kind, tc.id) != rev+1 {
				t.Errorf("replaced: %v, revision %v (was %v)", tags, revision(tc.kind, tc.id), rev)
			}
			ok(t, attributestags.Add(ctx(t), c, tc.kind, tc.id, "extra").ExtractErr())
			ok(t, attributestags.Add(ctx(t), c, tc.kind, tc.id, "extra").ExtractErr()) // no-op
			exists, err := attributestags.Confirm(ctx(t), c, tc.kind, tc.id, "extra").Extract()
			ok(t, err)
			got, err := attributestags.List(ctx(t), c, tc.kind, tc.id).Extract()
			ok(t, err)
			if !exists || !slices.Equal(got, []string{"cluster=k", "svc", "extra"}) || revision(tc.kind, tc.id) != rev+2 {
				t.Errorf("after add: %v %v, revision %v", exists, got, revision(tc.kind, tc.id))
			}
			ok(t, attributestags.Delete(ctx(t), c, tc.kind, tc.id, "svc").ExtractErr())
			err = attributestags.Delete(ctx(t), c, tc.kind, tc.id, "svc").ExtractErr()
			wantNeutronErr(t, err, http.StatusNotFound, "TagNotFound", "=Tag svc could not be found.")
			// Confirm answers a missing tag with 404, which gophercloud
			// turns into false.
			exists, err = attributestags.Confirm(ctx(t), c, tc.kind, tc.id, "svc").Extract()
			if exists || err != nil {
				t.Errorf("deleted tag confirmed: %v %v", exists, err)
			}
			ok(t, attributestags.DeleteAll(ctx(t), c, tc.kind, tc.id).ExtractErr())
			if got, _ := attributestags.List(ctx(t), c, tc.kind, tc.id).Extract(); len(got) != 0 {
				t.Errorf("after delete all: %v", got)
			}
			_, err = attributestags.List(ctx(t), c, tc.kind, "nope").Extract()
			wantNeutronErr(t, err, http.StatusNotFound, "TagResourceNotFound", " nope could not be found.")
		})
	}

	// Tag filters on lists: all of, any of, none of all, none of any.
	var made []string
	for _, tags := range [][]string{{"a", "b"}, {"a"}, {"c"}, nil} {
		p, err := ports.Create(ctx(t), c, ports.CreateOpts{NetworkID: e.fx.NetworkID, DeviceOwner: "tagged"}).Extract()
		ok(t, err)
		if tags != nil {
			_, err := attributestags.ReplaceAll(ctx(t), c, "ports", p.ID, attributestags.ReplaceAllOpts{Tags: tags}).Extract()
			ok(t, err)
		}
		made = append(made, p.ID)
	}
	for _, tc := range []struct {
		opts ports.ListOpts
		want []string
	}{
		{ports.ListOpts{Tags: "a,b"}, made[:1]},
		{ports.ListOpts{Tags: "a"}, made[:2]},
		{ports.ListOpts{TagsAny: "b,c"}, []string{made[0], made[2]}},
		{ports.ListOpts{NotTags: "a,b"}, made[1:]},
		{ports.ListOpts{NotTagsAny: "a,c"}, made[3:]},
		{ports.ListOpts{Tags: "a", NotTags: "b"}, made[1:2]},
	} {
		tc.opts.DeviceOwner = "tagged"
		if got := portIDs(listPorts(t, c, tc.opts)); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.opts, got, tc.want)
		}
	}
	// Repeated parameters are the same as commas.
	w := e.do(t, "GET", "/network/v2.0/ports?device_owner=tagged&tags-any=b&tags-any=c", "", "X-Auth-Token", e.token(t))
	if n := len(w.body["ports"].([]any)); n != 2 {
		t.Errorf("repeated tags-any: %d ports", n)
	}

	// Tagged resources show their tags in Resources.
	for _, r := range e.srv.Resources() {
		if r.ID == made[0] && (r.Kind != cloudsimopenstack.KindPort || !maps2Equal(r.Tags, "a", "b")) {
			t.Errorf("resource %+v", r)
		}
	}
}

func maps2Equal(m map[string]string, keys ...string) bool {
	if len(m) != len(keys) {
		return false
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

func TestNeutronTagErrors(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	tok := e.token(t)
	path := "/network/v2.0/networks/" + e.fx.NetworkID + "/tags"
	many := make([]string, 51)
	for i := range many {
		many[i] = strings.Repeat("t", i+1)
	}
	manyJSON, _ := json.Marshal(map[string]any{"tags": many})
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		typ, msg                 string
	}{
		{"no tags key", "PUT", path, `{"tag": []}`, 400, "InvalidInput", "=Invalid input for operation: Invalid tags body."},
		{"not a list", "PUT", path, `{"tags": "a"}`, 400, "InvalidInput", "=Invalid input for operation: 'a' is not a list."},
		{"duplicates", "PUT", path, `{"tags": ["a", "a"]}`, 400, "InvalidInput", "=Invalid input for operation: Duplicate items in the list: 'a'."},
		{"too many", "PUT", path, string(manyJSON), 400, "BadRequest", "=Bad networks request: The number of tags exceed the per-resource limit of 50."},
		{"too long", "PUT", path + "/" + strings.Repeat("x", 256), "", 400, "InvalidInput", "exceeds maximum length of 255"},
		{"external network", "PUT", "/network/v2.0/networks/" + e.fx.ExternalNetworkID + "/tags/x", "", 403, "PolicyNotAuthorized", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := e.do(t, tc.method, tc.path, tc.body, "X-Auth-Token", tok)
			ne, _ := w.body["NeutronError"].(map[string]any)
			msg, _ := ne["message"].(string)
			exact, isExact := strings.CutPrefix(tc.msg, "=")
			if w.status != tc.status || ne["type"] != tc.typ || (isExact && msg != exact) || (!isExact && !strings.Contains(msg, tc.msg)) {
				t.Errorf("%d %s", w.status, w.raw)
			}
		})
	}
	// POST .../tags (tag-creation) adds to the tags there are.
	if w := e.do(t, "PUT", path+"/old", "", "X-Auth-Token", tok); w.status != 201 {
		t.Fatalf("add: %d %s", w.status, w.raw)
	}
	w := e.do(t, "POST", path, `{"tags": ["new", "old"]}`, "X-Auth-Token", tok)
	if w.status != 200 {
		t.Fatalf("create tags: %d %s", w.status, w.raw)
	}
	if w := e.do(t, "GET", path, "", "X-Auth-Token", tok); !slices.Equal(toStrings(w.body["tags"]), []string{"old", "new"}) {
		t.Errorf("tags %s", w.raw)
	}
	// Reading an external network's tags is allowed.
	if w := e.do(t, "GET", "/network/v2.0/networks/"+e.fx.ExternalNetworkID+"/tags", "", "X-Auth-Token", tok); w.status != 200 {
		t.Errorf("external tags: %d", w.status)
	}
	// Without tag-creation there is no POST.
	e = newEnv(t, cloudsimopenstack.Config{Neutron: cloudsimopenstack.NeutronConfig{DisabledExtensions: []string{"tag-creation"}}})
	if w := e.do(t, "POST", path, `{"tags": ["new"]}`, "X-Auth-Token", e.token(t)); w.status != 404 {
		t.Errorf("POST tags without tag-creation: %d", w.status)
	}
}
