package azure

import (
	"context"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodes"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/snapshot"
)

// instances implements cloudprovider.InstancesV2 from a bounded-age
// snapshot of the cluster's VMs (providers/internal/snapshot): N Nodes
// cost a few paginated lists per TTL, and the lifecycle checks of every
// NotReady Node together cost one listing (plus GETs of what it lacks)
// per check period.
type instances struct {
	location string
	// vmKey parses a providerID into a snapshot key, refusing other
	// subscriptions.
	vmKey func(providerID string) (string, error)
	snap  *snapshot.Snapshot[*vm]
	nodes *nodes.Lister
}

var _ cloudprovider.InstancesV2 = (*instances)(nil)

func newInstances(api *clients, s *Section, lister *nodes.Lister, clk clock.PassiveClock) *instances {
	in := &instances{location: s.Location, vmKey: vmIDParser(s.SubscriptionID), nodes: lister}
	r := &vmReader{api: api, rg: s.ResourceGroup, location: s.Location, vmss: s.VMType == VMTypeVMSS}
	in.snap = snapshot.New(snapshot.Source[*vm]{
		List:        r.list,
		LookupIDs:   r.lookupIDs,
		LookupNames: r.lookupNames,
		ID:          func(v *vm) string { return v.ref.key() },
		Names:       func(v *vm) []string { return v.names },
		ValidID:     func(id string) bool { _, err := parseVMID(id); return err == nil },
	}, snapshot.Options{
		Provider: ProviderName,
		TTL:      s.InstanceCacheTTL,
		// Any number of IDs is one listing per resource group (plus GETs
		// of what it lacks): one lookup per batch.
		MaxKeys: 5000,
		Watch:   func() []string { return in.nodes.NotReadyInstanceIDs(in.cachedKeyForName) },
		Clock:   clk,
	})
	r.cached = in.snap.Cached
	return in
}

// cachedKeyForName maps a Node name to its VM's key from memory only, for
// the lifecycle checks' batch: it must never cost a call.
func (in *instances) cachedKeyForName(name string) (string, bool) {
	if v, ok := in.snap.CachedByName(strings.ToLower(name)); ok {
		return v.ref.key(), true
	}
	return "", false
}

// vmKeyForNode is the key of the Node's VM: from its providerID, else
// from the providerID the Node informer knows for its name (routes get
// only a name), else the VM with the Node's name. A name no VM has is an
// error wrapping cloudprovider.InstanceNotFound, never proof that a VM is
// gone.
func (in *instances) vmKeyForNode(ctx context.Context, node *v1.Node) (string, error) {
	if node.Spec.ProviderID != "" {
		return in.vmKey(node.Spec.ProviderID)
	}
	if key, ok := in.nodes.InstanceID(node.Name); ok {
		return key, nil
	}
	v, found, err := in.snap.ByName(ctx, strings.ToLower(node.Name))
	if err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("no VM in resource group is named %q: %w", node.Name, cloudprovider.InstanceNotFound)
	}
	return v.ref.key(), nil
}

// InstanceExists reports false only when ARM answered 404 to a GET of the
// VM. Throttling, 5xx, timeouts and authentication failures are errors: a
// wrong false deletes the Node.
func (in *instances) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	key, _, exists, err := in.recent(ctx, node)
	if err != nil {
		return false, err
	}
	if !exists {
		klog.FromContext(ctx).Info("VM is gone", "node", klog.KObj(node), "vm", key)
	}
	return exists, nil
}

// InstanceShutdown reports a VM stopped or deallocated (or on its way),
// from the same recent lookup as InstanceExists.
func (in *instances) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	_, v, exists, err := in.recent(ctx, node)
	if err != nil || !exists {
		return false, err
	}
	return v.shutdown(), nil
}

// recent is the Node's VM as ARM described it a few seconds ago at most.
func (in *instances) recent(ctx context.Context, node *v1.Node) (key string, v *vm, exists bool, err error) {
	if key, err = in.vmKeyForNode(ctx, node); err != nil {
		return "", nil, false, err
	}
	if v, exists, err = in.snap.Recent(ctx, key); err != nil {
		return key, nil, false, fmt.Errorf("look up VM of node %s: %w", node.Name, err)
	}
	return key, v, exists, nil
}

// InstanceMetadata describes the VM for the Node: providerID as upstream
// writes it, addresses, VM size as instance type, zone and region.
func (in *instances) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	key, err := in.vmKeyForNode(ctx, node)
	if err != nil {
		return nil, err
	}
	v, found, err := in.snap.Lookup(ctx, key)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("VM of node %s: %w", node.Name, cloudprovider.InstanceNotFound)
	}
	addrs := slices.Clone(v.addresses)
	addrs = append(addrs, v1.NodeAddress{Type: v1.NodeHostName, Address: node.Name})
	return &cloudprovider.InstanceMetadata{
		ProviderID:    providerID(v.id),
		InstanceType:  v.size,
		NodeAddresses: addrs,
		Zone:          v.zone,
		Region:        in.location,
	}, nil
}

// nodeIP is a Node's VM's first private address, from the snapshot (for
// load balancer backends and routes of Nodes whose addresses are not in
// their status yet).
func (in *instances) nodeIP(ctx context.Context, node *v1.Node) (string, error) {
	key, err := in.vmKeyForNode(ctx, node)
	if err != nil {
		return "", err
	}
	v, found, err := in.snap.Lookup(ctx, key)
	if err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("VM of node %s: %w", node.Name, cloudprovider.InstanceNotFound)
	}
	for _, a := range v.addresses {
		if a.Type == v1.NodeInternalIP {
			return a.Address, nil
		}
	}
	return "", fmt.Errorf("VM %s of node %s has no private IP address", v.id, node.Name)
}
