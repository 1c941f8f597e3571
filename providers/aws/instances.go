package aws

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

const (
	// missWindow is how long a lookup that missed the snapshot waits for
	// others to share its DescribeInstances call. It is short against the
	// node controllers' periods (seconds to minutes) and long enough to
	// catch a burst of Nodes registering together.
	missWindow = 30 * time.Millisecond
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
// snapshot of the cluster's instances, so that N Nodes cost one paginated
// DescribeInstances per TTL rather than N calls.
type instances struct {
	ec2       *ec2.Client
	region    string
	clusterID string
	cfgVPC    string

	cache *instanceCache
	// byIDLookups asks EC2 directly about IDs the snapshot lacks, and
	// confirms "gone" before InstanceExists says so. Results include
	// terminated instances.
	byIDLookups *batcher[ec2types.Instance]
	// byNameLookups finds live instances by private DNS name for Nodes
	// without a providerID.
	byNameLookups *batcher[ec2types.Instance]
	zones         *zoneIDCache

	vpcMu       sync.Mutex
	vpc         string
	vpcDiscover single[string]
}

var _ cloudprovider.InstancesV2 = (*instances)(nil)

func newInstances(api *clients, s *Section, clusterID string) *instances {
	in := &instances{
		ec2:       api.ec2,
		region:    s.Region,
		clusterID: clusterID,
		cfgVPC:    s.VPCID,
	}
	in.cache = &instanceCache{clock: clock.RealClock{}, ttl: s.InstanceCacheTTL, list: in.listClusterInstances}
	in.byIDLookups = newBatcher(missWindow, maxLookupKeys, in.describeByIDs)
	in.byNameLookups = newBatcher(missWindow, maxLookupKeys, in.describeByNames)
	in.zones = &zoneIDCache{ec2: api.ec2, clock: clock.RealClock{}, minRefetch: s.InstanceCacheTTL}
	return in
}

// clusterTag is the tag key that marks the cluster's resources.
func (in *instances) clusterTag() string { return "kubernetes.io/cluster/" + in.clusterID }

// InstanceExists reports false only when EC2 itself says the instance is
// gone: it is terminated, or a DescribeInstances by its ID answers
// InvalidInstanceID.NotFound. Anything else that goes wrong is an error,
// because a wrong false deletes the Node.
func (in *instances) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	id, err := in.instanceIDForNode(ctx, node)
	if err != nil {
		return false, err
	}
	inst, found, err := in.lookupID(ctx, id)
	if err != nil {
		return false, err
	}
	if !found || isTerminated(inst) {
		klog.FromContext(ctx).Info("Instance is gone", "node", klog.KObj(node), "instanceID", id, "listedAsTerminated", found)
		return false, nil
	}
	return true, nil
}

// InstanceShutdown reports whether the instance is stopped or stopping.
func (in *instances) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	id, err := in.instanceIDForNode(ctx, node)
	if err != nil {
		return false, err
	}
	inst, found, err := in.lookupID(ctx, id)
	if err != nil || !found || inst.State == nil {
		return false, err
	}
	switch inst.State.Name {
	case ec2types.InstanceStateNameStopped, ec2types.InstanceStateNameStopping:
		return true, nil
	}
	return false, nil
}

// InstanceMetadata describes the instance for the Node's spec, labels and
// addresses.
func (in *instances) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	id, err := in.instanceIDForNode(ctx, node)
	if err != nil {
		return nil, err
	}
	inst, found, err := in.lookupID(ctx, id)
	if err != nil {
		return nil, err
	}
	if !found || isTerminated(inst) {
		return nil, fmt.Errorf("instance %s of node %s: %w", id, node.Name, cloudprovider.InstanceNotFound)
	}
	zone := ""
	if inst.Placement != nil {
		zone = aws.ToString(inst.Placement.AvailabilityZone)
	}
	md := &cloudprovider.InstanceMetadata{
		ProviderID:    providerID(zone, id),
		InstanceType:  string(inst.InstanceType),
		NodeAddresses: nodeAddresses(inst),
		Zone:          zone,
		Region:        in.region,
	}
	if zone != "" {
		zoneID, err := in.zones.zoneID(ctx, zone)
		if err != nil {
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
