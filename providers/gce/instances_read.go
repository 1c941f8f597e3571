package gce

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"cloud.google.com/go/compute/apiv1/computepb"
	"golang.org/x/sync/errgroup"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/snapshot"
)

// How the backend reads instances. A listing is one filtered, paginated
// instances.list per managed zone, in parallel, whatever the cluster's
// size. Lookups by ID of a few instances of one project are a GET each;
// more are one list filtered by their names, plus a GET of each it
// lacks (the only answer that can say "gone"): snapshot.Lookup. Lookups by name
// are one filtered list per zone.

// maxNamesPerFilter keeps a name filter's regular expression short.
const maxNamesPerFilter = 100

// instance is what the backend keeps of a Compute Engine instance.
type instance struct {
	ref         instanceRef
	id          uint64
	machineType string
	status      string
	// addrs are the Node addresses of every interface, in upstream's
	// order before the family partition (nicAddresses).
	addrs []v1.NodeAddress
	tags  []string
	// aliasRange is the first alias IP range of nic0, ipv6Range nic0's
	// IPv6 pod range: what the node-ipam controller makes the Node's pod
	// CIDRs (podcidrs.go).
	aliasRange string
	ipv6Range  string
}

// shutdown says the instance is stopped or suspended (or on its way):
// TERMINATED is what a stopped instance reports.
func (i *instance) shutdown() bool {
	switch i.status {
	case "TERMINATED", "STOPPED", "STOPPING", "SUSPENDED", "SUSPENDING":
		return true
	}
	return false
}

func fromInstance(project string, in *computepb.Instance) *instance {
	if in.GetName() == "" || in.GetZone() == "" {
		return nil
	}
	i := &instance{
		ref:         instanceRef{project: project, zone: lastSegment(in.GetZone()), name: in.GetName()},
		id:          in.GetId(),
		machineType: lastSegment(in.GetMachineType()),
		status:      in.GetStatus(),
		tags:        in.GetTags().GetItems(),
	}
	if nics := in.GetNetworkInterfaces(); len(nics) > 0 {
		i.addrs = nicAddresses(nics)
		i.aliasRange, i.ipv6Range = podRanges(nics)
	}
	return i
}

// instanceReader lists and looks up the cluster's instances for the
// snapshot.
type instanceReader struct {
	api     *clients
	project string
	// zones are the managed zones.
	zones []string
	// prefix, when set, limits every listing to names starting with it.
	prefix string
}

// nameFilter is a Compute Engine list filter matching exactly names (an
// RE2 expression, which `eq` matches against the whole name).
func nameFilter(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	return fmt.Sprintf(`name eq "(%s)"`, strings.Join(quoted, "|"))
}

// listZone lists one zone's instances matching filter ("" for all).
func (r *instanceReader) listZone(ctx context.Context, project, zone, filter string) ([]*instance, error) {
	req := &computepb.ListInstancesRequest{Project: project, Zone: zone}
	if filter != "" {
		req.Filter = proto.String(filter)
	}
	it := r.api.instances.List(ctx, req, r.api.retry)
	var out []*instance
	for {
		in, err := it.Next()
		if err == iterator.Done {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list instances in %s/%s: %w", project, zone, err)
		}
		if i := fromInstance(project, in); i != nil {
			out = append(out, i)
		}
	}
}

// listAggregated lists the project's instances in every zone matching
// filter: one paged aggregatedList instead of one listing per zone.
func (r *instanceReader) listAggregated(ctx context.Context, project, filter string) ([]*instance, error) {
	it := r.api.instances.AggregatedList(ctx, &computepb.AggregatedListInstancesRequest{Project: project, Filter: proto.String(filter)}, r.api.retry)
	var out []*instance
	for {
		pair, err := it.Next()
		if err == iterator.Done {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list instances in %s: %w", project, err)
		}
		for _, in := range pair.Value.GetInstances() {
			if i := fromInstance(project, in); i != nil {
				out = append(out, i)
			}
		}
	}
}

