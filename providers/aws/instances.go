package aws

import (
	"context"
	"errors"
	"fmt"
	"sync"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/flight"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodeinstance"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodes"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/snapshot"
	decl "github.com/multicloud-ccm/multicloud-ccm/providers/permissions"
)

const (
	// maxLookupKeys caps the IDs or filter values in one call; EC2 allows
	// 200 values per filter.
	maxLookupKeys = 200
	// listPageSize is DescribeInstances' largest page.
	listPageSize = 1000
)

// liveInstanceStates are every state but terminated. Listings leave
// terminated instances out: they linger for an hour, and one may share its
// private DNS name (its old IP) with a new instance.
var liveInstanceStates = []string{
	string(ec2types.InstanceStateNamePending),
	string(ec2types.InstanceStateNameRunning),
	string(ec2types.InstanceStateNameShuttingDown),
	string(ec2types.InstanceStateNameStopping),
	string(ec2types.InstanceStateNameStopped),
}

// instances implements cloudprovider.InstancesV2 from a bounded-age
// snapshot of the cluster's instances (providers/internal/snapshot), so
// that N Nodes cost one paginated DescribeInstances per TTL rather than N
// calls, and lifecycle checks cost one batched DescribeInstances by ID per
// check period for all NotReady Nodes together. The embedded resolver maps
// Nodes to instance IDs (by providerID, by a name that is an instance ID
// or a resource-name hostname, else by private DNS name) and answers
// InstanceExists (false only when EC2 lists the instance as terminated or
// answers InvalidInstanceID.NotFound for its ID) and InstanceShutdown
// (stopped or stopping).
type instances struct {
	*nodeinstance.Resolver[*instance]
	ec2       *ec2Calls
	region    string
	clusterID string
	cfgVPC    string
	// families are the cloud-config's nodeIPFamilies: the Node
	// addresses' families, in order.
	families []string
	// assignIPv6Prefix is the cloud-config's nodeIPAM.assignIPv6Prefix.
	assignIPv6Prefix bool
	// ipv4Prefix is the cloud-config's nodeIPAM.ipv4Prefix.
	ipv4Prefix bool
	// assignedPrefixes maps an instance ID to the IPv6 prefix assigned to
	// its primary interface here (podcidrs.go).
	assignedPrefixes sync.Map

	zones *zoneIDCache

	vpcMu       sync.Mutex
	vpc         string
	vpcDiscover flight.Group[string]
}

var _ cloudprovider.InstancesV2 = (*instances)(nil)

func newInstances(api *clients, s *Section, clusterID string, lister *nodes.Lister, clk clock.PassiveClock) *instances {
	in := &instances{
		ec2:              api.ec2,
		region:           s.Region,
		clusterID:        clusterID,
		cfgVPC:           s.VPCID,
		families:         s.NodeIPFamilies,
		assignIPv6Prefix: s.NodeIPAM.AssignIPv6Prefix,
		ipv4Prefix:       s.NodeIPAM.IPv4Prefix,
		Resolver: &nodeinstance.Resolver[*instance]{
			Nodes:       lister,
			KeyOf:       instanceIDFromProviderID,
			Key:         func(i *instance) string { return i.id },
			KeyFromName: instanceIDFromNodeName,
			Shutdown:    (*instance).shutdown,
			GoneDetails: func(i *instance) []any { return []any{"listedAsTerminated", isTerminated(i)} },
			Noun:        "instance", NameKind: "private DNS name",
		},
	}
	in.Snap = snapshot.New(in.snapshotSource(), in.snapshotOptions(s, clk))
	in.zones = &zoneIDCache{ec2: api.ec2, clock: clk, minRefetch: s.InstanceCacheTTL}
	return in
}

// snapshotSource tells the snapshot how to list, look up and identify EC2
// instances.
func (in *instances) snapshotSource() snapshot.Source[*instance] {
	return snapshot.Source[*instance]{
		List:        in.listClusterInstances,
		LookupIDs:   in.describeByIDs,
		LookupNames: in.describeByNames,
		ID:          func(i *instance) string { return i.id },
		Names:       func(i *instance) []string { return []string{i.privateDNS} },
		Gone:        isTerminated,
		ValidID:     instanceIDRE.MatchString,
	}
}

// snapshotOptions: the listing is at most instanceCacheTTL old; lifecycle
// checks also fetch every NotReady Node's instance.
func (in *instances) snapshotOptions(s *Section, clk clock.PassiveClock) snapshot.Options {
	return snapshot.Options{
		Provider: ProviderName,
		TTL:      s.InstanceCacheTTL,
		MaxKeys:  maxLookupKeys,
		Watch:    func() []string { return in.Nodes.NotReadyInstanceIDs(in.CachedKeyForName) },
		Clock:    clk,
	}
}

// clusterTag is the tag key that marks the cluster's resources.
func (in *instances) clusterTag() string { return "kubernetes.io/cluster/" + in.clusterID }

// InstanceMetadata describes the instance for the Node's spec, labels and
// addresses.
func (in *instances) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	inst, err := in.Lookup(ctx, node)
	if err != nil {
		return nil, err
	}
	id, zone := inst.id, inst.zone
	md := &cloudprovider.InstanceMetadata{
		ProviderID:    providerID(zone, id),
		InstanceType:  inst.instanceType,
		NodeAddresses: nodeAddresses(inst, in.families),
		Zone:          zone,
		Region:        in.region,
	}
	if zone != "" {
		zoneID, err := in.zones.zoneID(ctx, zone)
		var denied *decl.DeniedError
		switch {
		case errors.As(err, &denied):
			// Without ec2:DescribeAvailabilityZones the Node is
			// initialized without the label (the zone-id-label feature
			// degrades, as upstream's topology labels do without their
			// permission): a retry cannot succeed until it is granted, and
			// the denial is counted and logged.
			zoneID = ""
		case err != nil:
			// Labels are only set when the Node is initialized, so failing
			// here (the controller retries) beats a Node that never gets it.
			return nil, fmt.Errorf("zone ID of %s for instance %s: %w", zone, id, err)
		}
		if zoneID != "" {
			md.AdditionalLabels = map[string]string{"topology.k8s.aws/zone-id": zoneID}
		}
	}
	return md, nil
}

// isTerminated says EC2 lists the instance as terminated: gone for good,
// though DescribeInstances shows it for about an hour. It is nil-safe: the
// resolver's GoneDetails gets nil for an ID EC2 does not know.
func isTerminated(inst *instance) bool {
	return inst != nil && inst.state == ec2types.InstanceStateNameTerminated
}
