package azure

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v6"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// The tag names upstream's node-ipam CloudAllocator reads a node pool's
// pod CIDR mask sizes from.
const (
	maskTagV4 = "kubernetesNodeCIDRMaskIPV4"
	maskTagV6 = "kubernetesNodeCIDRMaskIPV6"
)

// asTags is the tags of an SDK model as plain strings.
func asTags(tags map[string]*string) map[string]string {
	out := map[string]string{}
	for k, v := range tags {
		out[k] = val(v)
	}
	return out
}

// memberIDs are an availability set's virtualMachines IDs.
func memberIDs(as *armcompute.AvailabilitySet) []string {
	var out []string
	for _, r := range as.Properties.VirtualMachines {
		out = append(out, val(r.ID))
	}
	return out
}

// newAvailabilitySet is a PUT body for a set of the emulated region.
func newAvailabilitySet(env *testEnv, sku string, fd, ud int32, tags map[string]*string) armcompute.AvailabilitySet {
	as := armcompute.AvailabilitySet{
		Location:   to.Ptr(env.emu.Config().Location),
		Tags:       tags,
		Properties: &armcompute.AvailabilitySetProperties{PlatformFaultDomainCount: to.Ptr(fd), PlatformUpdateDomainCount: to.Ptr(ud)},
	}
	if sku != "" {
		as.SKU = &armcompute.SKU{Name: to.Ptr(sku)}
	}
	return as
}

