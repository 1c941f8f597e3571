package gce

import (
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// The instance admin API: what a test does that the CCM does not, like
// launching, stopping and deleting instances. Instances live in the
// fixture's subnetwork. Admin changes take effect at once, without
// operations. Instance names are unique across zones (GCE only requires
// it per zone), so a name identifies an instance here and in
// cloudsim.Instances.

// DefaultMachineType is the machine type of instances launched without
// one.
const DefaultMachineType = "e2-standard-2"

// InstanceSpec describes an instance to launch.
type InstanceSpec struct {
	// Name of the instance, default "instance-<n>".
	Name string `json:"name,omitempty"`
	// Zone is a zone of Config.Zones ("us-central1-b", or "b"); empty
	// spreads launches over the zones round robin.
	Zone string `json:"zone,omitempty"`
	// MachineType, default DefaultMachineType.
	MachineType string `json:"machineType,omitempty"`
	// ExternalIP gives the instance an ephemeral external address (an
	// access config with a natIP).
	ExternalIP bool `json:"externalIp,omitempty"`
	// Tags are network tags (tags.items), which firewalls and routes
	// target.
	Tags []string `json:"tags,omitempty"`
	// Labels are the instance's labels.
	Labels map[string]string `json:"labels,omitempty"`
	// NoIPForward launches with canIpForward false. Cluster nodes that
	// routes point at need it true, so that is the default here (GCE's
	// own default is false); a route to an instance that cannot forward
	// carries NEXT_HOP_CANNOT_IP_FORWARD.
	NoIPForward bool `json:"noIpForward,omitempty"`
	// Status to launch in, default RUNNING.
	Status string `json:"status,omitempty"`
	// AliasIPRanges are nic0's alias IP ranges, checked and allocated as
	// instances.insert does (aliasranges.go): "/24" from the secondary
	// range "pods" is what kOps asks for a node.
	AliasIPRanges []AliasIPRange `json:"aliasIpRanges,omitempty"`
	// StackType is nic0's: IPV4_ONLY (the default), IPV4_IPV6, or
	// IPV6_ONLY (no IPv4 address, so neither an external IP nor alias IP
	// ranges). With IPv6 nic0 gets a /96 of the subnetwork's IPv6 range.
	StackType string `json:"stackType,omitempty"`
	// IPv6Address asks for a particular /96: its first address, inside the
	// fixture's SubnetworkIPv6CIDR. Empty picks the lowest free /96.
	IPv6Address string `json:"ipv6Address,omitempty"`
	// Subnetwork is nic0's, by name: the fixture's (the default) or one
	// AddNetwork made.
	Subnetwork string `json:"subnetwork,omitempty"`
	// ExternalIPv6 gives nic0 an IPv6 access config (DIRECT_IPV6) with an
	// external /96 of its subnetwork's externalIpv6Prefix; its subnetwork
	// must have IPv6 access type EXTERNAL.
	ExternalIPv6 bool `json:"externalIpv6,omitempty"`
	// Interfaces are nic1, nic2, ..., each on a network of its own, as GCE
	// requires (8 interfaces at most in all).
	Interfaces []InterfaceSpec `json:"interfaces,omitempty"`
}

// InterfaceSpec describes a network interface after nic0 (whose
// fields are InstanceSpec's own).
type InterfaceSpec struct {
	// Subnetwork is the interface's, by name (AddNetwork's).
	Subnetwork string `json:"subnetwork"`
	// StackType, as InstanceSpec's, default IPV4_ONLY.
	StackType string `json:"stackType,omitempty"`
	// ExternalIP gives it an ephemeral external IPv4 address.
	ExternalIP bool `json:"externalIp,omitempty"`
	// IPv6Address asks for a particular internal /96 of an INTERNAL
	// subnetwork's range; empty picks the lowest free one.
	IPv6Address string `json:"ipv6Address,omitempty"`
	// ExternalIPv6 gives it an external /96 of an EXTERNAL subnetwork's
	// range, in an IPv6 access config.
	ExternalIPv6 bool `json:"externalIpv6,omitempty"`
}

// maxNICs is the most network interfaces GCE gives an instance (fewer
// for machine types with fewer than 8 vCPUs, which is not checked here).
const maxNICs = 8

// Stack types of a network interface.
const (
	StackIPv4Only = "IPV4_ONLY"
	StackDual     = "IPV4_IPV6"
	StackIPv6Only = "IPV6_ONLY"
)

// InstanceInfo is an instance as the admin API reports it.
type InstanceInfo struct {
	Name string `json:"name"`
	// Zone is the zone's name, "us-central1-a".
	Zone string `json:"zone"`
	// ID is the numeric instance ID, in decimal.
	ID       string `json:"id"`
	SelfLink string `json:"selfLink"`
	// ProviderID is the Node's providerID: gce://<project>/<zone>/<name>.
	ProviderID string `json:"providerId"`
	// MachineType is the machine type's name, "e2-standard-2".
	MachineType string `json:"machineType"`
	// Status is GCE's: RUNNING, STOPPING, TERMINATED, SUSPENDED, ...
	Status       string            `json:"status"`
	InternalIP   string            `json:"internalIp,omitempty"`
	ExternalIP   string            `json:"externalIp,omitempty"`
	Tags         []string          `json:"tags,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	CanIPForward bool              `json:"canIpForward"`
	// StackType is nic0's.
	StackType string `json:"stackType"`
	// AliasIPRanges are nic0's alias IP ranges, as CIDRs.
	AliasIPRanges []AliasIPRange `json:"aliasIpRanges,omitempty"`
	// IPv6Address is nic0's IPv6 address, the first of IPv6Range, its /96.
	IPv6Address string `json:"ipv6Address,omitempty"`
	IPv6Range   string `json:"ipv6Range,omitempty"`
	// Interfaces are every network interface, nic0 first.
	Interfaces []InterfaceInfo `json:"interfaces,omitempty"`
}

// InterfaceInfo is a network interface as the admin API reports it.
type InterfaceInfo struct {
	Name           string `json:"name"`
	Network        string `json:"network"`
	Subnetwork     string `json:"subnetwork"`
	StackType      string `json:"stackType"`
	InternalIP     string `json:"internalIp,omitempty"`
	ExternalIP     string `json:"externalIp,omitempty"`
	IPv6AccessType string `json:"ipv6AccessType,omitempty"`
	// IPv6Address is its internal IPv6 address, ExternalIPv6 its IPv6
	// access config's external one (each the first of a /96).
	IPv6Address  string `json:"ipv6Address,omitempty"`
	ExternalIPv6 string `json:"externalIpv6,omitempty"`
}

// ProviderID is the providerID upstream's GCE CCM gives the Node of an
// instance.
func ProviderID(project, zone, name string) string {
	return "gce://" + project + "/" + zone + "/" + name
}

func errAdmin(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), cloudsim.ErrInvalidRequest)
}

// adminAPIError is what the API would have answered to the same request
// (an invalid field, an IP in use): it reads as GCE's operation error
// code, or its reason, and message, so admin callers see the cloud's
// words, and it is a bad admin request (cloudsim.ErrInvalidRequest, 400).
// errors.As finds the *apiError in it.
type adminAPIError struct{ api *apiError }

func errAdminAPI(aerr *apiError) error { return &adminAPIError{aerr} }

func (a *adminAPIError) Error() string {
	code := a.api.opCode
	if code == "" {
		code = a.api.Reason
	}
	return code + ": " + a.api.Message
}

func (a *adminAPIError) Unwrap() []error { return []error{a.api, cloudsim.ErrInvalidRequest} }

var (
	machineTypeRE = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)+$`)
	labelKeyRE    = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)
	labelValueRE  = regexp.MustCompile(`^[a-z0-9_-]{0,63}$`)
)

