package openstack_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"

	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

func listAll(t *testing.T, c *gophercloud.ServiceClient, opts servers.ListOptsBuilder) []servers.Server {
	t.Helper()
	pages, err := servers.List(c, opts).AllPages(t.Context())
	ok(t, err)
	list, err := servers.ExtractServers(pages)
	ok(t, err)
	return list
}

func ids(list []servers.Server) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.ID
	}
	return out
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

// Nova lists newest first (created_at desc, id desc) and pages with a
// marker: every server comes exactly once.
func TestListServersPagination(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	launched := e.launch(t, cloudsimopenstack.LaunchSpec{Count: 7, Name: "node"})
	c := e.compute(t, "2.47")

	got := listAll(t, c, servers.ListOpts{Limit: 3})
	if !slices.Equal(ids(got), reversed(launched)) {
		t.Fatalf("paged listing %v, want %v", ids(got), reversed(launched))
	}
	if n := e.srv.CallCount("nova:ListServersDetail"); n != 3 {
		t.Errorf("%d pages fetched, want 3", n)
	}
	// Simple listing pages the same way.
	pages, err := servers.ListSimple(c, servers.ListOpts{Limit: 2}).AllPages(t.Context())
	ok(t, err)
	simple, err := servers.ExtractServers(pages)
	ok(t, err)
	if !slices.Equal(ids(simple), reversed(launched)) || simple[0].Name == "" {
		t.Fatalf("simple listing %v", ids(simple))
	}

	// The next link as Nova writes it: the request's parameters sorted,
	// the marker last.
	tok := c.Token()
	w := e.do(t, "GET", "/compute/v2.1/servers/detail?name=node&limit=3", "", "X-Auth-Token", tok)
	next := w.body["servers_links"].([]any)[0].(map[string]any)
	want := e.srv.URL() + "/compute/v2.1/servers/detail?limit=3&name=node&marker=" + launched[4]
	if next["rel"] != "next" || next["href"] != want {
		t.Errorf("next link %v, want %s", next, want)
	}
	// A full last page still links on; the page after it is empty.
	w = e.do(t, "GET", "/compute/v2.1/servers?limit=7", "", "X-Auth-Token", tok)
	if w.body["servers_links"] == nil {
		t.Error("no next link after a full page")
	}
	w = e.do(t, "GET", "/compute/v2.1/servers?limit=7&marker="+launched[0], "", "X-Auth-Token", tok)
	if len(w.body["servers"].([]any)) != 0 || w.body["servers_links"] != nil {
		t.Errorf("after the last server: %s", w.raw)
	}
	// limit=0 lists nothing; limits above max_limit are capped.
	if w := e.do(t, "GET", "/compute/v2.1/servers?limit=0", "", "X-Auth-Token", tok); len(w.body["servers"].([]any)) != 0 {
		t.Errorf("limit=0: %s", w.raw)
	}

	// Deleting the marker server between pages does not break paging:
	// Nova still finds the (soft-deleted) row.
	first := e.do(t, "GET", "/compute/v2.1/servers?limit=2", "", "X-Auth-Token", tok)
	marker := first.body["servers"].([]any)[1].(map[string]any)["id"].(string)
	ok(t, servers.Delete(t.Context(), c, marker).ExtractErr())
	rest := e.do(t, "GET", "/compute/v2.1/servers?limit=10&marker="+marker, "", "X-Auth-Token", tok)
	if n := len(rest.body["servers"].([]any)); rest.status != 200 || n != 5 {
		t.Errorf("after a deleted marker: %d, %d servers", rest.status, n)
	}

	// An unknown marker is a 400 in Nova's format.
	_, err = servers.List(c, servers.ListOpts{Marker: "00000000-0000-4000-8000-000000000000"}).AllPages(t.Context())
	if !gophercloud.ResponseCodeIs(err, http.StatusBadRequest) {
		t.Fatalf("unknown marker: %v", err)
	}
	key, fault := faultBody(t, codeError(t, err).Body)
	if key != "badRequest" || fault["message"] != "marker [00000000-0000-4000-8000-000000000000] not found" || fault["code"] != float64(400) {
		t.Errorf("fault %s %v", key, fault)
	}
	for _, q := range []string{"limit=-1", "limit=abc", "limit="} {
		w := e.do(t, "GET", "/compute/v2.1/servers/detail?"+q, "", "X-Auth-Token", tok)
		if w.status != 400 || !strings.HasPrefix(w.body["badRequest"].(map[string]any)["message"].(string), "Invalid input for query parameters limit.") {
			t.Errorf("%s: %d %s", q, w.status, w.raw)
		}
	}
}

