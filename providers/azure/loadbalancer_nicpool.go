package azure

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v6"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	"golang.org/x/sync/errgroup"
	"k8s.io/klog/v2"
)

// NIC-based backend pools (loadBalancerBackendPoolConfigurationType
// nodeIPConfiguration, upstream's default): a node is in the pool when its
// primary NIC's primary IP configuration names the pool, so membership is
// written on the node's side, as upstream's EnsureHostsInPool does
// (cloud-provider-azure pkg/provider/azure_standard.go EnsureHostInPool
// for VMs, azure_vmss.go:1073-1215 and 1216-1380 for scale sets):
//
//   - a VM's NIC is read and written back with the pool added or removed
//     (NetworkInterfaces_CreateOrUpdate, If-Match);
//   - a uniform scale set first gets the pool in its model, so instances
//     it adds later come up in the pool and "upgrade to the latest model"
//     keeps them there (VirtualMachineScaleSets_CreateOrUpdate with only
//     the network profile, If-Match), then each instance's own network
//     configuration gets it (VirtualMachineScaleSetVMs_Update, If-Match).
//
// The pool is one for every Service of the load balancer, so a node
// joining is one or two writes whatever the number of Services, and a
// sync whose node set did not change writes nothing. What the manager
// knows of the pool's members is the load balancer's backendIPConfigurations
// as first read, then its own writes; a member it believes wrong is read
// before it is written, so a stale belief costs a read, never a wrong
// write.

// nicPools keeps the membership of the manager's NIC-based pools.
type nicPools struct {
	api *clients
	// mu makes one membership change at a time: a second caller with the
	// same node set then finds nothing to do.
	mu sync.Mutex
	// members are, by pool ID, the IP configuration IDs in it (lower-cased).
	members map[string]map[string]bool
	// models are the scale sets (lower-cased ID) whose model is known to
	// name the pool, by pool ID.
	models map[string]map[string]bool
	// released are pools emptied for their load balancer's deletion: no
	// other Service's sync refills them, only one of their own.
	released map[string]bool
	// isBackend says whether the VM (or scale set instance) of an ARM ID
	// is a load balancer backend by the manager's Node informer now; nil
	// when unknown. A pool is shared by every Service of its load
	// balancer, and each Service's sync brings the node list the service
	// controller took when that sync began: a sync that began before a
	// Node joined would take it out again right after another put it in
	// (seen: 5 writes to a joining Node's NIC while two port changes ran).
	// A removal of a VM that is still a backend is left out.
	isBackend func(vmID string) bool
}

func newNICPools(api *clients) *nicPools {
	return &nicPools{api: api, members: map[string]map[string]bool{}, models: map[string]map[string]bool{}, released: map[string]bool{}}
}

// forget drops what is believed of the pools' members and of the scale
// set models (not which pools are released): the next ensure seeds them
// from the load balancer as read, so a member taken out behind the
// manager's back is put back.
func (p *nicPools) forget() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.members = map[string]map[string]bool{}
	p.models = map[string]map[string]bool{}
}

// poolMembers are the IP configurations the load balancer says its pool
// holds.
func poolMembers(lb *armnetwork.LoadBalancer, pool string) map[string]bool {
	out := map[string]bool{}
	if lb == nil || lb.Properties == nil {
		return out
	}
	for _, bp := range lb.Properties.BackendAddressPools {
		if bp == nil || !strings.EqualFold(deref(bp.Name), pool) || bp.Properties == nil {
			continue
		}
		for _, c := range bp.Properties.BackendIPConfigurations {
			if c != nil && c.ID != nil {
				out[strings.ToLower(*c.ID)] = true
			}
		}
	}
	return out
}

// poolRef is one NIC-based pool: its ID and the load balancer as last
// written (whose pool view seeds what is known of its members).
type poolRef struct {
	lb *armnetwork.LoadBalancer
	id string
}

// poolChange is one pool to add to (member) or remove from an IP
// configuration.
type poolChange struct {
	pool   string
	member bool
	// release marks a removal for the load balancer's deletion: made
	// even for a VM that is still a backend.
	release bool
}

