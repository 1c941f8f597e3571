package azure

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// The admin API: what a test does to the cloud that the CCM does not,
// like launching VMs and scale sets, stopping, deallocating and deleting
// them, and registering identities. Every method is also served over
// HTTP under /admin/azure/ (see adminHandler). VMs live in the fixture's
// resource group and subnet.

// DefaultVMSize is the size of VMs and scale sets launched without one.
const DefaultVMSize = "Standard_D2s_v3"

// computeState holds the admin's counters (e.mu guards it).
type computeState struct {
	// vmNames numbers default VM names ("vm-<n>").
	vmNames int
	// zoneNext spreads zone-less launches over the zones.
	zoneNext int
	// seq orders launches.
	seq int
}

// ProviderID is the providerID upstream's Azure CCM gives a Node on the
// VM or scale set VM with this resource ID: "azure://" + ID.
func ProviderID(resourceID string) string { return "azure://" + resourceID }

// VMSpec describes a standalone VM to launch.
type VMSpec struct {
	// Name of the VM, default "vm-<n>".
	Name string `json:"name,omitempty"`
	// ComputerName is the OS hostname, default Name.
	ComputerName string `json:"computerName,omitempty"`
	// Zone is a zone of Config.Zones ("2", or "eastus-2"); empty spreads
	// launches over the zones round robin. Ignored with AvailabilitySet.
	Zone string `json:"zone,omitempty"`
	// Size is the VM size, default DefaultVMSize.
	Size string `json:"size,omitempty"`
	// PublicIP gives the VM a Standard public IP "<name>-pip".
	PublicIP bool              `json:"publicIp,omitempty"`
	Tags     map[string]string `json:"tags,omitempty"`
	// AvailabilitySet makes a non-zonal VM in that availability set of
	// the fixture's resource group, with platform fault domain
	// FaultDomain (0..2) and update domain UpdateDomain (0..19), which
	// the set must have. Upstream labels such a Node's zone with its
	// fault domain. A set that does not exist is made with the VM:
	// Aligned, with 2 fault and 5 update domains (more when FaultDomain
	// or UpdateDomain need them) and AvailabilitySetTags. The set lists
	// the VM in properties.virtualMachines until the VM is deleted.
	AvailabilitySet string `json:"availabilitySet,omitempty"`
	FaultDomain     int    `json:"faultDomain,omitempty"`
	UpdateDomain    int    `json:"updateDomain,omitempty"`
	// AvailabilitySetTags are the tags of an availability set LaunchVM
	// makes; for a set that exists they are ignored (SetAvailabilitySetTags
	// changes them).
	AvailabilitySetTags map[string]string `json:"availabilitySetTags,omitempty"`
	// PowerState to launch in (running, the default; stopped,
	// deallocated, starting, ...).
	PowerState string `json:"powerState,omitempty"`
}

// VMInfo is a VM or a scale set VM as the admin API reports it.
type VMInfo struct {
	// Name is the VM's name: a standalone VM's own, "<ss>_<8 hex>" for a
	// Flexible scale set's VM, "<ss>_<instanceId>" for a Uniform one's.
	Name string `json:"name"`
	// ID is the ARM resource ID and ProviderID the Node's providerID.
	ID            string `json:"id"`
	ProviderID    string `json:"providerId"`
	ResourceGroup string `json:"resourceGroup"`
	// VMID is properties.vmId.
	VMID string `json:"vmId"`
	// ComputerName is the OS hostname, the name a kubelet registers.
	ComputerName string `json:"computerName"`
	Location     string `json:"location"`
	// Zone is the zone ("2"), empty for a non-zonal VM.
	Zone string `json:"zone,omitempty"`
	// FaultDomain and UpdateDomain are the instance view's platform
	// fault and update domains.
	FaultDomain  int    `json:"faultDomain"`
	UpdateDomain int    `json:"updateDomain"`
	Size         string `json:"size"`
	// PowerState is the instance view's PowerState/<state>, e.g. "running".
	PowerState string `json:"powerState"`
	PrivateIP  string `json:"privateIp,omitempty"`
	// PrivateIPv6 is the private address of the network interface's
	// IPv6 IP configuration ("ipconfig-v6" in a dual-stack fixture).
	PrivateIPv6 string `json:"privateIpv6,omitempty"`
	PublicIP    string `json:"publicIp,omitempty"`
	NICID       string `json:"nicId,omitempty"`
	PublicIPID  string `json:"publicIpId,omitempty"`
	// BackendPools are the load balancer backend address pools the
	// primary network interface's IP configurations are in (the primary
	// one's, then the IPv6 one's in a dual-stack fixture), as their
	// loadBalancerBackendAddressPools name them.
	BackendPools []string `json:"backendPools,omitempty"`
	// AvailabilitySet is the availability set's name, if any.
	AvailabilitySet string `json:"availabilitySet,omitempty"`
	// ScaleSet is the scale set's name for its VMs, and InstanceID the
	// Uniform instance ID ("0", "1", ...); a Flexible scale set's VMs
	// are addressed by Name.
	ScaleSet   string            `json:"scaleSet,omitempty"`
	InstanceID string            `json:"instanceId,omitempty"`
	Tags       map[string]string `json:"tags,omitempty"`
}

// ScaleSetSpec describes a scale set to create.
type ScaleSetSpec struct {
	Name string `json:"name"`
	// Capacity is the number of instances to start with.
	Capacity int `json:"capacity,omitempty"`
	// Zones the instances are balanced over; none makes a regional scale
	// set whose instances spread over fault domains.
	Zones []string `json:"zones,omitempty"`
	// VMSize is the sku, default DefaultVMSize.
	VMSize string `json:"vmSize,omitempty"`
	// Flexible makes a Flexible scale set (instances are ordinary VMs
	// with a virtualMachineScaleSet reference and ordinary network
	// interfaces); otherwise it is Uniform.
	Flexible bool `json:"flexible,omitempty"`
	// ComputerNamePrefix prefixes the instances' hostnames, default
	// Name: a Uniform instance's is the prefix and its instance ID in 6
	// base-36 digits ("<prefix>00000a"), a Flexible one's the prefix
	// and 6 random base-36 characters.
	ComputerNamePrefix string `json:"computerNamePrefix,omitempty"`
	// PublicIP gives each instance a public IP: a per-instance public IP
	// configuration (Uniform) or a public IP of its own (Flexible).
	PublicIP bool              `json:"publicIp,omitempty"`
	Tags     map[string]string `json:"tags,omitempty"`
}

// ScaleSetInfo is a scale set as the admin API reports it.
type ScaleSetInfo struct {
	Name               string            `json:"name"`
	ID                 string            `json:"id"`
	ResourceGroup      string            `json:"resourceGroup"`
	Flexible           bool              `json:"flexible"`
	Capacity           int               `json:"capacity"`
	Zones              []string          `json:"zones,omitempty"`
	VMSize             string            `json:"vmSize"`
	ComputerNamePrefix string            `json:"computerNamePrefix"`
	UniqueID           string            `json:"uniqueId"`
	Tags               map[string]string `json:"tags,omitempty"`
	// Instances in instance ID (Uniform) or launch (Flexible) order.
	Instances []VMInfo `json:"instances"`
}

func errAdmin(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), cloudsim.ErrInvalidRequest)
}

// ---- standalone VMs ----

// LaunchVM creates a standalone VM in the fixture's resource group with a
// network interface "<name>-nic" in the fixture subnet and, with
// spec.PublicIP, a public IP "<name>-pip".
func (e *Emulator) LaunchVM(spec VMSpec) (VMInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fx := e.fixture()
	o, err := e.launchVM(fx, spec)
	if err != nil {
		return VMInfo{}, err
	}
	return e.vmInfo(o), nil
}

