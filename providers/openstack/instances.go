package openstack

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodeinstance"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodes"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/snapshot"
)

// instances implements cloudprovider.InstancesV2 from a bounded-age
// snapshot of the project's Nova servers (providers/internal/snapshot):
// N Nodes cost one paginated server listing per TTL, and the lifecycle
// checks of every NotReady Node together cost one listing (plus a GET of
// each server it lacks) per check period. The embedded resolver maps
// Nodes to servers (refusing a name two servers share) and answers
// InstanceExists (false only on Nova's 404) and InstanceShutdown
// (SHUTOFF).
type instances struct {
	*nodeinstance.Resolver[*server]
	region string
}

var _ cloudprovider.InstancesV2 = (*instances)(nil)

func newInstances(api *clients, s *Section, lister *nodes.Lister, clk clock.PassiveClock) *instances {
	in := &instances{region: s.Region}
	in.Resolver = &nodeinstance.Resolver[*server]{
		Nodes: lister,
		// Refuses other regions' providerIDs.
		KeyOf:     serverIDParser(s.Region),
		Key:       func(s *server) string { return s.id },
		CheckName: in.onlyServerNamed,
		Shutdown:  func(s *server) bool { return s.status == serverStatusShutdown },
		Noun:      "server",
	}
	r := serverReader{compute: api.compute, network: api.network, networking: &s.Networking}
	in.Snap = snapshot.New(snapshot.Source[*server]{
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
		Watch:   func() []string { return lister.NotReadyInstanceIDs(in.CachedKeyForName) },
		Clock:   clk,
	})
	return in
}

// onlyServerNamed refuses a Node name two servers share: Nova names need
// not be unique, and a Node must not take another server's identity.
// Only Nodes not yet initialised (no providerID) get here.
func (in *instances) onlyServerNamed(ctx context.Context, name string, found *server) error {
	all, err := in.Snap.All(ctx)
	if err != nil {
		return err
	}
	for _, other := range all {
		if other.name == name && other.id != found.id {
			return fmt.Errorf("servers %s and %s are both named %q; give the Node a providerID (kubelet --provider-id=openstack:///<server-uuid>)", found.id, other.id, name)
		}
	}
	return nil
}

// InstanceMetadata describes the server for the Node: providerID,
// addresses, flavor name as instance type, availability zone and the
// configured region.
func (in *instances) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	s, err := in.Lookup(ctx, node)
	if err != nil {
		return nil, err
	}
	return &cloudprovider.InstanceMetadata{
		ProviderID:    providerID(s.id),
		InstanceType:  s.flavor,
		NodeAddresses: slices.Clone(s.addresses),
		Zone:          s.zone,
		Region:        in.region,
	}, nil
}