// ensure makes each pool's members exactly the IP configurations want
// (IDs as ARM gives them). An IP configuration that changes in several
// pools (the public and the internal load balancer's) is written once.
// The first pool is the syncing Service's own; the others are skipped
// once released.
func (p *nicPools) ensure(ctx context.Context, pools []poolRef, want []string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(pools) > 0 {
		delete(p.released, strings.ToLower(pools[0].id))
	}
	pools = slices.DeleteFunc(slices.Clone(pools), func(pr poolRef) bool { return p.released[strings.ToLower(pr.id)] })
	return p.ensureLocked(ctx, pools, want, false)
}

// ensureLocked is ensure with mu held; release empties the pools for
// their load balancer's deletion.
func (p *nicPools) ensureLocked(ctx context.Context, pools []poolRef, want []string, release bool) error {
	wantSet := map[string]string{}
	for _, id := range want {
		if id != "" {
			wantSet[strings.ToLower(id)] = id
		}
	}
	changes := map[string][]poolChange{}
	ids := map[string]string{}
	curOf := map[string]map[string]bool{}
	for _, pr := range pools {
		key := strings.ToLower(pr.id)
		cur := p.members[key]
		if cur == nil {
			cur = poolMembers(pr.lb, pr.id[strings.LastIndex(pr.id, "/")+1:])
			p.members[key] = cur
		}
		curOf[pr.id] = cur
		for k, id := range wantSet {
			if !cur[k] {
				changes[k], ids[k] = append(changes[k], poolChange{pool: pr.id, member: true}), id
				// Scale set models first: an instance whose model
				// lacks the pool would lose it on its next upgrade.
				if ss, ok := scaleSetOf(id); ok {
					if err := p.ensureModel(ctx, ss, pr.id, id); err != nil {
						return err
					}
				}
			}
		}
		for k := range cur {
			if _, ok := wantSet[k]; !ok {
				changes[k], ids[k] = append(changes[k], poolChange{pool: pr.id, release: release}), k
			}
		}
	}
	if len(changes) == 0 {
		return nil
	}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, k := range sortedKeys(changes) {
		g.Go(func() error {
			applied, err := p.setMember(gctx, ids[k], changes[k])
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			for _, c := range applied {
				if c.member {
					curOf[c.pool][k] = true
				} else {
					delete(curOf[c.pool], k)
				}
			}
			return nil
		})
	}
	err := g.Wait()
	klog.FromContext(ctx).V(2).Info("Backend pool members written", "ipConfigurations", len(changes), "err", err)
	return err
}

// scaleSetOf is the scale set ID of a scale set instance's IP
// configuration (".../virtualMachineScaleSets/<ss>/virtualMachines/<n>/
// networkInterfaces/<nic>/ipConfigurations/<cfg>").
func scaleSetOf(ipConfigID string) (string, bool) {
	i := strings.Index(strings.ToLower(ipConfigID), "/virtualmachines/")
	if i < 0 || !strings.Contains(strings.ToLower(ipConfigID[:i]), "/virtualmachinescalesets/") {
		return "", false
	}
	return ipConfigID[:i], true
}

// ipConfigParts splits an IP configuration ID: the resource group, the
// NIC's name and the configuration's; for a scale set instance also the
// scale set and the instance.
type ipConfigParts struct {
	rg, nic, cfg         string
	scaleSet, instanceID string
}

func parseIPConfigID(id string) (ipConfigParts, error) {
	seg := strings.Split(strings.Trim(id, "/"), "/")
	var out ipConfigParts
	for i := 0; i+1 < len(seg); i++ {
		var into *string
		switch strings.ToLower(seg[i]) {
		case "resourcegroups":
			into = &out.rg
		case "virtualmachinescalesets":
			into = &out.scaleSet
		case "virtualmachines":
			into = &out.instanceID
		case "networkinterfaces":
			into = &out.nic
		case "ipconfigurations":
			into = &out.cfg
		}
		if into != nil && *into == "" {
			*into = seg[i+1]
			i++
		}
	}
	if out.rg == "" || out.nic == "" || out.cfg == "" || (out.scaleSet == "") != (out.instanceID == "") {
		return out, fmt.Errorf("IP configuration ID %q is malformed", id)
	}
	return out, nil
}

