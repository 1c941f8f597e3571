package openstack

import (
	"context"
	"fmt"
	"slices"

	"github.com/gophercloud/gophercloud/v2"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodes"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/snapshot"
)

// instances implements cloudprovider.InstancesV2 from a bounded-age
// snapshot of the project's Nova servers (providers/internal/snapshot):
// N Nodes cost one paginated server listing per TTL, and the lifecycle
// checks of every NotReady Node together cost one listing (plus a GET of
// each server it lacks) per check period.
type instances struct {
	region string
	// serverID parses a providerID into a server ID, refusing other
	// regions.
	serverID func(providerID string) (string, error)
	snap     *snapshot.Snapshot[*server]
	// nodes maps Node names to server IDs through spec.providerID, once
	// the manager has handed over its informers.
	nodes *nodes.Lister
}

var _ cloudprovider.InstancesV2 = (*instances)(nil)

func newInstances(compute *gophercloud.ServiceClient, s *Section, lister *nodes.Lister, clk clock.PassiveClock) *instances {
	in := &instances{region: s.Region, serverID: serverIDParser(s.Region), nodes: lister}
	r := serverReader{compute: compute}
	in.snap = snapshot.New(snapshot.Source[*server]{
		List:        r.list,
		LookupIDs:   r.lookupIDs,
		LookupNames: r.lookupNames,
		ID:          func(s *server) string { return s.id },
		Names:       func(s *server) []string { return []string{s.name} },
		Gone:        serverGone,
		ValidID:     serverIDRE.MatchString,
	}, snapshot.Options{
		Provider: ProviderName,
		TTL:      s.InstanceCacheTTL,
		// An ID batch of any size is one listing (lookupIDs), and names
		// are chunked by lookupNames itself: one lookup per batch.
		MaxKeys: maxLookupBatch,
		Watch:   func() []string { return in.nodes.NotReadyInstanceIDs(in.cachedIDForName) },
		Clock:   clk,
	})
	return in
}

// cachedIDForName maps a Node name to its server ID from memory only, for
// the lifecycle checks' batch: it must never cost a call.
func (in *instances) cachedIDForName(name string) (string, bool) {
	if s, ok := in.snap.CachedByName(name); ok {
		return s.id, true
	}
	return "", false
}

// serverIDForNode is the ID of the Node's server: from its providerID,
// else from the providerID the Node informer knows for its name (routes
// get only a name), else the server with exactly the Node's name. A name
// no server has is an error wrapping cloudprovider.InstanceNotFound,
// never proof that a server is gone.
func (in *instances) serverIDForNode(ctx context.Context, node *v1.Node) (string, error) {
	if node.Spec.ProviderID != "" {
		return in.serverID(node.Spec.ProviderID)
	}
	if id, ok := in.nodes.InstanceID(node.Name); ok {
		return id, nil
	}
	s, found, err := in.snap.ByName(ctx, node.Name)
	if err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("no server is named %q: %w", node.Name, cloudprovider.InstanceNotFound)
	}
	// Nova names need not be unique; a Node must not take another
	// server's identity. Only Nodes not yet initialised get here.
	all, err := in.snap.All(ctx)
	if err != nil {
		return "", err
	}
	for _, other := range all {
		if other.name == node.Name && other.id != s.id {
			return "", fmt.Errorf("servers %s and %s are both named %q; give the Node a providerID (kubelet --provider-id=openstack:///<server-uuid>)", s.id, other.id, node.Name)
		}
	}
	return s.id, nil
}

// InstanceExists reports false only when Nova answered 404 to a GET of
// the server's ID. Throttling, 5xx, timeouts and authentication failures
// are errors: a wrong false deletes the Node.
func (in *instances) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	id, _, exists, err := in.recent(ctx, node)
	if err != nil {
		return false, err
	}
	if !exists {
		klog.FromContext(ctx).Info("Server is gone", "node", klog.KObj(node), "serverID", id)
	}
	return exists, nil
}

// InstanceShutdown reports a SHUTOFF server, from the same recent lookup
// as InstanceExists.
func (in *instances) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	_, s, exists, err := in.recent(ctx, node)
	if err != nil || !exists {
		return false, err
	}
	return s.status == serverStatusShutdown, nil
}

// recent is the Node's server as Nova described it a few seconds ago at
// most, for the lifecycle checks.
func (in *instances) recent(ctx context.Context, node *v1.Node) (id string, s *server, exists bool, err error) {
	if id, err = in.serverIDForNode(ctx, node); err != nil {
		return "", nil, false, err
	}
	if s, exists, err = in.snap.Recent(ctx, id); err != nil {
		return id, nil, false, fmt.Errorf("look up server %s of node %s: %w", id, node.Name, err)
	}
	return id, s, exists, nil
}

// InstanceMetadata describes the server for the Node: providerID,
// addresses, flavor name as instance type, availability zone and the
// configured region.
func (in *instances) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	id, err := in.serverIDForNode(ctx, node)
	if err != nil {
		return nil, err
	}
	s, found, err := in.snap.Lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("server %s of node %s: %w", id, node.Name, cloudprovider.InstanceNotFound)
	}
	return &cloudprovider.InstanceMetadata{
		ProviderID:    providerID(s.id),
		InstanceType:  s.flavor,
		NodeAddresses: slices.Clone(s.addresses),
		Zone:          s.zone,
		Region:        in.region,
	}, nil
}