// listByName lists the named instances of project in zones: one filtered
// listing per 100 names, of the zone when there is one, else of every
// zone at once (aggregatedList).
func (r *instanceReader) listByName(ctx context.Context, project string, zones, names []string) ([]*instance, error) {
	var out []*instance
	for chunk := range slices.Chunk(names, maxNamesPerFilter) {
		var found []*instance
		var err error
		if len(zones) == 1 {
			found, err = r.listZone(ctx, project, zones[0], nameFilter(chunk))
		} else {
			found, err = r.listAggregated(ctx, project, nameFilter(chunk))
		}
		if err != nil {
			return nil, err
		}
		for _, i := range found {
			if slices.Contains(zones, i.ref.zone) {
				out = append(out, i)
			}
		}
	}
	return out, nil
}

// eachZone runs fn for every managed zone at once and joins the results.
func (r *instanceReader) eachZone(ctx context.Context, fn func(ctx context.Context, zone string) ([]*instance, error)) ([]*instance, error) {
	var mu sync.Mutex
	var out []*instance
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for _, z := range r.zones {
		g.Go(func() error {
			found, err := fn(gctx, z)
			if err != nil {
				return err
			}
			mu.Lock()
			out = append(out, found...)
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// list is the snapshot's listing: every instance of the managed zones
// (whose names start with nodeInstancePrefix, if set).
func (r *instanceReader) list(ctx context.Context) ([]*instance, error) {
	filter := ""
	if r.prefix != "" {
		filter = fmt.Sprintf(`name eq "%s.*"`, regexp.QuoteMeta(r.prefix))
	}
	return r.eachZone(ctx, func(ctx context.Context, zone string) ([]*instance, error) {
		return r.listZone(ctx, r.project, zone, filter)
	})
}

// lookupIDs asks Compute Engine about instances by key: the instances of
// a project that are more than a few are read with one name-filtered
// listing (of their zone, or an aggregatedList when they span zones), the
// rest with GETs. An instance is absent from the result only when its
// GET answered 404.
func (r *instanceReader) lookupIDs(ctx context.Context, keys []string) (map[string]*instance, error) {
	refs := make([]instanceRef, 0, len(keys))
	for _, k := range keys {
		if ref, err := parseKey(k); err == nil {
			refs = append(refs, ref)
		}
	}
	return snapshot.Lookup[instanceRef, *instance]{
		Group: func(ref instanceRef) string { return ref.project },
		Key:   instanceRef.key,
		KeyOf: func(i *instance) string { return i.ref.key() },
		Bulk: func(ctx context.Context, refs []instanceRef) ([]*instance, error) {
			var zones, names []string
			for _, ref := range refs {
				zones = append(zones, ref.zone)
				names = append(names, ref.name)
			}
			slices.Sort(zones)
			slices.Sort(names)
			return r.listByName(ctx, refs[0].project, slices.Compact(zones), slices.Compact(names))
		},
		Get: func(ctx context.Context, ref instanceRef) (*instance, bool, error) {
			in, err := r.api.instances.Get(ctx, &computepb.GetInstanceRequest{Project: ref.project, Zone: ref.zone, Instance: ref.name}, r.api.retry)
			if isNotFound(err) {
				return nil, false, nil
			}
			if err != nil {
				return nil, false, fmt.Errorf("get instance %s: %w", ref.key(), err)
			}
			i := fromInstance(ref.project, in)
			return i, i != nil, nil
		},
	}.Do(ctx, refs)
}

// lookupNames finds instances of the managed zones by name: one filtered
// listing (aggregatedList when several zones are managed) per 100 names.
func (r *instanceReader) lookupNames(ctx context.Context, names []string) (map[string]*instance, error) {
	var want []string
	for _, n := range names {
		if nameRE.MatchString(n) && strings.HasPrefix(n, r.prefix) {
			want = append(want, n)
		}
	}
	out := map[string]*instance{}
	if len(want) == 0 {
		return out, nil
	}
	found, err := r.listByName(ctx, r.project, r.zones, want)
	if err != nil {
		return nil, err
	}
	for _, i := range found {
		if prev, dup := out[i.ref.name]; dup {
			return nil, fmt.Errorf("instances %s and %s are both named %s: give the Node a providerID", prev.ref.key(), i.ref.key(), i.ref.name)
		}
		out[i.ref.name] = i
	}
	return out, nil
}