func TestListServersSortAndLimitCap(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{MaxLimit: 4})
	e.launch(t, cloudsimopenstack.LaunchSpec{Name: "b"})
	e.launch(t, cloudsimopenstack.LaunchSpec{Name: "c"})
	e.launch(t, cloudsimopenstack.LaunchSpec{Name: "a"})
	e.launch(t, cloudsimopenstack.LaunchSpec{Count: 3, Name: "z"})
	tok := e.token(t)
	names := func(w wire) []string {
		var out []string
		for _, s := range w.body["servers"].([]any) {
			out = append(out, s.(map[string]any)["name"].(string))
		}
		return out
	}
	w := e.do(t, "GET", "/compute/v2.1/servers?sort_key=display_name&sort_dir=asc", "", "X-Auth-Token", tok)
	if got := names(w); !slices.Equal(got, []string{"a", "b", "c", "z-0"}) {
		t.Errorf("sorted by name, capped at max_limit: %v", got)
	}
	// Without a limit, a page of max_limit items links on.
	next := w.body["servers_links"].([]any)[0].(map[string]any)["href"].(string)
	u, _ := url.Parse(next)
	w = e.do(t, "GET", u.Path+"?"+u.RawQuery, "", "X-Auth-Token", tok)
	if got := names(w); !slices.Equal(got, []string{"z-1", "z-2"}) {
		t.Errorf("second page %v (from %s)", got, next)
	}
	if w := e.do(t, "GET", "/compute/v2.1/servers?sort_key=host", "", "X-Auth-Token", tok); w.status != 403 {
		t.Errorf("sort by host: %d", w.status)
	}
	if w := e.do(t, "GET", "/compute/v2.1/servers?sort_dir=sideways", "", "X-Auth-Token", tok); w.status != 400 {
		t.Errorf("bad sort_dir: %d", w.status)
	}
	if w := e.do(t, "GET", "/compute/v2.1/servers?sort_key=nope", "", "X-Auth-Token", tok); w.status != 400 {
		t.Errorf("bad sort_key: %d", w.status)
	}
}

func TestListServersFilters(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	web := e.launch(t, cloudsimopenstack.LaunchSpec{Count: 2, Name: "Web", Zone: "az-1", Tags: []string{"frontend", "prod"}})
	db := e.launch(t, cloudsimopenstack.LaunchSpec{Name: "db-web-backup", Zone: "az-2", Flavor: "m1.large", Tags: []string{"prod"}})
	off := e.launch(t, cloudsimopenstack.LaunchSpec{Name: "batch", Zone: "az-2"})
	ok(t, e.emu.Stop(off...))
	all := slices.Concat(web, db, off)
	info, _ := e.emu.Server(db[0])

	for _, tc := range []struct {
		name string
		mv   string
		opts servers.ListOpts
		want []string
	}{
		{"none", "", servers.ListOpts{}, all},
		{"name is a regular expression", "", servers.ListOpts{Name: "^web-"}, web},
		{"name matches anywhere", "", servers.ListOpts{Name: "web"}, slices.Concat(web, db)},
		{"status", "", servers.ListOpts{Status: "SHUTOFF"}, off},
		{"status any case", "", servers.ListOpts{Status: "active"}, slices.Concat(web, db)},
		{"zone ignored for non-admins before 2.83", "2.82", servers.ListOpts{AvailabilityZone: "az-2"}, all},
		{"zone from 2.83", "2.83", servers.ListOpts{AvailabilityZone: "az-2"}, slices.Concat(db, off)},
		{"flavor", "", servers.ListOpts{Flavor: "4"}, db},
		{"unknown flavor", "", servers.ListOpts{Flavor: "99"}, nil},
		{"ip substring", "", servers.ListOpts{IP: info.PrivateIP}, db},
		{"tags from 2.26", "2.26", servers.ListOpts{Tags: "prod,frontend"}, web},
		{"tags-any", "2.26", servers.ListOpts{TagsAny: "frontend,nope"}, web},
		{"not-tags-any", "2.26", servers.ListOpts{NotTagsAny: "prod"}, off},
		{"tags ignored before 2.26", "2.25", servers.ListOpts{Tags: "frontend"}, all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ids(listAll(t, e.compute(t, tc.mv), tc.opts))
			want := reversed(tc.want)
			if len(got) == 0 && len(want) == 0 {
				return
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
		})
	}

	tok := e.token(t)
	for _, tc := range []struct {
		mv, query string
		status    int
		message   string
	}{
		{"2.37", "status=NOPE", 200, ""},
		{"2.38", "status=NOPE", 400, "Invalid status value"},
		{"2.1", "status=DELETED", 403, "Only administrators may list deleted instances"},
		{"2.74", "bogus=1", 200, ""},
		{"2.75", "bogus=1", 400, "Additional properties are not allowed ('bogus' was unexpected)"},
		{"2.1", "name=(", 400, "Invalid input for query parameters name. Value: (. '(' is not a 'regex'"},
		{"2.1", "all_tenants=1", 403, "Policy doesn't allow os_compute_api:servers:detail:get_all_tenants to be performed."},
		{"2.1", "all_tenants=0", 200, ""},
		{"2.1", "changes-since=yesterday", 400, "Invalid input for query parameters changes-since. Value: yesterday. 'yesterday' is not a 'date-time'"},
	} {
		w := e.do(t, "GET", "/compute/v2.1/servers/detail?"+tc.query, "", "X-Auth-Token", tok, "X-OpenStack-Nova-API-Version", tc.mv)
		if w.status != tc.status {
			t.Errorf("%s at %s: %d %s, want %d", tc.query, tc.mv, w.status, w.raw, tc.status)
			continue
		}
		if tc.status == 200 {
			if tc.query == "status=NOPE" && len(w.body["servers"].([]any)) != 0 {
				t.Errorf("%s at %s listed servers", tc.query, tc.mv)
			}
			continue
		}
		for _, f := range w.body {
			if msg := f.(map[string]any)["message"]; msg != tc.message {
				t.Errorf("%s at %s: message %q, want %q", tc.query, tc.mv, msg, tc.message)
			}
		}
	}
}

