package azure

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v6"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/flight"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/snapshot"
)

// How the backend reads VMs. A listing of the cluster's resource group is
// a handful of paginated lists whatever the cluster's size: its VMs, its
// network interfaces and its public IPs (joined in memory, never fetched
// per VM), the run-time status of the subscription's VMs (power state and,
// for VMs without zones, the fault domain) when it is needed, and with
// vmType vmss each uniform scale set's instances (with their instance
// views) and network interfaces. A few VMs the listing lacks are a GET
// each (with the instance view, then their NIC and public IP): the only
// answer that can say "gone".

// vm is what the backend keeps of a VM or scale set instance.
type vm struct {
	ref vmRef
	// id is the resource ID as ARM wrote it.
	id string
	// names are the lower-cased names a Node for it may carry: the VM
	// name and its computer name (the kubelet's hostname); for a scale
	// set instance, the computer name.
	names []string
	size  string
	// zone is "<location>-<zone>", else the fault domain, else "".
	zone string
	// power is the power state (running, stopped, deallocated, ...), ""
	// when the answer had no instance view.
	power string
	// faultDomain is the instance view's, -1 when unknown.
	faultDomain int
	zonal       bool
	addresses   []v1.NodeAddress
	// ipConfig is the ID of its primary NIC's primary IP configuration:
	// what joins a NIC-based backend pool; ipConfig6 its IPv6 one, empty
	// without IPv6.
	ipConfig  string
	ipConfig6 string
	// pool is the VM set (node pool) it belongs to, whose tags size its
	// pod CIDRs (podcidrs.go); gen is poolTags' generation when it was
	// described, which says whether a set listing may predate it.
	pool pool
	gen  uint64
}

// shutdown says the VM is stopped or deallocated (or on its way there),
// as upstream reports it.
func (v *vm) shutdown() bool {
	switch v.power {
	case "stopped", "deallocated", "stopping", "deallocating":
		return true
	}
	return false
}

// vmReader lists and looks up the cluster's VMs for the snapshot.
type vmReader struct {
	api      *clients
	rg       string
	location string
	vmss     bool
	// cached is the snapshot's description of a VM, without a call.
	cached func(key string) (*vm, bool)
	// pools keeps the sets' mask tags; the scale set listing feeds it.
	pools *poolTags
	// statusOnce shares one status listing among the resource groups of
	// one lookup that run at once.
	statusOnce flight.Group[map[string]*armcompute.VirtualMachineInstanceView]
}

// isNotFound is ARM's definitive "no such resource": 404 with a code that
// names the resource (or its resource group) missing. A 404 saying the
// subscription is unknown is a configuration problem, not a gone VM.
func isNotFound(err error) bool {
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusNotFound {
		return false
	}
	switch re.ErrorCode {
	case "ResourceNotFound", "NotFound", "ResourceGroupNotFound", "":
		return true
	}
	return false
}

