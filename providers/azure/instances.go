package azure

import (
	"context"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodeinstance"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodes"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/snapshot"
)

// instances implements cloudprovider.InstancesV2 from a bounded-age
// snapshot of the cluster's VMs (providers/internal/snapshot): N Nodes
// cost a few paginated lists per TTL, and the lifecycle checks of every
// NotReady Node together cost one listing (plus GETs of what it lacks)
// per check period. The embedded resolver maps Nodes to VMs (by
// providerID, or by computer name, which the snapshot holds lower-cased)
// and answers InstanceExists (false only on ARM's 404) and
// InstanceShutdown (stopped or deallocated).
type instances struct {
	*nodeinstance.Resolver[*vm]
	location string
	// pools keeps node pools' mask tags for PodCIDRs (podcidrs.go).
	pools *poolTags
}

var _ cloudprovider.InstancesV2 = (*instances)(nil)

func newInstances(api *clients, s *Section, lister *nodes.Lister, clk clock.Clock) *instances {
	in := &instances{location: s.Location, pools: newPoolTags(api, s.InstanceCacheTTL, clk), Resolver: &nodeinstance.Resolver[*vm]{
		Nodes: lister,
		// Refuses other subscriptions' providerIDs.
		KeyOf:        vmIDParser(s.SubscriptionID),
		Key:          func(v *vm) string { return v.ref.key() },
		SnapshotName: strings.ToLower,
		Shutdown:     (*vm).shutdown,
		Noun:         "VM", Scope: "in resource group " + s.ResourceGroup,
	}}
	r := &vmReader{api: api, rg: s.ResourceGroup, location: s.Location, vmss: s.VMType == VMTypeVMSS, pools: in.pools}
	in.Snap = snapshot.New(snapshot.Source[*vm]{
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
		Watch:   func() []string { return lister.NotReadyInstanceIDs(in.CachedKeyForName) },
		Clock:   clk,
	})
	r.cached = in.Snap.Cached
	return in
}

// InstanceMetadata describes the VM for the Node: providerID as upstream
// writes it, addresses, VM size as instance type, zone and region.
func (in *instances) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	v, err := in.Lookup(ctx, node)
	if err != nil {
		return nil, err
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
	v, err := in.Lookup(ctx, node)
	if err != nil {
		return "", err
	}
	for _, a := range v.addresses {
		if a.Type == v1.NodeInternalIP {
			return a.Address, nil
		}
	}
	return "", fmt.Errorf("VM %s of node %s has no private IP address", v.id, node.Name)
}
