package azure

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v6"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/flight"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/snapshot"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/ttlcache"
	"github.com/multicloud-ccm/multicloud-ccm/providers/podcidrs"
)

// The cloud allocator's answer on Azure, as upstream cloud-provider-azure's
// CloudAllocator asks it (pkg/nodeipam/ipam/cloud_cidr_allocator.go:229
// updateNodeSubnetMaskSizes): Azure holds no pod range for a VM, so the
// controller allocates one from --cluster-cidr, of the size the VM's node
// pool names in its tags. The pool is the VM set the VM belongs to:
//   - a uniform scale set instance: its scale set's tags
//     (pkg/provider/azure_vmss.go:2166 ScaleSet.GetNodeCIDRMasksByProviderID);
//   - a flexible scale set's VM: its scale set's tags
//     (azure_vmssflex.go:427);
//   - a VM in an availability set: the set's tags (azure_standard.go:1246);
//   - a VM in no set: none, so the defaults (azure_standard.go:1256,
//     azure_vmssflex.go:439 answer consts.DefaultNodeMaskCIDRIPv4/IPv6,
//     24 and 64, which 0 stands for here: the controller's
//     --node-cidr-mask-size-ipv4/-ipv6, whose defaults those are).
//
// A tag that does not parse as an integer is logged and ignored, as
// upstream's strconv.Atoi failure is (azure_vmss.go:2194-2205): its
// family gets the default. Upstream refuses a mask wider than the cluster
// CIDR's (cloud_cidr_allocator.go:253-260); the controller refuses a mask
// that does not fit, so the number is passed on as it is.
//
// Where upstream cannot find a VM's set it answers the defaults
// (azure_standard.go:1255-1257, azure_vmssflex.go:438-440; a uniform scale
// set's lookup error is logged by cloud_cidr_allocator.go:237-247 and the
// defaults used). Here a VM the snapshot cannot find, or whose set its
// group's listing lacks after one refresh, is an error the controller
// retries: a Node keeps its pod CIDRs for life, so a default it should
// not have had cannot be taken back.
//
// Reading availability sets needs Microsoft.Compute/availabilitySets/read
// on the cluster's resource groups, as upstream's availability set cache
// does.
//
// No call per Node: the VM snapshot records each VM's set (uniform from
// its ID, flexible from properties.virtualMachineScaleSet, availability
// set from properties.availabilitySet), and the sets' masks come from one
// scale set listing and one availability set listing per resource group,
// kept for the instance cache TTL (poolTags). With vmType vmss the
// snapshot's own scale set listing fills the scale set half, so a pool of
// uniform scale set instances costs no listing beyond the snapshot's.

// Upstream's tag keys (pkg/consts/consts.go:113-115). MUST NOT change: they
// are on node pools' scale sets and availability sets already.
const (
	tagNodeCIDRMaskIPv4 = "kubernetesNodeCIDRMaskIPV4"
	tagNodeCIDRMaskIPv6 = "kubernetesNodeCIDRMaskIPV6"
)

var _ podcidrs.Allocator = (*instances)(nil)

// PodCIDRs implements podcidrs.Allocator: both families are allocated
// from the cluster CIDR, sized by the VM's node pool's tags (0: the
// controller's default); the route controller routes them, so
// CloudRouted is false. A Node whose VM is not found, or whose set the
// listings lack, is an error, retried.
func (in *instances) PodCIDRs(ctx context.Context, node *v1.Node) (podcidrs.Answer, error) {
	v, err := in.Lookup(ctx, node)
	if err != nil {
		return podcidrs.Answer{}, err
	}
	m, err := in.pools.masks(ctx, v)
	if err != nil {
		return podcidrs.Answer{}, fmt.Errorf("node %s: %w", node.Name, err)
	}
	return podcidrs.Answer{
		IPv4: podcidrs.Family{Allocate: true, Mask: m.ipv4},
		IPv6: podcidrs.Family{Allocate: true, Mask: m.ipv6},
	}, nil
}

// poolKind is the kind of VM set a VM belongs to, which says the listing
// that holds the set's tags.
type poolKind uint8

