package openstack_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/gophercloud/gophercloud/v2/pagination"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

// networkClient is a Neutron client for the fixture user.
func (e *env) networkClient(t *testing.T) *gophercloud.ServiceClient {
	t.Helper()
	c, err := openstack.NewNetworkV2(e.provider(t), gophercloud.EndpointOpts{Region: "RegionOne"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// neutronErr checks that err is an HTTP status answer with a
// NeutronError body and returns its type and message.
func neutronErr(t *testing.T, err error, status int) (string, string) {
	t.Helper()
	if !gophercloud.ResponseCodeIs(err, status) {
		t.Fatalf("want %d, got %v", status, err)
	}
	key, body := faultBody(t, codeError(t, err).Body)
	if key != "NeutronError" || body["detail"] != "" {
		t.Fatalf("error body %v is not a NeutronError", body)
	}
	typ, _ := body["type"].(string)
	msg, _ := body["message"].(string)
	return typ, msg
}

// wantNeutronErr checks an error's status, type and message (a
// substring unless it starts with "=").
func wantNeutronErr(t *testing.T, err error, status int, typ, msg string) {
	t.Helper()
	gotType, gotMsg := neutronErr(t, err, status)
	exact, isExact := strings.CutPrefix(msg, "=")
	if gotType != typ || (isExact && gotMsg != exact) || (!isExact && !strings.Contains(gotMsg, msg)) {
		t.Errorf("got %s %q, want %s %q", gotType, gotMsg, typ, msg)
	}
}

func TestNeutronExtensions(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	c := e.networkClient(t)
	pages, err := extensions.List(c).AllPages(ctx(t))
	ok(t, err)
	exts, err := extensions.ExtractExtensions(pages)
	ok(t, err)
	var aliases []string
	for _, x := range exts {
		aliases = append(aliases, x.Alias)
	}
	for _, want := range []string{
		"router", "extraroute", "extraroute-atomic", "external-net", "security-group", "port-security",
		"allowed-address-pairs", "standard-attr-revisions", "standard-attr-tag", "standard-attr-description",
		"standard-attr-timestamp", "tag-creation", "tag-ports-during-bulk-creation", "revision-if-match",
		"fip-port-details", "pagination", "sorting", "filter-validation",
	} {
		if !slices.Contains(aliases, want) {
			t.Errorf("extension %s missing from %v", want, aliases)
		}
	}
	x, err := extensions.Get(ctx(t), c, "extraroute-atomic").Extract()
	ok(t, err)
	if x.Name != "Atomically add/remove extra routes" || x.Updated == "" {
		t.Errorf("extraroute-atomic: %+v", x)
	}
	_, err = extensions.Get(ctx(t), c, "nope").Extract()
	wantNeutronErr(t, err, http.StatusNotFound, "HTTPNotFound", "=Extension with alias nope does not exist")

	// Disabling an extension takes those that require it along.
	e = newEnv(t, cloudsimopenstack.Config{Neutron: cloudsimopenstack.NeutronConfig{DisabledExtensions: []string{"extraroute"}}})
	c = e.networkClient(t)
	for alias, want := range map[string]bool{"router": true, "extraroute": false, "extraroute-atomic": false} {
		_, err := extensions.Get(ctx(t), c, alias).Extract()
		if (err == nil) != want {
			t.Errorf("%s present: %v", alias, err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("an unknown extension to disable did not panic")
		}
	}()
	cloudsimopenstack.New(cloudsimopenstack.Config{Neutron: cloudsimopenstack.NeutronConfig{DisabledExtensions: []string{"extra-route"}}})
}

func TestNeutronNetworksAndSubnets(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	c := e.networkClient(t)
	type NetExtras struct {
		External bool `json:"router:external"`
		MTU      int  `json:"mtu"`
	}
	type netExt struct {
		networks.Network
		NetExtras
	}
	list := func(opts networks.ListOpts, query string) []netExt {
		t.Helper()
		var pager pagination.Pager
		if query == "" {
			pager = networks.List(c, opts)
		} else {
			pager = pagination.NewPager(c, c.ServiceURL("networks")+"?"+query, func(r pagination.PageResult) pagination.Page {
				return networks.NetworkPage{LinkedPageBase: pagination.LinkedPageBase{PageResult: r}}
			})
		}
		pages, err := pager.AllPages(ctx(t))
		ok(t, err)
		var out []netExt
		ok(t, networks.ExtractNetworksInto(pages, &out))
		return out
	}
	all := list(networks.ListOpts{}, "")
	if len(all) != 2 || all[0].ID != e.fx.NetworkID || all[1].ID != e.fx.ExternalNetworkID {
		t.Fatalf("networks %+v", all)
	}
	if n := all[0]; n.External || n.MTU != 1442 || n.Status != "ACTIVE" || !slices.Equal(n.Subnets, []string{e.fx.SubnetID}) ||
		n.ProjectID != e.fx.ProjectID || n.RevisionNumber < 1 || n.CreatedAt.IsZero() {
		t.Errorf("node network %+v", n)
	}
	if n := all[1]; !n.External || n.MTU != 1500 || n.Name != "public" {
		t.Errorf("external network %+v", n)
	}
	for _, tc := range []struct {
		name  string
		opts  networks.ListOpts
		query string
		want  []string
	}{
		{"by name", networks.ListOpts{Name: "public"}, "", []string{e.fx.ExternalNetworkID}},
		{"by id", networks.ListOpts{ID: e.fx.NetworkID}, "", []string{e.fx.NetworkID}},
		{"by project", networks.ListOpts{ProjectID: e.fx.ProjectID}, "", []string{e.fx.NetworkID}},
		{"external", networks.ListOpts{}, "router:external=True", []string{e.fx.ExternalNetworkID}},
		{"internal", networks.ListOpts{}, "router:external=false", []string{e.fx.NetworkID}},
		{"either id", networks.ListOpts{}, "id=" + e.fx.NetworkID + "&id=" + e.fx.ExternalNetworkID, []string{e.fx.NetworkID, e.fx.ExternalNetworkID}},
		{"sorted by name, descending", networks.ListOpts{SortKey: "name", SortDir: "desc"}, "", []string{e.fx.ExternalNetworkID, e.fx.NetworkID}},
		{"no match", networks.ListOpts{Name: "nope"}, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, n := range list(tc.opts, tc.query) {
				got = append(got, n.ID)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	n, err := networks.Get(ctx(t), c, e.fx.ExternalNetworkID).Extract()
	ok(t, err)
	if n.Name != "public" {
		t.Errorf("get %+v", n)
	}
	_, err = networks.Get(ctx(t), c, "f00d").Extract()
	wantNeutronErr(t, err, http.StatusNotFound, "NetworkNotFound", "=Network f00d could not be found.")

	pages, err := subnets.List(c, subnets.ListOpts{}).AllPages(ctx(t))
	ok(t, err)
	subs, err := subnets.ExtractSubnets(pages)
	ok(t, err)
	if len(subs) != 2 {
		t.Fatalf("subnets %+v", subs)
	}
	if s := subs[0]; s.ID != e.fx.SubnetID || s.CIDR != "10.0.0.0/16" || s.GatewayIP != "10.0.0.1" || s.IPVersion != 4 ||
		!s.EnableDHCP || len(s.AllocationPools) != 1 || s.AllocationPools[0].Start != "10.0.0.2" || s.AllocationPools[0].End != "10.0.255.254" {
		t.Errorf("node subnet %+v", s)
	}
	for _, tc := range []struct {
		opts subnets.ListOpts
		want string
	}{
		{subnets.ListOpts{NetworkID: e.fx.ExternalNetworkID}, e.fx.ExternalSubnetID},
		{subnets.ListOpts{CIDR: "10.0.0.0/16"}, e.fx.SubnetID},
		{subnets.ListOpts{Name: "public-subnet"}, e.fx.ExternalSubnetID},
		{subnets.ListOpts{ID: e.fx.SubnetID, IPVersion: 4}, e.fx.SubnetID},
	} {
		pages, err := subnets.List(c, tc.opts).AllPages(ctx(t))
		ok(t, err)
		got, err := subnets.ExtractSubnets(pages)
		ok(t, err)
		if len(got) != 1 || got[0].ID != tc.want {
			t.Errorf("%+v: %+v", tc.opts, got)
		}
	}
	_, err = subnets.Get(ctx(t), c, "nope").Extract()
	wantNeutronErr(t, err, http.StatusNotFound, "SubnetNotFound", "=Subnet nope could not be found.")
}

// Every list takes limit/marker/page_reverse and answers with
// <collection>_links; gophercloud's pager follows "next" to the end.
func TestNeutronPagination(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	c := e.networkClient(t)
	var made []string
	for i := range 7 {
		p, err := ports.Create(ctx(t), c, ports.CreateOpts{NetworkID: e.fx.NetworkID, Name: "p" + string(rune('a'+i))}).Extract()
		ok(t, err)
		made = append(made, p.ID)
	}
	listIDs := func(opts ports.ListOpts) ([]string, int) {
		t.Helper()
		var ids []string
		pagesSeen := 0
		ok(t, ports.List(c, opts).EachPage(ctx(t), func(_ context.Context, page pagination.Page) (bool, error) {
			pagesSeen++
			ps, err := ports.ExtractPorts(page)
			for _, p := range ps {
				ids = append(ids, p.ID)
			}
			return true, err
		}))
		return ids, pagesSeen
	}
	all, pagesSeen := listIDs(ports.ListOpts{})
	if pagesSeen != 1 || len(all) != 8 { // the router's interface port too
		t.Fatalf("%d ports on %d pages", len(all), pagesSeen)
	}
	sorted := slices.Clone(all)
	slices.Sort(sorted)
	e.srv.ResetCalls()
	paged, pagesSeen := listIDs(ports.ListOpts{Limit: 3})
	// Pages of 3, 3 and 2, sorted by ID as Neutron's paginated queries are.
	if !slices.Equal(paged, sorted) || pagesSeen != 3 || e.srv.CallCount("neutron:ListPorts") != 3 {
		t.Errorf("paged %v on %d pages in %d calls, want %v", paged, pagesSeen, e.srv.CallCount("neutron:ListPorts"), sorted)
	}
	// A full last page is followed by an empty one, which ends the walk.
	e.srv.ResetCalls()
	paged, _ = listIDs(ports.ListOpts{Limit: 4})
	if !slices.Equal(paged, sorted) || e.srv.CallCount("neutron:ListPorts") != 3 {
		t.Errorf("limit 4: %v in %d calls", paged, e.srv.CallCount("neutron:ListPorts"))
	}
	// Sorted by name, paged, with a filter.
	byName, _ := listIDs(ports.ListOpts{Limit: 2, SortKey: "name", SortDir: "desc", DeviceOwner: ""})
	var wantByName []string
	for i := len(made) - 1; i >= 0; i-- {
		wantByName = append(wantByName, made[i])
	}
	if !slices.Equal(byName[:7], wantByName) {
		t.Errorf("by name desc: %v, want %v then the router port", byName, wantByName)
	}

	// The wire: links carry the query, the marker last; page_reverse
	// walks backwards.
	tok := e.token(t)
	w := e.do(t, "GET", "/network/v2.0/ports?limit=2&sort_key=id&sort_dir=asc", "", "X-Auth-Token", tok)
	links := w.body["ports_links"].([]any)
	if w.status != 200 || len(w.body["ports"].([]any)) != 2 || len(links) != 2 {
		t.Fatalf("first page: %d %s", w.status, w.raw)
	}
	next := links[0].(map[string]any)
	prev := links[1].(map[string]any)
	wantNext := e.srv.URL() + "/network/v2.0/ports?limit=2&sort_key=id&sort_dir=asc&marker=" + sorted[1]
	if next["rel"] != "next" || next["href"] != wantNext || prev["rel"] != "previous" ||
		prev["href"] != e.srv.URL()+"/network/v2.0/ports?limit=2&sort_key=id&sort_dir=asc&marker="+sorted[0]+"&page_reverse=True" {
		t.Errorf("links %v", links)
	}
	w = e.do(t, "GET", "/network/v2.0/ports?limit=2&marker="+sorted[5]+"&page_reverse=True", "", "X-Auth-Token", tok)
	var got []string
	for _, p := range w.body["ports"].([]any) {
		got = append(got, p.(map[string]any)["id"].(string))
	}
	if !slices.Equal(got, sorted[3:5]) {
		t.Errorf("reverse page %v, want %v", got, sorted[3:5])
	}
	// Beyond the last item there is nothing, and no next link.
	w = e.do(t, "GET", "/network/v2.0/ports?limit=20", "", "X-Auth-Token", tok)
	for _, l := range w.body["ports_links"].([]any) {
		if l.(map[string]any)["rel"] == "next" {
			t.Errorf("short page has a next link: %v", l)
		}
	}
	// fields= keeps only the fields asked for.
	w = e.do(t, "GET", "/network/v2.0/ports?fields=id&fields=name&name=pa", "", "X-Auth-Token", tok)
	if p := w.body["ports"].([]any); len(p) != 1 || len(p[0].(map[string]any)) != 2 || p[0].(map[string]any)["name"] != "pa" {
		t.Errorf("fields: %s", w.raw)
	}

	// pagination_max_limit caps every page, asked for or not.
	e2 := newEnv(t, cloudsimopenstack.Config{Neutron: cloudsimopenstack.NeutronConfig{PaginationMaxLimit: 1}})
	w = e2.do(t, "GET", "/network/v2.0/networks?limit=5", "", "X-Auth-Token", e2.token(t))
	if len(w.body["networks"].([]any)) != 1 || w.body["networks_links"] == nil {
		t.Errorf("max limit: %s", w.raw)
	}
	pages, err := networks.List(e2.networkClient(t), nil).AllPages(ctx(t))
	ok(t, err)
	nets, err := networks.ExtractNetworks(pages)
	ok(t, err)
	if len(nets) != 2 {
		t.Errorf("walked %d networks", len(nets))
	}
}

func TestNeutronListErrors(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	tok := e.token(t)
	for _, tc := range []struct {
		query    string
		status   int
		typ, msg string
	}{
		{"nope=1", 400, "HTTPBadRequest", "=['nope'] is invalid attribute for filtering"},
		{"limit=x", 400, "BadRequest", "=Bad limit request: Limit must be an integer 0 or greater and not 'x'."},
		{"limit=-1", 400, "BadRequest", "=Bad limit request: Limit must be an integer 0 or greater and not '-1'."},
		{"sort_key=name", 400, "HTTPBadRequest", "=The number of sort_keys and sort_dirs must be same"},
		{"sort_key=mtu&sort_dir=asc", 400, "HTTPBadRequest", "=['mtu'] is invalid attribute for sort_keys"},
		{"sort_key=name&sort_dir=up", 400, "HTTPBadRequest", "=['up'] is invalid value for sort_dirs, valid value is 'asc' and 'desc'"},
		{"admin_state_up=maybe", 400, "InvalidInput", "=Invalid input for operation: 'maybe' cannot be converted to boolean."},
		{"limit=1&marker=00000000-0000-4000-8000-000000000000", 404, "PortNotFound", "=Port 00000000-0000-4000-8000-000000000000 could not be found."},
		{"fixed_ips=10.0.0.1", 400, "InvalidInput", "'10.0.0.1' is not of the form <key>=[value]"},
	} {
		w := e.do(t, "GET", "/network/v2.0/ports?"+tc.query, "", "X-Auth-Token", tok)
		ne, _ := w.body["NeutronError"].(map[string]any)
		if w.status != tc.status || ne["type"] != tc.typ || ne["message"] != strings.TrimPrefix(tc.msg, "=") &&
			!(!strings.HasPrefix(tc.msg, "=") && strings.Contains(ne["message"].(string), tc.msg)) {
			t.Errorf("%s: %d %s", tc.query, w.status, w.raw)
		}
	}
	// Without filter-validation unknown filters are ignored.
	e = newEnv(t, cloudsimopenstack.Config{Neutron: cloudsimopenstack.NeutronConfig{DisabledExtensions: []string{"filter-validation"}}})
	if w := e.do(t, "GET", "/network/v2.0/ports?nope=1", "", "X-Auth-Token", e.token(t)); w.status != 200 {
		t.Errorf("unvalidated filter: %d %s", w.status, w.raw)
	}
}

func TestNeutronWire(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	tok := e.token(t)
	for _, tc := range []struct {
		method, path, body string
		status             int
		typ                string
	}{
		{"GET", "/network/", "", 200, ""},
		{"GET", "/network/v2.0/ports", "", 401, ""},
		{"GET", "/network/v2.0/nope", "", 404, "HTTPNotFound"},
		{"PATCH", "/network/v2.0/ports", "", 404, "HTTPNotFound"},
		{"POST", "/network/v2.0/networks", `{"network": {}}`, 404, "HTTPNotFound"},
		{"POST", "/network/v2.0/ports", ``, 400, "HTTPBadRequest"},
		{"POST", "/network/v2.0/ports", `[1]`, 400, "HTTPBadRequest"},
		{"POST", "/network/v2.0/ports", `{"network": {}}`, 400, "HTTPBadRequest"},
		{"POST", "/network/v2.0/ports", `{"ports": [{"network_id": "x"}]}`, 400, "HTTPBadRequest"},
		{"PUT", "/network/v2.0/ports/x", `{"port": {"network_id": "x"}}`, 400, "HTTPBadRequest"},
	} {
		h := []string{"X-Auth-Token", tok}
		if tc.status == 401 {
			h = nil
		}
		w := e.do(t, tc.method, tc.path, tc.body, h...)
		ne, _ := w.body["NeutronError"].(map[string]any)
		if w.status != tc.status || (tc.typ != "" && ne["type"] != tc.typ) {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, w.status, w.raw)
		}
	}
	if w := e.do(t, "GET", "/network/", ""); w.body["versions"] == nil || w.header.Get("X-Openstack-Request-Id") == "" {
		t.Errorf("versions: %s %v", w.raw, w.header)
	}

	// Faults hit operations by name; writes are mutating, reads not.
	for op, mutating := range map[string]bool{
		"neutron:ListPorts": false, "neutron:CreatePort": true, "neutron:UpdatePort": true, "neutron:DeletePort": true,
		"neutron:CreateSecurityGroupRule": true, "neutron:BulkCreateSecurityGroupRules": true,
		"neutron:AddExtraRoutes": true, "neutron:RemoveExtraRoutes": true, "neutron:UpdateRouter": true,
		"neutron:ReplaceTags": true, "neutron:GetRouter": false, "neutron:ListFloatingIPs": false,
		"neutron:UpdateFloatingIP": true, "neutron:DeleteSecurityGroup": true,
	} {
		if e.emu.Mutating(op) != mutating {
			t.Errorf("%s mutating: %v", op, !mutating)
		}
	}
	c := e.networkClient(t)
	setFault(t, e, cloudsim.FaultSpec{Op: "neutron:ListPorts", ThrottleNext: 1})
	_, err := ports.List(c, nil).AllPages(ctx(t))
	wantNeutronErr(t, err, http.StatusTooManyRequests, "OverLimit", "Too Many Requests")
	if codeError(t, err).ResponseHeader.Get("Retry-After") != "1" {
		t.Error("no Retry-After")
	}
	setFault(t, e, cloudsim.FaultSpec{Op: "mutating", FailNext: 1})
	_, err = ports.Create(ctx(t), c, ports.CreateOpts{NetworkID: e.fx.NetworkID}).Extract()
	wantNeutronErr(t, err, http.StatusInternalServerError, "HTTPInternalServerError", "Request Failed")
	_, err = ports.List(c, nil).AllPages(ctx(t))
	ok(t, err)

	// An unscoped token may not use Neutron.
	unscoped := e.do(t, "POST", "/identity/v3/auth/tokens", `{"auth": {"identity": {"methods": ["password"], "password": {"user": {"id": "`+
		e.fx.UserID+`", "password": "`+e.fx.Password+`"}}}, "scope": "unscoped"}}`)
	if w := e.do(t, "GET", "/network/v2.0/ports", "", "X-Auth-Token", unscoped.header.Get("X-Subject-Token")); w.status != 403 {
		t.Errorf("unscoped: %d %s", w.status, w.raw)
	}
}