// Launch creates an instance in the fixture's subnetwork.
func (e *Emulator) Launch(spec InstanceSpec) (InstanceInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settle(e.cfg.Now())
	o, err := e.launch(spec)
	if err != nil {
		return InstanceInfo{}, err
	}
	return e.instanceInfo(o), nil
}

func (e *Emulator) launch(spec InstanceSpec) (*object, error) {
	k := e.kinds.get(scopeZonal, "instances")
	if spec.Name == "" {
		for n := k.store.Len() + 1; ; n++ {
			spec.Name = fmt.Sprintf("instance-%d", n)
			if e.instanceByName(spec.Name) == nil {
				break
			}
		}
	}
	if aerr := validName("name", spec.Name); aerr != nil {
		return nil, errAdmin("instance name: %s", aerr.Message)
	}
	if e.instanceByName(spec.Name) != nil {
		return nil, errAdmin("an instance named %s already exists", spec.Name)
	}
	zone, err := e.pickZone(spec.Zone)
	if err != nil {
		return nil, err
	}
	if spec.MachineType == "" {
		spec.MachineType = DefaultMachineType
	}
	if !machineTypeRE.MatchString(spec.MachineType) {
		return nil, errAdmin("machine type %q", spec.MachineType)
	}
	for _, tag := range spec.Tags {
		if !nameRE.MatchString(tag) {
			return nil, errAdmin("network tag %q", tag)
		}
	}
	for key, v := range spec.Labels {
		if !labelKeyRE.MatchString(key) || !labelValueRE.MatchString(v) {
			return nil, errAdmin("label %s=%s: keys are lower case letters, digits, - and _, starting with a letter; values the same, possibly empty", key, v)
		}
	}
	if spec.Status == "" {
		spec.Status = StatusRunning
	}
	if !slices.Contains(instanceStatuses, spec.Status) {
		return nil, errAdmin("instance status %q; have %s", spec.Status, strings.Join(instanceStatuses, ", "))
	}
	if len(spec.AliasIPRanges) > 0 && spec.StackType == StackIPv6Only {
		return nil, errAdminAPI(errInvalid("resource.networkInterfaces[0].aliasIpRanges", spec.AliasIPRanges[0].IPCIDRRange,
			"An IPV6_ONLY network interface cannot have IPv4 alias IP ranges."))
	}
	ifaces := append([]InterfaceSpec{{Subnetwork: spec.Subnetwork, StackType: spec.StackType, ExternalIP: spec.ExternalIP,
		IPv6Address: spec.IPv6Address, ExternalIPv6: spec.ExternalIPv6}}, spec.Interfaces...)
	if len(ifaces) > maxNICs {
		return nil, errAdmin("%d network interfaces; GCE gives an instance %d at most", len(ifaces), maxNICs)
	}
	path := e.objectPath(k, zone, spec.Name)
	// Whatever was claimed for the instance is released if the launch
	// fails after all.
	launched := false
	defer func() {
		if !launched {
			e.ips.releaseOwner(path)
		}
	}()
	var nics []*computepb.NetworkInterface
	for i, is := range ifaces {
		nic, err := e.buildNIC(path, i, is)
		if err != nil {
			return nil, err
		}
		for _, prev := range nics {
			if prev.GetNetwork() == nic.GetNetwork() {
				return nil, errAdminAPI(errNICNetworks(i, nic.GetNetwork()))
			}
		}
		nics = append(nics, nic)
	}
	if len(spec.AliasIPRanges) > 0 {
		subnetPath, sn, _ := e.subnetwork(nics[0].GetSubnetwork())
		ranges, _, aerr := e.claimAliasRanges(path, subnetPath, sn, "resource.networkInterfaces[0].aliasIpRanges",
			aliasesToAPI(spec.AliasIPRanges), nil)
		if aerr != nil {
			return nil, errAdminAPI(aerr)
		}
		nics[0].AliasIpRanges = ranges
		nics[0].Fingerprint = proto.String(nicFingerprint(path, nics[0]))
	}
	now := e.timestamp(e.cfg.Now())
	inst := &computepb.Instance{
		MachineType:       proto.String(link(e.zonePath(zone) + "/machineTypes/" + spec.MachineType)),
		Status:            proto.String(spec.Status),
		CanIpForward:      proto.Bool(!spec.NoIPForward),
		CpuPlatform:       proto.String(cpuPlatforms[0]),
		Tags:              &computepb.Tags{Items: slices.Clone(spec.Tags), Fingerprint: proto.String(fingerprint(strings.Join(spec.Tags, ",")))},
		Labels:            maps.Clone(spec.Labels),
		LabelFingerprint:  proto.String(fingerprint(fmt.Sprint(spec.Labels))),
		Fingerprint:       proto.String(fingerprint(path)),
		NetworkInterfaces: nics,
		Disks: []*computepb.AttachedDisk{{
			Kind: proto.String("compute#attachedDisk"), Type: proto.String("PERSISTENT"), Mode: proto.String("READ_WRITE"),
			Source:     proto.String(link(e.zonePath(zone) + "/disks/" + spec.Name)),
			DeviceName: proto.String("persistent-disk-0"), Index: proto.Int32(0), Boot: proto.Bool(true),
			AutoDelete: proto.Bool(true), Interface: proto.String("SCSI"), DiskSizeGb: proto.Int64(10),
		}},
		Scheduling: &computepb.Scheduling{
			AutomaticRestart: proto.Bool(true), OnHostMaintenance: proto.String("MIGRATE"),
			Preemptible: proto.Bool(false), ProvisioningModel: proto.String("STANDARD"),
		},
		Metadata:           &computepb.Metadata{Kind: proto.String("compute#metadata"), Fingerprint: proto.String(fingerprint(path + "/metadata"))},
		DeletionProtection: proto.Bool(false),
		StartRestricted:    proto.Bool(false),
		LastStartTimestamp: proto.String(now),
	}
	o := e.create(k, zone, spec.Name, inst)
	launched = true
	if spec.Status != StatusTerminated && spec.Status != StatusSuspended {
		e.ensureExternal(o)
	}
	return o, nil
}

