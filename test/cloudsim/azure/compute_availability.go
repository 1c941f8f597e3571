package azure

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// Availability sets (Microsoft.Compute/availabilitySets), as the ARM
// Compute REST reference describes them (Availability Sets - Get, List,
// List By Subscription, Create Or Update, Update, Delete). They matter to
// a cloud-controller-manager for their tags: upstream's node-ipam
// CloudAllocator reads a standalone VM's pod CIDR mask sizes
// (kubernetesNodeCIDRMaskIPV4 / kubernetesNodeCIDRMaskIPV6) from the tags
// of the VM's availability set, as it reads a scale set instance's from
// its scale set's.
//
// Compute answers a create with 200, not 201, and neither writes nor
// deletes are long-running; the resource carries no ETag and no
// provisioningState. A PUT or PATCH merges into the stored set as
// Compute's writes do (compute_write.go): tags given replace the stored
// ones, left out keep them. The fault and update domain counts are fixed
// once the set exists (the Availability sets overview: they "cannot be
// changed once the Availability set is created").
//
// A VM joins a set only when it is created (the admin API's LaunchVM), so
// properties.virtualMachines is not stored: every view works it out from
// the VMs whose availabilitySet reference names the set, which keeps the
// list right when a VM is deleted. Compute writes those IDs, like the
// VM's reference to its set, in upper case.

const typeAvailabilitySet = "availabilitySets"

// Availability set limits. The fault domain maximum is a region's (2 or
// 3); the emulated region has 3.
const (
	maxFaultDomains  = 3
	maxUpdateDomains = 20
	// defaultFaultDomains and defaultUpdateDomains are what a set made
	// without counts gets. Compute's own defaults for a PUT without them
	// are not documented; 2 and 5 are the emulator's choice, the values
	// Azure's examples commonly use.
	defaultFaultDomains  = 2
	defaultUpdateDomains = 5
)

// Availability set skus: Aligned for VMs with managed disks (every VM
// the emulator makes), Classic for unmanaged ones, the API's default.
const (
	skuAligned = "Aligned"
	skuClassic = "Classic"
)

func registerAvailabilitySets(t *kindTable) {
	t.add(&kind{
		service: "compute", ns: computeNS, typ: typeAvailabilitySet, group: "AvailabilitySets",
		apiVersions: computeAPIVersions, tracked: true, listAll: true,
		view: viewAvailabilitySet, update: updateAvailabilitySet, del: availabilitySetInUse,
		ops: map[string]string{
			"ListAll":    "AvailabilitySets_ListBySubscription",
			"UpdateTags": "AvailabilitySets_Update",
		},
	})
}

// availabilitySetID is the ID of the availability set name in rg as
// created (its own casing), or as it would be.
func (e *Emulator) availabilitySetID(rg, name string) string {
	return resourceID(e.cfg.SubscriptionID, rg, e.kindOf(computeNS, typeAvailabilitySet), []string{name})
}

// availabilitySetMembers are the VMs in a set, in ID order (e.mu held).
func (e *Emulator) availabilitySetMembers(as *object) []*object {
	var out []*object
	for _, vm := range e.objectsOf(e.kindOf(computeNS, typeVM)) {
		if sameID(idOfRef(vm.props()["availabilitySet"]), as.id) {
			out = append(out, vm)
		}
	}
	return out
}

// viewAvailabilitySet renders a set with its members; the generic code's
// provisioningState is dropped, as Compute shows none for the kind.
func viewAvailabilitySet(e *Emulator, o *object, _ url.Values) (map[string]any, *armError) {
	out := publicBody(o.body, false)
	props := propsOf(out)
	delete(props, "provisioningState")
	vms := []any{}
	for _, vm := range e.availabilitySetMembers(o) {
		vms = append(vms, map[string]any{"id": strings.ToUpper(vm.id)})
	}
	props["virtualMachines"] = vms
	return out, nil
}

// availabilitySetInUse refuses to delete a set that still holds VMs, in
// the words of Compute's documented error (Azure's "common VM error
// codes"). The status is not documented; 409 is what Compute's other
// OperationNotAllowed answers carry.
func availabilitySetInUse(e *Emulator, o *object) *armError {
	if len(e.availabilitySetMembers(o)) == 0 {
		return nil
	}
	return &armError{Status: http.StatusConflict, Code: "OperationNotAllowed",
		Message: fmt.Sprintf("Availability Set %s cannot be deleted. Before deleting an Availability Set please ensure that it does not contain any VM.", o.name())}
}