// list is the snapshot's listing: every VM of the resource group (and,
// with vmss, every uniform scale set instance).
func (r *vmReader) list(ctx context.Context) ([]*vm, error) {
	b, err := r.bulk(ctx, r.rg, false)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// groupData is one resource group's lists, joined.
type groupData struct {
	vms      []*armcompute.VirtualMachine
	status   map[string]*armcompute.VirtualMachineInstanceView
	nics     map[string]*armnetwork.Interface
	ips      map[string]string
	ssVMs    map[string][]*armcompute.VirtualMachineScaleSetVM
	ssScales []string
}

// bulk lists rg's VMs (and scale set instances) with their NICs and
// public IPs. withStatus also lists the VMs' run-time status, which the
// lifecycle checks need; a listing needs it only for VMs without zones
// (their zone label is the fault domain).
func (r *vmReader) bulk(ctx context.Context, rg string, withStatus bool) ([]*vm, error) {
	d := groupData{nics: map[string]*armnetwork.Interface{}, ips: map[string]string{}, ssVMs: map[string][]*armcompute.VirtualMachineScaleSetVM{}}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		p := r.api.vms.NewListPager(rg, nil)
		for p.More() {
			page, err := p.NextPage(gctx)
			if err != nil {
				return fmt.Errorf("list virtual machines in %s: %w", rg, err)
			}
			d.vms = append(d.vms, page.Value...)
		}
		return nil
	})
	g.Go(func() error {
		p := r.api.nics.NewListPager(rg, nil)
		for p.More() {
			page, err := p.NextPage(gctx)
			if err != nil {
				return fmt.Errorf("list network interfaces in %s: %w", rg, err)
			}
			mu.Lock()
			for _, n := range page.Value {
				if n.ID != nil {
					d.nics[strings.ToLower(*n.ID)] = n
				}
			}
			mu.Unlock()
		}
		return nil
	})
	g.Go(func() error {
		p := r.api.publicIPs.NewListPager(rg, nil)
		for p.More() {
			page, err := p.NextPage(gctx)
			if err != nil {
				return fmt.Errorf("list public IP addresses in %s: %w", rg, err)
			}
			mu.Lock()
			for _, ip := range page.Value {
				if ip.ID != nil && ip.Properties != nil && ip.Properties.IPAddress != nil {
					d.ips[strings.ToLower(*ip.ID)] = *ip.Properties.IPAddress
				}
			}
			mu.Unlock()
		}
		return nil
	})
	if withStatus {
		g.Go(func() error {
			st, err := r.statuses(gctx)
			d.status = st
			return err
		})
	}
	if r.vmss {
		g.Go(func() error { return r.scaleSets(gctx, rg, &d, &mu) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if !withStatus && slices.ContainsFunc(d.vms, func(v *armcompute.VirtualMachine) bool { return len(v.Zones) == 0 }) {
		st, err := r.statuses(ctx)
		if err != nil {
			return nil, err
		}
		d.status = st
	}
	out := make([]*vm, 0, len(d.vms))
	for _, v := range d.vms {
		m, err := r.fromVM(ctx, v, d.status[strings.ToLower(deref(v.ID))], d.nics, d.ips)
		if err != nil {
			return nil, err
		}
		if m != nil {
			out = append(out, m)
		}
	}
	for _, ss := range d.ssScales {
		for _, v := range d.ssVMs[ss] {
			m, err := r.fromScaleSetVM(ctx, v, d.nics, d.ips)
			if err != nil {
				return nil, err
			}
			if m != nil {
				out = append(out, m)
			}
		}
	}
	return out, nil
}

// statuses is the run-time status of the subscription's VMs, by
// lower-cased ID: one paginated list (statusOnly=true).
func (r *vmReader) statuses(ctx context.Context) (map[string]*armcompute.VirtualMachineInstanceView, error) {
	out := map[string]*armcompute.VirtualMachineInstanceView{}
	p := r.api.vms.NewListAllPager(&armcompute.VirtualMachinesClientListAllOptions{StatusOnly: to.Ptr("true")})
	for p.More() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list virtual machine statuses: %w", err)
		}
		for _, v := range page.Value {
			if v.ID != nil && v.Properties != nil && v.Properties.InstanceView != nil {
				out[strings.ToLower(*v.ID)] = v.Properties.InstanceView
			}
		}
	}
	return out, nil
}