// withPool adds or removes pool in refs; changed says it did.
func withPool[T any](refs []*T, idOf func(*T) *string, mk func(string) *T, pool string, member bool) ([]*T, bool) {
	has := slices.ContainsFunc(refs, func(r *T) bool { return r != nil && strings.EqualFold(deref(idOf(r)), pool) })
	switch {
	case member && !has:
		return append(refs, mk(pool)), true
	case !member && has:
		return slices.DeleteFunc(slices.Clone(refs), func(r *T) bool { return r != nil && strings.EqualFold(deref(idOf(r)), pool) }), true
	}
	return refs, false
}

// computeWithPool adds or removes pool in a scale set (or instance) IP
// configuration.
func computeWithPool(c *armcompute.VirtualMachineScaleSetIPConfiguration, pool string, member bool) bool {
	var changed bool
	c.Properties.LoadBalancerBackendAddressPools, changed = withPool(c.Properties.LoadBalancerBackendAddressPools,
		func(r *armcompute.SubResource) *string { return r.ID },
		func(id string) *armcompute.SubResource { return &armcompute.SubResource{ID: to.Ptr(id)} }, pool, member)
	return changed
}

// on412 runs write until it succeeds, fails otherwise than with a 412
// (someone else wrote in between: write reads afresh), or has had three
// tries.
func on412(write func() error) error {
	for attempt := 0; ; attempt++ {
		err := write()
		if !isPreconditionFailed(err) || attempt == 2 {
			return err
		}
	}
}

// setMember writes one IP configuration's membership, re-reading and
// retrying on a 412, and returns the changes made (or found made). A NIC
// or instance that is gone is no member.
func (p *nicPools) setMember(ctx context.Context, ipConfigID string, changes []poolChange) ([]poolChange, error) {
	parts, err := parseIPConfigID(ipConfigID)
	if err != nil {
		return nil, err
	}
	var applied []poolChange
	err = on412(func() error {
		var err error
		if parts.scaleSet != "" {
			applied, err = p.setInstanceMember(ctx, parts, changes)
		} else {
			applied, err = p.setNICMember(ctx, parts, changes)
		}
		return err
	})
	return applied, err
}

// keptBackends drops from changes the removals of a VM the Node informer
// says is still a load balancer backend (see isBackend).
func (p *nicPools) keptBackends(ctx context.Context, vmID string, changes []poolChange) []poolChange {
	guarded := func(c poolChange) bool { return !c.member && !c.release }
	if p.isBackend == nil || vmID == "" || !slices.ContainsFunc(changes, guarded) || !p.isBackend(vmID) {
		return changes
	}
	klog.FromContext(ctx).V(2).Info("Not taking a load balancer backend out of its pools: the sync's node list predates its Node", "vm", vmID)
	return slices.DeleteFunc(slices.Clone(changes), guarded)
}

func (p *nicPools) setNICMember(ctx context.Context, parts ipConfigParts, changes []poolChange) ([]poolChange, error) {
	resp, err := p.api.nics.Get(ctx, parts.rg, parts.nic, nil)
	if isNotFound(err) {
		return changes, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get network interface %s/%s: %w", parts.rg, parts.nic, err)
	}
	nic := resp.Interface
	if nic.Properties != nil && nic.Properties.VirtualMachine != nil {
		changes = p.keptBackends(ctx, deref(nic.Properties.VirtualMachine.ID), changes)
	}
	changed := false
	if nic.Properties != nil {
		for _, c := range nic.Properties.IPConfigurations {
			if c == nil || c.Properties == nil || !strings.EqualFold(deref(c.Name), parts.cfg) {
				continue
			}
			for _, ch := range changes {
				var one bool
				c.Properties.LoadBalancerBackendAddressPools, one = withPool(c.Properties.LoadBalancerBackendAddressPools,
					func(b *armnetwork.BackendAddressPool) *string { return b.ID },
					func(id string) *armnetwork.BackendAddressPool { return &armnetwork.BackendAddressPool{ID: to.Ptr(id)} }, ch.pool, ch.member)
				changed = changed || one
			}
		}
	}
	if !changed {
		return changes, nil
	}
	klog.FromContext(ctx).V(4).Info("Writing backend pool membership", "networkInterface", parts.nic, "changes", fmt.Sprintf("%+v", changes))
	poller, err := p.api.nics.BeginCreateOrUpdate(withPrecondition(ctx, deref(nic.Etag)), parts.rg, parts.nic, nic, nil)
	if err == nil {
		_, err = poller.PollUntilDone(ctx, pollOptions)
	}
	if err != nil {
		return nil, fmt.Errorf("write network interface %s/%s (backend pool): %w", parts.rg, parts.nic, err)
	}
	return changes, nil
}