// updateAvailabilitySet serves AvailabilitySets_CreateOrUpdate (PUT,
// creating the set when it does not exist) and AvailabilitySets_Update
// (PATCH of an existing set).
func updateAvailabilitySet(e *Emulator, c *putCall) (bool, *armError) {
	k := e.kindOf(computeNS, typeAvailabilitySet)
	as := c.Old
	if as == nil && c.Method == http.MethodPatch {
		return false, errResourceNotFound(k, c.Path)
	}
	var next map[string]any
	if as == nil {
		next = map[string]any{"location": e.cfg.Location, "sku": map[string]any{"name": skuClassic}, "properties": map[string]any{}}
	} else {
		next = copyBody(as.body)
	}
	props, _ := c.Body["properties"].(map[string]any)
	nprops := propsOf(next)

	if sku, ok := c.Body["sku"].(map[string]any); ok && sku["name"] != nil {
		name, aerr := availabilitySetSku(sku["name"])
		if aerr != nil {
			return false, aerr
		}
		if cur := jsonStr(next, "sku", "name"); as != nil && cur == skuAligned && name == skuClassic {
			// Worded as Compute's documented error; the status is
			// inferred as for the other OperationNotAllowed answers.
			return false, &armError{Status: http.StatusConflict, Code: "OperationNotAllowed",
				Message: "Changing availability set SKU from 'Aligned' to 'Classic' is not allowed."}
		}
		next["sku"] = map[string]any{"name": name}
	}

	for _, f := range []struct {
		key         string
		max, dflt   int
		rangeErrFmt string
	}{
		// The fault domain wording is Compute's (recorded in public
		// error reports); the update domain one follows it, unverified.
		{"platformFaultDomainCount", maxFaultDomains, defaultFaultDomains, "The specified fault domain count %d must fall in the range 1 to %d."},
		{"platformUpdateDomainCount", maxUpdateDomains, defaultUpdateDomains, "The specified update domain count %d must fall in the range 1 to %d."},
	} {
		v, given := props[f.key]
		if !given || v == nil {
			if as == nil {
				nprops[f.key] = f.dflt
			}
			continue
		}
		n, ok := v.(float64)
		if !ok || n != math.Trunc(n) || math.Abs(n) > math.MaxInt32 {
			return false, errInvalidContent(fmt.Errorf("could not convert %v to an integer at properties.%s", v, f.key))
		}
		if n < 1 || int(n) > f.max {
			return false, &armError{Status: http.StatusBadRequest, Code: "InvalidParameter", Message: fmt.Sprintf(f.rangeErrFmt, int(n), f.max)}
		}
		if as != nil && int(n) != jsonInt(nprops[f.key]) {
			// Compute's code and wording for a scale set's fault domain
			// count; that availability sets answer the same is assumed.
			return false, &armError{Status: http.StatusBadRequest, Code: "PropertyChangeNotAllowed",
				Message: fmt.Sprintf("Changing property '%s' is not allowed.", f.key)}
		}
		nprops[f.key] = int(n)
	}
	if ppg, ok := props["proximityPlacementGroup"]; ok && ppg != nil {
		return false, errNotEmulated("an availability set's proximity placement group")
	}
	// properties.virtualMachines in a body is ignored: VMs join a set
	// when they are created, and views list them (viewAvailabilitySet).

	if tags, ok := c.Body["tags"]; ok {
		if tags == nil {
			delete(next, "tags")
		} else {
			m, ok := tags.(map[string]any)
			if !ok {
				return false, errInvalidContent(fmt.Errorf("tags must be an object of strings, not %v", tags))
			}
			for key, v := range m {
				if _, ok := v.(string); !ok {
					return false, errInvalidContent(fmt.Errorf("the value of tag %q must be a string, not %v", key, v))
				}
			}
			next["tags"] = deepCopy(m)
		}
	}

	if as == nil {
		e.insert(k, c.Path.RG, c.Path.Names, next)
		return true, nil
	}
	before := bodyState(as.body)
	as.body = next
	return bodyState(next) != before, nil
}