// scaleSets lists rg's uniform scale sets' instances and NICs. The scale
// set listing also gives every scale set's mask tags to pools, so the
// node-ipam controller's questions about these instances cost no listing
// of their own.
func (r *vmReader) scaleSets(ctx context.Context, rg string, d *groupData, mu *sync.Mutex) error {
	var names []string
	tags := poolListing{gen: r.pools.begin(), masks: map[string]poolMasks{}}
	p := r.api.scaleSets.NewListPager(rg, nil)
	for p.More() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list scale sets in %s: %w", rg, err)
		}
		for _, ss := range page.Value {
			if ss.Name != nil {
				tags.masks[strings.ToLower(*ss.Name)] = parseMasks(ctx, poolScaleSet, rg, *ss.Name, ss.Tags)
			}
			// Flexible scale sets' instances are VMs, listed as such.
			if ss.Name == nil || ss.Properties != nil && ss.Properties.OrchestrationMode != nil && *ss.Properties.OrchestrationMode == armcompute.OrchestrationModeFlexible {
				continue
			}
			names = append(names, *ss.Name)
		}
	}
	r.pools.put(poolScaleSet, rg, tags)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, ss := range names {
		g.Go(func() error {
			vms, nics, err := r.scaleSetInstances(gctx, rg, ss)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			d.ssScales = append(d.ssScales, ss)
			d.ssVMs[ss] = vms
			for _, n := range nics {
				d.nics[strings.ToLower(deref(n.ID))] = n
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	slices.Sort(d.ssScales)
	return nil
}

// scaleSetInstances lists one uniform scale set's instances (with their
// instance views) and their NICs.
func (r *vmReader) scaleSetInstances(ctx context.Context, rg, ss string) ([]*armcompute.VirtualMachineScaleSetVM, []*armnetwork.Interface, error) {
	var vms []*armcompute.VirtualMachineScaleSetVM
	var nics []*armnetwork.Interface
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		p := r.api.scaleSetVMs.NewListPager(rg, ss, &armcompute.VirtualMachineScaleSetVMsClientListOptions{Expand: to.Ptr("instanceView")})
		for p.More() {
			page, err := p.NextPage(gctx)
			if err != nil {
				return fmt.Errorf("list instances of scale set %s/%s: %w", rg, ss, err)
			}
			vms = append(vms, page.Value...)
		}
		return nil
	})
	g.Go(func() error {
		p := r.api.nics.NewListVirtualMachineScaleSetNetworkInterfacesPager(rg, ss, nil)
		for p.More() {
			page, err := p.NextPage(gctx)
			if err != nil {
				return fmt.Errorf("list network interfaces of scale set %s/%s: %w", rg, ss, err)
			}
			nics = append(nics, page.Value...)
		}
		return nil
	})
	return vms, nics, g.Wait()
}

// fromVM builds the backend's vm from ARM's, its status and the NICs and
// public IPs listed; a NIC or public IP the lists lack (another resource
// group) is fetched.
func (r *vmReader) fromVM(ctx context.Context, v *armcompute.VirtualMachine, iv *armcompute.VirtualMachineInstanceView, nics map[string]*armnetwork.Interface, ips map[string]string) (*vm, error) {
	if v.ID == nil || v.Name == nil || v.Properties == nil {
		return nil, nil
	}
	ref, err := parseVMID(*v.ID)
	if err != nil {
		return nil, nil
	}
	p := v.Properties
	m := &vm{ref: ref, id: *v.ID, names: []string{strings.ToLower(*v.Name)}, faultDomain: -1, pool: vmPool(v.Properties), gen: r.pools.described()}
	if p.OSProfile != nil && p.OSProfile.ComputerName != nil {
		m.addName(*p.OSProfile.ComputerName)
	}
	if p.HardwareProfile != nil && p.HardwareProfile.VMSize != nil {
		m.size = string(*p.HardwareProfile.VMSize)
	}
	if iv == nil {
		iv = p.InstanceView
	}
	if iv != nil {
		m.applyInstanceView(iv.Statuses, iv.PlatformFaultDomain, iv.ComputerName)
	}
	m.setZone(r.location, v.Zones)
	m.addresses, m.ipConfig, m.ipConfig6, err = r.addresses(ctx, nicRefs(p.NetworkProfile), nics, ips, nil)
	return m, err
}

// applyInstanceView takes the power state, fault domain and computer name
// from an instance view (a VM's and a scale set instance's have these
// fields in common but are different types).
func (m *vm) applyInstanceView(statuses []*armcompute.InstanceViewStatus, faultDomain *int32, computerName *string) {
	m.power = powerState(statuses)
	if faultDomain != nil {
		m.faultDomain = int(*faultDomain)
	}
	if computerName != nil {
		m.addName(*computerName)
	}
}

// nicRefs are the network interfaces a VM's network profile names.
func nicRefs(np *armcompute.NetworkProfile) []nicRef {
	if np == nil {
		return nil
	}
	var refs []nicRef
	for _, n := range np.NetworkInterfaces {
		if n.ID != nil {
			refs = append(refs, nicRef{id: *n.ID, primary: n.Properties != nil && deref(n.Properties.Primary)})
		}
	}
	return refs
}

// fromScaleSetVM builds the backend's vm from a uniform scale set
// instance.
func (r *vmReader) fromScaleSetVM(ctx context.Context, v *armcompute.VirtualMachineScaleSetVM, nics map[string]*armnetwork.Interface, ips map[string]string) (*vm, error) {
	if v.ID == nil || v.Properties == nil {
		return nil, nil
	}
	ref, err := parseVMID(*v.ID)
	if err != nil || ref.scaleSet == "" {
		return nil, nil
	}
	p := v.Properties
	m := &vm{ref: ref, id: *v.ID, faultDomain: -1, pool: pool{kind: poolScaleSet, rg: strings.ToLower(ref.rg), name: strings.ToLower(ref.scaleSet)}, gen: r.pools.described()}
	if p.OSProfile != nil && p.OSProfile.ComputerName != nil {
		m.addName(*p.OSProfile.ComputerName)
	}
	if v.SKU != nil && v.SKU.Name != nil {
		m.size = *v.SKU.Name
	}
	if p.HardwareProfile != nil && p.HardwareProfile.VMSize != nil && *p.HardwareProfile.VMSize != "" {
		m.size = string(*p.HardwareProfile.VMSize)
	}
	if iv := p.InstanceView; iv != nil {
		m.applyInstanceView(iv.Statuses, iv.PlatformFaultDomain, iv.ComputerName)
	}
	m.setZone(r.location, v.Zones)
	m.addresses, m.ipConfig, m.ipConfig6, err = r.addresses(ctx, nicRefs(p.NetworkProfile), nics, ips, &ref)
	return m, err
}

func (m *vm) addName(n string) {
	n = strings.ToLower(n)
	if n != "" && !slices.Contains(m.names, n) {
		m.names = append(m.names, n)
	}
}

// setZone sets the zone as upstream labels it: "<location>-<zone>" for a
// zonal VM, else the fault domain.
func (m *vm) setZone(location string, zones []*string) {
	if len(zones) > 0 && zones[0] != nil && *zones[0] != "" {
		m.zonal = true
		m.zone = location + "-" + *zones[0]
		return
	}
	if m.faultDomain >= 0 {
		m.zone = strconv.Itoa(m.faultDomain)
	}
}

// powerState is the PowerState/<state> status's state.
func powerState(statuses []*armcompute.InstanceViewStatus) string {
	for _, s := range statuses {
		if s != nil && s.Code != nil {
			if st, ok := strings.CutPrefix(*s.Code, "PowerState/"); ok {
				return strings.ToLower(st)
			}
		}
	}
	return ""
}

type nicRef struct {
	id      string
	primary bool
}

// addresses maps the primary NIC's IP configurations as upstream does:
// each private address is an InternalIP (the primary configuration's
// first), each public IP of theirs an ExternalIP. The Hostname is added
// per Node (InstanceMetadata), since it is the Node's name. ipConfig is
// the primary configuration's ID, ipConfig6 the first IPv6 one's (as
// upstream's getIPConfigByIPFamily picks it, azure_standard.go:231-249).
func (r *vmReader) addresses(ctx context.Context, refs []nicRef, nics map[string]*armnetwork.Interface, ips map[string]string, ss *vmRef) (addrs []v1.NodeAddress, ipConfig, ipConfig6 string, err error) {
	if len(refs) == 0 {
		return nil, "", "", nil
	}
	primary := refs[0]
	for _, n := range refs {
		if n.primary {
			primary = n
			break
		}
	}
	nic := nics[strings.ToLower(primary.id)]
	if nic == nil {
		if nic, err = r.getNIC(ctx, primary.id, ss); err != nil || nic == nil {
			return nil, "", "", err
		}
	}
	if nic.Properties == nil {
		return nil, "", "", nil
	}
	configs := slices.Clone(nic.Properties.IPConfigurations)
	slices.SortStableFunc(configs, func(a, b *armnetwork.InterfaceIPConfiguration) int {
		ap := a != nil && a.Properties != nil && deref(a.Properties.Primary)
		bp := b != nil && b.Properties != nil && deref(b.Properties.Primary)
		switch {
		case ap && !bp:
			return -1
		case bp && !ap:
			return 1
		}
		return 0
	})
	var internal, external []v1.NodeAddress
	for _, c := range configs {
		if c == nil || c.Properties == nil {
			continue
		}
		if ipConfig == "" {
			ipConfig = deref(c.ID)
		}
		if ipConfig6 == "" && deref(c.Properties.PrivateIPAddressVersion) == armnetwork.IPVersionIPv6 {
			ipConfig6 = deref(c.ID)
		}
		if a := deref(c.Properties.PrivateIPAddress); a != "" {
			internal = append(internal, v1.NodeAddress{Type: v1.NodeInternalIP, Address: a})
		}
		if pip := c.Properties.PublicIPAddress; pip != nil && pip.ID != nil {
			addr, ok := ips[strings.ToLower(*pip.ID)]
			if !ok {
				var err error
				if addr, err = r.getPublicIP(ctx, *pip.ID); err != nil {
					return nil, "", "", err
				}
			}
			if addr != "" {
				external = append(external, v1.NodeAddress{Type: v1.NodeExternalIP, Address: addr})
			}
		}
	}
	return append(internal, external...), ipConfig, ipConfig6, nil
}

// getNIC fetches a NIC by ID; nil when it is gone (a VM being deleted).
func (r *vmReader) getNIC(ctx context.Context, id string, ss *vmRef) (*armnetwork.Interface, error) {
	rg, name, ok := resourceGroupAndName(id)
	if !ok {
		return nil, fmt.Errorf("network interface ID %q is malformed", id)
	}
	var nic armnetwork.Interface
	var err error
	if ss != nil {
		var resp armnetwork.InterfacesClientGetVirtualMachineScaleSetNetworkInterfaceResponse
		resp, err = r.api.nics.GetVirtualMachineScaleSetNetworkInterface(ctx, rg, ss.scaleSet, ss.instanceID, name, nil)
		nic = resp.Interface
	} else {
		var resp armnetwork.InterfacesClientGetResponse
		resp, err = r.api.nics.Get(ctx, rg, name, nil)
		nic = resp.Interface
	}
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get network interface %s/%s: %w", rg, name, err)
	}
	return &nic, nil
}