// A deleted server disappears, except from changes-since listings,
// where it shows as DELETED.
func TestChangesSinceListsDeletedServers(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	start := time.Now().UTC().Add(-time.Second).Format(time.RFC3339)
	gone := e.launch(t, cloudsimopenstack.LaunchSpec{Name: "gone"})
	kept := e.launch(t, cloudsimopenstack.LaunchSpec{Name: "kept"})
	c := e.compute(t, "2.47")
	ok(t, servers.Delete(t.Context(), c, gone[0]).ExtractErr())
	if got := ids(listAll(t, c, nil)); !slices.Equal(got, kept) {
		t.Fatalf("listing after delete %v", got)
	}
	list := listAll(t, c, servers.ListOpts{ChangesSince: start})
	if len(list) != 2 {
		t.Fatalf("changes-since lists %d servers", len(list))
	}
	for _, s := range list {
		switch s.ID {
		case gone[0]:
			if s.Status != "DELETED" || s.VmState != "deleted" || len(s.Addresses) != 0 || s.TerminatedAt.IsZero() {
				t.Errorf("deleted server %+v", s)
			}
		case kept[0]:
			if s.Status != "ACTIVE" {
				t.Errorf("kept server %s", s.Status)
			}
		}
	}
}

var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestGetServerRepresentation(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	id := e.launch(t, cloudsimopenstack.LaunchSpec{
		Name: "worker_1.example", Zone: "az-1", Flavor: "m1.large", PublicIP: true,
		Metadata: map[string]string{"role": "worker"}, Tags: []string{"k8s"},
	})[0]
	info, _ := e.emu.Server(id)
	if !uuidPattern.MatchString(id) || info.ProviderID != "openstack:///"+id {
		t.Fatalf("id %q, providerID %q", id, info.ProviderID)
	}

	s, err := servers.Get(t.Context(), e.compute(t, ""), id).Extract()
	ok(t, err)
	checks := map[string][2]any{
		"name":        {s.Name, "worker_1.example"},
		"status":      {s.Status, "ACTIVE"},
		"vm_state":    {s.VmState, "active"},
		"power_state": {s.PowerState, servers.PowerState(servers.RUNNING)},
		"zone":        {s.AvailabilityZone, "az-1"},
		"tenant":      {s.TenantID, e.fx.ProjectID},
		"user":        {s.UserID, e.fx.UserID},
		"metadata":    {s.Metadata["role"], "worker"},
		"flavor id":   {s.Flavor["id"], "4"},
		"image":       {s.Image["id"], e.fx.ImageID},
		"tags":        {s.Tags == nil, true}, // not before 2.26
		"self link":   {s.Links[0].(map[string]any)["href"], e.srv.URL() + "/compute/v2.1/servers/" + id},
		"bookmark":    {s.Links[1].(map[string]any)["href"], e.srv.URL() + "/compute/servers/" + id},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %v, want %v", name, c[0], c[1])
		}
	}
	if s.HostID == "" || s.Created.IsZero() || s.Updated.IsZero() || s.LaunchedAt.IsZero() {
		t.Errorf("hostId %q created %v updated %v launched %v", s.HostID, s.Created, s.Updated, s.LaunchedAt)
	}
	flavorLinks := s.Flavor["links"].([]any)
	if flavorLinks[0].(map[string]any)["href"] != e.srv.URL()+"/compute/flavors/4" {
		t.Errorf("flavor links %v", flavorLinks)
	}
	addrs := s.Addresses[e.fx.NetworkName].([]any)
	if len(addrs) != 2 {
		t.Fatalf("addresses %v", s.Addresses)
	}
	fixed, floating := addrs[0].(map[string]any), addrs[1].(map[string]any)
	if fixed["addr"] != info.PrivateIP || fixed["OS-EXT-IPS:type"] != "fixed" || fixed["version"] != float64(4) ||
		fixed["OS-EXT-IPS-MAC:mac_addr"] != info.MAC || !strings.HasPrefix(info.MAC, "fa:16:3e:") || !strings.HasPrefix(info.PrivateIP, "10.0.") {
		t.Errorf("fixed address %v (info %+v)", fixed, info)
	}
	if floating["addr"] != info.PublicIP || floating["OS-EXT-IPS:type"] != "floating" || floating["OS-EXT-IPS-MAC:mac_addr"] != info.MAC ||
		!strings.HasPrefix(info.PublicIP, "172.24.") {
		t.Errorf("floating address %v", floating)
	}

	// From 2.47 the flavor is embedded, with its extra specs; from 2.26
	// the tags show; from 2.90 the hostname; from 2.96 the pinned zone.
	s, err = servers.Get(t.Context(), e.compute(t, "2.96"), id).Extract()
	ok(t, err)
	wantFlavor := map[string]any{"original_name": "m1.large", "vcpus": float64(4), "ram": float64(8192), "disk": float64(80),
		"ephemeral": float64(0), "swap": float64(0), "extra_specs": map[string]any{"hw:cpu_policy": "shared"}}
	if fmt.Sprint(s.Flavor) != fmt.Sprint(wantFlavor) {
		t.Errorf("embedded flavor %v", s.Flavor)
	}
	if s.Tags == nil || !slices.Equal(*s.Tags, []string{"k8s"}) || s.Hostname == nil || *s.Hostname != "worker-1-example" {
		t.Errorf("tags %v hostname %v", s.Tags, s.Hostname)
	}
	tok := e.token(t)
	w := e.do(t, "GET", "/compute/v2.1/servers/"+id, "", "X-Auth-Token", tok, "OpenStack-API-Version", "compute 2.96")
	srv := w.body["server"].(map[string]any)
	for key, want := range map[string]any{
		"pinned_availability_zone": "az-1", "locked": false, "locked_reason": nil, "description": nil,
		"trusted_image_certificates": nil, "OS-EXT-STS:task_state": nil, "OS-DCF:diskConfig": "MANUAL",
		"config_drive": "", "key_name": nil, "progress": float64(0), "accessIPv4": "",
	} {
		if got, present := srv[key]; !present || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v (present %v), want %v", key, got, present, want)
		}
	}
	if _, present := srv["server_groups"]; !present {
		t.Error("no server_groups in GET at 2.96")
	}
	for _, adminOnly := range []string{"host_status", "OS-EXT-SRV-ATTR:host", "OS-EXT-SRV-ATTR:instance_name"} {
		if _, present := srv[adminOnly]; present {
			t.Errorf("%s shown to a member", adminOnly)
		}
	}
	list := e.do(t, "GET", "/compute/v2.1/servers/detail", "", "X-Auth-Token", tok, "OpenStack-API-Version", "compute 2.96")
	if _, present := list.body["servers"].([]any)[0].(map[string]any)["server_groups"]; present {
		t.Error("server_groups in the detailed list")
	}

	// An unknown server is a 404 gophercloud recognises, in Nova's words.
	_, err = servers.Get(t.Context(), e.compute(t, ""), "8d5ee5b5-5d46-4e5e-9a8f-8b5a3a1d7c21").Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Fatalf("unknown server: %v", err)
	}
	key, fault := faultBody(t, codeError(t, err).Body)
	if key != "itemNotFound" || fault["code"] != float64(404) || fault["message"] != "Instance 8d5ee5b5-5d46-4e5e-9a8f-8b5a3a1d7c21 could not be found." {
		t.Errorf("fault %s %v", key, fault)
	}
}

