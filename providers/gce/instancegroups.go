package gce

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/naming"
)

// instanceGroups keeps the cluster's unmanaged instance groups, one per
// zone with nodes and named as upstream names them (k8s-ig--<cluster>),
// holding the nodes of their zone. Every internal Service's backend
// service uses the same groups, so one node change is one
// addInstances/removeInstances per zone however many internal Services
// there are: the first Service to sync after the change writes, the
// others find the groups as they want them and make no call.
type instanceGroups struct {
	cfg       *Section
	clusterID string
	// sharedID is what the groups are named after: the upstream CCM's
	// cluster ID when the cluster has one (clusterid.go), else clusterID.
	sharedID func() string
	api      *clients
	clk      clock.Clock

	// forgotten counts forget calls: a membership synced before the
	// last one is not trusted.
	forgotten atomic.Uint64

	mu sync.Mutex // one sync at a time; guards what follows
	// synced is the membership the last successful sync left (zone ->
	// sorted instance links); nil when unknown. syncedGen is forgotten
	// as that sync began.
	synced    map[string][]string
	syncedAt  time.Time
	syncedGen uint64
}

// forget drops the record of the last sync without waiting for one
// running: the next sync reads the groups (drift repair: a group deleted
// or changed behind the manager's back is made again at once).
func (g *instanceGroups) forget() { g.forgotten.Add(1) }

// groupsResync bounds how long a sync trusts its own last result: after
// it, the groups are read again, so a change made behind the manager's
// back is undone within that time.
const groupsResync = 5 * time.Minute

// instanceGroupName is upstream's name of the cluster's group in each
// zone.
func instanceGroupName(clusterID string) string {
	return "k8s-ig--" + naming.Alnum(clusterID, 55)
}

// sync makes the group of every zone in want hold exactly want's
// instances of that zone, creating groups as needed, and empties the
// groups of zones no node is in any more. It returns the links of the
// groups of want's zones, in zone order: the backend services' backends.
// The caller holds loadBalancers.shared for reading.
func (g *instanceGroups) sync(ctx context.Context, want map[string][]string) ([]string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gen := g.forgotten.Load()
	if g.synced != nil && g.syncedGen == gen && g.clk.Since(g.syncedAt) < groupsResync && maps.EqualFunc(g.synced, want, slices.Equal) {
		return g.linksOf(want), nil
	}
	g.synced = nil
	existing, err := g.list(ctx)
	if err != nil {
		return nil, err
	}
	for _, zone := range slices.Sorted(maps.Keys(want)) {
		if err := g.ensureGroup(ctx, zone, existing[zone], want[zone]); err != nil {
			return nil, err
		}
	}
	for zone, ig := range existing {
		if _, ok := want[zone]; !ok && ig.GetSize() > 0 {
			if err := g.syncMembers(ctx, ig, nil); err != nil {
				return nil, err
			}
		}
	}
	g.synced, g.syncedAt, g.syncedGen = want, g.clk.Now(), gen
	return g.linksOf(want), nil
}

// linksOf are the links of want's zones' groups, in zone order.
func (g *instanceGroups) linksOf(want map[string][]string) []string {
	var out []string
	for _, zone := range slices.Sorted(maps.Keys(want)) {
		out = append(out, "projects/"+g.cfg.ProjectID+"/zones/"+zone+"/instanceGroups/"+instanceGroupName(g.sharedID()))
	}
	return out
}

// list is the cluster's groups by zone: one aggregated listing.
func (g *instanceGroups) list(ctx context.Context) (map[string]*computepb.InstanceGroup, error) {
	name := instanceGroupName(g.sharedID())
	it := g.api.instanceGroups.AggregatedList(ctx, &computepb.AggregatedListInstanceGroupsRequest{
		Project: g.cfg.ProjectID, Filter: proto.String(`name eq "` + name + `"`),
	}, g.api.retry)
	out := map[string]*computepb.InstanceGroup{}
	for {
		pair, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list instance groups %s: %w", name, err)
		}
		for _, ig := range pair.Value.GetInstanceGroups() {
			if ig.GetName() == name && g.cfg.managesZone(lastSegment(ig.GetZone())) {
				out[lastSegment(ig.GetZone())] = ig
			}
		}
	}
}

// ensureGroup creates zone's group if it is missing and brings its
// members in step with members.
func (g *instanceGroups) ensureGroup(ctx context.Context, zone string, cur *computepb.InstanceGroup, members []string) error {
	name := instanceGroupName(g.sharedID())
	if cur == nil {
		err := waitOp(ctx)(g.api.instanceGroups.Insert(ctx, &computepb.InsertInstanceGroupRequest{Project: g.cfg.ProjectID, Zone: zone, InstanceGroupResource: &computepb.InstanceGroup{
			Name: proto.String(name), Description: proto.String(description{Cluster: g.clusterID}.String()), Network: proto.String(g.cfg.networkURL()),
		}}, g.api.retry))
		if err != nil && !alreadyExists(err) {
			return fmt.Errorf("create instance group %s in %s: %w", name, zone, err)
		}
		if err == nil {
			return g.changeMembers(ctx, zone, members, nil)
		}
		// Made meanwhile (a retried insert, another manager): its members
		// are unknown, so read them (a non-zero size makes syncMembers list).
		cur = &computepb.InstanceGroup{Name: proto.String(name), Zone: proto.String(zone), Size: proto.Int32(1)}
	}
	return g.syncMembers(ctx, cur, members)
}

