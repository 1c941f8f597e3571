package gce

import (
	"context"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodeinstance"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodes"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/snapshot"
)

// instances implements cloudprovider.InstancesV2 from a bounded-age
// snapshot of the managed zones' instances (providers/internal/snapshot):
// N Nodes cost one filtered listing per zone per TTL, and the lifecycle
// checks of every NotReady Node together cost one name-filtered listing
// (plus a GET of each instance it lacks) per check period. The embedded
// resolver maps Nodes to instances and answers InstanceExists (false
// only on 404) and InstanceShutdown (TERMINATED, STOPPED, SUSPENDED).
type instances struct {
	*nodeinstance.Resolver[*instance]
	region string
	// preferIPv6 lists a Node's IPv6 addresses before its IPv4 ones
	// (stackType IPV6).
	preferIPv6 bool
}

var _ cloudprovider.InstancesV2 = (*instances)(nil)

func newInstances(api *clients, s *Section, zones []string, lister *nodes.Lister, clk clock.PassiveClock) *instances {
	in := &instances{region: s.Region, preferIPv6: s.StackType == StackIPv6, Resolver: &nodeinstance.Resolver[*instance]{
		Nodes: lister, KeyOf: instanceKeyOf,
		Key:      func(i *instance) string { return i.ref.key() },
		Shutdown: (*instance).shutdown,
		Noun:     "instance", Scope: "of the managed zones",
	}}
	r := &instanceReader{api: api, project: s.ProjectID, zones: zones, prefix: s.NodeInstancePrefix}
	in.Snap = snapshot.New(snapshot.Source[*instance]{
		List:        r.list,
		LookupIDs:   r.lookupIDs,
		LookupNames: r.lookupNames,
		ID:          func(i *instance) string { return i.ref.key() },
		Names:       func(i *instance) []string { return []string{i.ref.name} },
		ValidID:     func(id string) bool { _, err := parseKey(id); return err == nil },
	}, snapshot.Options{
		Provider: ProviderName,
		TTL:      s.InstanceCacheTTL,
		// Any number of keys is one listing per zone (chunked by name
		// inside): one lookup per batch.
		MaxKeys: 5000,
		Watch:   func() []string { return watchedKeys(lister, in.CachedKeyForName) },
		Clock:   clk,
	})
	return in
}

// InstanceExists implements cloudprovider.InstancesV2: a Node labelled
// unmanaged exists without a cloud call, so it is never deleted
// (instances_unmanaged.go); any other is the resolver's answer.
func (in *instances) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	if unmanagedNode(node) {
		return true, nil
	}
	return in.Resolver.InstanceExists(ctx, node)
}

// InstanceShutdown implements cloudprovider.InstancesV2: a Node labelled
// unmanaged is running without a cloud call, so it is never tainted shut
// down.
func (in *instances) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	if unmanagedNode(node) {
		return false, nil
	}
	return in.Resolver.InstanceShutdown(ctx, node)
}

// InstanceMetadata describes the instance for the Node: upstream's
// providerID, addresses (every interface's, ordered by stackType:
// instances_addresses.go), machine type, zone and region. A Node labelled
// unmanaged gets none, without a cloud call (unmanagedMetadata).
func (in *instances) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	if unmanagedNode(node) {
		return unmanagedMetadata(ctx, node), nil
	}
	i, err := in.Lookup(ctx, node)
	if err != nil {
		return nil, err
	}
	addrs := append(orderAddresses(i.addrs, in.preferIPv6), v1.NodeAddress{Type: v1.NodeHostName, Address: node.Name})
	return &cloudprovider.InstanceMetadata{
		ProviderID:    i.ref.providerID(),
		InstanceType:  i.machineType,
		NodeAddresses: addrs,
		Zone:          i.ref.zone,
		Region:        in.region,
	}, nil
}