// buildNIC makes network interface i ("nic<i>") of the instance at path
// as instances.insert would, claiming its addresses for path: an IPv4
// address unless it is IPV6_ONLY; with an IPv6 stack type a /96 of its
// subnetwork's IPv6 range, internal (ipv6Address) or, with ExternalIPv6,
// external (an IPv6 access config's externalIpv6), and the subnetwork's
// IPv6 access type. Its ephemeral external IPv4 address, if any, comes
// when the instance runs (ensureExternal).
func (e *Emulator) buildNIC(path string, i int, is InterfaceSpec) (*computepb.NetworkInterface, error) {
	field := fmt.Sprintf("resource.networkInterfaces[%d]", i)
	if is.StackType == "" {
		is.StackType = StackIPv4Only
	}
	switch {
	case !slices.Contains([]string{StackIPv4Only, StackDual, StackIPv6Only}, is.StackType):
		return nil, errAdmin("stack type %q; have %s, %s, %s", is.StackType, StackIPv4Only, StackDual, StackIPv6Only)
	case is.StackType == StackIPv4Only && (is.IPv6Address != "" || is.ExternalIPv6):
		return nil, errAdmin("an IPv6 address needs stack type %s or %s", StackDual, StackIPv6Only)
	case is.StackType == StackIPv6Only && is.ExternalIP:
		return nil, errAdminAPI(errInvalid(field+".accessConfigs", "ONE_TO_ONE_NAT",
			"An IPV6_ONLY network interface has no IPv4 address to give external access."))
	case is.IPv6Address != "" && is.ExternalIPv6:
		return nil, errAdmin("interface %d: an internal ipv6Address or an external IPv6 access config, not both (a subnetwork has one IPv6 access type)", i)
	}
	subnet := e.fixture().SubnetworkURL
	if is.Subnetwork != "" {
		subnet = link(e.objectPath(e.kinds.get(scopeRegional, "subnetworks"), e.cfg.Region, is.Subnetwork))
	}
	subnetPath, sn, ok := e.subnetwork(subnet)
	if !ok {
		return nil, errAdminAPI(errNotFound(strings.TrimPrefix(subnet, LinkBase)))
	}
	nic := &computepb.NetworkInterface{
		Kind: proto.String("compute#networkInterface"), Name: proto.String(fmt.Sprintf("nic%d", i)),
		Network: proto.String(sn.GetNetwork()), Subnetwork: proto.String(subnet),
		StackType: proto.String(is.StackType),
	}
	if is.StackType != StackIPv6Only {
		pool := e.ips.pool(subnetPath)
		if pool == nil {
			return nil, errAdminAPI(errInvalid(field+".stackType", is.StackType,
				fmt.Sprintf("The subnetwork '%s' has no IPv4 range.", subnetPath)))
		}
		ip, ok := pool.allocate(path)
		if !ok {
			return nil, errAdmin("subnetwork %s has no free address", lastSegment(subnetPath))
		}
		nic.NetworkIP = proto.String(ip.String())
	}
	if is.StackType != StackIPv4Only {
		// The subnetwork's IPv6 access type is the interface's.
		switch sn.GetIpv6AccessType() {
		case IPv6External:
			if is.IPv6Address != "" {
				return nil, errAdminAPI(errInvalid(field+".ipv6Address", is.IPv6Address,
					fmt.Sprintf("The subnetwork '%s' has no internal IPv6 range.", subnetPath)))
			}
			if is.ExternalIPv6 {
				p, aerr := e.claimIPv6(path, subnetPath, sn, field, "", true)
				if aerr != nil {
					return nil, errAdminAPI(aerr)
				}
				nic.Ipv6AccessConfigs = []*computepb.AccessConfig{{
					Kind: proto.String("compute#accessConfig"), Type: proto.String("DIRECT_IPV6"),
					Name: proto.String("external-ipv6"), NetworkTier: proto.String("PREMIUM"),
					ExternalIpv6: proto.String(p.Addr().String()), ExternalIpv6PrefixLength: proto.Int32(int32(p.Bits())),
				}}
			} else if is.StackType == StackIPv6Only {
				return nil, errAdminAPI(errInvalid(field+".ipv6AccessConfigs", "",
					"An IPV6_ONLY network interface on a subnetwork with external IPv6 needs an IPv6 access config."))
			}
		default:
			if is.ExternalIPv6 {
				return nil, errAdminAPI(errInvalid(field+".ipv6AccessConfigs", "DIRECT_IPV6",
					fmt.Sprintf("The subnetwork '%s' has no external IPv6 range.", subnetPath)))
			}
			p, aerr := e.claimIPv6(path, subnetPath, sn, field, is.IPv6Address, false)
			if aerr != nil {
				return nil, errAdminAPI(aerr)
			}
			nic.Ipv6Address = proto.String(p.Addr().String())
			nic.InternalIpv6PrefixLength = proto.Int32(int32(p.Bits()))
		}
		nic.Ipv6AccessType = proto.String(sn.GetIpv6AccessType())
	}
	nic.Fingerprint = proto.String(nicFingerprint(path, nic))
	if is.ExternalIP {
		nic.AccessConfigs = []*computepb.AccessConfig{{
			Kind: proto.String("compute#accessConfig"), Type: proto.String("ONE_TO_ONE_NAT"),
			Name: proto.String("External NAT"), NetworkTier: proto.String("PREMIUM"),
		}}
	}
	return nic, nil
}