// primaryIPConfig finds the named NIC configuration's named IP
// configuration in a scale set (or instance) network profile.
func primaryIPConfig(nics []*armcompute.VirtualMachineScaleSetNetworkConfiguration, nic, cfg string) *armcompute.VirtualMachineScaleSetIPConfiguration {
	var fallback *armcompute.VirtualMachineScaleSetIPConfiguration
	for _, n := range nics {
		if n == nil || n.Properties == nil {
			continue
		}
		for _, c := range n.Properties.IPConfigurations {
			if c == nil || c.Properties == nil {
				continue
			}
			if strings.EqualFold(deref(n.Name), nic) && strings.EqualFold(deref(c.Name), cfg) {
				return c
			}
			if fallback == nil && (nic == "" && deref(n.Properties.Primary) && (len(n.Properties.IPConfigurations) == 1 || deref(c.Properties.Primary))) {
				fallback = c
			}
		}
	}
	return fallback
}

func (p *nicPools) setInstanceMember(ctx context.Context, parts ipConfigParts, changes []poolChange) ([]poolChange, error) {
	resp, err := p.api.scaleSetVMs.Get(ctx, parts.rg, parts.scaleSet, parts.instanceID, nil)
	if isNotFound(err) {
		return changes, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get scale set instance %s/%s/%s: %w", parts.rg, parts.scaleSet, parts.instanceID, err)
	}
	v := resp.VirtualMachineScaleSetVM
	if v.Properties == nil || v.Properties.NetworkProfileConfiguration == nil {
		return nil, fmt.Errorf("scale set instance %s/%s has no network configuration", parts.scaleSet, parts.instanceID)
	}
	c := primaryIPConfig(v.Properties.NetworkProfileConfiguration.NetworkInterfaceConfigurations, parts.nic, parts.cfg)
	if c == nil {
		return nil, fmt.Errorf("scale set instance %s/%s has no IP configuration %s/%s", parts.scaleSet, parts.instanceID, parts.nic, parts.cfg)
	}
	changes = p.keptBackends(ctx, deref(v.ID), changes)
	changed := false
	for _, ch := range changes {
		changed = computeWithPool(c, ch.pool, ch.member) || changed
	}
	if !changed {
		return changes, nil
	}
	// Only what changes, as upstream sends it: the instance's network
	// configuration (and its size, which Compute wants with it).
	body := armcompute.VirtualMachineScaleSetVM{
		Location: v.Location,
		Properties: &armcompute.VirtualMachineScaleSetVMProperties{
			HardwareProfile:             v.Properties.HardwareProfile,
			NetworkProfileConfiguration: v.Properties.NetworkProfileConfiguration,
		},
	}
	poller, err := p.api.scaleSetVMs.BeginUpdate(ctx, parts.rg, parts.scaleSet, parts.instanceID, body,
		&armcompute.VirtualMachineScaleSetVMsClientBeginUpdateOptions{IfMatch: v.Etag})
	if err == nil {
		_, err = poller.PollUntilDone(ctx, pollOptions)
	}
	if err != nil {
		return nil, fmt.Errorf("write scale set instance %s/%s/%s (backend pool): %w", parts.rg, parts.scaleSet, parts.instanceID, err)
	}
	return changes, nil
}