const (
	// poolNone: a standalone VM; upstream's defaults.
	poolNone poolKind = iota
	// poolScaleSet: a uniform or flexible scale set, both listed by
	// VirtualMachineScaleSets_List.
	poolScaleSet
	// poolAvailabilitySet: listed by AvailabilitySets_List.
	poolAvailabilitySet
)

func (k poolKind) String() string {
	switch k {
	case poolScaleSet:
		return "scale set"
	case poolAvailabilitySet:
		return "availability set"
	}
	return "none"
}

// pool is the VM set a VM belongs to: its node pool.
type pool struct {
	kind poolKind
	// rg and name are lower-cased: ARM writes a VM's availability set
	// ID upper-cased, and names and groups are case-insensitive.
	rg, name string
}

// poolOf is the set whose resource ID is id ("" is none), of kind k.
func poolOf(k poolKind, id string) pool {
	rg, name, ok := resourceGroupAndName(id)
	if !ok {
		return pool{}
	}
	return pool{kind: k, rg: strings.ToLower(rg), name: strings.ToLower(name)}
}

// vmPool is a VM's set: its flexible scale set, else its availability
// set (ARM lets a VM be in one of them at most).
func vmPool(p *armcompute.VirtualMachineProperties) pool {
	if p.VirtualMachineScaleSet != nil && p.VirtualMachineScaleSet.ID != nil {
		return poolOf(poolScaleSet, *p.VirtualMachineScaleSet.ID)
	}
	if p.AvailabilitySet != nil && p.AvailabilitySet.ID != nil {
		return poolOf(poolAvailabilitySet, *p.AvailabilitySet.ID)
	}
	return pool{}
}

// poolMasks are a set's mask tags, parsed; 0 is "not tagged" (or not an
// integer).
type poolMasks struct{ ipv4, ipv6 int }

// poolListing is one listing of a resource group's sets of one kind.
type poolListing struct {
	// gen is the generation taken as the listing began (poolTags.gen).
	gen   uint64
	masks map[string]poolMasks
}

// poolTags keeps the sets' masks from their listings, per kind and
// resource group, for the instance cache TTL: N Nodes joining cost at most
// one listing of each kind per resource group per TTL, shared by the
// Nodes asking at once.
//
// A set the cached listing lacks may be newer than the listing (a node
// pool made since): as upstream refreshes its scale set cache when a set
// is missing (azure_vmss.go:198-201 getVMSS), the group is listed again,
// but only when the cached listing began before the VM was described, so
// the refresh happens once per new pool, not once per Node. gen orders
// the two: a counter taken as each listing begins and as each VM is
// described, which works on any clock (the tests' fake one included).
type poolTags struct {
	api   *clients
	cache *ttlcache.Cache[poolListing]
	fill  flight.Group[poolListing]
	gen   atomic.Uint64
	// mu keeps a listing that began earlier from replacing a later one.
	mu sync.Mutex
}

func newPoolTags(api *clients, ttl time.Duration, clk clock.Clock) *poolTags {
	if ttl <= 0 {
		// The snapshot's own default: a section without defaults set.
		ttl = snapshot.DefaultTTL
	}
	return &poolTags{api: api, cache: ttlcache.New[poolListing](ttl, clk)}
}

// begin is the generation of a listing beginning now.
func (p *poolTags) begin() uint64 { return p.gen.Add(1) }

// described is the generation a VM described now records: every listing
// begun so far has a generation at most this.
func (p *poolTags) described() uint64 { return p.gen.Load() }

func poolCacheKey(k poolKind, rg string) string {
	return strconv.Itoa(int(k)) + "/" + strings.ToLower(rg)
}

// put keeps a listing of rg's sets of kind k, unless a later one is kept.
func (p *poolTags) put(k poolKind, rg string, l poolListing) {
	key := poolCacheKey(k, rg)
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur, ok := p.cache.Get(key); ok && cur.gen > l.gen {
		return
	}
	p.cache.Set(key, l)
}