func (e *Emulator) launchVM(fx Fixture, spec VMSpec) (*object, error) {
	c := vmCreate{
		name: spec.Name, computerName: spec.ComputerName, size: spec.Size, publicIP: spec.PublicIP,
		tags: spec.Tags, availabilitySet: spec.AvailabilitySet, faultDomain: spec.FaultDomain,
		updateDomain: spec.UpdateDomain, power: spec.PowerState,
	}
	vk := e.kindOf(computeNS, typeVM)
	if c.name == "" {
		for {
			e.comp.vmNames++
			c.name = fmt.Sprintf("vm-%d", e.comp.vmNames)
			if e.lookup(resourceID(e.cfg.SubscriptionID, fx.ResourceGroup, vk, []string{c.name})) == nil {
				break
			}
		}
	}
	if err := validVMName(c.name); err != nil {
		return nil, err
	}
	if c.computerName == "" {
		c.computerName = c.name
	}
	if c.availabilitySet == "" {
		z, err := e.pickZone(spec.Zone)
		if err != nil {
			return nil, err
		}
		c.zone, c.faultDomain, c.updateDomain = z, 0, 0
		return e.createVM(fx, c)
	}
	if c.faultDomain < 0 || c.faultDomain > maxFaultDomains-1 {
		return nil, errAdmin("fault domain %d out of range 0..%d", c.faultDomain, maxFaultDomains-1)
	}
	if c.updateDomain < 0 || c.updateDomain > maxUpdateDomains-1 {
		return nil, errAdmin("update domain %d out of range 0..%d", c.updateDomain, maxUpdateDomains-1)
	}
	plan, err := e.planAvailabilitySet(fx.ResourceGroup, c.availabilitySet, c.faultDomain, c.updateDomain, spec.AvailabilitySetTags)
	if err != nil {
		return nil, err
	}
	if plan.existing != nil {
		// The set's name as it was created, for VMInfo.AvailabilitySet.
		c.availabilitySet = plan.existing.name()
	}
	o, err := e.createVM(fx, c)
	if err != nil {
		return nil, err
	}
	// Made only once the VM is: a launch that fails leaves no set behind.
	plan.commit(e, fx.ResourceGroup)
	return o, nil
}

func validVMName(name string) error {
	if len(name) > 64 {
		return errAdmin("VM name %q is longer than 64 characters", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return errAdmin("VM name %q may hold only letters, digits, '-', '_' and '.'", name)
		}
	}
	if strings.HasPrefix(name, "_") || strings.HasSuffix(name, ".") || strings.HasSuffix(name, "-") {
		return errAdmin("VM name %q must start with a letter or digit and end with a letter, digit or '_'", name)
	}
	return nil
}

// pickZone resolves a requested zone ("2" or "<location>-2"), or picks
// the next round robin (e.mu held).
func (e *Emulator) pickZone(z string) (string, error) {
	if z == "" {
		z = e.cfg.Zones[e.comp.zoneNext%len(e.cfg.Zones)]
		e.comp.zoneNext++
		return z, nil
	}
	if rest, ok := cutPrefixFold(z, e.cfg.Location+"-"); ok {
		z = rest
	}
	if !slices.Contains(e.cfg.Zones, z) {
		return "", errAdmin("zone %q is not one of %s's zones %v", z, e.cfg.Location, e.cfg.Zones)
	}
	return z, nil
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// vmCreate is one VM to make, validated.
type vmCreate struct {
	name, computerName, size string
	// zone is "" for a non-zonal VM.
	zone                      string
	faultDomain, updateDomain int
	power                     string
	publicIP                  bool
	tags                      map[string]string
	availabilitySet           string
	scaleSetID                string
}

func validSize(size string) error {
	if !strings.HasPrefix(size, "Standard_") && !strings.HasPrefix(size, "Basic_") {
		return errAdmin("VM size %q is not a size (Standard_D2s_v3, ...)", size)
	}
	return nil
}

// createVM makes a VM with its network interface and public IP (e.mu
// held): all of them, or none.
func (e *Emulator) createVM(fx Fixture, c vmCreate) (*object, error) {
	if c.size == "" {
		c.size = DefaultVMSize
	}
	if err := validSize(c.size); err != nil {
		return nil, err
	}
	if c.power == "" {
		c.power = PowerRunning
	}
	if _, ok := powerDisplay[c.power]; !ok {
		return nil, errAdmin("power state %q is not one of running, stopped, deallocated, starting, stopping, deallocating", c.power)
	}
	rg := fx.ResourceGroup
	vk := e.kindOf(computeNS, typeVM)
	vmID := resourceID(e.cfg.SubscriptionID, rg, vk, []string{c.name})
	if e.lookup(vmID) != nil {
		return nil, errAdmin("virtual machine %s already exists", c.name)
	}
	var zones []any
	var pipZones []string
	if c.zone != "" {
		zones, pipZones = []any{c.zone}, []string{c.zone}
	}
	var pip *object
	var pipID string
	if c.publicIP {
		var err error
		if pip, err = e.newPublicIP(rg, c.name+"-pip", pipZones); err != nil {
			return nil, fmt.Errorf("public IP for %s: %w", c.name, err)
		}
		if pip != nil {
			pipID = pip.id
		}
	}
	nic, err := e.newNIC(rg, c.name+"-nic", fx.SubnetID, pipID, vmID)
	if err != nil {
		if pip != nil {
			e.remove(pip)
		}
		return nil, fmt.Errorf("network interface for %s: %w", c.name, err)
	}
	nicID := "/subscriptions/" + e.cfg.SubscriptionID + "/resourceGroups/" + rg + "/providers/Microsoft.Network/networkInterfaces/" + c.name + "-nic"
	if nic != nil {
		nicID = nic.id
	}
	e.comp.seq++
	now := e.cfg.Now()
	props := map[string]any{
		"vmId":               e.newGUID(),
		"hardwareProfile":    map[string]any{"vmSize": c.size},
		"storageProfile":     storageProfile(c.name, fmt.Sprintf("%032x", e.comp.seq)),
		"osProfile":          linuxOSProfile(c.computerName),
		"networkProfile":     map[string]any{"networkInterfaces": []any{map[string]any{"id": nicID, "properties": map[string]any{"primary": true, "deleteOption": "Delete"}}}},
		"diagnosticsProfile": map[string]any{"bootDiagnostics": map[string]any{"enabled": true}},
		"provisioningState":  "Succeeded",
		"timeCreated":        now.UTC().Format(time.RFC3339Nano),
		"instanceView":       newInstanceView(c.computerName, c.faultDomain, c.updateDomain, c.power, now),
	}
	if c.availabilitySet != "" {
		// Compute spells availability set references in upper case.
		props["availabilitySet"] = map[string]any{"id": strings.ToUpper(e.availabilitySetID(rg, c.availabilitySet))}
	}
	if c.scaleSetID != "" {
		props["virtualMachineScaleSet"] = map[string]any{"id": c.scaleSetID}
	}
	body := map[string]any{
		"location": e.cfg.Location, "properties": props,
		"_seq": e.comp.seq, "_nic": nicID, "_pip": pipID, "_availabilitySet": c.availabilitySet,
	}
	if zones != nil {
		body["zones"] = zones
	}
	if len(c.tags) > 0 {
		body["tags"] = tagsBody(c.tags)
	}
	return e.insert(vk, rg, []string{c.name}, body), nil
}

func tagsBody(tags map[string]string) map[string]any {
	out := make(map[string]any, len(tags))
	for k, v := range tags {
		out[k] = v
	}
	return out
}

// deleteVM deletes a VM with its network interface and public IP (e.mu
// held), as a VM whose NIC and IP have deleteOption Delete goes.
func (e *Emulator) deleteVM(o *object) {
	nicID, _ := o.body["_nic"].(string)
	pipID, _ := o.body["_pip"].(string)
	e.remove(o)
	if nic := e.lookup(nicID); nic != nil {
		e.remove(nic)
	}
	if pip := e.lookup(pipID); pip != nil {
		e.remove(pip)
	}
}

// vmInfo reports a VM or scale set VM (e.mu held).
func (e *Emulator) vmInfo(o *object) VMInfo {
	p := o.props()
	info := VMInfo{
		Name: o.name(), ID: o.id, ProviderID: ProviderID(o.id), ResourceGroup: o.rg,
		Location: jsonStr(o.body, "location"), VMID: jsonStr(p, "vmId"), PowerState: powerOf(o),
		ComputerName: jsonStr(p, "osProfile", "computerName"), Size: jsonStr(p, "hardwareProfile", "vmSize"),
		Tags: tagsOf(o.body["tags"]),
	}
	if n, ok := o.body["name"].(string); ok {
		info.Name = n
	}
	if info.Size == "" {
		info.Size = jsonStr(o.body, "sku", "name")
	}
	if zs, _ := o.body["zones"].([]any); len(zs) > 0 {
		info.Zone, _ = zs[0].(string)
	}
	iv, _ := p["instanceView"].(map[string]any)
	info.FaultDomain, info.UpdateDomain = jsonInt(iv["platformFaultDomain"]), jsonInt(iv["platformUpdateDomain"])
	info.AvailabilitySet, _ = o.body["_availabilitySet"].(string)
	if ss := idOfRef(p["virtualMachineScaleSet"]); ss != "" {
		info.ScaleSet = ss[strings.LastIndex(ss, "/")+1:]
	}
	if o.kind.typ == typeVMSSVM {
		info.ScaleSet, info.InstanceID = o.names[0], o.names[1]
	}
	info.NICID, _ = o.body["_nic"].(string)
	if nic := e.lookup(info.NICID); nic != nil {
		info.NICID = nic.id
		info.PrivateIP, info.PublicIPID = nicAddresses(nic)
		info.PrivateIPv6 = nicIPv6(nic)
		info.BackendPools = nicPools(nic)
		if pip := e.lookup(info.PublicIPID); pip != nil {
			info.PublicIP = jsonStr(pip.props(), "ipAddress")
		}
	}
	return info
}

// nicAddresses are a NIC's primary IP configuration's private address
// and public IP ID.
func nicAddresses(nic *object) (private, publicIPID string) {
	chosen := nicPrimaryIPConfig(nic)
	if chosen == nil {
		return "", ""
	}
	p := propsOf(chosen)
	return jsonStr(p, "privateIPAddress"), idOfRef(p["publicIPAddress"])
}

// nicIPv6 is the private address of a NIC's first IPv6 IP
// configuration, "" if it has none.
func nicIPv6(nic *object) string {
	cfgs, _ := nic.props()["ipConfigurations"].([]any)
	for _, c := range cfgs {
		if p := propsOf(asMap(c)); versionOf(p) == ipv6 {
			return jsonStr(p, "privateIPAddress")
		}
	}
	return ""
}

// nicPools are the backend pools of a NIC's IP configurations, the
// primary one's first: pools by IP configuration hold IPv4 and IPv6
// configurations alike.
func nicPools(nic *object) []string {
	chosen := nicPrimaryIPConfig(nic)
	if chosen == nil {
		return nil
	}
	out := refIDs(propsOf(chosen)["loadBalancerBackendAddressPools"])
	cfgs, _ := nic.props()["ipConfigurations"].([]any)
	for _, c := range cfgs {
		if m := asMap(c); m != nil && !sameID(jsonStr(m, "name"), jsonStr(chosen, "name")) {
			for _, id := range refIDs(propsOf(m)["loadBalancerBackendAddressPools"]) {
				if !slices.ContainsFunc(out, func(p string) bool { return sameID(p, id) }) {
					out = append(out, id)
				}
			}
		}
	}
	return out
}

// nicPrimaryIPConfig is a NIC's primary IP configuration (its first if
// none says it is primary).
func nicPrimaryIPConfig(nic *object) map[string]any {
	cfgs, _ := nic.props()["ipConfigurations"].([]any)
	var chosen map[string]any
	for _, c := range cfgs {
		m, _ := c.(map[string]any)
		if m == nil {
			continue
		}
		if chosen == nil {
			chosen = m
		}
		if primary, _ := propsOf(m)["primary"].(bool); primary {
			return m
		}
	}
	return chosen
}

// BackendPools reports the load balancer backend address pools a VM is
// in through its primary network interface's IP configurations, the
// primary one's first (the membership the upstream CCM's
// nodeIPConfiguration pools write):
// a standalone or Flexible scale set VM by name, or a Uniform scale set
// instance as "<scale set>_<instance ID>" (its VMInfo.Name). ok is false
// for a name that is neither. Over HTTP, VMInfo.BackendPools carries
// the same.
func (e *Emulator) BackendPools(name string) (pools []string, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settle(e.cfg.Now())
	rg := e.fixture().ResourceGroup
	vm := e.lookup(resourceID(e.cfg.SubscriptionID, rg, e.kindOf(computeNS, typeVM), []string{name}))
	if vm == nil {
		if i := strings.LastIndex(name, "_"); i > 0 {
			vm = e.lookup(resourceID(e.cfg.SubscriptionID, rg, e.kindOf(computeNS, typeVMSSVM), []string{name[:i], name[i+1:]}))
		}
	}
	if vm == nil {
		return nil, false
	}
	nicID, _ := vm.body["_nic"].(string)
	if nic := e.lookup(nicID); nic != nil {
		pools = nicPools(nic)
	}
	return pools, true
}

// jsonStr reads a string at a path of keys.
func jsonStr(m map[string]any, keys ...string) string {
	var v any = m
	for _, k := range keys {
		mm, _ := v.(map[string]any)
		v = mm[k]
	}
	s, _ := v.(string)
	return s
}

func jsonInt(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case float64:
		return int(n)
	case int64:
		return int(n)
	}
	return 0
}