// availabilitySetSku reads a sku name in any case as Compute spells it.
func availabilitySetSku(v any) (string, *armError) {
	s, _ := v.(string)
	for _, name := range []string{skuAligned, skuClassic} {
		if strings.EqualFold(s, name) {
			return name, nil
		}
	}
	// Compute's code; the wording is the emulator's.
	return "", &armError{Status: http.StatusBadRequest, Code: "InvalidParameter",
		Message: fmt.Sprintf("The value '%v' of parameter 'sku.name' is not valid. Allowed values are 'Aligned' and 'Classic'.", v)}
}

// ---- admin ----

// AvailabilitySetInfo is an availability set as the admin API reports it.
type AvailabilitySetInfo struct {
	Name          string `json:"name"`
	ID            string `json:"id"`
	ResourceGroup string `json:"resourceGroup"`
	// SKU is Aligned (LaunchVM's sets) or Classic.
	SKU               string            `json:"sku"`
	FaultDomainCount  int               `json:"faultDomainCount"`
	UpdateDomainCount int               `json:"updateDomainCount"`
	Tags              map[string]string `json:"tags,omitempty"`
	// VirtualMachines are the names of the VMs in the set, in ID order.
	VirtualMachines []string `json:"virtualMachines"`
}

func (e *Emulator) availabilitySetInfo(as *object) AvailabilitySetInfo {
	info := AvailabilitySetInfo{
		Name: as.name(), ID: as.id, ResourceGroup: as.rg, SKU: jsonStr(as.body, "sku", "name"),
		FaultDomainCount:  jsonInt(as.props()["platformFaultDomainCount"]),
		UpdateDomainCount: jsonInt(as.props()["platformUpdateDomainCount"]),
		Tags:              tagsOf(as.body["tags"]), VirtualMachines: []string{},
	}
	for _, vm := range e.availabilitySetMembers(as) {
		info.VirtualMachines = append(info.VirtualMachines, vm.name())
	}
	return info
}

// availabilitySet finds an availability set of the fixture's resource
// group (e.mu held).
func (e *Emulator) availabilitySet(name string) (*object, error) {
	as := e.lookup(e.availabilitySetID(e.fixture().ResourceGroup, name))
	if as == nil {
		return nil, fmt.Errorf("availability set %s: %w", name, cloudsim.ErrInstanceNotFound)
	}
	return as, nil
}

// AvailabilitySet reports an availability set of the fixture's resource
// group.
func (e *Emulator) AvailabilitySet(name string) (AvailabilitySetInfo, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	as, err := e.availabilitySet(name)
	if err != nil {
		return AvailabilitySetInfo{}, false
	}
	return e.availabilitySetInfo(as), true
}

// AvailabilitySets reports every availability set of the fixture's
// resource group, whether LaunchVM or an ARM PUT made it, in ID order.
func (e *Emulator) AvailabilitySets() []AvailabilitySetInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	rg := e.fixture().ResourceGroup
	var out []AvailabilitySetInfo
	for _, as := range e.objectsOf(e.kindOf(computeNS, typeAvailabilitySet)) {
		if strings.EqualFold(as.rg, rg) {
			out = append(out, e.availabilitySetInfo(as))
		}
	}
	return out
}

// SetAvailabilitySetTags replaces an availability set's tags (none
// removes them all), as someone tagging a node pool's set for the
// node-ipam controller's mask sizes would; ARM shows the change at once.
func (e *Emulator) SetAvailabilitySetTags(name string, tags map[string]string) error {
	if err := validTags(tags); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	as, err := e.availabilitySet(name)
	if err != nil {
		return err
	}
	setTags(as.body, tags)
	e.generation++
	return nil
}

// SetScaleSetTags replaces a scale set's tags (none removes them all).
// Like a tags-only VirtualMachineScaleSets_Update it moves the scale
// set's ETag when the tags change and leaves its instances' tags (copied
// from the scale set when each was made) as they are.
func (e *Emulator) SetScaleSetTags(name string, tags map[string]string) error {
	if err := validTags(tags); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ss, err := e.scaleSet(e.fixture().ResourceGroup, name)
	if err != nil {
		return err
	}
	before := bodyState(ss.body)
	setTags(ss.body, tags)
	if bodyState(ss.body) != before {
		e.renewETag(ss)
	}
	e.generation++
	return nil
}