// masks are v's pool's masks.
func (p *poolTags) masks(ctx context.Context, v *vm) (poolMasks, error) {
	if v.pool.kind == poolNone {
		return poolMasks{}, nil
	}
	l, err := p.listing(ctx, v.pool, 0)
	if err != nil {
		return poolMasks{}, err
	}
	if m, ok := l.masks[v.pool.name]; ok {
		return m, nil
	}
	if l.gen <= v.gen {
		// The listing may predate the set: list once more.
		if l, err = p.listing(ctx, v.pool, v.gen); err != nil {
			return poolMasks{}, err
		}
		if m, ok := l.masks[v.pool.name]; ok {
			return m, nil
		}
	}
	// The VM names a set its group's listing lacks: it is on its way
	// out with its set, or ARM's lists lag. Answering the defaults would
	// give the Node a range it keeps for life, so it is retried.
	return poolMasks{}, fmt.Errorf("the %s %s/%s of VM %s is not in its resource group's listing", v.pool.kind, v.pool.rg, v.pool.name, v.id)
}

// listing is the kept listing of pl's kind and group, or a new one,
// begun after generation after.
func (p *poolTags) listing(ctx context.Context, pl pool, after uint64) (poolListing, error) {
	key := poolCacheKey(pl.kind, pl.rg)
	if l, ok := p.cache.Get(key); ok && l.gen > after {
		return l, nil
	}
	// Two rounds at most: a listing joined in the first may have begun
	// before after, but any running in the second began once the first
	// was over, after the VM was described.
	var l poolListing
	var err error
	for range 2 {
		l, err = p.fill.Do(ctx, key, func(ctx context.Context) (poolListing, error) { return p.list(ctx, pl.kind, pl.rg) })
		if err != nil || l.gen > after {
			break
		}
	}
	return l, err
}

// list lists rg's sets of kind k and keeps their masks.
func (p *poolTags) list(ctx context.Context, k poolKind, rg string) (poolListing, error) {
	l := poolListing{gen: p.begin(), masks: map[string]poolMasks{}}
	switch k {
	case poolScaleSet:
		pg := p.api.scaleSets.NewListPager(rg, nil)
		for pg.More() {
			page, err := pg.NextPage(ctx)
			if err != nil {
				return poolListing{}, fmt.Errorf("list scale sets in %s: %w", rg, err)
			}
			for _, ss := range page.Value {
				if ss.Name != nil {
					l.masks[strings.ToLower(*ss.Name)] = parseMasks(ctx, k, rg, *ss.Name, ss.Tags)
				}
			}
		}
	case poolAvailabilitySet:
		pg := p.api.availabilitySets.NewListPager(rg, nil)
		for pg.More() {
			page, err := pg.NextPage(ctx)
			if err != nil {
				return poolListing{}, fmt.Errorf("list availability sets in %s: %w", rg, err)
			}
			for _, as := range page.Value {
				if as.Name != nil {
					l.masks[strings.ToLower(*as.Name)] = parseMasks(ctx, k, rg, *as.Name, as.Tags)
				}
			}
		}
	default:
		return poolListing{}, fmt.Errorf("no listing of VM sets of kind %s", k)
	}
	p.put(k, rg, l)
	return l, nil
}

// parseMasks reads a set's mask tags as upstream does (azure_vmss.go:
// 2194-2205): an absent tag is 0, one that is not an integer is logged
// and 0. Parsed as the set is listed, so a bad tag is logged once per
// listing, not once per Node.
func parseMasks(ctx context.Context, k poolKind, rg, name string, tags map[string]*string) poolMasks {
	one := func(key string) int {
		v, ok := tags[key]
		if !ok || v == nil {
			return 0
		}
		n, err := strconv.Atoi(*v)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Ignoring a node pool's mask tag that is not an integer; its Nodes get the default mask",
				"kind", k.String(), "resourceGroup", rg, "name", name, "tag", key, "value", *v)
			return 0
		}
		return n
	}
	return poolMasks{ipv4: one(tagNodeCIDRMaskIPv4), ipv6: one(tagNodeCIDRMaskIPv6)}
}