func tagsOf(v any) map[string]string {
	m, _ := v.(map[string]any)
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k], _ = v.(string)
	}
	return out
}

// standaloneVM finds a VM of the fixture's resource group that is in no
// scale set (e.mu held).
func (e *Emulator) standaloneVM(rg, name string) *object {
	o := e.lookup(resourceID(e.cfg.SubscriptionID, rg, e.kindOf(computeNS, typeVM), []string{name}))
	if o == nil || idOfRef(o.props()["virtualMachineScaleSet"]) != "" {
		return nil
	}
	return o
}

// VM reports a standalone VM or a Flexible scale set's VM by name.
func (e *Emulator) VM(name string) (VMInfo, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fx := e.fixture()
	o := e.lookup(resourceID(e.cfg.SubscriptionID, fx.ResourceGroup, e.kindOf(computeNS, typeVM), []string{name}))
	if o == nil {
		return VMInfo{}, false
	}
	return e.vmInfo(o), true
}

// VMs reports every VM (standalone and Flexible scale sets') of the
// fixture's resource group in launch order.
func (e *Emulator) VMs() []VMInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	fx := e.fixture()
	var out []VMInfo
	for _, o := range e.vmsByLaunch(fx.ResourceGroup, func(*object) bool { return true }) {
		out = append(out, e.vmInfo(o))
	}
	return out
}

// vmsByLaunch lists the resource group's VMs that keep holds, in launch
// order (e.mu held).
func (e *Emulator) vmsByLaunch(rg string, keep func(*object) bool) []*object {
	var out []*object
	for _, o := range e.objectsOf(e.kindOf(computeNS, typeVM)) {
		if strings.EqualFold(o.rg, rg) && keep(o) {
			out = append(out, o)
		}
	}
	slices.SortStableFunc(out, func(a, b *object) int { return jsonInt(a.body["_seq"]) - jsonInt(b.body["_seq"]) })
	return out
}

// SetVMPowerState sets a VM's (standalone or Flexible scale set's) power
// state as its instance view shows it, transitional states included
// (running, stopped, deallocated, starting, stopping, deallocating).
func (e *Emulator) SetVMPowerState(name, state string) error {
	return e.changeVMPower(name, state, true)
}

// DeallocateVM deallocates a VM (PowerState/deallocated).
func (e *Emulator) DeallocateVM(name string) error {
	return e.changeVMPower(name, PowerDeallocated, false)
}

// DeleteVM deletes a VM (standalone or a Flexible scale set's) with its
// network interface and public IP.
func (e *Emulator) DeleteVM(name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	fx := e.fixture()
	o := e.lookup(resourceID(e.cfg.SubscriptionID, fx.ResourceGroup, e.kindOf(computeNS, typeVM), []string{name}))
	if o == nil {
		return fmt.Errorf("virtual machine %s: %w", name, cloudsim.ErrInstanceNotFound)
	}
	e.deleteVM(o)
	if ss := e.lookup(idOfRef(o.props()["virtualMachineScaleSet"])); ss != nil {
		e.updateCapacity(ss)
	}
	return nil
}