// ensureModel puts the pool in the scale set model's IP configuration
// that an instance's ipConfigID is made from (the same NIC and
// configuration names: the primary one, or the IPv6 one), once per scale
// set.
func (p *nicPools) ensureModel(ctx context.Context, scaleSetID, poolID, ipConfigID string) error {
	key, ssKey := strings.ToLower(poolID), strings.ToLower(scaleSetID)
	if p.models[key][ssKey] {
		return nil
	}
	rg, name, ok := resourceGroupAndName(scaleSetID)
	if !ok {
		return fmt.Errorf("scale set ID %q is malformed", scaleSetID)
	}
	parts, err := parseIPConfigID(ipConfigID)
	if err != nil {
		return err
	}
	if err := on412(func() error { return p.writeModel(ctx, rg, name, poolID, &parts) }); err != nil {
		return err
	}
	if p.models[key] == nil {
		p.models[key] = map[string]bool{}
	}
	p.models[key][ssKey] = true
	return nil
}

// writeModel adds the pool to a scale set model's IP configuration
// named as in (its primary one when in names none), or with in nil
// removes it from every one.
func (p *nicPools) writeModel(ctx context.Context, rg, name, poolID string, in *ipConfigParts) error {
	resp, err := p.api.scaleSets.Get(ctx, rg, name, nil)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get scale set %s/%s: %w", rg, name, err)
	}
	ss := resp.VirtualMachineScaleSet
	if ss.Properties == nil || ss.Properties.VirtualMachineProfile == nil || ss.Properties.VirtualMachineProfile.NetworkProfile == nil {
		return fmt.Errorf("scale set %s/%s has no network profile", rg, name)
	}
	nics := ss.Properties.VirtualMachineProfile.NetworkProfile.NetworkInterfaceConfigurations
	changed := false
	if in != nil {
		c := primaryIPConfig(nics, in.nic, in.cfg)
		if c == nil {
			return fmt.Errorf("scale set %s/%s has no IP configuration %s/%s in its model", rg, name, in.nic, in.cfg)
		}
		changed = computeWithPool(c, poolID, true)
	} else {
		for _, n := range nics {
			if n == nil || n.Properties == nil {
				continue
			}
			for _, c := range n.Properties.IPConfigurations {
				if c != nil && c.Properties != nil {
					changed = computeWithPool(c, poolID, false) || changed
				}
			}
		}
	}
	if !changed {
		return nil
	}
	body := armcompute.VirtualMachineScaleSet{
		Location:         ss.Location,
		ExtendedLocation: ss.ExtendedLocation,
		Properties: &armcompute.VirtualMachineScaleSetProperties{
			VirtualMachineProfile: &armcompute.VirtualMachineScaleSetVMProfile{
				NetworkProfile: &armcompute.VirtualMachineScaleSetNetworkProfile{NetworkInterfaceConfigurations: nics},
			},
		},
	}
	poller, err := p.api.scaleSets.BeginCreateOrUpdate(ctx, rg, name, body, &armcompute.VirtualMachineScaleSetsClientBeginCreateOrUpdateOptions{IfMatch: ss.Etag})
	if err == nil {
		_, err = poller.PollUntilDone(ctx, pollOptions)
	}
	if err != nil {
		return fmt.Errorf("write scale set %s/%s model (backend pool): %w", rg, name, err)
	}
	return nil
}

// release takes the pool out of every scale set model known to name it
// and out of the scale set instances in it, and with nics also out of
// the stand-alone NICs in it. A load balancer's DELETE needs only the
// former (releaseForDelete); a pool that stays and changes kind needs
// every member out (dropNICMembers).
func (p *nicPools) release(ctx context.Context, lb *armnetwork.LoadBalancer, poolID string, nics bool) error {
	// The scale sets of its members (as known, or as the load balancer
	// says) may name it in their models.
	known := map[string]bool{}
	p.mu.Lock()
	defer p.mu.Unlock()
	key := strings.ToLower(poolID)
	members := poolMembers(lb, poolID[strings.LastIndex(poolID, "/")+1:])
	for id := range p.members[key] {
		members[id] = true
	}
	for id := range members {
		if ss, ok := scaleSetOf(id); ok {
			known[strings.ToLower(ss)] = true
		} else if !nics {
			delete(members, id)
		}
	}
	for id := range p.models[key] {
		known[id] = true
	}
	p.members[key] = members
	if err := p.ensureLocked(ctx, []poolRef{{lb, poolID}}, nil, true); err != nil {
		return err
	}
	for _, id := range sortedKeys(known) {
		rg, name, ok := resourceGroupAndName(id)
		if !ok {
			continue
		}
		if err := on412(func() error { return p.writeModel(ctx, rg, name, poolID, nil) }); err != nil {
			return err
		}
	}
	delete(p.models, key)
	delete(p.members, key)
	p.released[key] = true
	return nil
}