// getPublicIP fetches a public IP's address by ID; "" when it is gone.
func (r *vmReader) getPublicIP(ctx context.Context, id string) (string, error) {
	rg, name, ok := resourceGroupAndName(id)
	if !ok {
		return "", fmt.Errorf("public IP address ID %q is malformed", id)
	}
	resp, err := r.api.publicIPs.Get(ctx, rg, name, nil)
	if isNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("get public IP address %s/%s: %w", rg, name, err)
	}
	if resp.Properties == nil {
		return "", nil
	}
	return deref(resp.Properties.IPAddress), nil
}

// resourceGroupAndName are an ID's resource group and last name.
func resourceGroupAndName(id string) (rg, name string, ok bool) {
	segs := strings.Split(strings.Trim(id, "/"), "/")
	if len(segs) < 8 || !strings.EqualFold(segs[2], "resourceGroups") {
		return "", "", false
	}
	return segs[3], segs[len(segs)-1], true
}

// lookupIDs asks ARM about VMs by key (lower-cased resource ID). A few
// per resource group (or scale set) are a GET each; more are one listing
// plus a GET of each it lacks. A VM is absent from the result only when
// its GET answered 404.
//
// For standalone VMs the listing is the subscription's run-time status
// list alone (statusOnly=true): the lifecycle checks need only "is it
// there, is it running", and what else a VM is (size, zone, addresses)
// comes from the snapshot's listing. So 100 NotReady Nodes cost one
// status listing per check period, not the VM, NIC and public IP lists
// of a full listing, and the check finishes quickly enough that a
// stopped VM shows within one period.
func (r *vmReader) lookupIDs(ctx context.Context, keys []string) (map[string]*vm, error) {
	refs := make([]vmRef, 0, len(keys))
	for _, k := range keys {
		if ref, err := parseVMID(k); err == nil {
			refs = append(refs, ref)
		}
	}
	return snapshot.Lookup[vmRef, *vm]{
		Group: func(ref vmRef) string {
			g := strings.ToLower(ref.rg)
			if ref.scaleSet != "" {
				g += "/" + strings.ToLower(ref.scaleSet)
			}
			return g
		},
		Key:   vmRef.key,
		KeyOf: func(v *vm) string { return v.ref.key() },
		Bulk: func(ctx context.Context, refs []vmRef) ([]*vm, error) {
			if refs[0].scaleSet != "" {
				return r.scaleSetBulk(ctx, refs[0].rg, refs[0].scaleSet)
			}
			return r.statusBulk(ctx, refs)
		},
		Get: func(ctx context.Context, ref vmRef) (*vm, bool, error) {
			v, err := r.get(ctx, ref)
			return v, v != nil, err
		},
	}.Do(ctx, refs)
}