func TestServerStatuses(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	building := e.launch(t, cloudsimopenstack.LaunchSpec{Status: "BUILD"})[0]
	failed := e.launch(t, cloudsimopenstack.LaunchSpec{Status: "ERROR"})[0]
	c := e.compute(t, "2.47")
	s, err := servers.Get(t.Context(), c, building).Extract()
	ok(t, err)
	if s.Status != "BUILD" || s.VmState != "building" || len(s.Addresses) != 0 || s.PowerState != servers.NOSTATE || !s.LaunchedAt.IsZero() {
		t.Errorf("building server %+v", s)
	}
	s, err = servers.Get(t.Context(), c, failed).Extract()
	ok(t, err)
	if s.Status != "ERROR" || s.Fault.Code != 500 || s.Fault.Message == "" || s.Fault.Details != "" {
		t.Errorf("failed server %+v", s)
	}
	// A server that never launched cannot be stopped, nor a building one.
	err = servers.Stop(t.Context(), c, failed).ExtractErr()
	if !gophercloud.ResponseCodeIs(err, http.StatusConflict) || !strings.Contains(err.Error(), "launched_at None") {
		t.Errorf("stop never-launched: %v", err)
	}
	err = servers.Stop(t.Context(), c, building).ExtractErr()
	if !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		t.Errorf("stop building: %v", err)
	}
	ok(t, e.emu.SetServerStatus(building, "ACTIVE"))
	if s, _ := servers.Get(t.Context(), c, building).Extract(); s.Status != "ACTIVE" || len(s.Addresses) != 1 {
		t.Errorf("after build: %s %v", s.Status, s.Addresses)
	}
}