func setTags(body map[string]any, tags map[string]string) {
	if len(tags) == 0 {
		delete(body, "tags")
		return
	}
	body["tags"] = tagsBody(tags)
}

// validTags applies ARM's limits on tags: at most 50 on a resource, names
// of 1 to 512 characters without <, >, %, &, \, ? or /, values of at
// most 256 characters.
func validTags(tags map[string]string) error {
	if len(tags) > 50 {
		return errAdmin("%d tags; a resource takes at most 50", len(tags))
	}
	for k, v := range tags {
		switch {
		case k == "" || len(k) > 512:
			return errAdmin("tag name %q must be 1 to 512 characters", k)
		case strings.ContainsAny(k, `<>%&\?/`):
			return errAdmin(`tag name %q may not hold <, >, %%, &, \, ? or /`, k)
		case len(v) > 256:
			return errAdmin("the value of tag %q is longer than 256 characters", k)
		}
	}
	return nil
}

// validAvailabilitySetName applies Compute's rule for availability set
// names: 1 to 80 letters, digits, '_', '.' and '-', starting with a
// letter or digit and ending with a letter, digit or '_'.
func validAvailabilitySetName(name string) error {
	if name == "" || len(name) > 80 {
		return errAdmin("availability set name %q must be 1 to 80 characters", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return errAdmin("availability set name %q may hold only letters, digits, '-', '_' and '.'", name)
		}
	}
	if strings.HasPrefix(name, "_") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "-") ||
		strings.HasSuffix(name, ".") || strings.HasSuffix(name, "-") {
		return errAdmin("availability set name %q must start with a letter or digit and end with a letter, digit or '_'", name)
	}
	return nil
}

// availabilitySetPlan is what LaunchVM does about a VM's availability
// set: join the set that exists, or make it with the VM.
type availabilitySetPlan struct {
	existing *object
	// name, counts and tags of the set to make when existing is nil.
	name                 string
	faultDomains, update int
	tags                 map[string]string
}

// planAvailabilitySet checks that a VM with fault domain fd and update
// domain ud can join the set name of the fixture's resource group (e.mu
// held). A set that exists must be Aligned (Compute refuses a VM with
// managed disks in a Classic set) and have those domains; one that does
// not is made with the default counts, or more when the VM's domains
// need them.
func (e *Emulator) planAvailabilitySet(rg, name string, fd, ud int, tags map[string]string) (availabilitySetPlan, error) {
	if err := validAvailabilitySetName(name); err != nil {
		return availabilitySetPlan{}, err
	}
	if err := validTags(tags); err != nil {
		return availabilitySetPlan{}, err
	}
	as := e.lookup(e.availabilitySetID(rg, name))
	if as == nil {
		return availabilitySetPlan{name: name, faultDomains: max(defaultFaultDomains, fd+1), update: max(defaultUpdateDomains, ud+1), tags: tags}, nil
	}
	if jsonStr(as.body, "sku", "name") != skuAligned {
		return availabilitySetPlan{}, errAdmin("availability set %s is %s: Compute puts VMs with managed disks only in an Aligned set", as.name(), jsonStr(as.body, "sku", "name"))
	}
	if n := jsonInt(as.props()["platformFaultDomainCount"]); fd >= n {
		return availabilitySetPlan{}, errAdmin("fault domain %d is not one of availability set %s's %d", fd, as.name(), n)
	}
	if n := jsonInt(as.props()["platformUpdateDomainCount"]); ud >= n {
		return availabilitySetPlan{}, errAdmin("update domain %d is not one of availability set %s's %d", ud, as.name(), n)
	}
	return availabilitySetPlan{existing: as}, nil
}

// commit makes the planned set if it does not exist (e.mu held) and
// returns its name as stored.
func (pl availabilitySetPlan) commit(e *Emulator, rg string) string {
	if pl.existing != nil {
		return pl.existing.name()
	}
	body := map[string]any{
		"location": e.cfg.Location, "sku": map[string]any{"name": skuAligned},
		"properties": map[string]any{"platformFaultDomainCount": pl.faultDomains, "platformUpdateDomainCount": pl.update},
	}
	if len(pl.tags) > 0 {
		body["tags"] = tagsBody(pl.tags)
	}
	return e.insert(e.kindOf(computeNS, typeAvailabilitySet), rg, []string{pl.name}, body).name()
}