// statusBulk answers for refs (standalone VMs) from the subscription's
// status listing, shared by the resource groups asked together: a VM the
// snapshot already describes is that description with the fresh power
// state; any other VM of refs the status listing has makes it a full
// listing of its resource group instead. A VM the status listing lacks
// is left out, for the caller's GET to decide.
func (r *vmReader) statusBulk(ctx context.Context, refs []vmRef) ([]*vm, error) {
	st, err := r.statusOnce.Do(ctx, "statuses", r.statuses)
	if err != nil {
		return nil, err
	}
	var out []*vm
	for _, ref := range refs {
		iv, listed := st[ref.key()]
		if !listed {
			continue
		}
		known, ok := r.cached(ref.key())
		if !ok {
			// A VM the snapshot has never described: list its group.
			return r.bulk(ctx, ref.rg, true)
		}
		m := *known
		m.applyInstanceView(iv.Statuses, iv.PlatformFaultDomain, nil)
		out = append(out, &m)
	}
	return out, nil
}

// scaleSetBulk lists one uniform scale set's instances.
func (r *vmReader) scaleSetBulk(ctx context.Context, rg, ss string) ([]*vm, error) {
	vms, nics, err := r.scaleSetInstances(ctx, rg, ss)
	if err != nil {
		return nil, err
	}
	byID := map[string]*armnetwork.Interface{}
	for _, n := range nics {
		byID[strings.ToLower(deref(n.ID))] = n
	}
	var out []*vm
	for _, v := range vms {
		m, err := r.fromScaleSetVM(ctx, v, byID, map[string]string{})
		if err != nil {
			return nil, err
		}
		if m != nil {
			out = append(out, m)
		}
	}
	return out, nil
}