// os-stop and os-start through the API, DELETE, and the admin API's
// changes as Nova reports them.
func TestServerActionsAndDelete(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	launched := e.launch(t, cloudsimopenstack.LaunchSpec{Count: 2, PublicIP: true})
	id, other := launched[0], launched[1]
	before, _ := e.emu.Server(id)
	c := e.compute(t, "2.47")
	status := func(id string) (string, servers.PowerState) {
		t.Helper()
		s, err := servers.Get(t.Context(), c, id).Extract()
		ok(t, err)
		return s.Status, s.PowerState
	}

	ok(t, servers.Stop(t.Context(), c, id).ExtractErr())
	if st, ps := status(id); st != "SHUTOFF" || ps != servers.SHUTDOWN {
		t.Fatalf("after os-stop: %s %v", st, ps)
	}
	err := servers.Stop(t.Context(), c, id).ExtractErr()
	if !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		t.Fatalf("second os-stop: %v", err)
	}
	key, fault := faultBody(t, codeError(t, err).Body)
	if key != "conflictingRequest" || fault["message"] != "Cannot 'stop' instance "+id+" while it is in vm_state stopped" {
		t.Errorf("fault %s %v", key, fault)
	}
	ok(t, servers.Start(t.Context(), c, id).ExtractErr())
	if st, ps := status(id); st != "ACTIVE" || ps != servers.RUNNING {
		t.Fatalf("after os-start: %s %v", st, ps)
	}
	if err := servers.Start(t.Context(), c, id).ExtractErr(); !gophercloud.ResponseCodeIs(err, http.StatusConflict) {
		t.Fatalf("os-start of a running server: %v", err)
	}
	// Stop and start keep the addresses, unlike on EC2.
	if after, _ := e.emu.Server(id); after.PrivateIP != before.PrivateIP || after.PublicIP != before.PublicIP {
		t.Errorf("addresses changed: %+v -> %+v", before, after)
	}

	// The admin API's transitions show the same way.
	ok(t, e.emu.Stop(other))
	if st, _ := status(other); st != "SHUTOFF" {
		t.Errorf("admin stop: %s", st)
	}
	ok(t, e.emu.Start(other))
	if st, _ := status(other); st != "ACTIVE" {
		t.Errorf("admin start: %s", st)
	}
	ok(t, e.emu.Terminate(other))
	if _, err := servers.Get(t.Context(), c, other).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("after admin terminate: %v", err)
	}

	// Bad action bodies.
	tok := c.Token()
	for body, message := range map[string]string{
		`{"os-stop": {}}`:                     "Invalid input for field/attribute os-stop. Value: {}. {} is not of type 'null'",
		`{"reboot": {"type": "SOFT"}}`:        "There is no such action: reboot",
		`{"os-stop": null, "os-start": null}`: "Malformed message body: too many body keys",
		`nope`:                                "Malformed message body: cannot understand JSON",
	} {
		w := e.do(t, "POST", "/compute/v2.1/servers/"+id+"/action", body, "X-Auth-Token", tok)
		if w.status != 400 || w.body["badRequest"].(map[string]any)["message"] != message {
			t.Errorf("%s: %d %s", body, w.status, w.raw)
		}
	}
	if w := e.do(t, "POST", "/compute/v2.1/servers/nope/action", `{"os-stop": null}`, "X-Auth-Token", tok); w.status != 404 {
		t.Errorf("action on unknown server: %d", w.status)
	}

	// DELETE is a 204; the server is gone, its floating IP stays
	// allocated (Nova leaves it), unassociated.
	ok(t, servers.Delete(t.Context(), c, id).ExtractErr())
	if _, err := servers.Get(t.Context(), c, id).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if err := servers.Delete(t.Context(), c, id).ExtractErr(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	var fips, ports []string
	for _, r := range e.srv.Resources() {
		switch r.Kind {
		case cloudsimopenstack.KindFloatingIP:
			fips = append(fips, r.Name)
		case cloudsimopenstack.KindPort:
			if !isRouterPort(e, r.ID) {
				ports = append(ports, r.Name)
			}
		case cloudsimopenstack.KindServer:
			t.Errorf("server %s left", r.ID)
		}
	}
	if !slices.Equal(fips, []string{before.PublicIP}) || len(ports) != 0 {
		t.Errorf("floating IPs %v, ports %v", fips, ports)
	}
	// Stop: ok, conflict, bad body, unknown server; start: ok, conflict.
	if stops, starts := e.srv.CallCount("nova:StopServer"), e.srv.CallCount("nova:StartServer"); stops != 4 || starts != 2 {
		t.Errorf("%d os-stop and %d os-start calls", stops, starts)
	}
	if n := e.srv.CallCount("nova:ServerAction"); n != 3 {
		t.Errorf("%d other actions", n)
	}
	if e.srv.CallCount("nova:DeleteServer") != 2 || !e.emu.Mutating("nova:DeleteServer") || e.emu.Mutating("nova:GetServer") {
		t.Error("delete calls or mutating classification")
	}
}