// pickZone resolves a launch's zone ("b" or "us-central1-b"), or takes
// the next zone round robin.
func (e *Emulator) pickZone(z string) (string, error) {
	if z == "" {
		z = e.cfg.Zones[e.zoneNext%len(e.cfg.Zones)]
		e.zoneNext++
		return z, nil
	}
	if !strings.HasPrefix(z, e.cfg.Region+"-") {
		z = e.cfg.Region + "-" + z
	}
	if !e.isZone(z) {
		return "", errAdmin("zone %s is not one of %s", z, strings.Join(e.cfg.Zones, ", "))
	}
	return z, nil
}

// instanceByName finds an instance in any zone, hidden or not.
func (e *Emulator) instanceByName(name string) *object {
	k := e.kinds.get(scopeZonal, "instances")
	for _, z := range e.cfg.Zones {
		if o, ok := k.store.Get(e.objectPath(k, z, name)); ok {
			return o
		}
	}
	return nil
}

func (e *Emulator) instanceOrErr(name string) (*object, error) {
	o := e.instanceByName(name)
	if o == nil {
		return nil, fmt.Errorf("instance %s: %w", name, cloudsim.ErrInstanceNotFound)
	}
	return o, nil
}

func (e *Emulator) instanceInfo(o *object) InstanceInfo {
	inst := o.msg.(*computepb.Instance)
	info := InstanceInfo{
		Name: o.name, Zone: o.location, ID: strconv.FormatUint(inst.GetId(), 10), SelfLink: inst.GetSelfLink(),
		ProviderID: ProviderID(e.cfg.Project, o.location, o.name), MachineType: lastSegment(inst.GetMachineType()),
		Status: inst.GetStatus(), InternalIP: internalIP(inst), ExternalIP: externalIP(inst),
		Tags: slices.Clone(inst.GetTags().GetItems()), Labels: maps.Clone(inst.GetLabels()), CanIPForward: inst.GetCanIpForward(),
	}
	if nics := inst.GetNetworkInterfaces(); len(nics) > 0 {
		info.StackType = nics[0].GetStackType()
		info.AliasIPRanges = aliasesFromAPI(nics[0].GetAliasIpRanges())
		if p, ok := nicIPv6Range(nics[0]); ok {
			info.IPv6Address, info.IPv6Range = nics[0].GetIpv6Address(), p.String()
		}
	}
	for _, nic := range inst.GetNetworkInterfaces() {
		ii := InterfaceInfo{
			Name: nic.GetName(), Network: nic.GetNetwork(), Subnetwork: nic.GetSubnetwork(), StackType: nic.GetStackType(),
			InternalIP: nic.GetNetworkIP(), IPv6AccessType: nic.GetIpv6AccessType(), IPv6Address: nic.GetIpv6Address(),
		}
		for _, ac := range nic.GetAccessConfigs() {
			if ac.NatIP != nil {
				ii.ExternalIP = ac.GetNatIP()
				break
			}
		}
		for _, ac := range nic.GetIpv6AccessConfigs() {
			ii.ExternalIPv6 = ac.GetExternalIpv6()
		}
		info.Interfaces = append(info.Interfaces, ii)
	}
	return info
}

