package gce

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodes"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/snapshot"
)

// instances implements cloudprovider.InstancesV2 from a bounded-age
// snapshot of the managed zones' instances (providers/internal/snapshot):
// N Nodes cost one filtered listing per zone per TTL, and the lifecycle
// checks of every NotReady Node together cost one filtered listing per
// zone (plus a GET of each instance it lacks) per check period.
type instances struct {
	region string
	snap   *snapshot.Snapshot[*instance]
	nodes  *nodes.Lister
}

var _ cloudprovider.InstancesV2 = (*instances)(nil)

func newInstances(api *clients, s *Section, zones []string, lister *nodes.Lister, clk clock.PassiveClock) *instances {
	in := &instances{region: s.Region, nodes: lister}
	r := &instanceReader{api: api, project: s.ProjectID, zones: zones, prefix: s.NodeInstancePrefix}
	in.snap = snapshot.New(snapshot.Source[*instance]{
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
		Watch:   func() []string { return in.nodes.NotReadyInstanceIDs(in.cachedKeyForName) },
		Clock:   clk,
	})
	return in
}

// cachedKeyForName maps a Node name to its instance's key from memory
// only, for the lifecycle checks' batch: it must never cost a call.
func (in *instances) cachedKeyForName(name string) (string, bool) {
	if i, ok := in.snap.CachedByName(name); ok {
		return i.ref.key(), true
	}
	return "", false
}

// keyForNode is the key of the Node's instance: from its providerID, else
// from the providerID the Node informer knows for its name (routes get
// only a name), else the managed zones' instance with the Node's name. A
// name no instance has is an error wrapping
// cloudprovider.InstanceNotFound, never proof that an instance is gone.
func (in *instances) keyForNode(ctx context.Context, node *v1.Node) (string, error) {
	if node.Spec.ProviderID != "" {
		return instanceKeyOf(node.Spec.ProviderID)
	}
	if key, ok := in.nodes.InstanceID(node.Name); ok {
		return key, nil
	}
	i, found, err := in.snap.ByName(ctx, node.Name)
	if err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("no instance of the managed zones is named %q: %w", node.Name, cloudprovider.InstanceNotFound)
	}
	return i.ref.key(), nil
}

// InstanceExists reports false only when Compute Engine answered 404 to a
// GET of the instance. 403 rateLimitExceeded, 429, 5xx and timeouts are
// errors: a wrong false deletes the Node.
func (in *instances) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	key, _, exists, err := in.recent(ctx, node)
	if err != nil {
		return false, err
	}
	if !exists {
		klog.FromContext(ctx).Info("Instance is gone", "node", klog.KObj(node), "instance", key)
	}
	return exists, nil
}

// InstanceShutdown reports an instance stopped (TERMINATED) or suspended,
// from the same recent lookup as InstanceExists.
func (in *instances) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	_, i, exists, err := in.recent(ctx, node)
	if err != nil || !exists {
		return false, err
	}
	return i.shutdown(), nil
}

func (in *instances) recent(ctx context.Context, node *v1.Node) (key string, i *instance, exists bool, err error) {
	if key, err = in.keyForNode(ctx, node); err != nil {
		return "", nil, false, err
	}
	if i, exists, err = in.snap.Recent(ctx, key); err != nil {
		return key, nil, false, fmt.Errorf("look up instance of node %s: %w", node.Name, err)
	}
	return key, i, exists, nil
}

// InstanceMetadata describes the instance for the Node: upstream's
// providerID, addresses, machine type, zone and region.
func (in *instances) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	i, err := in.lookup(ctx, node)
	if err != nil {
		return nil, err
	}
	addrs := append(i.addresses(), v1.NodeAddress{Type: v1.NodeHostName, Address: node.Name})
	return &cloudprovider.InstanceMetadata{
		ProviderID:    i.ref.providerID(),
		InstanceType:  i.machineType,
		NodeAddresses: addrs,
		Zone:          i.ref.zone,
		Region:        in.region,
	}, nil
}

// lookup is the Node's instance from the snapshot.
func (in *instances) lookup(ctx context.Context, node *v1.Node) (*instance, error) {
	key, err := in.keyForNode(ctx, node)
	if err != nil {
		return nil, err
	}
	i, found, err := in.snap.Lookup(ctx, key)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("instance of node %s: %w", node.Name, cloudprovider.InstanceNotFound)
	}
	return i, nil
}