func (e *Emulator) changeVMPower(name, state string, force bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	fx := e.fixture()
	o := e.lookup(resourceID(e.cfg.SubscriptionID, fx.ResourceGroup, e.kindOf(computeNS, typeVM), []string{name}))
	if o == nil {
		return fmt.Errorf("virtual machine %s: %w", name, cloudsim.ErrInstanceNotFound)
	}
	return changePower(o, state, force)
}

// changePower moves a VM to a power state (e.mu held). Powering off a
// deallocated VM is refused (ErrInstanceState) unless force.
func changePower(o *object, state string, force bool) error {
	if _, ok := powerDisplay[state]; !ok {
		return errAdmin("power state %q is not one of running, stopped, deallocated, starting, stopping, deallocating", state)
	}
	cur := powerOf(o)
	if !force && state == PowerStopped && (cur == PowerDeallocated || cur == PowerDeallocating) {
		return fmt.Errorf("cannot power off %s: it is %s: %w", o.name(), cur, cloudsim.ErrInstanceState)
	}
	setPower(o, state)
	return nil
}

// ---- cloudsim.Instances: the fixture resource group's standalone VMs ----

// neutralState maps power states to cloudsim's.
var neutralState = map[string]cloudsim.InstanceState{
	PowerRunning: cloudsim.InstanceRunning, PowerStarting: cloudsim.InstancePending,
	PowerStopping: cloudsim.InstanceStopping, PowerDeallocating: cloudsim.InstanceStopping,
	PowerStopped: cloudsim.InstanceStopped, PowerDeallocated: cloudsim.InstanceStopped,
}

// LaunchInstance implements cloudsim.Instances with LaunchVM:
// spec.InstanceType is the VM size.
func (e *Emulator) LaunchInstance(spec cloudsim.InstanceSpec) (cloudsim.InstanceInfo, error) {
	// Every VM of a dual-stack fixture has an IPv6 address; no VM of
	// another has one.
	if spec.IPv6 && !e.cfg.DualStack {
		return cloudsim.InstanceInfo{}, fmt.Errorf("an IPv6 address needs a dual-stack fixture (Config.DualStack): %w", cloudsim.ErrInvalidRequest)
	}
	vm, err := e.LaunchVM(VMSpec{Name: spec.Name, Zone: spec.Zone, Size: spec.InstanceType, PublicIP: spec.PublicIP, Tags: spec.Tags})
	if err != nil {
		return cloudsim.InstanceInfo{}, err
	}
	return neutralInfo(vm), nil
}

// neutralInfo is the neutral view of a VM: its ID is its name, its zone
// "<location>-<zone>" ("" for a non-zonal VM).
func neutralInfo(vm VMInfo) cloudsim.InstanceInfo {
	zone := ""
	if vm.Zone != "" {
		zone = vm.Location + "-" + vm.Zone
	}
	return cloudsim.InstanceInfo{
		ID: vm.Name, Name: vm.Name, Zone: zone, InstanceType: vm.Size,
		State: neutralState[vm.PowerState], CloudState: "PowerState/" + vm.PowerState,
		PrivateIP: vm.PrivateIP, PublicIP: vm.PublicIP, Hostname: vm.ComputerName, Tags: maps.Clone(vm.Tags),
		PrivateIPv6: vm.PrivateIPv6,
	}
}

func (e *Emulator) instancePower(id, state string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	fx := e.fixture()
	o := e.standaloneVM(fx.ResourceGroup, id)
	if o == nil {
		return fmt.Errorf("virtual machine %s: %w", id, cloudsim.ErrInstanceNotFound)
	}
	return changePower(o, state, false)
}

// StopInstance implements cloudsim.Instances: PowerState/stopped.
func (e *Emulator) StopInstance(id string) error { return e.instancePower(id, PowerStopped) }

// StartInstance implements cloudsim.Instances: PowerState/running.
func (e *Emulator) StartInstance(id string) error { return e.instancePower(id, PowerRunning) }

// TerminateInstance implements cloudsim.Instances: the VM, its network
// interface and its public IP are deleted (a GET of any is 404).
func (e *Emulator) TerminateInstance(id string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	fx := e.fixture()
	o := e.standaloneVM(fx.ResourceGroup, id)
	if o == nil {
		return fmt.Errorf("virtual machine %s: %w", id, cloudsim.ErrInstanceNotFound)
	}
	e.deleteVM(o)
	return nil
}

// GetInstance implements cloudsim.Instances.
func (e *Emulator) GetInstance(id string) (cloudsim.InstanceInfo, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fx := e.fixture()
	o := e.standaloneVM(fx.ResourceGroup, id)
	if o == nil {
		return cloudsim.InstanceInfo{}, false
	}
	return neutralInfo(e.vmInfo(o)), true
}

// ListInstances implements cloudsim.Instances: the standalone VMs in
// launch order.
func (e *Emulator) ListInstances() []cloudsim.InstanceInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	fx := e.fixture()
	var out []cloudsim.InstanceInfo
	for _, o := range e.vmsByLaunch(fx.ResourceGroup, func(o *object) bool { return idOfRef(o.props()["virtualMachineScaleSet"]) == "" }) {
		out = append(out, neutralInfo(e.vmInfo(o)))
	}
	return out
}

// ---- scale sets ----

// CreateScaleSet creates a scale set in the fixture's resource group
// with spec.Capacity instances, running.
func (e *Emulator) CreateScaleSet(spec ScaleSetSpec) (ScaleSetInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fx := e.fixture()
	if spec.Name == "" {
		return ScaleSetInfo{}, errAdmin("a scale set needs a name")
	}
	if err := validVMName(spec.Name); err != nil {
		return ScaleSetInfo{}, err
	}
	if spec.Capacity < 0 || spec.Capacity > 1000 {
		return ScaleSetInfo{}, errAdmin("capacity %d out of range 0..1000", spec.Capacity)
	}
	if spec.VMSize == "" {
		spec.VMSize = DefaultVMSize
	}
	if err := validSize(spec.VMSize); err != nil {
		return ScaleSetInfo{}, err
	}
	var zones []any
	for _, z := range spec.Zones {
		if z == "" {
			return ScaleSetInfo{}, errAdmin("empty zone")
		}
		z, err := e.pickZone(z)
		if err != nil {
			return ScaleSetInfo{}, err
		}
		if slices.Contains(zones, any(z)) {
			return ScaleSetInfo{}, errAdmin("zone %q given twice", z)
		}
		zones = append(zones, z)
	}
	prefix := spec.ComputerNamePrefix
	if prefix == "" {
		prefix = spec.Name
	}
	sk := e.kindOf(computeNS, typeVMSS)
	names := []string{spec.Name}
	if e.lookup(resourceID(e.cfg.SubscriptionID, fx.ResourceGroup, sk, names)) != nil {
		return ScaleSetInfo{}, errAdmin("scale set %s already exists", spec.Name)
	}
	mode := "Uniform"
	if spec.Flexible {
		mode = "Flexible"
	}
	ipConfig := map[string]any{
		"primary": true, "subnet": map[string]any{"id": fx.SubnetID}, "privateIPAddressVersion": ipv4,
		"loadBalancerBackendAddressPools": []any{},
	}
	if spec.PublicIP {
		ipConfig["publicIPAddressConfiguration"] = map[string]any{"name": "pub1", "properties": map[string]any{"idleTimeoutInMinutes": 15}}
	}
	ipConfigs := []any{map[string]any{"name": "ipconfig1", "properties": ipConfig}}
	if sub := e.lookup(fx.SubnetID); sub != nil && e.dualStack(sub) {
		ipConfigs = append(ipConfigs, map[string]any{"name": IPv6IPConfigName, "properties": map[string]any{
			"primary": false, "subnet": map[string]any{"id": fx.SubnetID}, "privateIPAddressVersion": ipv6,
			"loadBalancerBackendAddressPools": []any{},
		}})
	}
	nicConfig := map[string]any{"primary": true, "enableAcceleratedNetworking": false, "enableIPForwarding": true,
		"dnsSettings":      map[string]any{"dnsServers": []any{}},
		"ipConfigurations": ipConfigs}
	netProfile := map[string]any{"networkInterfaceConfigurations": []any{map[string]any{"name": spec.Name, "properties": nicConfig}}}
	profile := map[string]any{
		"osProfile":      map[string]any{"computerNamePrefix": prefix, "adminUsername": "azureuser", "linuxConfiguration": linuxOSProfile("")["linuxConfiguration"]},
		"storageProfile": storageProfile(spec.Name, "profile"),
		"networkProfile": netProfile,
	}
	delete(profile["storageProfile"].(map[string]any)["osDisk"].(map[string]any), "name")
	props := map[string]any{
		"orchestrationMode": mode, "uniqueId": e.newGUID(), "provisioningState": "Succeeded",
		"timeCreated": e.cfg.Now().UTC().Format(time.RFC3339Nano), "virtualMachineProfile": profile,
		"singlePlacementGroup": false, "platformFaultDomainCount": 1,
	}
	if spec.Flexible {
		netProfile["networkApiVersion"] = "2020-11-01"
		nicConfig["deleteOption"] = "Delete"
	} else {
		props["upgradePolicy"] = map[string]any{"mode": "Manual"}
		props["overprovision"] = false
		props["platformFaultDomainCount"] = 5
		props["singlePlacementGroup"] = len(zones) == 0
	}
	body := map[string]any{
		"location": e.cfg.Location, "sku": map[string]any{"name": spec.VMSize, "tier": "Standard", "capacity": 0},
		"properties": props, "_next": 0, "_publicIP": spec.PublicIP,
	}
	if zones != nil {
		body["zones"] = zones
	}
	if len(spec.Tags) > 0 {
		body["tags"] = tagsBody(spec.Tags)
	}
	ss := e.insert(sk, fx.ResourceGroup, names, body)
	if _, err := e.scaleOut(fx, ss, spec.Capacity); err != nil {
		e.deleteScaleSet(ss)
		return ScaleSetInfo{}, err
	}
	// Made in one go: the first ETag, whatever the scale out did to it.
	ss.body["etag"] = e.firstETag(sk)
	return e.scaleSetInfo(ss), nil
}