// Instance reports one instance.
func (e *Emulator) Instance(name string) (InstanceInfo, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settle(e.cfg.Now())
	o := e.instanceByName(name)
	if o == nil {
		return InstanceInfo{}, false
	}
	return e.instanceInfo(o), true
}

// Instances reports every instance in launch order.
func (e *Emulator) Instances() []InstanceInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settle(e.cfg.Now())
	var out []InstanceInfo
	for _, o := range e.kinds.get(scopeZonal, "instances").store.All() {
		out = append(out, e.instanceInfo(o))
	}
	return out
}

// change runs f on a named instance with the lock held.
func (e *Emulator) changeInstance(name string, f func(o *object) error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settle(e.cfg.Now())
	o, err := e.instanceOrErr(name)
	if err != nil {
		return err
	}
	return f(o)
}

// Stop stops an instance at once: TERMINATED, its ephemeral external
// address released.
func (e *Emulator) Stop(name string) error {
	return e.changeInstance(name, func(o *object) error {
		e.stopInstance(o)
		return nil
	})
}

// Start starts an instance at once: RUNNING with a new ephemeral
// external address if it had one.
func (e *Emulator) Start(name string) error {
	return e.changeInstance(name, func(o *object) error {
		e.startInstance(o)
		return nil
	})
}