// get is a GET of one VM with its instance view (then its NIC and public
// IP): nil only on ARM's 404 for that VM.
func (r *vmReader) get(ctx context.Context, ref vmRef) (*vm, error) {
	if ref.scaleSet != "" {
		resp, err := r.api.scaleSetVMs.Get(ctx, ref.rg, ref.scaleSet, ref.instanceID, &armcompute.VirtualMachineScaleSetVMsClientGetOptions{Expand: to.Ptr(armcompute.InstanceViewTypesInstanceView)})
		if isNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("get scale set instance %s/%s/%s: %w", ref.rg, ref.scaleSet, ref.instanceID, err)
		}
		return r.fromScaleSetVM(ctx, &resp.VirtualMachineScaleSetVM, map[string]*armnetwork.Interface{}, map[string]string{})
	}
	resp, err := r.api.vms.Get(ctx, ref.rg, ref.name, &armcompute.VirtualMachinesClientGetOptions{Expand: to.Ptr(armcompute.InstanceViewTypesInstanceView)})
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get virtual machine %s/%s: %w", ref.rg, ref.name, err)
	}
	return r.fromVM(ctx, &resp.VirtualMachine, nil, map[string]*armnetwork.Interface{}, map[string]string{})
}

// lookupNames finds VMs by the names Nodes carry. In vmType standard a
// Node is named after its VM, so a few names are a GET each in the
// cluster's resource group; more, or scale set instances (named by their
// computer names, which no GET takes), are one listing.
func (r *vmReader) lookupNames(ctx context.Context, names []string) (map[string]*vm, error) {
	out := map[string]*vm{}
	if !r.vmss && len(names) <= snapshot.MaxDirectGets {
		for _, n := range names {
			v, err := r.get(ctx, vmRef{sub: r.api.subscription, rg: r.rg, name: n})
			if err != nil {
				return nil, err
			}
			if v != nil {
				out[n] = v
			}
		}
		return out, nil
	}
	all, err := r.bulk(ctx, r.rg, false)
	if err != nil {
		return nil, err
	}
	for _, v := range all {
		for _, n := range v.names {
			if slices.Contains(names, n) {
				if prev := out[n]; prev != nil && prev.ref.key() != v.ref.key() {
					return nil, fmt.Errorf("VMs %s and %s are both named %q; give the Node a providerID", prev.id, v.id, n)
				}
				out[n] = v
			}
		}
	}
	return out, nil
}

// deref is *p, or the zero value for nil: ARM models are all pointers.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