// TestAvailabilitySetsFromLaunchVM: LaunchVM makes a VM's availability
// set with its tags when it does not exist and puts the VM in it; the
// sets are listed (in pages) and read through armcompute with their
// tags, counts and members, IDs upper-cased as Compute writes them; a
// deleted VM leaves its set.
func TestAvailabilitySetsFromLaunchVM(t *testing.T) {
	env := newTestEnv(t, Config{PageSize: 2})
	rg := env.emu.Fixture().ResourceGroup
	a1, err := env.emu.LaunchVM(VMSpec{Name: "pool-a-1", AvailabilitySet: "pool-a", AvailabilitySetTags: map[string]string{maskTagV4: "24"}})
	if err != nil {
		t.Fatal(err)
	}
	// The set exists now: the second VM joins it, and its set tags are
	// not applied.
	a2, err := env.emu.LaunchVM(VMSpec{Name: "pool-a-2", AvailabilitySet: "pool-a", FaultDomain: 1, UpdateDomain: 4, AvailabilitySetTags: map[string]string{"ignored": "yes"}})
	if err != nil {
		t.Fatal(err)
	}
	// Domains beyond the defaults make a set that has them.
	b1, err := env.emu.LaunchVM(VMSpec{Name: "pool-b-1", AvailabilitySet: "pool-b", FaultDomain: 2, UpdateDomain: 6})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.emu.LaunchVM(VMSpec{Name: "zonal"}); err != nil {
		t.Fatal(err)
	}
	sets := env.compute.NewAvailabilitySetsClient()
	if _, err := sets.CreateOrUpdate(cctx, rg, "empty", newAvailabilitySet(env, "Aligned", 1, 1, nil), nil); err != nil {
		t.Fatal(err)
	}

	got := map[string]*armcompute.AvailabilitySet{}
	var order []string
	for _, page := range allPages(t, sets.NewListPager(rg, nil)) {
		if len(page.Value) > 2 {
			t.Errorf("page of %d, want at most 2", len(page.Value))
		}
		for _, as := range page.Value {
			got[val(as.Name)] = as
			order = append(order, val(as.Name))
		}
	}
	if !slices.Equal(order, []string{"empty", "pool-a", "pool-b"}) {
		t.Fatalf("listed %v, want empty, pool-a, pool-b", order)
	}
	if n := env.srv.CallCount("compute:AvailabilitySets_List"); n != 2 {
		t.Errorf("AvailabilitySets_List counted %d times, want 2 pages", n)
	}
	a := got["pool-a"]
	if val(a.Type) != "Microsoft.Compute/availabilitySets" || val(a.Location) != env.emu.Config().Location || val(a.SKU.Name) != "Aligned" ||
		val(a.Properties.PlatformFaultDomainCount) != 2 || val(a.Properties.PlatformUpdateDomainCount) != 5 {
		t.Errorf("pool-a: %+v %+v", a, a.Properties)
	}
	if tags := asTags(a.Tags); len(tags) != 1 || tags[maskTagV4] != "24" {
		t.Errorf("pool-a tags %v, want only %s=24", tags, maskTagV4)
	}
	if m := memberIDs(a); !slices.Equal(m, []string{strings.ToUpper(a1.ID), strings.ToUpper(a2.ID)}) {
		t.Errorf("pool-a members %v, want the VMs' IDs upper-cased", m)
	}
	if b := got["pool-b"]; val(b.Properties.PlatformFaultDomainCount) != 3 || val(b.Properties.PlatformUpdateDomainCount) != 7 ||
		len(b.Tags) != 0 || !slices.Equal(memberIDs(b), []string{strings.ToUpper(b1.ID)}) {
		t.Errorf("pool-b: %+v tags %v", b.Properties, b.Tags)
	}
	if e := got["empty"]; e.Properties.VirtualMachines == nil || len(e.Properties.VirtualMachines) != 0 {
		t.Errorf("empty set's members %v, want an empty list", e.Properties.VirtualMachines)
	}

	// A VM names its set as the set's members name the VM: in upper case.
	vm, err := env.compute.NewVirtualMachinesClient().Get(cctx, rg, "pool-a-2", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ref := val(vm.Properties.AvailabilitySet.ID); ref != strings.ToUpper(ref) || !strings.EqualFold(ref, val(a.ID)) {
		t.Errorf("VM's availability set %s, set %s", ref, val(a.ID))
	}

	// Get, and the subscription-wide list.
	one, err := sets.Get(cctx, rg, "pool-a", nil)
	if err != nil {
		t.Fatal(err)
	}
	if val(one.ID) != val(a.ID) || len(memberIDs(&one.AvailabilitySet)) != 2 {
		t.Errorf("Get: %+v", one.AvailabilitySet)
	}
	count := 0
	for _, page := range allPages(t, sets.NewListBySubscriptionPager(nil)) {
		count += len(page.Value)
	}
	if count != 3 || env.srv.CallCount("compute:AvailabilitySets_ListBySubscription") != 2 {
		t.Errorf("ListBySubscription: %d sets in %d calls", count, env.srv.CallCount("compute:AvailabilitySets_ListBySubscription"))
	}
	_, err = sets.Get(cctx, rg, "nope", nil)
	wantARMError(t, err, http.StatusNotFound, "ResourceNotFound")

	// The VM deleted, the set lists the other one only; the set stays.
	if err := env.emu.DeleteVM("pool-a-1"); err != nil {
		t.Fatal(err)
	}
	one, err = sets.Get(cctx, rg, "pool-a", nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := memberIDs(&one.AvailabilitySet); !slices.Equal(m, []string{strings.ToUpper(a2.ID)}) {
		t.Errorf("after the delete pool-a lists %v", m)
	}

	// The admin report.
	info, ok := env.emu.AvailabilitySet("pool-a")
	if !ok || info.SKU != "Aligned" || info.FaultDomainCount != 2 || info.UpdateDomainCount != 5 ||
		!slices.Equal(info.VirtualMachines, []string{"pool-a-2"}) || info.Tags[maskTagV4] != "24" || info.ID != val(a.ID) {
		t.Errorf("AvailabilitySet: %+v %v", info, ok)
	}
	if all := env.emu.AvailabilitySets(); len(all) != 3 {
		t.Errorf("AvailabilitySets: %+v", all)
	}
	if vmInfo, _ := env.emu.VM("pool-a-2"); vmInfo.AvailabilitySet != "pool-a" || vmInfo.FaultDomain != 1 || vmInfo.Zone != "" {
		t.Errorf("VM info: %+v", vmInfo)
	}
}

// TestLaunchVMIntoAvailabilitySetRefusals: a VM must fit its set: a
// fault or update domain the set has, an Aligned set (the VMs have
// managed disks), a valid set name. A refused launch makes nothing.
func TestLaunchVMIntoAvailabilitySetRefusals(t *testing.T) {
	env := newTestEnv(t, Config{})
	rg := env.emu.Fixture().ResourceGroup
	if _, err := env.emu.LaunchVM(VMSpec{Name: "a-1", AvailabilitySet: "two-fd"}); err != nil {
		t.Fatal(err)
	}
	sets := env.compute.NewAvailabilitySetsClient()
	// Compute's default sku is Classic.
	if _, err := sets.CreateOrUpdate(cctx, rg, "classic", newAvailabilitySet(env, "", 2, 5, nil), nil); err != nil {
		t.Fatal(err)
	}
	for _, spec := range []VMSpec{
		{Name: "x-1", AvailabilitySet: "two-fd", FaultDomain: 2},
		{Name: "x-2", AvailabilitySet: "two-fd", UpdateDomain: 5},
		{Name: "x-3", AvailabilitySet: "classic"},
		{Name: "x-4", AvailabilitySet: "-bad"},
		{Name: "x-5", AvailabilitySet: "new", FaultDomain: 3},
		{Name: "x-6", AvailabilitySet: "new", AvailabilitySetTags: map[string]string{"a/b": "c"}},
		{Name: "bad name!", AvailabilitySet: "new"},
	} {
		if _, err := env.emu.LaunchVM(spec); !errors.Is(err, cloudsim.ErrInvalidRequest) {
			t.Errorf("launch %+v: %v, want ErrInvalidRequest", spec, err)
		}
	}
	if _, ok := env.emu.AvailabilitySet("new"); ok {
		t.Error("a refused launch made its availability set")
	}
	if vms := env.emu.VMs(); len(vms) != 1 {
		t.Errorf("VMs after the refusals: %+v", vms)
	}
}

// TestAvailabilitySetWrites: CreateOrUpdate (200 on create too), Update
// and Delete through armcompute, with ARM's validation: fault domains
// 1..3, update domains 1..20, counts fixed once made, the sku, the
// location; a set with VMs cannot be deleted.
func TestAvailabilitySetWrites(t *testing.T) {
	env := newTestEnv(t, Config{})
	rg := env.emu.Fixture().ResourceGroup
	sets := env.compute.NewAvailabilitySetsClient()

	made, err := sets.CreateOrUpdate(cctx, rg, "pool", newAvailabilitySet(env, "aligned", 3, 20, map[string]*string{maskTagV4: to.Ptr("25")}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if val(made.Name) != "pool" || val(made.SKU.Name) != "Aligned" || val(made.Properties.PlatformFaultDomainCount) != 3 ||
		val(made.Properties.PlatformUpdateDomainCount) != 20 || asTags(made.Tags)[maskTagV4] != "25" ||
		!strings.HasSuffix(val(made.ID), "/resourceGroups/"+rg+"/providers/Microsoft.Compute/availabilitySets/pool") {
		t.Errorf("created %+v %+v", made.AvailabilitySet, made.Properties)
	}
	// No provisioningState or emulator bookkeeping shows.
	tok := env.emu.IssueToken()
	status, body := env.raw(t, http.MethodGet, env.rgPath()+"/providers/Microsoft.Compute/availabilitySets/pool", url.Values{"api-version": {"2024-11-01"}}, tok)
	if props, _ := body["properties"].(map[string]any); status != http.StatusOK || props["provisioningState"] != nil || body["etag"] != nil {
		t.Errorf("raw GET: %d %v", status, body)
	}
	for k := range body {
		if strings.HasPrefix(k, "_") {
			t.Errorf("the set shows %s", k)
		}
	}

	// Refused PUTs, of a new set and of the existing one.
	for _, c := range []struct {
		name   string
		as     armcompute.AvailabilitySet
		status int
		code   string
	}{
		{"new", newAvailabilitySet(env, "Aligned", 4, 5, nil), http.StatusBadRequest, "InvalidParameter"},
		{"new", newAvailabilitySet(env, "Aligned", 0, 5, nil), http.StatusBadRequest, "InvalidParameter"},
		{"new", newAvailabilitySet(env, "Aligned", 2, 21, nil), http.StatusBadRequest, "InvalidParameter"},
		{"new", newAvailabilitySet(env, "Aligned", 2, 0, nil), http.StatusBadRequest, "InvalidParameter"},
		{"new", newAvailabilitySet(env, "Tilted", 2, 5, nil), http.StatusBadRequest, "InvalidParameter"},
		{"new", armcompute.AvailabilitySet{Properties: &armcompute.AvailabilitySetProperties{}}, http.StatusBadRequest, "LocationRequired"},
		{"pool", newAvailabilitySet(env, "Aligned", 2, 20, nil), http.StatusBadRequest, "PropertyChangeNotAllowed"},
		{"pool", newAvailabilitySet(env, "Aligned", 3, 5, nil), http.StatusBadRequest, "PropertyChangeNotAllowed"},
		{"pool", newAvailabilitySet(env, "Classic", 3, 20, nil), http.StatusConflict, "OperationNotAllowed"},
	} {
		_, err := sets.CreateOrUpdate(cctx, rg, c.name, c.as, nil)
		re := wantARMError(t, err, c.status, c.code)
		if c.code == "InvalidParameter" && c.as.Properties.PlatformFaultDomainCount != nil && val(c.as.Properties.PlatformFaultDomainCount) == 4 &&
			!strings.Contains(re.Error(), "The specified fault domain count 4 must fall in the range 1 to 3.") {
			t.Errorf("fault domain message: %v", re)
		}
	}
	if _, err := sets.Get(cctx, rg, "new", nil); err == nil {
		t.Error("a refused PUT made the set")
	}

	// A PUT with the same counts changes the tags; Update (PATCH) too.
	put, err := sets.CreateOrUpdate(cctx, rg, "pool", newAvailabilitySet(env, "Aligned", 3, 20, map[string]*string{maskTagV4: to.Ptr("26"), maskTagV6: to.Ptr("64")}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if tags := asTags(put.Tags); tags[maskTagV4] != "26" || tags[maskTagV6] != "64" {
		t.Errorf("tags after the PUT %v", tags)
	}
	upd, err := sets.Update(cctx, rg, "pool", armcompute.AvailabilitySetUpdate{Tags: map[string]*string{maskTagV4: to.Ptr("27")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tags := asTags(upd.Tags); len(tags) != 1 || tags[maskTagV4] != "27" || val(upd.Properties.PlatformFaultDomainCount) != 3 {
		t.Errorf("after Update: tags %v, %+v", tags, upd.Properties)
	}
	if n := env.srv.CallCount("compute:AvailabilitySets_Update"); n != 1 {
		t.Errorf("AvailabilitySets_Update counted %d times", n)
	}
	_, err = sets.Update(cctx, rg, "nope", armcompute.AvailabilitySetUpdate{Tags: map[string]*string{}}, nil)
	wantARMError(t, err, http.StatusNotFound, "ResourceNotFound")

	// A VM in the set: the delete is refused until the VM goes.
	vm, err := env.emu.LaunchVM(VMSpec{Name: "pool-1", AvailabilitySet: "pool", FaultDomain: 2, UpdateDomain: 19})
	if err != nil {
		t.Fatal(err)
	}
	got, err := sets.Get(cctx, rg, "pool", nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := memberIDs(&got.AvailabilitySet); !slices.Equal(m, []string{strings.ToUpper(vm.ID)}) {
		t.Errorf("members %v", m)
	}
	// A body's virtualMachines do not move VMs: they join a set when made.
	again := got.AvailabilitySet
	again.Properties.VirtualMachines = nil
	if after, err := sets.CreateOrUpdate(cctx, rg, "pool", again, nil); err != nil || len(after.Properties.VirtualMachines) != 1 {
		t.Errorf("PUT without members: %v %+v", err, after.Properties)
	}
	_, err = sets.Delete(cctx, rg, "pool", nil)
	re := wantARMError(t, err, http.StatusConflict, "OperationNotAllowed")
	if !strings.Contains(re.Error(), "Availability Set pool cannot be deleted. Before deleting an Availability Set please ensure that it does not contain any VM.") {
		t.Errorf("message: %v", re)
	}
	if err := env.emu.DeleteVM("pool-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := sets.Delete(cctx, rg, "pool", nil); err != nil {
		t.Fatal(err)
	}
	_, err = sets.Get(cctx, rg, "pool", nil)
	wantARMError(t, err, http.StatusNotFound, "ResourceNotFound")
	// Deleting what is not there is ARM's 204, which the client takes.
	if _, err := sets.Delete(cctx, rg, "pool", nil); err != nil {
		t.Errorf("second delete: %v", err)
	}
	if n := env.emu.Answers("compute:AvailabilitySets_Delete", http.StatusConflict); n != 1 {
		t.Errorf("%d refused deletes counted, want 1", n)
	}
}

// TestAvailabilitySetFaults: fault injection and BeforeNext reach the
// kind's operations as they do the others'.
func TestAvailabilitySetFaults(t *testing.T) {
	env := newTestEnv(t, Config{})
	rg := env.emu.Fixture().ResourceGroup
	if _, err := env.emu.LaunchVM(VMSpec{Name: "v", AvailabilitySet: "pool"}); err != nil {
		t.Fatal(err)
	}
	opts := *env.opts
	opts.Retry.MaxRetries = -1
	once, err := armcompute.NewAvailabilitySetsClient(env.emu.Config().SubscriptionID, env.cred, &arm.ClientOptions{ClientOptions: opts.ClientOptions})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.srv.SetFault(cloudsim.FaultSpec{Op: "compute:AvailabilitySets_Get", ThrottleNext: 1}); err != nil {
		t.Fatal(err)
	}
	_, err = once.Get(cctx, rg, "pool", nil)
	wantARMError(t, err, http.StatusTooManyRequests, "SubscriptionRequestsThrottled")
	if err := env.srv.SetFault(cloudsim.FaultSpec{Op: "compute:AvailabilitySets_List", FailNext: 1}); err != nil {
		t.Fatal(err)
	}
	_, err = once.NewListPager(rg, nil).NextPage(cctx)
	wantARMError(t, err, http.StatusInternalServerError, "InternalServerError")
	if _, err := once.Get(cctx, rg, "pool", nil); err != nil {
		t.Fatalf("after the fault: %v", err)
	}
	if n := env.srv.CallCount("compute:AvailabilitySets_Get"); n != 2 {
		t.Errorf("AvailabilitySets_Get counted %d times, want 2", n)
	}

	// Someone retags the set between a client's read and its write.
	ran := false
	env.emu.BeforeNext("compute:AvailabilitySets_CreateOrUpdate", func() {
		ran = true
		if err := env.emu.SetAvailabilitySetTags("pool", map[string]string{"owner": "operator"}); err != nil {
			t.Error(err)
		}
	})
	cur, err := once.Get(cctx, rg, "pool", nil)
	if err != nil {
		t.Fatal(err)
	}
	cur.Tags = map[string]*string{maskTagV4: to.Ptr("24")}
	after, err := once.CreateOrUpdate(cctx, rg, "pool", cur.AvailabilitySet, nil)
	if err != nil {
		t.Fatal(err)
	}
	// No ETag on availability sets: the last write wins.
	if !ran || len(after.Tags) != 1 || val(after.Tags[maskTagV4]) != "24" {
		t.Errorf("ran %v, tags %v", ran, asTags(after.Tags))
	}
	if n := env.emu.Answers("compute:AvailabilitySets_CreateOrUpdate", http.StatusOK); n != 1 {
		t.Errorf("%d CreateOrUpdate 200s counted, want 1", n)
	}
}

// TestSetTags: the admin helpers retag a scale set and an availability
// set, and ARM lists the new tags (the node-ipam controller's mask
// lookup reads them from the scale set listing); over HTTP too.
func TestSetTags(t *testing.T) {
	env := newTestEnv(t, Config{})
	rg := env.emu.Fixture().ResourceGroup
	if _, err := env.emu.CreateScaleSet(ScaleSetSpec{Name: "pool", Capacity: 1, Tags: map[string]string{"old": "tag"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.emu.LaunchVM(VMSpec{Name: "v", AvailabilitySet: "as-pool"}); err != nil {
		t.Fatal(err)
	}
	sss := env.compute.NewVirtualMachineScaleSetsClient()
	listed := func() *armcompute.VirtualMachineScaleSet {
		t.Helper()
		pages := allPages(t, sss.NewListPager(rg, nil))
		if len(pages) != 1 || len(pages[0].Value) != 1 {
			t.Fatalf("scale set listing: %+v", pages)
		}
		return pages[0].Value[0]
	}
	before := listed()
	if err := env.emu.SetScaleSetTags("pool", map[string]string{maskTagV4: "24", maskTagV6: "64"}); err != nil {
		t.Fatal(err)
	}
	ss := listed()
	if tags := asTags(ss.Tags); len(tags) != 2 || tags[maskTagV4] != "24" || tags[maskTagV6] != "64" {
		t.Errorf("listed tags %v", tags)
	}
	if val(ss.Etag) == val(before.Etag) {
		t.Errorf("the ETag did not move: %s", val(ss.Etag))
	}
	// The same tags again change nothing, the ETag included.
	if err := env.emu.SetScaleSetTags("pool", map[string]string{maskTagV4: "24", maskTagV6: "64"}); err != nil {
		t.Fatal(err)
	}
	if again := listed(); val(again.Etag) != val(ss.Etag) {
		t.Errorf("an unchanged retag moved the ETag %s -> %s", val(ss.Etag), val(again.Etag))
	}
	if err := env.emu.SetScaleSetTags("nope", nil); !errors.Is(err, cloudsim.ErrInstanceNotFound) {
		t.Errorf("unknown scale set: %v", err)
	}
	if err := env.emu.SetScaleSetTags("pool", map[string]string{"": "x"}); !errors.Is(err, cloudsim.ErrInvalidRequest) {
		t.Errorf("empty tag name: %v", err)
	}

	if err := env.emu.SetAvailabilitySetTags("as-pool", map[string]string{maskTagV4: "26"}); err != nil {
		t.Fatal(err)
	}
	as, err := env.compute.NewAvailabilitySetsClient().Get(cctx, rg, "as-pool", nil)
	if err != nil {
		t.Fatal(err)
	}
	if tags := asTags(as.Tags); len(tags) != 1 || tags[maskTagV4] != "26" {
		t.Errorf("availability set tags %v", tags)
	}
	if err := env.emu.SetAvailabilitySetTags("nope", nil); !errors.Is(err, cloudsim.ErrInstanceNotFound) {
		t.Errorf("unknown availability set: %v", err)
	}

	// Over HTTP.
	var ssInfo ScaleSetInfo
	if status := env.admin(t, http.MethodPut, "/scalesets/pool/tags", map[string]any{"tags": map[string]string{maskTagV4: "25"}}, &ssInfo); status != http.StatusOK ||
		len(ssInfo.Tags) != 1 || ssInfo.Tags[maskTagV4] != "25" {
		t.Errorf("PUT scale set tags: %d %+v", status, ssInfo.Tags)
	}
	if tags := asTags(listed().Tags); len(tags) != 1 || tags[maskTagV4] != "25" {
		t.Errorf("listed after the HTTP retag: %v", tags)
	}
	var asInfo AvailabilitySetInfo
	if status := env.admin(t, http.MethodPut, "/availabilitysets/as-pool/tags", map[string]any{"tags": map[string]string{maskTagV6: "80"}}, &asInfo); status != http.StatusOK ||
		len(asInfo.Tags) != 1 || asInfo.Tags[maskTagV6] != "80" || !slices.Equal(asInfo.VirtualMachines, []string{"v"}) {
		t.Errorf("PUT availability set tags: %d %+v", status, asInfo)
	}
	var cleared AvailabilitySetInfo
	if status := env.admin(t, http.MethodPut, "/availabilitysets/as-pool/tags", map[string]any{}, &cleared); status != http.StatusOK || cleared.Name != "as-pool" || len(cleared.Tags) != 0 {
		t.Errorf("clearing the tags: %d %+v", status, cleared)
	}
	var all []AvailabilitySetInfo
	if status := env.admin(t, http.MethodGet, "/availabilitysets", nil, &all); status != http.StatusOK || len(all) != 1 || all[0].Name != "as-pool" {
		t.Errorf("GET /availabilitysets: %d %+v", status, all)
	}
	if status := env.admin(t, http.MethodGet, "/availabilitysets/as-pool", nil, &asInfo); status != http.StatusOK || asInfo.FaultDomainCount != 2 {
		t.Errorf("GET /availabilitysets/as-pool: %d %+v", status, asInfo)
	}
	for path, want := range map[string]int{"/availabilitysets/nope/tags": http.StatusNotFound, "/scalesets/nope/tags": http.StatusNotFound} {
		if status := env.admin(t, http.MethodPut, path, map[string]any{"tags": map[string]string{}}, nil); status != want {
			t.Errorf("PUT %s: %d, want %d", path, status, want)
		}
	}
	if status := env.admin(t, http.MethodPut, "/availabilitysets/as-pool/tags", map[string]any{"tags": map[string]string{"a<b": "c"}}, nil); status != http.StatusBadRequest {
		t.Errorf("a bad tag name: %d", status)
	}
	if status := env.admin(t, http.MethodGet, "/availabilitysets/nope", nil, nil); status != http.StatusNotFound {
		t.Errorf("GET an unknown set: %d", status)
	}
}