// scaleSet finds a scale set of the fixture's resource group (e.mu held).
func (e *Emulator) scaleSet(rg, name string) (*object, error) {
	ss := e.lookup(resourceID(e.cfg.SubscriptionID, rg, e.kindOf(computeNS, typeVMSS), []string{name}))
	if ss == nil {
		return nil, fmt.Errorf("scale set %s: %w", name, cloudsim.ErrInstanceNotFound)
	}
	return ss, nil
}

// ScaleSet reports a scale set.
func (e *Emulator) ScaleSet(name string) (ScaleSetInfo, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fx := e.fixture()
	ss, err := e.scaleSet(fx.ResourceGroup, name)
	if err != nil {
		return ScaleSetInfo{}, false
	}
	return e.scaleSetInfo(ss), true
}

// ScaleSets reports every scale set of the fixture's resource group.
func (e *Emulator) ScaleSets() []ScaleSetInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	fx := e.fixture()
	var out []ScaleSetInfo
	for _, ss := range e.objectsOf(e.kindOf(computeNS, typeVMSS)) {
		if strings.EqualFold(ss.rg, fx.ResourceGroup) {
			out = append(out, e.scaleSetInfo(ss))
		}
	}
	return out
}

// ScaleOut adds n instances to a scale set, balanced over its zones, and
// reports them.
func (e *Emulator) ScaleOut(name string, n int) ([]VMInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fx := e.fixture()
	ss, err := e.scaleSet(fx.ResourceGroup, name)
	if err != nil {
		return nil, err
	}
	if n < 1 || n > 1000 {
		return nil, errAdmin("count %d out of range 1..1000", n)
	}
	made, err := e.scaleOut(fx, ss, n)
	if err != nil {
		return nil, err
	}
	out := make([]VMInfo, 0, len(made))
	for _, o := range made {
		out = append(out, e.vmInfo(o))
	}
	return out, nil
}

// DeleteScaleSetInstance deletes an instance: a Uniform scale set's by
// instance ID, a Flexible one's by VM name.
func (e *Emulator) DeleteScaleSetInstance(scaleSet, instanceID string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	fx := e.fixture()
	ss, inst, err := e.scaleSetInstance(fx.ResourceGroup, scaleSet, instanceID)
	if err != nil {
		return err
	}
	if isFlexible(ss) {
		e.deleteVM(inst)
	} else {
		e.remove(inst)
	}
	e.updateCapacity(ss)
	return nil
}

// SetScaleSetInstancePowerState sets an instance's power state (see
// SetVMPowerState).
func (e *Emulator) SetScaleSetInstancePowerState(scaleSet, instanceID, state string) error {
	return e.scaleSetInstancePower(scaleSet, instanceID, state, true)
}

// StopScaleSetInstance powers an instance off (PowerState/stopped).
func (e *Emulator) StopScaleSetInstance(scaleSet, instanceID string) error {
	return e.scaleSetInstancePower(scaleSet, instanceID, PowerStopped, false)
}

// StartScaleSetInstance starts an instance (PowerState/running).
func (e *Emulator) StartScaleSetInstance(scaleSet, instanceID string) error {
	return e.scaleSetInstancePower(scaleSet, instanceID, PowerRunning, false)
}

// DeallocateScaleSetInstance deallocates an instance.
func (e *Emulator) DeallocateScaleSetInstance(scaleSet, instanceID string) error {
	return e.scaleSetInstancePower(scaleSet, instanceID, PowerDeallocated, false)
}

func (e *Emulator) scaleSetInstancePower(scaleSet, instanceID, state string, force bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	fx := e.fixture()
	_, inst, err := e.scaleSetInstance(fx.ResourceGroup, scaleSet, instanceID)
	if err != nil {
		return err
	}
	return changePower(inst, state, force)
}

// DeleteScaleSet deletes a scale set and all its instances.
func (e *Emulator) DeleteScaleSet(name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	fx := e.fixture()
	ss, err := e.scaleSet(fx.ResourceGroup, name)
	if err != nil {
		return err
	}
	e.deleteScaleSet(ss)
	return nil
}

func (e *Emulator) deleteScaleSet(ss *object) {
	if isFlexible(ss) {
		for _, vm := range e.scaleSetInstances(ss) {
			e.deleteVM(vm)
		}
	}
	// A Uniform scale set's VMs, their NICs and public IPs are nested
	// under it and go with it.
	e.remove(ss)
}

// scaleSetInstance finds an instance (e.mu held).
func (e *Emulator) scaleSetInstance(rg, scaleSet, instanceID string) (ss, inst *object, err error) {
	if ss, err = e.scaleSet(rg, scaleSet); err != nil {
		return nil, nil, err
	}
	if isFlexible(ss) {
		inst = e.lookup(resourceID(e.cfg.SubscriptionID, rg, e.kindOf(computeNS, typeVM), []string{instanceID}))
		if inst != nil && !strings.EqualFold(idOfRef(inst.props()["virtualMachineScaleSet"]), ss.id) {
			inst = nil
		}
	} else {
		inst = e.lookup(resourceID(e.cfg.SubscriptionID, rg, e.kindOf(computeNS, typeVMSSVM), []string{scaleSet, instanceID}))
	}
	if inst == nil {
		return nil, nil, fmt.Errorf("instance %s of scale set %s: %w", instanceID, scaleSet, cloudsim.ErrInstanceNotFound)
	}
	return ss, inst, nil
}

// scaleSetInstances lists a scale set's instances: a Uniform one's in
// instance ID order, a Flexible one's in launch order (e.mu held).
func (e *Emulator) scaleSetInstances(ss *object) []*object {
	if isFlexible(ss) {
		return e.vmsByLaunch(ss.rg, func(o *object) bool {
			return strings.EqualFold(idOfRef(o.props()["virtualMachineScaleSet"]), ss.id)
		})
	}
	prefix := strings.ToLower(ss.id) + "/"
	var out []*object
	for _, o := range e.objectsOf(e.kindOf(computeNS, typeVMSSVM)) {
		if strings.HasPrefix(strings.ToLower(o.id), prefix) {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b *object) int {
		x, _ := strconv.Atoi(a.names[1])
		y, _ := strconv.Atoi(b.names[1])
		return x - y
	})
	return out
}