// Nova's policies need a project-scoped token.
func TestUnscopedTokenIsForbiddenInNova(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	id := e.launch(t, cloudsimopenstack.LaunchSpec{})[0]
	tok := e.token(t)
	// An unscoped token can do nothing in Nova.
	w := e.do(t, "POST", "/identity/v3/auth/tokens", `{"auth": {"identity": {"methods": ["password"],
		"password": {"user": {"id": "`+e.fx.UserID+`", "password": "`+e.fx.Password+`"}}}, "scope": "unscoped"}}`)
	if w.status != 201 || w.body["token"].(map[string]any)["catalog"] != nil {
		t.Fatalf("unscoped token: %d %s", w.status, w.raw)
	}
	unscoped := w.header.Get("X-Subject-Token")
	if w := e.do(t, "GET", "/compute/v2.1/servers/"+id, "", "X-Auth-Token", unscoped); w.status != 403 || w.body["forbidden"] == nil {
		t.Errorf("unscoped GET: %d %s", w.status, w.raw)
	}
	if w := e.do(t, "GET", "/compute/v2.1/servers/"+id, "", "X-Auth-Token", tok); w.status != 200 {
		t.Errorf("scoped GET: %d", w.status)
	}
}

// isRouterPort reports a port of the fixture's router.
func isRouterPort(e *env, portID string) bool {
	for _, p := range e.emu.DevicePorts(e.fx.RouterID) {
		if p.ID == portID {
			return true
		}
	}
	return false
}