// syncMembers reads a group's members (one paged listing) and adds and
// removes only the difference.
func (g *instanceGroups) syncMembers(ctx context.Context, ig *computepb.InstanceGroup, want []string) error {
	zone := lastSegment(ig.GetZone())
	var have []string
	if ig.GetSize() > 0 {
		it := g.api.instanceGroups.ListInstances(ctx, &computepb.ListInstancesInstanceGroupsRequest{
			Project: g.cfg.ProjectID, Zone: zone, InstanceGroup: ig.GetName(),
			InstanceGroupsListInstancesRequestResource: &computepb.InstanceGroupsListInstancesRequest{InstanceState: proto.String("ALL")},
		}, g.api.retry)
		for {
			m, err := it.Next()
			if errors.Is(err, iterator.Done) {
				break
			}
			if err != nil {
				return fmt.Errorf("list the instances of group %s in %s: %w", ig.GetName(), zone, err)
			}
			have = append(have, m.GetInstance())
		}
	}
	var add, remove []string
	for _, m := range want {
		if !slices.ContainsFunc(have, func(h string) bool { return sameLink(h, m) }) {
			add = append(add, m)
		}
	}
	for _, h := range have {
		if !slices.ContainsFunc(want, func(m string) bool { return sameLink(h, m) }) {
			remove = append(remove, h)
		}
	}
	return g.changeMembers(ctx, zone, add, remove)
}

func (g *instanceGroups) changeMembers(ctx context.Context, zone string, add, remove []string) error {
	name := instanceGroupName(g.sharedID())
	refs := func(links []string) []*computepb.InstanceReference {
		var out []*computepb.InstanceReference
		for _, l := range links {
			out = append(out, &computepb.InstanceReference{Instance: proto.String(l)})
		}
		return out
	}
	if len(add) > 0 {
		err := waitOp(ctx)(g.api.instanceGroups.AddInstances(ctx, &computepb.AddInstancesInstanceGroupRequest{Project: g.cfg.ProjectID, Zone: zone, InstanceGroup: name,
			InstanceGroupsAddInstancesRequestResource: &computepb.InstanceGroupsAddInstancesRequest{Instances: refs(add)}}, g.api.retry))
		if err != nil {
			return fmt.Errorf("instance group %s in %s: add %d instances: %w", name, zone, len(add), err)
		}
	}
	if len(remove) > 0 {
		err := waitOp(ctx)(g.api.instanceGroups.RemoveInstances(ctx, &computepb.RemoveInstancesInstanceGroupRequest{Project: g.cfg.ProjectID, Zone: zone, InstanceGroup: name,
			InstanceGroupsRemoveInstancesRequestResource: &computepb.InstanceGroupsRemoveInstancesRequest{Instances: refs(remove)}}, g.api.retry))
		if err != nil {
			return fmt.Errorf("instance group %s in %s: remove %d instances: %w", name, zone, len(remove), err)
		}
	}
	return nil
}

// deleteUnused deletes the cluster's groups that no backend service uses
// any more: after the last internal Service went. A group another
// Service's backend service still uses is refused by GCE
// (resourceInUseByAnotherResource) and stays; a group the manager did not
// create (no description of this cluster) is never deleted. The caller
// holds loadBalancers.shared.
func (g *instanceGroups) deleteUnused(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.synced = nil
	existing, err := g.list(ctx)
	if err != nil {
		return err
	}
	for _, zone := range slices.Sorted(maps.Keys(existing)) {
		ig := existing[zone]
		// Upstream's groups carry no description: their name, the
		// cluster ID's, makes them the cluster's.
		if !ours(ig.GetDescription(), g.clusterID, "") && strings.TrimSpace(ig.GetDescription()) != "" {
			continue
		}
		err := waitOp(ctx)(g.api.instanceGroups.Delete(ctx, &computepb.DeleteInstanceGroupRequest{Project: g.cfg.ProjectID, Zone: zone, InstanceGroup: ig.GetName()}, g.api.retry))
		if err = ignoreNotFound(err); err != nil && !inUse(err) {
			return fmt.Errorf("delete instance group %s in %s: %w", ig.GetName(), zone, err)
		}
	}
	return nil
}

// inUse says GCE refused to delete a resource another one uses.
func inUse(err error) bool {
	if _, reason := errorCode(err); reason == "resourceInUseByAnotherResource" {
		return true
	}
	// An operation's error carries the reason in its message only.
	return err != nil && (strings.Contains(err.Error(), "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE") || strings.Contains(err.Error(), "resourceInUseByAnotherResource"))
}
