package openstack_test

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

// The cloud-neutral instance API, driven over HTTP the way the sandbox
// and benchmarks drive any cloud, and checked against what Nova reports.
func TestNeutralInstancesOverHTTP(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	admin := cloudsim.NewAdminClient(e.srv.URL())
	info, err := admin.LaunchInstance(t.Context(), cloudsim.InstanceSpec{
		Name: "node-a", Zone: "az-2", InstanceType: "m1.large", PublicIP: true,
		Tags: map[string]string{"cluster": "test"},
	})
	ok(t, err)
	c := e.compute(t, "2.90")
	s, err := servers.Get(t.Context(), c, info.ID).Extract()
	ok(t, err)
	addrs := s.Addresses[e.fx.NetworkName].([]any)
	checks := map[string][2]string{
		"name":        {info.Name, s.Name},
		"zone":        {info.Zone, s.AvailabilityZone},
		"type":        {info.InstanceType, "m1.large"},
		"state":       {string(info.State), "running"},
		"cloud state": {info.CloudState, s.Status},
		"private ip":  {info.PrivateIP, addrs[0].(map[string]any)["addr"].(string)},
		"public ip":   {info.PublicIP, addrs[1].(map[string]any)["addr"].(string)},
		"hostname":    {info.Hostname, *s.Hostname},
	}
	for name, pair := range checks {
		if pair[0] != pair[1] || pair[0] == "" {
			t.Errorf("%s = %q, want %q", name, pair[0], pair[1])
		}
	}
	if !maps.Equal(info.Tags, map[string]string{"cluster": "test"}) || !maps.Equal(s.Metadata, info.Tags) {
		t.Errorf("tags %v, metadata %v", info.Tags, s.Metadata)
	}
	if si, _ := e.emu.Server(info.ID); si.ProviderID != "openstack:///"+info.ID || cloudsimopenstack.ProviderID(info.ID) != si.ProviderID {
		t.Errorf("providerID %q", si.ProviderID)
	}

	steps := []struct {
		do                func() (cloudsim.InstanceInfo, error)
		state, cloudState string
	}{
		{func() (cloudsim.InstanceInfo, error) { return admin.StopInstance(t.Context(), info.ID) }, "stopped", "SHUTOFF"},
		{func() (cloudsim.InstanceInfo, error) { return admin.StartInstance(t.Context(), info.ID) }, "running", "ACTIVE"},
	}
	for _, st := range steps {
		got, err := st.do()
		ok(t, err)
		if string(got.State) != st.state || got.CloudState != st.cloudState {
			t.Fatalf("state %s/%s, want %s/%s", got.State, got.CloudState, st.state, st.cloudState)
		}
		s, err := servers.Get(t.Context(), c, info.ID).Extract()
		ok(t, err)
		if s.Status != st.cloudState {
			t.Fatalf("Nova says %s, admin %s", s.Status, st.cloudState)
		}
	}

	second, err := admin.LaunchInstance(t.Context(), cloudsim.InstanceSpec{})
	ok(t, err)
	if second.Zone != "nova" || second.InstanceType != "m1.small" || second.PublicIP != "" || !strings.HasPrefix(second.Name, "server-") {
		t.Errorf("defaults: %+v", second)
	}
	list, err := admin.ListInstances(t.Context())
	ok(t, err)
	if len(list) != 2 || list[0].ID != info.ID || list[1].ID != second.ID {
		t.Fatalf("list %+v", list)
	}

	// Terminated servers are gone from Nova and from the admin listing,
	// and so are their port and the floating IP the launch made.
	got, err := admin.TerminateInstance(t.Context(), info.ID)
	ok(t, err)
	if got.State != cloudsim.InstanceTerminated {
		t.Errorf("terminate answered %+v", got)
	}
	if _, err := servers.Get(t.Context(), c, info.ID).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("terminated server: %v", err)
	}
	if _, err := admin.GetInstance(t.Context(), info.ID); !errors.Is(err, cloudsim.ErrInstanceNotFound) {
		t.Errorf("admin get: %v", err)
	}
	for _, r := range e.srv.Resources() {
		if r.ID == info.ID || (r.Kind == cloudsimopenstack.KindFloatingIP) ||
			(r.Kind == cloudsimopenstack.KindPort && r.Name == info.PrivateIP) {
			t.Errorf("left behind: %+v", r)
		}
	}
}

