package aws

import (
	"context"
	"errors"
	"fmt"
	"sync"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/flight"
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
// check period for all NotReady Nodes together.
type instances struct {
	ec2       *ec2Calls
	region    string
	clusterID string
	cfgVPC    string
	// assignIPv6Prefix is the cloud-config's nodeIPAM.assignIPv6Prefix.
	assignIPv6Prefix bool
	// ipv4Prefix is the cloud-config's nodeIPAM.ipv4Prefix.
	ipv4Prefix bool
	// assignedPrefixes maps an instance ID to the IPv6 prefix assigned to
	// its primary interface here (podcidrs.go).
	assignedPrefixes sync.Map

	snap  *snapshot.Snapshot[*instance]
	zones *zoneIDCache
	// nodes maps Node names to instance IDs through spec.providerID,
	// once the manager has handed over its informers.
	nodes *nodes.Lister

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
		assignIPv6Prefix: s.NodeIPAM.AssignIPv6Prefix,
		ipv4Prefix:       s.NodeIPAM.IPv4Prefix,
		nodes:            lister,
	}
	in.snap = snapshot.New(in.snapshotSource(), in.snapshotOptions(s, clk))
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
		Watch:    func() []string { return in.nodes.NotReadyInstanceIDs(in.cachedIDForName) },
		Clock:    clk,
	}
}

// cachedIDForName maps a Node name to its instance ID from memory only
// (the name itself, or the snapshot's private DNS names), for the
// lifecycle checks' batch: it must never cost a call.
func (in *instances) cachedIDForName(name string) (string, bool) {
	if id := instanceIDFromNodeName(name); id != "" {
		return id, true
	}
	if inst, ok := in.snap.CachedByName(name); ok {
		return inst.id, true
	}
	return "", false
}

// clusterTag is the tag key that marks the cluster's resources.
func (in *instances) clusterTag() string { return "kubernetes.io/cluster/" + in.clusterID }

// InstanceExists reports false only when EC2 itself says the instance is
// gone: it is terminated, or a DescribeInstances by its ID answers
// InvalidInstanceID.NotFound. Anything else that goes wrong is an error,
// because a wrong false deletes the Node.
//
// The node-lifecycle controller asks this (and InstanceShutdown) for every
// NotReady Node every period, so the answer comes from a direct lookup at
// most a few seconds old that serves all NotReady Nodes at once: a
// terminated instance's Node goes within seconds, at one call per period.
func (in *instances) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	id, inst, exists, err := in.recent(ctx, node)
	if err != nil {
		return false, err
	}
	if !exists {
		klog.FromContext(ctx).Info("Instance is gone", "node", klog.KObj(node), "instanceID", id, "listedAsTerminated", isTerminated(inst))
		return false, nil
	}
	return true, nil
}

// InstanceShutdown reports whether the instance is stopped or stopping,
// from the same recent lookup as InstanceExists.
func (in *instances) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	_, inst, exists, err := in.recent(ctx, node)
	if err != nil {
		return false, err
	}
	if !exists {
		return false, nil
	}
	switch inst.state {
	case ec2types.InstanceStateNameStopped, ec2types.InstanceStateNameStopping:
		return true, nil
	}
	return false, nil
}

// recent is the Node's instance as EC2 described it a few seconds ago at
// most, for the lifecycle checks.
func (in *instances) recent(ctx context.Context, node *v1.Node) (id string, inst *instance, exists bool, err error) {
	if id, err = in.instanceIDForNode(ctx, node); err != nil {
		return "", inst, false, err
	}
	if inst, exists, err = in.snap.Recent(ctx, id); err != nil {
		return id, inst, false, fmt.Errorf("look up instance %s of node %s: %w", id, node.Name, err)
	}
	return id, inst, exists, nil
}

// InstanceMetadata describes the instance for the Node's spec, labels and
// addresses.
func (in *instances) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	id, err := in.instanceIDForNode(ctx, node)
	if err != nil {
		return nil, err
	}
	inst, found, err := in.snap.Lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("instance %s of node %s: %w", id, node.Name, cloudprovider.InstanceNotFound)
	}
	zone := inst.zone
	md := &cloudprovider.InstanceMetadata{
		ProviderID:    providerID(zone, id),
		InstanceType:  inst.instanceType,
		NodeAddresses: nodeAddresses(inst),
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
// though DescribeInstances shows it for about an hour.
func isTerminated(inst *instance) bool {
	return inst != nil && inst.state == ec2types.InstanceStateNameTerminated
}