// updateCapacity sets a scale set's capacity to its number of
// instances; a change is a change of the scale set, which gets a new
// ETag.
func (e *Emulator) updateCapacity(ss *object) {
	if sku, ok := ss.body["sku"].(map[string]any); ok {
		n := len(e.scaleSetInstances(ss))
		if jsonInt(sku["capacity"]) != n {
			sku["capacity"] = n
			e.renewETag(ss)
		}
	}
}

func (e *Emulator) scaleSetInfo(ss *object) ScaleSetInfo {
	info := ScaleSetInfo{
		Name: ss.name(), ID: ss.id, ResourceGroup: ss.rg, Flexible: isFlexible(ss),
		VMSize: jsonStr(ss.body, "sku", "name"), UniqueID: jsonStr(ss.props(), "uniqueId"),
		ComputerNamePrefix: jsonStr(ss.props(), "virtualMachineProfile", "osProfile", "computerNamePrefix"),
		Tags:               tagsOf(ss.body["tags"]), Instances: []VMInfo{},
	}
	if zs, _ := ss.body["zones"].([]any); len(zs) > 0 {
		for _, z := range zs {
			s, _ := z.(string)
			info.Zones = append(info.Zones, s)
		}
	}
	for _, o := range e.scaleSetInstances(ss) {
		info.Instances = append(info.Instances, e.vmInfo(o))
	}
	info.Capacity = len(info.Instances)
	return info
}

// scaleOut adds n instances (e.mu held), balanced over the zones (the
// zone with the fewest instances first) or, for a regional scale set,
// over fault domains.
func (e *Emulator) scaleOut(fx Fixture, ss *object, n int) ([]*object, error) {
	var zones []string
	if zs, _ := ss.body["zones"].([]any); len(zs) > 0 {
		for _, z := range zs {
			s, _ := z.(string)
			zones = append(zones, s)
		}
	}
	var made []*object
	for range n {
		existing := e.scaleSetInstances(ss)
		zone := ""
		if len(zones) > 0 {
			count := map[string]int{}
			for _, o := range existing {
				if zs, _ := o.body["zones"].([]any); len(zs) > 0 {
					s, _ := zs[0].(string)
					count[s]++
				}
			}
			zone = zones[0]
			for _, z := range zones[1:] {
				if count[z] < count[zone] {
					zone = z
				}
			}
		}
		var o *object
		var err error
		if isFlexible(ss) {
			o, err = e.newFlexibleVM(fx, ss, zone)
		} else {
			o, err = e.newScaleSetVM(fx, ss, zone)
		}
		if err != nil {
			e.updateCapacity(ss)
			return made, err
		}
		made = append(made, o)
	}
	e.updateCapacity(ss)
	return made, nil
}

// base36 writes n in base 36, zero-padded to width.
func base36(n uint64, width int) string {
	s := strconv.FormatUint(n, 36)
	if len(s) < width {
		s = strings.Repeat("0", width-len(s)) + s
	}
	return s
}

// newFlexibleVM adds a VM "<ss>_<8 hex>" to a Flexible scale set (e.mu
// held).
func (e *Emulator) newFlexibleVM(fx Fixture, ss *object, zone string) (*object, error) {
	vk := e.kindOf(computeNS, typeVM)
	var name string
	for {
		name = ss.name() + "_" + e.newGUID()[:8]
		if e.lookup(resourceID(e.cfg.SubscriptionID, ss.rg, vk, []string{name})) == nil {
			break
		}
	}
	h := fnv64(name)
	prefix := jsonStr(ss.props(), "virtualMachineProfile", "osProfile", "computerNamePrefix")
	fd := 0
	if zone == "" {
		fd = len(e.scaleSetInstances(ss)) % 3
	}
	publicIP, _ := ss.body["_publicIP"].(bool)
	return e.createVM(fx, vmCreate{
		name: name, computerName: prefix + base36(h%2176782336, 6), size: jsonStr(ss.body, "sku", "name"),
		zone: zone, faultDomain: fd, power: PowerRunning, publicIP: publicIP,
		tags: tagsOf(ss.body["tags"]), scaleSetID: ss.id,
	})
}

func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// newScaleSetVM adds an instance to a Uniform scale set (e.mu held): the
// VM, its network interface (an IP configuration for each of the model's,
// each with a private address of its version from the subnet) and, if
// the model has a public IP configuration, its public IP.
func (e *Emulator) newScaleSetVM(fx Fixture, ss *object, zone string) (*object, error) {
	next := jsonInt(ss.body["_next"])
	id := strconv.Itoa(next)
	rg, ssName := ss.rg, ss.name()
	names := []string{ssName, id}
	vmKind := e.kindOf(computeNS, typeVMSSVM)
	vmID := resourceID(e.cfg.SubscriptionID, rg, vmKind, names)
	netConfigs := cloneJSON(map[string]any{"c": ss.props()["virtualMachineProfile"].(map[string]any)["networkProfile"].(map[string]any)["networkInterfaceConfigurations"]})["c"]
	nicName := ssName
	nicKind := e.kindOf(computeNS, typeVMSSVMNIC)
	nicID := resourceID(e.cfg.SubscriptionID, rg, nicKind, []string{ssName, id, nicName})
	cfg, _ := netConfigs.([]any)[0].(map[string]any)
	cfgProps := propsOf(cfg)
	ipConfigs, err := e.instanceIPConfigs(fx, nicID, cfgProps["ipConfigurations"].([]any))
	if err != nil {
		return nil, fmt.Errorf("private address for %s_%s: %w", ssName, id, err)
	}
	ss.body["_next"] = next + 1
	e.comp.seq++
	now := e.cfg.Now()
	prefix := jsonStr(ss.props(), "virtualMachineProfile", "osProfile", "computerNamePrefix")
	computerName := prefix + base36(uint64(next), 6)
	fd, ud := 0, next%5
	if zone == "" {
		fd = next % 5
	}
	body := map[string]any{
		"instanceId": id, "location": e.cfg.Location,
		"sku": map[string]any{"name": jsonStr(ss.body, "sku", "name"), "tier": "Standard"},
		"properties": map[string]any{
			"latestModelApplied": true, "modelDefinitionApplied": "VirtualMachineScaleSet",
			"vmId":           e.newGUID(),
			"osProfile":      linuxOSProfile(computerName),
			"storageProfile": storageProfile(ssName+"_"+id, fmt.Sprintf("%032x", e.comp.seq)),
			// Compute writes the resource group of these references in
			// upper case.
			"networkProfile":              map[string]any{"networkInterfaces": []any{map[string]any{"id": withUpperRG(nicID)}}},
			"networkProfileConfiguration": map[string]any{"networkInterfaceConfigurations": netConfigs},
			"provisioningState":           "Succeeded",
			"timeCreated":                 now.UTC().Format(time.RFC3339Nano),
			"instanceView":                newInstanceView(computerName, fd, ud, PowerRunning, now),
		},
		// The instance starts with the scale set's model (compute_write.go).
		"_nic": nicID, "_modelSeq": jsonInt(ss.body["_modelSeq"]),
	}
	if zone != "" {
		body["zones"] = []any{zone}
	}
	if tags, ok := ss.body["tags"].(map[string]any); ok {
		body["tags"] = cloneJSON(tags)
	}
	vm := e.insert(vmKind, rg, names, body)
	body["name"] = ssName + "_" + id

	// The network interface, from the model's configuration.
	nicBody := map[string]any{
		"properties": map[string]any{
			"provisioningState": "Succeeded", "resourceGuid": e.newGUID(),
			"ipConfigurations":            ipConfigs,
			"dnsSettings":                 map[string]any{"dnsServers": []any{}, "appliedDnsServers": []any{}},
			"macAddress":                  fmt.Sprintf("00-0D-3A-%02X-%02X-%02X", byte(e.comp.seq>>16), byte(e.comp.seq>>8), byte(e.comp.seq)),
			"enableAcceleratedNetworking": cfgProps["enableAcceleratedNetworking"],
			"enableIPForwarding":          cfgProps["enableIPForwarding"],
			"primary":                     true,
			"virtualMachine":              map[string]any{"id": withUpperRG(vmID)},
			"nicType":                     "Standard",
			"hostedWorkloads":             []any{},
			"tapConfigurations":           []any{},
		},
	}
	e.insert(nicKind, rg, []string{ssName, id, nicName}, nicBody)
	nicBody["type"] = "Microsoft.Network/networkInterfaces"
	for _, c := range ipConfigs {
		ipc := asMap(c)
		ipc["etag"] = nicBody["etag"]
		ipc["type"] = "Microsoft.Network/networkInterfaces/ipConfigurations"
		if pipID := idOfRef(propsOf(ipc)["publicIPAddress"]); pipID != "" {
			e.newScaleSetVMPublicIP(rg, []string{ssName, id, nicName, jsonStr(ipc, "name"), lastSegment(pipID)}, jsonStr(ipc, "id"), zone)
		}
	}
	return vm, nil
}