// Terminate deletes an instance at once: gets answer 404 from now on.
func (e *Emulator) Terminate(name string) error {
	return e.changeInstance(name, func(o *object) error {
		e.removeObject(o)
		return nil
	})
}

// SetStatus puts an instance in any GCE status, with the side effects of
// getting there: TERMINATED releases an ephemeral external address,
// RUNNING gets one.
func (e *Emulator) SetStatus(name, status string) error {
	if !slices.Contains(instanceStatuses, status) {
		return errAdmin("instance status %q; have %s", status, strings.Join(instanceStatuses, ", "))
	}
	return e.changeInstance(name, func(o *object) error {
		switch status {
		case StatusTerminated:
			e.stopInstance(o)
		case StatusRunning:
			e.startInstance(o)
		default:
			o.msg.(*computepb.Instance).Status = proto.String(status)
			e.generation++
		}
		return nil
	})
}

// ---- cloudsim.Instances: IDs are instance names ----

// neutralStates maps GCE statuses to cloudsim's.
var neutralStates = map[string]cloudsim.InstanceState{
	StatusProvisioning: cloudsim.InstancePending, StatusStaging: cloudsim.InstancePending,
	StatusRepairing: cloudsim.InstancePending, StatusRunning: cloudsim.InstanceRunning,
	StatusStopping: cloudsim.InstanceStopping, StatusSuspending: cloudsim.InstanceStopping,
	StatusPendingStop: cloudsim.InstanceStopping, StatusDeprovisioning: cloudsim.InstanceStopping,
	StatusTerminated: cloudsim.InstanceStopped, StatusSuspended: cloudsim.InstanceStopped,
}