func TestNeutralInstanceErrors(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	admin := cloudsim.NewAdminClient(e.srv.URL())
	info, err := admin.LaunchInstance(t.Context(), cloudsim.InstanceSpec{})
	ok(t, err)
	for _, tc := range []struct {
		name string
		call func() error
		want error
	}{
		{"get unknown", func() error { _, err := admin.GetInstance(t.Context(), "nope"); return err }, cloudsim.ErrInstanceNotFound},
		{"stop unknown", func() error { _, err := admin.StopInstance(t.Context(), "nope"); return err }, cloudsim.ErrInstanceNotFound},
		{"start running", func() error { _, err := admin.StartInstance(t.Context(), info.ID); return err }, cloudsim.ErrInstanceState},
		{"unknown zone", func() error {
			_, err := admin.LaunchInstance(t.Context(), cloudsim.InstanceSpec{Zone: "mars"})
			return err
		}, cloudsim.ErrInvalidRequest},
		{"unknown flavor", func() error {
			_, err := admin.LaunchInstance(t.Context(), cloudsim.InstanceSpec{InstanceType: "m5.large"})
			return err
		}, cloudsim.ErrInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	if n := len(e.emu.Servers()); n != 1 {
		t.Errorf("%d servers after failed launches", n)
	}
}

// The cloud's own admin API and its resource inventory.
func TestAdminAPIAndResources(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	var fx cloudsimopenstack.Fixture
	if status, err := cloudsim.AdminCall(t.Context(), e.srv.URL(), "GET", "/admin/openstack/fixture", "", &fx); err != nil || status != 200 {
		t.Fatalf("fixture: %d %v", status, err)
	}
	if fx.ProjectName != "k8s" || fx.DomainID != "default" || fx.Region != "RegionOne" || fx.Flavors["m1.small"] != "2" ||
		fx.SubnetCIDR != "10.0.0.0/16" || len(fx.Zones) != 3 || fx.Password == "" || fx.AppCredSecret == "" {
		t.Errorf("fixture %+v", fx)
	}
	var launched struct {
		ServerIDs []string `json:"serverIds"`
	}
	status, err := cloudsim.AdminCall(t.Context(), e.srv.URL(), "POST", "/admin/openstack/servers",
		`{"count": 3, "name": "w", "zone": "az-1", "flavor": "m1.medium", "tags": ["a"]}`, &launched)
	if err != nil || status != 200 || len(launched.ServerIDs) != 3 {
		t.Fatalf("launch: %d %v %v", status, err, launched)
	}
	status, _ = cloudsim.AdminCall(t.Context(), e.srv.URL(), "POST", "/admin/openstack/servers/stop", `{"serverIds": ["`+launched.ServerIDs[0]+`"]}`, nil)
	if status != 200 {
		t.Errorf("stop: %d", status)
	}
	status, _ = cloudsim.AdminCall(t.Context(), e.srv.URL(), "POST", "/admin/openstack/servers/start", `{"serverIds": ["nope"]}`, nil)
	if status != 404 {
		t.Errorf("start unknown: %d", status)
	}
	status, _ = cloudsim.AdminCall(t.Context(), e.srv.URL(), "POST", "/admin/openstack/servers/status", `{"serverId": "`+launched.ServerIDs[1]+`", "status": "ERROR"}`, nil)
	if status != 200 {
		t.Errorf("status: %d", status)
	}
	var infos []cloudsimopenstack.ServerInfo
	if _, err := cloudsim.AdminCall(t.Context(), e.srv.URL(), "GET", "/admin/openstack/servers", "", &infos); err != nil || len(infos) != 3 {
		t.Fatalf("servers: %v %d", err, len(infos))
	}
	if infos[0].Name != "w-0" || infos[0].Status != "SHUTOFF" || infos[1].Status != "ERROR" || infos[2].FlavorName != "m1.medium" || infos[2].Zone != "az-1" {
		t.Errorf("servers %+v", infos)
	}

	// Tokens expire on demand; gophercloud re-authenticates.
	c := e.compute(t, "")
	first := c.Token()
	if status, _ := cloudsim.AdminCall(t.Context(), e.srv.URL(), "POST", "/admin/openstack/tokens/expire", "", nil); status != 204 {
		t.Errorf("expire: %d", status)
	}
	_, err = servers.List(c, nil).AllPages(t.Context())
	ok(t, err)
	if c.Token() == first {
		t.Error("token not renewed")
	}

	kinds := map[string]int{}
	for _, r := range e.srv.Resources() {
		kinds[r.Kind]++
		b, _ := json.Marshal(r)
		for _, secret := range []string{fx.Password, fx.AppCredSecret, fx.OperatorPassword, c.Token(), first} {
			if strings.Contains(string(b), secret) {
				t.Errorf("resource shows a secret: %s", b)
			}
		}
	}
	want := map[string]int{
		// The user and the operator.
		"domain": 1, "project": 1, "user": 2, "role": 3, "application-credential": 1, "network": 2, "subnet": 2,
		"port": 3 + 2, "flavor": 5, "image": 1, "server": 3,
		// The fixture's router (its interface and gateway ports above) and
		// the project's default security group with its four rules.
		"router": 1, "security-group": 1, "security-group-rule": 4,
	}
	if !maps.Equal(kinds, want) {
		t.Errorf("resource kinds %v, want %v", kinds, want)
	}
	before := e.srv.Resources()
	ok(t, e.emu.Terminate(launched.ServerIDs...))
	added, removed := cloudsim.DiffResources(before, e.srv.Resources())
	if len(added) != 0 || len(removed) != 6 {
		t.Errorf("terminate: added %v, removed %d", added, len(removed))
	}
}