// instanceIPConfigs makes a Uniform scale set instance's network
// interface IP configurations (e.mu held) from its model's: one for each,
// named as it, with a private address of its version from the fixture's
// subnet, its pools and, for its public IP configuration, a reference to
// the instance-level public IP.
func (e *Emulator) instanceIPConfigs(fx Fixture, nicID string, model []any) ([]any, error) {
	var out []any
	var taken []string
	for _, c := range model {
		m := asMap(c)
		mp := propsOf(m)
		version := versionOf(mp)
		addr, err := e.allocateAddress(fx.SubnetID, version == ipv6, taken)
		if err != nil {
			return nil, err
		}
		taken = append(taken, addr)
		primary, _ := mp["primary"].(bool)
		props := map[string]any{
			"provisioningState": "Succeeded", "privateIPAddress": addr, "privateIPAllocationMethod": "Dynamic",
			"privateIPAddressVersion": version, "subnet": map[string]any{"id": fx.SubnetID}, "primary": primary || len(model) == 1,
			"loadBalancerBackendAddressPools": cloneJSON(map[string]any{"p": mp["loadBalancerBackendAddressPools"]})["p"],
		}
		ipcID := nicID + "/ipConfigurations/" + jsonStr(m, "name")
		// Instance-level public IPs are IPv4 only here.
		if pc, ok := mp["publicIPAddressConfiguration"].(map[string]any); ok && version == ipv4 {
			props["publicIPAddress"] = map[string]any{"id": ipcID + "/publicIPAddresses/" + jsonStr(pc, "name")}
		}
		out = append(out, map[string]any{"id": ipcID, "name": jsonStr(m, "name"), "properties": props})
	}
	return out, nil
}

// newScaleSetVMPublicIP makes the instance-level public IP of a scale
// set instance's IP configuration ipConfigID (e.mu held).
func (e *Emulator) newScaleSetVMPublicIP(rg string, names []string, ipConfigID, zone string) {
	pipBody := map[string]any{
		"sku": map[string]any{"name": "Standard", "tier": "Regional"},
		"properties": map[string]any{
			"provisioningState": "Succeeded", "resourceGuid": e.newGUID(), "ipAddress": e.scaleSetPublicAddress(),
			"publicIPAddressVersion": ipv4, "publicIPAllocationMethod": "Static", "idleTimeoutInMinutes": 15,
			"ipConfiguration": map[string]any{"id": ipConfigID},
		},
	}
	if zone != "" {
		pipBody["zones"] = []any{zone}
	}
	e.insert(e.kindOf(computeNS, typeVMSSVMPIP), rg, names, pipBody)
	pipBody["type"] = "Microsoft.Network/publicIPAddresses"
}

// scaleSetPublicAddress hands out an instance-level public IP address
// of a scale set (e.mu held) from 52.168.0.0/16, a range the network
// provider's own public IPs do not use, skipping addresses in use.
func (e *Emulator) scaleSetPublicAddress() string {
	used := map[string]bool{}
	for _, o := range e.objectsOf(e.kindOf(computeNS, typeVMSSVMPIP)) {
		used[jsonStr(o.props(), "ipAddress")] = true
	}
	for i := 1; i < 65535; i++ {
		a := fmt.Sprintf("52.168.%d.%d", i/256, i%256)
		if i%256 != 0 && i%256 != 255 && !used[a] {
			return a
		}
	}
	return ""
}

// ---- HTTP ----