func neutralInfo(i InstanceInfo) cloudsim.InstanceInfo {
	out := cloudsim.InstanceInfo{
		ID: i.Name, Name: i.Name, Zone: i.Zone, InstanceType: i.MachineType,
		State: neutralStates[i.Status], CloudState: i.Status,
		PrivateIP: i.InternalIP, PublicIP: i.ExternalIP,
		// Kubelets on GCE register Nodes under the instance's name.
		Hostname: i.Name, Tags: maps.Clone(i.Labels),
	}
	if out.PrivateIP == "" {
		// An IPv6-only instance's private address is its IPv6 one.
		out.PrivateIP = i.IPv6Address
	}
	out.PrivateIPv6 = i.IPv6Address
	// The pod ranges the cloud holds for the instance, in the order a
	// cloud allocator reads them: nic0's alias ranges, then its IPv6 range.
	for _, r := range i.AliasIPRanges {
		out.PodRanges = append(out.PodRanges, r.IPCIDRRange)
	}
	if i.IPv6Range != "" {
		out.PodRanges = append(out.PodRanges, i.IPv6Range)
	}
	return out
}

// LaunchInstance implements cloudsim.Instances with Launch: InstanceType
// is the machine type, PublicIP an ephemeral external address, Tags the
// labels (which must be valid GCE labels), PodRanges nic0's pod ranges
// (podRangesSpec), IPv6 a dual-stack nic0 (IPV4_IPV6) with a /96 of the
// fixture subnetwork's internal IPv6 range, its first address
// PrivateIPv6.
func (e *Emulator) LaunchInstance(spec cloudsim.InstanceSpec) (cloudsim.InstanceInfo, error) {
	gs := InstanceSpec{Name: spec.Name, Zone: spec.Zone, MachineType: spec.InstanceType,
		ExternalIP: spec.PublicIP, Labels: spec.Tags}
	if err := podRangesSpec(spec.PodRanges, &gs); err != nil {
		return cloudsim.InstanceInfo{}, err
	}
	if spec.IPv6 {
		gs.StackType = StackDual
	}
	info, err := e.Launch(gs)
	if err != nil {
		return cloudsim.InstanceInfo{}, err
	}
	return neutralInfo(info), nil
}