// ensureNICMembers makes the pools of the cluster's load balancers (lb,
// just written, and the other one if it exists) hold the backends' NICs,
// with NIC-based pools: both pools hold every node, so a node joining is
// one write to its NIC for both (two with an IPv6 pool: one per family's
// IP configuration).
func (l *loadBalancers) ensureNICMembers(ctx context.Context, lb *armnetwork.LoadBalancer, internal bool, backends []backend) error {
	if l.nics == nil {
		return nil
	}
	other := l.internal
	if internal {
		other = l.public
	}
	olb, ofound, err := other.current(ctx, false)
	if err != nil {
		return err
	}
	for _, v6 := range []bool{false, true} {
		if findPool(lb, l.poolName(v6)) == nil {
			continue
		}
		want := make([]string, 0, len(backends))
		for _, b := range backends {
			want = append(want, b.config(v6))
		}
		pools := []poolRef{{lb, l.poolID(l.lbNameFor(internal), v6)}}
		if ofound && olb.Properties != nil && len(olb.Properties.FrontendIPConfigurations) > 0 && findPool(olb, l.poolName(v6)) != nil {
			pools = append(pools, poolRef{olb, l.poolID(l.lbNameFor(!internal), v6)})
		}
		if err := l.nics.ensure(ctx, pools, want); err != nil {
			return err
		}
	}
	return nil
}

// releaseForDelete readies a load balancer the shared writer is about to
// delete (lb as the writer found it, without frontends, after every other
// Service's write) with NIC-based pools: scale sets leave its pools, since
// ARM refuses the DELETE while a scale set's model or instance names one
// (LoadBalancerInUseByVirtualMachineScaleSet, as upstream meets it:
// cloud-provider-azure v1.36.5 pkg/provider/azure_loadbalancer.go:703-735).
// Stand-alone NICs are left in: ARM deletes the load balancer anyway and
// drops their references itself, which upstream relies on for
// availability sets (azure_loadbalancer.go:697-701), so they cost no
// write. A pool's NICs change only here, in the one writer, so however
// many Services go at once, the pool is released once, by the batch that
// takes the last frontend.
func (l *loadBalancers) releaseForDelete(ctx context.Context, lb *armnetwork.LoadBalancer, lbName string) error {
	if l.nics == nil {
		return nil
	}
	for _, v6 := range []bool{false, true} {
		if findPool(lb, l.poolName(v6)) == nil {
			continue
		}
		if err := l.nics.release(ctx, lb, l.poolID(lbName, v6), false); err != nil {
			return err
		}
	}
	return nil
}

// dropNICMembers, with nodeIP pools, takes the NICs out of a pool that has
// them (upstream's NIC-based pool, or one made here with
// nodeIPConfiguration) before the pool lists addresses: ARM refuses a
// pool with both kinds of member. Until the addresses are written the
// pool is empty: switching the pool's kind costs that moment.
func (l *loadBalancers) dropNICMembers(ctx context.Context, w *shared[armnetwork.LoadBalancer], lbName string) error {
	if l.nics != nil {
		return nil
	}
	lb, found, err := w.current(ctx, false)
	if err != nil || !found {
		return err
	}
	for _, v6 := range []bool{false, true} {
		if len(poolMembers(lb, l.poolName(v6))) == 0 {
			continue
		}
		klog.FromContext(ctx).Info("Moving the backend pool from NICs to node addresses (loadBalancerBackendPoolConfigurationType nodeIP)", "loadBalancer", lbName, "pool", l.poolName(v6))
		if err := newNICPools(l.api).release(ctx, lb, l.poolID(lbName, v6), true); err != nil {
			return err
		}
	}
	return nil
}