// adminHandler serves /admin/azure/ (with that prefix stripped):
//
//	GET    /fixture                              the fixture's names
//	GET    /vms                                  [VMInfo] (standalone and Flexible scale sets' VMs)
//	POST   /vms                                  VMSpec -> 201 VMInfo
//	GET    /vms/{name}                           VMInfo
//	DELETE /vms/{name}                           204
//	POST   /vms/{name}/deallocate                VMInfo after the change; likewise stop, start
//	POST   /vms/{name}/power                     {"state": "stopping"} -> VMInfo
//	GET    /scalesets                            [ScaleSetInfo]
//	POST   /scalesets                            ScaleSetSpec -> 201 ScaleSetInfo
//	GET    /scalesets/{ss}                       ScaleSetInfo
//	DELETE /scalesets/{ss}                       204
//	POST   /scalesets/{ss}/scaleout              {"count": n} -> ScaleSetInfo
//	DELETE /scalesets/{ss}/instances/{id}        204
//	POST   /scalesets/{ss}/instances/{id}/stop   ScaleSetInfo; likewise start, deallocate
//	POST   /scalesets/{ss}/instances/{id}/power  {"state": "starting"} -> ScaleSetInfo
//	PUT    /scalesets/{ss}/tags                  {"tags": {...}} -> ScaleSetInfo (SetScaleSetTags)
//	GET    /availabilitysets                     [AvailabilitySetInfo]
//	GET    /availabilitysets/{name}              AvailabilitySetInfo
//	PUT    /availabilitysets/{name}/tags         {"tags": {...}} -> AvailabilitySetInfo (SetAvailabilitySetTags)
//	POST   /tokens                               {"accessToken": IssueToken()}
//	POST   /tokens/expire                        expire every access token
//	POST   /identity/secrets                     {"clientId", "secret"}
//	POST   /identity/certificates                {"clientId", "certificatePem"}
//	POST   /identity/federated-tokens            {"clientId", "token"}
//	POST   /identity/managed-identities          {"clientId"}
//	GET    /ca.pem                               the CA that signs the server certificate
//
// Unknown names answer 404, forbidden power changes 409, bad requests 400.
func (e *Emulator) adminHandler() http.Handler {
	mux := http.NewServeMux()
	status := cloudsim.InstanceErrorStatus
	mux.HandleFunc("GET /fixture", func(w http.ResponseWriter, r *http.Request) {
		cloudsim.WriteJSON(w, http.StatusOK, e.Fixture())
	})
	// The CA to trust; a script fetches it once without verification
	// (curl -k), as it would download an Azure Stack Hub root.
	mux.HandleFunc("GET /ca.pem", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-pem-file")
		_, _ = w.Write(e.CAPEM())
	})
	mux.HandleFunc("GET /vms", func(w http.ResponseWriter, r *http.Request) {
		vms := e.VMs()
		if vms == nil {
			vms = []VMInfo{}
		}
		cloudsim.WriteJSON(w, http.StatusOK, vms)
	})
	mux.HandleFunc("POST /vms", func(w http.ResponseWriter, r *http.Request) {
		var spec VMSpec
		if err := cloudsim.ReadJSON(r, &spec); err != nil {
			cloudsim.WriteJSONError(w, http.StatusBadRequest, err)
			return
		}
		vm, err := e.LaunchVM(spec)
		if err != nil {
			cloudsim.WriteJSONError(w, status(err), err)
			return
		}
		cloudsim.WriteJSON(w, http.StatusCreated, vm)
	})
	vmOr404 := func(w http.ResponseWriter, name string) {
		vm, ok := e.VM(name)
		if !ok {
			cloudsim.WriteJSONError(w, http.StatusNotFound, fmt.Errorf("virtual machine %s: %w", name, cloudsim.ErrInstanceNotFound))
			return
		}
		cloudsim.WriteJSON(w, http.StatusOK, vm)
	}
	mux.HandleFunc("GET /vms/{name}", func(w http.ResponseWriter, r *http.Request) { vmOr404(w, r.PathValue("name")) })
	mux.HandleFunc("DELETE /vms/{name}", func(w http.ResponseWriter, r *http.Request) {
		if err := e.DeleteVM(r.PathValue("name")); err != nil {
			cloudsim.WriteJSONError(w, status(err), err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	vmActions := map[string]string{"deallocate": PowerDeallocated, "stop": PowerStopped, "start": PowerRunning}
	mux.HandleFunc("POST /vms/{name}/{action}", func(w http.ResponseWriter, r *http.Request) {
		name, act := r.PathValue("name"), r.PathValue("action")
		var err error
		switch state, ok := vmActions[act]; {
		case ok:
			err = e.changeVMPower(name, state, false)
		case act == "power":
			var req struct {
				State string `json:"state"`
			}
			if err = cloudsim.ReadJSON(r, &req); err == nil {
				err = e.SetVMPowerState(name, req.State)
			}
		default:
			cloudsim.WriteJSONError(w, http.StatusNotFound, fmt.Errorf("unknown VM action %q; have deallocate, stop, start, power", act))
			return
		}
		if err != nil {
			cloudsim.WriteJSONError(w, status(err), err)
			return
		}
		vmOr404(w, name)
	})

	mux.HandleFunc("GET /scalesets", func(w http.ResponseWriter, r *http.Request) {
		sss := e.ScaleSets()
		if sss == nil {
			sss = []ScaleSetInfo{}
		}
		cloudsim.WriteJSON(w, http.StatusOK, sss)
	})
	mux.HandleFunc("POST /scalesets", func(w http.ResponseWriter, r *http.Request) {
		var spec ScaleSetSpec
		if err := cloudsim.ReadJSON(r, &spec); err != nil {
			cloudsim.WriteJSONError(w, http.StatusBadRequest, err)
			return
		}
		info, err := e.CreateScaleSet(spec)
		if err != nil {
			cloudsim.WriteJSONError(w, status(err), err)
			return
		}
		cloudsim.WriteJSON(w, http.StatusCreated, info)
	})
	ssOr404 := func(w http.ResponseWriter, name string) {
		info, ok := e.ScaleSet(name)
		if !ok {
			cloudsim.WriteJSONError(w, http.StatusNotFound, fmt.Errorf("scale set %s: %w", name, cloudsim.ErrInstanceNotFound))
			return
		}
		cloudsim.WriteJSON(w, http.StatusOK, info)
	}
	mux.HandleFunc("GET /scalesets/{ss}", func(w http.ResponseWriter, r *http.Request) { ssOr404(w, r.PathValue("ss")) })
	mux.HandleFunc("DELETE /scalesets/{ss}", func(w http.ResponseWriter, r *http.Request) {
		if err := e.DeleteScaleSet(r.PathValue("ss")); err != nil {
			cloudsim.WriteJSONError(w, status(err), err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /scalesets/{ss}/scaleout", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Count int `json:"count"`
		}
		if err := cloudsim.ReadJSON(r, &req); err != nil {
			cloudsim.WriteJSONError(w, http.StatusBadRequest, err)
			return
		}
		if _, err := e.ScaleOut(r.PathValue("ss"), req.Count); err != nil {
			cloudsim.WriteJSONError(w, status(err), err)
			return
		}
		ssOr404(w, r.PathValue("ss"))
	})
	mux.HandleFunc("DELETE /scalesets/{ss}/instances/{id}", func(w http.ResponseWriter, r *http.Request) {
		if err := e.DeleteScaleSetInstance(r.PathValue("ss"), r.PathValue("id")); err != nil {
			cloudsim.WriteJSONError(w, status(err), err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /scalesets/{ss}/instances/{id}/{action}", func(w http.ResponseWriter, r *http.Request) {
		ss, id, act := r.PathValue("ss"), r.PathValue("id"), r.PathValue("action")
		var err error
		switch state, ok := vmActions[act]; {
		case ok:
			err = e.scaleSetInstancePower(ss, id, state, false)
		case act == "power":
			var req struct {
				State string `json:"state"`
			}
			if err = cloudsim.ReadJSON(r, &req); err == nil {
				err = e.SetScaleSetInstancePowerState(ss, id, req.State)
			}
		default:
			cloudsim.WriteJSONError(w, http.StatusNotFound, fmt.Errorf("unknown instance action %q; have deallocate, stop, start, power", act))
			return
		}
		if err != nil {
			cloudsim.WriteJSONError(w, status(err), err)
			return
		}
		ssOr404(w, ss)
	})

	// Tags, replaced as a whole: {"tags": {}} or {} removes them all.
	type tagsReq struct {
		Tags map[string]string `json:"tags"`
	}
	mux.HandleFunc("PUT /scalesets/{ss}/tags", func(w http.ResponseWriter, r *http.Request) {
		var req tagsReq
		if err := cloudsim.ReadJSON(r, &req); err != nil {
			cloudsim.WriteJSONError(w, http.StatusBadRequest, err)
			return
		}
		if err := e.SetScaleSetTags(r.PathValue("ss"), req.Tags); err != nil {
			cloudsim.WriteJSONError(w, status(err), err)
			return
		}
		ssOr404(w, r.PathValue("ss"))
	})

	mux.HandleFunc("GET /availabilitysets", func(w http.ResponseWriter, r *http.Request) {
		sets := e.AvailabilitySets()
		if sets == nil {
			sets = []AvailabilitySetInfo{}
		}
		cloudsim.WriteJSON(w, http.StatusOK, sets)
	})
	asOr404 := func(w http.ResponseWriter, name string) {
		info, ok := e.AvailabilitySet(name)
		if !ok {
			cloudsim.WriteJSONError(w, http.StatusNotFound, fmt.Errorf("availability set %s: %w", name, cloudsim.ErrInstanceNotFound))
			return
		}
		cloudsim.WriteJSON(w, http.StatusOK, info)
	}
	mux.HandleFunc("GET /availabilitysets/{name}", func(w http.ResponseWriter, r *http.Request) { asOr404(w, r.PathValue("name")) })
	mux.HandleFunc("PUT /availabilitysets/{name}/tags", func(w http.ResponseWriter, r *http.Request) {
		var req tagsReq
		if err := cloudsim.ReadJSON(r, &req); err != nil {
			cloudsim.WriteJSONError(w, http.StatusBadRequest, err)
			return
		}
		if err := e.SetAvailabilitySetTags(r.PathValue("name"), req.Tags); err != nil {
			cloudsim.WriteJSONError(w, status(err), err)
			return
		}
		asOr404(w, r.PathValue("name"))
	})

	mux.HandleFunc("POST /tokens", func(w http.ResponseWriter, r *http.Request) {
		cloudsim.WriteJSON(w, http.StatusOK, map[string]string{"accessToken": e.IssueToken()})
	})
	mux.HandleFunc("POST /tokens/expire", func(w http.ResponseWriter, r *http.Request) {
		e.ExpireTokens()
		w.WriteHeader(http.StatusNoContent)
	})
	type identityReq struct {
		ClientID       string `json:"clientId"`
		Secret         string `json:"secret,omitempty"`
		CertificatePEM string `json:"certificatePem,omitempty"`
		Token          string `json:"token,omitempty"`
	}
	register := func(f func(identityReq) error) http.HandlerFunc {
		return cloudsim.AdminHandler(func(req identityReq) (any, error) {
			if req.ClientID == "" {
				return nil, errors.New("clientId is required")
			}
			if err := f(req); err != nil {
				return nil, err
			}
			return map[string]string{"clientId": req.ClientID}, nil
		}, nil)
	}
	mux.HandleFunc("POST /identity/secrets", register(func(req identityReq) error {
		if req.Secret == "" {
			return errors.New("secret is required")
		}
		e.RegisterClientSecret(req.ClientID, req.Secret)
		return nil
	}))
	mux.HandleFunc("POST /identity/certificates", register(func(req identityReq) error {
		cert, err := parseCertificatePEM(req.CertificatePEM)
		if err != nil {
			return err
		}
		e.RegisterClientCertificate(req.ClientID, cert)
		return nil
	}))
	mux.HandleFunc("POST /identity/federated-tokens", register(func(req identityReq) error {
		if req.Token == "" {
			return errors.New("token is required")
		}
		e.RegisterFederatedToken(req.ClientID, req.Token)
		return nil
	}))
	mux.HandleFunc("POST /identity/managed-identities", register(func(req identityReq) error {
		e.RegisterManagedIdentity(req.ClientID)
		return nil
	}))
	return mux
}