// podRangesSpec puts neutral pod ranges into spec as GCE has them: an
// IPv4 entry ("/24", a CIDR, an address) is an alias IP range from the
// secondary range "pods", as kOps asks for a node's; an IPv6 entry makes
// nic0 dual-stack, which gives it a /96, the only size GCE gives an
// interface: "/96" or "::/96" for the lowest free one, or a particular
// /96 of the fixture's SubnetworkIPv6CIDR. A bare netmask up to /32 is
// IPv4, a longer one IPv6.
func podRangesSpec(ranges []string, spec *InstanceSpec) error {
	ipv6 := false
	for _, r := range ranges {
		v := strings.TrimSpace(r)
		var v6 netip.Prefix
		switch {
		case strings.HasPrefix(v, "/"):
			n, err := strconv.Atoi(v[1:])
			if err != nil || n < 0 || n > 128 {
				return errAdmin("pod range %q: not a netmask", r)
			}
			if n <= 32 {
				spec.AliasIPRanges = append(spec.AliasIPRanges, AliasIPRange{IPCIDRRange: v, SubnetworkRangeName: PodRangeName})
				continue
			}
			v6 = netip.PrefixFrom(netip.IPv6Unspecified(), n)
		default:
			p, err := netip.ParsePrefix(v)
			if err != nil {
				a, aerr := netip.ParseAddr(v)
				if aerr != nil {
					return errAdmin("pod range %q: not a CIDR, netmask or address", r)
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			if p.Addr().Is4() {
				spec.AliasIPRanges = append(spec.AliasIPRanges, AliasIPRange{IPCIDRRange: v, SubnetworkRangeName: PodRangeName})
				continue
			}
			v6 = p
		}
		if ipv6 {
			return errAdmin("pod ranges %v: GCE gives a network interface one IPv6 range", ranges)
		}
		if v6.Bits() != ipv6NICPrefixLength {
			return errAdmin("pod range %q: GCE gives a network interface an IPv6 /%d", r, ipv6NICPrefixLength)
		}
		ipv6 = true
		spec.StackType = StackDual
		if !v6.Addr().IsUnspecified() {
			spec.IPv6Address = v6.Addr().String()
		}
	}
	return nil
}

// StopInstance implements cloudsim.Instances.
func (e *Emulator) StopInstance(id string) error { return e.Stop(id) }

// StartInstance implements cloudsim.Instances.
func (e *Emulator) StartInstance(id string) error { return e.Start(id) }

// TerminateInstance implements cloudsim.Instances: GCE deletes the
// instance, so it is gone from every listing at once.
func (e *Emulator) TerminateInstance(id string) error { return e.Terminate(id) }

// GetInstance implements cloudsim.Instances.
func (e *Emulator) GetInstance(id string) (cloudsim.InstanceInfo, bool) {
	i, ok := e.Instance(id)
	if !ok {
		return cloudsim.InstanceInfo{}, false
	}
	return neutralInfo(i), true
}

// ListInstances implements cloudsim.Instances.
func (e *Emulator) ListInstances() []cloudsim.InstanceInfo {
	var out []cloudsim.InstanceInfo
	for _, i := range e.Instances() {
		out = append(out, neutralInfo(i))
	}
	return out
}

// instancesAdmin serves the instance admin API under /admin/gce/:
//
//	GET    /instances                       [InstanceInfo, ...]
//	POST   /instances                       InstanceSpec -> 201 InstanceInfo
//	GET    /instances/{name}                InstanceInfo, or 404
//	DELETE /instances/{name}                Terminate -> 204
//	POST   /instances/{name}/stop           InstanceInfo after the change; likewise start
//	POST   /instances/{name}/status         {"status": "SUSPENDED"}: SetStatus
//	POST   /instances/{name}/aliasIpRanges  {"aliasIpRanges": [AliasIPRange, ...]}: SetAliasRanges
func (e *Emulator) instancesAdmin(mux *http.ServeMux) {
	status := cloudsim.InstanceErrorStatus
	mux.HandleFunc("GET /instances", func(w http.ResponseWriter, r *http.Request) {
		list := e.Instances()
		if list == nil {
			list = []InstanceInfo{}
		}
		cloudsim.WriteJSON(w, http.StatusOK, list)
	})
	mux.HandleFunc("POST /instances", func(w http.ResponseWriter, r *http.Request) {
		var spec InstanceSpec
		if err := cloudsim.ReadJSON(r, &spec); err != nil {
			cloudsim.WriteJSONError(w, http.StatusBadRequest, err)
			return
		}
		info, err := e.Launch(spec)
		if err != nil {
			cloudsim.WriteJSONError(w, status(err), err)
			return
		}
		cloudsim.WriteJSON(w, http.StatusCreated, info)
	})
	infoOr404 := func(w http.ResponseWriter, name string) {
		info, ok := e.Instance(name)
		if !ok {
			cloudsim.WriteJSONError(w, http.StatusNotFound, fmt.Errorf("instance %s: %w", name, cloudsim.ErrInstanceNotFound))
			return
		}
		cloudsim.WriteJSON(w, http.StatusOK, info)
	}
	mux.HandleFunc("GET /instances/{name}", func(w http.ResponseWriter, r *http.Request) { infoOr404(w, r.PathValue("name")) })
	mux.HandleFunc("DELETE /instances/{name}", func(w http.ResponseWriter, r *http.Request) {
		if err := e.Terminate(r.PathValue("name")); err != nil {
			cloudsim.WriteJSONError(w, status(err), err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /instances/{name}/{action}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		var err error
		switch r.PathValue("action") {
		case "stop":
			err = e.Stop(name)
		case "start":
			err = e.Start(name)
		case "status":
			var req struct {
				Status string `json:"status"`
			}
			if err = cloudsim.ReadJSON(r, &req); err == nil {
				err = e.SetStatus(name, req.Status)
			}
		case "aliasIpRanges":
			var req struct {
				AliasIPRanges []AliasIPRange `json:"aliasIpRanges"`
			}
			if err = cloudsim.ReadJSON(r, &req); err == nil {
				err = e.SetAliasRanges(name, req.AliasIPRanges)
			}
		default:
			cloudsim.WriteJSONError(w, http.StatusNotFound, fmt.Errorf("unknown instance action %q; have stop, start, status, aliasIpRanges", r.PathValue("action")))
			return
		}
		if err != nil {
			cloudsim.WriteJSONError(w, status(err), err)
			return
		}
		infoOr404(w, name)
	})
}
