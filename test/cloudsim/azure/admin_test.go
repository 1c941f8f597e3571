package azure

import (
	"errors"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// TestInstancesOverHTTP drives cloudsim's neutral instance API
// (/admin/instances) on the emulator.
func TestInstancesOverHTTP(t *testing.T) {
	env := newTestEnv(t, Config{})
	loc := env.emu.Config().Location
	var info cloudsim.InstanceInfo
	spec := cloudsim.InstanceSpec{Name: "web-1", Zone: loc + "-3", InstanceType: "Standard_B2s", PublicIP: true, Tags: map[string]string{"app": "web"}}
	if status := env.adminAt(t, http.MethodPost, "/admin/instances", spec, &info); status != http.StatusCreated {
		t.Fatalf("launch: %d", status)
	}
	if info.ID != "web-1" || info.Name != "web-1" || info.Hostname != "web-1" || info.Zone != loc+"-3" || info.InstanceType != "Standard_B2s" ||
		info.State != cloudsim.InstanceRunning || info.CloudState != "PowerState/running" || info.Tags["app"] != "web" {
		t.Errorf("launched %+v", info)
	}
	// Addresses come from the network half: a NIC in the fixture subnet
	// and a public IP.
	if vm, _ := env.emu.VM("web-1"); vm.PrivateIP != info.PrivateIP || vm.PublicIP != info.PublicIP || info.PublicIP == "" {
		t.Errorf("addresses %q %q, VM %+v", info.PrivateIP, info.PublicIP, vm)
	}
	if a, err := netip.ParseAddr(info.PrivateIP); err != nil || !netip.MustParsePrefix(env.emu.Fixture().SubnetCIDR).Contains(a) {
		t.Errorf("private address %q is not in the fixture subnet %s", info.PrivateIP, env.emu.Fixture().SubnetCIDR)
	}

	// Zone-less launches spread over the zones round robin.
	var zones []string
	for range 3 {
		var i cloudsim.InstanceInfo
		if status := env.adminAt(t, http.MethodPost, "/admin/instances", cloudsim.InstanceSpec{}, &i); status != http.StatusCreated {
			t.Fatalf("launch: %d", status)
		}
		if !strings.HasPrefix(i.ID, "vm-") || i.InstanceType != DefaultVMSize {
			t.Errorf("default launch %+v", i)
		}
		zones = append(zones, i.Zone)
	}
	slices.Sort(zones)
	if want := []string{loc + "-1", loc + "-2", loc + "-3"}; !slices.Equal(zones, want) {
		t.Errorf("zones %v, want %v", zones, want)
	}

	for _, bad := range []cloudsim.InstanceSpec{{Zone: "9"}, {InstanceType: "m5.large"}, {Name: "web-1"}, {Name: "bad name"}} {
		if status := env.adminAt(t, http.MethodPost, "/admin/instances", bad, nil); status != http.StatusBadRequest {
			t.Errorf("launch %+v: %d, want 400", bad, status)
		}
	}

	var list []cloudsim.InstanceInfo
	env.adminAt(t, http.MethodGet, "/admin/instances", nil, &list)
	if len(list) != 4 || list[0].ID != "web-1" {
		t.Errorf("list %+v", list)
	}

	if status := env.adminAt(t, http.MethodPost, "/admin/instances/web-1/stop", nil, &info); status != http.StatusOK ||
		info.State != cloudsim.InstanceStopped || info.CloudState != "PowerState/stopped" {
		t.Errorf("stop: %d %+v", status, info)
	}
	if status := env.adminAt(t, http.MethodPost, "/admin/instances/web-1/start", nil, &info); status != http.StatusOK || info.State != cloudsim.InstanceRunning {
		t.Errorf("start: %d %+v", status, info)
	}
	// Deallocated VMs cannot be powered off.
	var vm VMInfo
	if status := env.admin(t, http.MethodPost, "/vms/web-1/deallocate", nil, &vm); status != http.StatusOK || vm.PowerState != PowerDeallocated {
		t.Errorf("deallocate: %d %+v", status, vm)
	}
	if status := env.adminAt(t, http.MethodPost, "/admin/instances/web-1/stop", nil, nil); status != http.StatusConflict {
		t.Errorf("stop of a deallocated VM: %d, want 409", status)
	}
	if status := env.adminAt(t, http.MethodPost, "/admin/instances/web-1/terminate", nil, &info); status != http.StatusOK || info.State != cloudsim.InstanceTerminated {
		t.Errorf("terminate: %d %+v", status, info)
	}
	if status := env.adminAt(t, http.MethodGet, "/admin/instances/web-1", nil, nil); status != http.StatusNotFound {
		t.Errorf("get of a terminated VM: %d", status)
	}
	if status := env.adminAt(t, http.MethodPost, "/admin/instances/nope/start", nil, nil); status != http.StatusNotFound {
		t.Errorf("start of an unknown VM: %d", status)
	}
	if err := env.emu.StopInstance("nope"); !errors.Is(err, cloudsim.ErrInstanceNotFound) {
		t.Errorf("StopInstance(nope): %v", err)
	}
}

func TestScaleSetsOverHTTP(t *testing.T) {
	env := newTestEnv(t, Config{})
	var ss ScaleSetInfo
	spec := ScaleSetSpec{Name: "nodes", Capacity: 2, Zones: []string{"1", "2"}, Tags: map[string]string{"pool": "a"}}
	if status := env.admin(t, http.MethodPost, "/scalesets", spec, &ss); status != http.StatusCreated {
		t.Fatalf("create: %d", status)
	}
	if ss.Name != "nodes" || ss.Flexible || ss.Capacity != 2 || len(ss.Instances) != 2 || ss.Instances[0].InstanceID != "0" ||
		ss.Instances[0].ProviderID != "azure://"+ss.Instances[0].ID || ss.Instances[1].Tags["pool"] != "a" || ss.VMSize != DefaultVMSize {
		t.Errorf("created %+v", ss)
	}
	if status := env.admin(t, http.MethodPost, "/scalesets", spec, nil); status != http.StatusBadRequest {
		t.Errorf("a second scale set of the name: %d", status)
	}
	if status := env.admin(t, http.MethodPost, "/scalesets/nodes/scaleout", map[string]int{"count": 2}, &ss); status != http.StatusOK || ss.Capacity != 4 {
		t.Errorf("scale out: %d %+v", status, ss)
	}
	if status := env.admin(t, http.MethodPost, "/scalesets/nodes/instances/1/stop", nil, &ss); status != http.StatusOK || ss.Instances[1].PowerState != PowerStopped {
		t.Errorf("stop instance: %d %+v", status, ss.Instances[1])
	}
	if status := env.admin(t, http.MethodPost, "/scalesets/nodes/instances/2/power", map[string]string{"state": "deallocating"}, &ss); status != http.StatusOK || ss.Instances[2].PowerState != PowerDeallocating {
		t.Errorf("power instance: %d %+v", status, ss.Instances[2])
	}
	if status := env.admin(t, http.MethodDelete, "/scalesets/nodes/instances/0", nil, nil); status != http.StatusNoContent {
		t.Errorf("delete instance: %d", status)
	}
	if status := env.admin(t, http.MethodDelete, "/scalesets/nodes/instances/0", nil, nil); status != http.StatusNotFound {
		t.Errorf("delete a deleted instance: %d", status)
	}
	if status := env.admin(t, http.MethodGet, "/scalesets/nodes", nil, &ss); status != http.StatusOK || ss.Capacity != 3 || ss.Instances[0].InstanceID != "1" {
		t.Errorf("get: %d %+v", status, ss)
	}
	var all []ScaleSetInfo
	if status := env.admin(t, http.MethodGet, "/scalesets", nil, &all); status != http.StatusOK || len(all) != 1 {
		t.Errorf("list: %d %+v", status, all)
	}

	// A Flexible scale set: instances are VMs, named and addressed as such.
	var flex ScaleSetInfo
	if status := env.admin(t, http.MethodPost, "/scalesets", ScaleSetSpec{Name: "flex", Capacity: 1, Flexible: true}, &flex); status != http.StatusCreated || !flex.Flexible {
		t.Fatalf("create flexible: %d %+v", status, flex)
	}
	name := flex.Instances[0].Name
	var vm VMInfo
	if status := env.admin(t, http.MethodPost, "/vms/"+name+"/power", map[string]string{"state": "stopping"}, &vm); status != http.StatusOK || vm.PowerState != PowerStopping || vm.ScaleSet != "flex" {
		t.Errorf("power of a flexible VM: %d %+v", status, vm)
	}
	var vms []VMInfo
	env.admin(t, http.MethodGet, "/vms", nil, &vms)
	if len(vms) != 1 || vms[0].Name != name {
		t.Errorf("VMs %+v", vms)
	}
	// ListInstances shows standalone VMs only.
	if insts := env.emu.ListInstances(); len(insts) != 0 {
		t.Errorf("instances %+v", insts)
	}
	if status := env.admin(t, http.MethodDelete, "/scalesets/flex", nil, nil); status != http.StatusNoContent {
		t.Errorf("delete scale set: %d", status)
	}
	if status := env.admin(t, http.MethodGet, "/vms/"+name, nil, nil); status != http.StatusNotFound {
		t.Errorf("a deleted scale set's VM: %d", status)
	}

	for _, bad := range []ScaleSetSpec{{}, {Name: "z", Zones: []string{"7"}}, {Name: "s", VMSize: "big"}, {Name: "c", Capacity: -1}} {
		if status := env.admin(t, http.MethodPost, "/scalesets", bad, nil); status != http.StatusBadRequest {
			t.Errorf("create %+v: %d, want 400", bad, status)
		}
	}
	if status := env.admin(t, http.MethodPost, "/scalesets/nope/scaleout", map[string]int{"count": 1}, nil); status != http.StatusNotFound {
		t.Errorf("scale out an unknown scale set: %d", status)
	}
}

func TestAdminTokensAndResources(t *testing.T) {
	env := newTestEnv(t, Config{})
	var tok struct {
		AccessToken string `json:"accessToken"`
	}
	if status := env.admin(t, http.MethodPost, "/tokens", nil, &tok); status != http.StatusOK || tok.AccessToken == "" {
		t.Fatalf("token: %d", status)
	}
	if err := env.listAllWith(staticToken{token: tok.AccessToken}); err != nil {
		t.Fatal(err)
	}
	if status := env.admin(t, http.MethodPost, "/tokens/expire", nil, nil); status != http.StatusNoContent {
		t.Fatalf("expire: %d", status)
	}
	wantARMError(t, env.listAllWith(staticToken{token: tok.AccessToken}), http.StatusUnauthorized, "ExpiredAuthenticationToken")
	for path, body := range map[string]map[string]string{
		"/identity/secrets":             {"clientId": "a", "secret": "s"},
		"/identity/federated-tokens":    {"clientId": "b", "token": "t"},
		"/identity/managed-identities":  {"clientId": "c"},
		"/identity/certificates":        {"clientId": "d", "certificatePem": "nope"},
		"/identity/secrets?missing=yes": {"secret": "s"},
	} {
		want := http.StatusOK
		if body["certificatePem"] == "nope" || body["clientId"] == "" {
			want = http.StatusBadRequest
		}
		if status := env.admin(t, http.MethodPost, path, body, nil); status != want {
			t.Errorf("POST %s: %d, want %d", path, status, want)
		}
	}

	// Resources lists what the admin API made.
	if _, err := env.emu.LaunchVM(VMSpec{Name: "r1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.emu.CreateScaleSet(ScaleSetSpec{Name: "rs", Capacity: 1}); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, r := range env.srv.Resources() {
		kinds[r.Kind]++
	}
	for _, k := range []string{"Microsoft.Compute/virtualMachines", "Microsoft.Compute/virtualMachineScaleSets",
		"Microsoft.Compute/virtualMachineScaleSets/virtualMachines", "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/networkInterfaces"} {
		if kinds[k] != 1 {
			t.Errorf("%d resources of kind %s, want 1 (%v)", kinds[k], k, kinds)
		}
	}
}
