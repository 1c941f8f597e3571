// Package hybrid serves the Nodes, load balancers and routes of several
// clouds from one cloudprovider.Interface, and decides which cloud owns
// what: a Node belongs to the cloud its providerID's scheme names, a
// Service's load balancer to the cloud its annotation names (else the
// config's default). A config for one cloud is served the same way with
// one member, so the rules for Nodes of no configured cloud (k3s,
// virtual-kubelet, bare metal: never deleted, never tainted, counted)
// hold there too.
//
// The composite is the first step of the line (providers/compose): it
// is assembled by compose like any backend, and each member is a
// cloud's own line (*compose.Cloud), called through its explicit
// capabilities.
package hybrid

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/compose"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/lbmove"
	"github.com/multicloud-ccm/multicloud-ccm/providers/inventory"
)

const (
	// LabelProvider names a Node's cloud. A kubelet may register with it
	// (--node-labels=multicloud-ccm.io/provider=aws) to place a Node that
	// has no providerID yet; the manager sets it on every Node it
	// initializes.
	LabelProvider = "multicloud-ccm.io/provider"
	// AnnotationLoadBalancerProvider picks the cloud of a LoadBalancer
	// Service's load balancer; default the config's loadBalancerProvider.
	// Changing it moves the load balancer (a new address).
	AnnotationLoadBalancerProvider = "multicloud-ccm.io/load-balancer-provider"
)

// Member is one configured cloud.
type Member struct {
	// Name is the provider's name, which is also its providerID scheme
	// (aws://, azure://, gce://, openstack://).
	Name  string
	Cloud *compose.Cloud
}

// member is a Member with the interfaces it offers.
type member struct {
	name      string
	cloud     *compose.Cloud
	instances cloudprovider.InstancesV2
	lb        cloudprovider.LoadBalancer // nil: none
	routes    cloudprovider.Routes       // nil: not configured
	// instShare and lbShare bound the cloud's calls in flight in a
	// hybrid cluster (share.go); nil for one cloud.
	instShare, lbShare *share
}

// Composite routes each call to the member that owns its Node or Service.
type Composite struct {
	members   []*member
	byName    map[string]*member
	lbDefault string
	unowned   *unownedNodes
	denials   *nodeDenials
	// lbs knows which cloud last made each Service's load balancer.
	lbs *lbmove.Tracker
	// nodes finds a route's target Node by name (routes.go).
	nodes corelisters.NodeLister
}

// New assembles the composite of members (at least one, in the config's
// order); lbDefault names the member whose load balancer a Service gets
// when its annotation names none.
func New(members []Member, lbDefault string) (*compose.Cloud, error) {
	h, err := newComposite(members, lbDefault)
	if err != nil {
		return nil, err
	}
	parts := compose.Parts{
		Name:         h.name(),
		Instances:    &instances{h: h},
		Initialize:   h.initialize,
		SetInformers: h.setInformers,
		Source:       h,
	}
	if h.anyLB() {
		lbs := &loadBalancers{h: h}
		parts.LoadBalancer, parts.Lanes, parts.Routed = lbs, lbs, true
	}
	if h.anyRoutes() {
		parts.Routes = &routes{h: h}
	}
	return compose.New(parts), nil
}

func newComposite(members []Member, lbDefault string) (*Composite, error) {
	if len(members) == 0 {
		return nil, errors.New("hybrid: no cloud")
	}
	h := &Composite{byName: map[string]*member{}, lbDefault: lbDefault, lbs: lbmove.New(lbmove.Options{TrustNoAddress: true, TolerateUnknown: true})}
	for _, m := range members {
		if _, dup := h.byName[m.Name]; dup {
			return nil, fmt.Errorf("hybrid: cloud %q given twice", m.Name)
		}
		in, ok := m.Cloud.InstancesV2()
		if !ok {
			return nil, fmt.Errorf("hybrid: cloud %q serves no InstancesV2", m.Name)
		}
		mm := &member{name: m.Name, cloud: m.Cloud, instances: in}
		if lb, ok := m.Cloud.LoadBalancer(); ok {
			mm.lb = lb
		}
		if rt, ok := m.Cloud.Routes(); ok {
			mm.routes = rt
		}
		h.members = append(h.members, mm)
		h.byName[m.Name] = mm
	}
	if len(h.members) > 1 {
		for _, m := range h.members {
			m.instShare = newShare(m.name, "instance", callShare)
			m.lbShare = newShare(m.name, "load balancer", callShare)
		}
	}
	if _, ok := h.byName[lbDefault]; !ok {
		return nil, fmt.Errorf("hybrid: the default load balancer cloud %q is not one of %s", lbDefault, h.name())
	}
	h.unowned = newUnownedNodes(h.names())
	h.denials = newNodeDenials(h.unowned)
	return h, nil
}

// name is the composite's provider name: "openstack" for one cloud,
// "openstack,aws" for several.
func (h *Composite) name() string { return strings.Join(h.names(), ",") }

func (h *Composite) names() []string {
	out := make([]string, len(h.members))
	for i, m := range h.members {
		out[i] = m.name
	}
	return out
}

func (h *Composite) anyLB() bool {
	return slices.ContainsFunc(h.members, func(m *member) bool { return m.lb != nil })
}

func (h *Composite) anyRoutes() bool {
	return slices.ContainsFunc(h.members, func(m *member) bool { return m.routes != nil })
}

// initialize runs every member's Initialize, and starts the Events about
// Nodes of no configured cloud.
func (h *Composite) initialize(b cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	h.unowned.start(b, stop)
	for _, m := range h.members {
		m.cloud.Initialize(b, stop)
	}
}

// setInformers hands the informers to every member that uses them, and
// watches Nodes for ones no configured cloud owns.
func (h *Composite) setInformers(f informers.SharedInformerFactory) {
	for _, m := range h.members {
		m.cloud.SetInformers(f)
	}
	h.unowned.watch(f)
	h.denials.watch(f)
	h.nodes = f.Core().V1().Nodes().Lister()
}

// providerScheme is the scheme of a providerID ("aws" of "aws:///us-east-1a/i-1"),
// "" when it has none.
func providerScheme(providerID string) string {
	s, _, ok := strings.Cut(providerID, "://")
	if !ok {
		return ""
	}
	return s
}

// errForeign marks a Node of no configured cloud.
var errForeign = errors.New("the Node belongs to no configured cloud")

// placement is where a Node belongs without asking any cloud: its
// providerID's scheme, else its LabelProvider label, else, with one
// cloud, that cloud. nil and no error: ask the clouds by name.
func (h *Composite) placement(node *v1.Node) (*member, error) {
	if s := providerScheme(node.Spec.ProviderID); s != "" {
		if m, ok := h.byName[s]; ok {
			return m, nil
		}
		return nil, fmt.Errorf("node %s has providerID %q, of no configured cloud (%s): %w", node.Name, node.Spec.ProviderID, h.name(), errForeign)
	}
	if name, ok := node.Labels[LabelProvider]; ok {
		if m, ok := h.byName[name]; ok {
			return m, nil
		}
		return nil, fmt.Errorf("node %s has label %s=%s, not a configured cloud (%s): %w", node.Name, LabelProvider, name, h.name(), errForeign)
	}
	if len(h.members) == 1 {
		return h.members[0], nil
	}
	return nil, nil
}

// owner is the member that owns node: by placement, else the one cloud
// that knows an instance of the Node's name (every cloud asked at once,
// through its batched lookups). None is an error wrapping
// cloudprovider.InstanceNotFound (the Node stays tainted and is retried);
// two is an error naming both.
func (h *Composite) owner(ctx context.Context, node *v1.Node) (*member, error) {
	m, err := h.placement(node)
	if m != nil || err != nil {
		return m, err
	}
	type answer struct {
		m   *member
		err error
	}
	answers := make([]answer, len(h.members))
	var wg sync.WaitGroup
	for i, m := range h.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			release, err := m.instShare.acquire(ctx)
			if err == nil {
				_, err = m.instances.InstanceMetadata(ctx, node)
				release()
			}
			answers[i] = answer{m, err}
		}()
	}
	wg.Wait()
	var found []string
	var owner *member
	for _, a := range answers {
		switch {
		case a.err == nil:
			found = append(found, a.m.name)
			owner = a.m
		case errors.Is(a.err, cloudprovider.InstanceNotFound):
		default:
			// Not knowing one cloud's answer could make another's the
			// wrong owner: ask again later.
			return nil, fmt.Errorf("node %s has no providerID and cloud %s could not be asked for it: %w", node.Name, a.m.name, a.err)
		}
	}
	switch len(found) {
	case 1:
		klog.FromContext(ctx).V(2).Info("Placed a Node without providerID by its name", "node", klog.KObj(node), "cloud", owner.name)
		return owner, nil
	case 0:
		return nil, fmt.Errorf("node %s has no providerID and no %s label, and no configured cloud (%s) has an instance of that name: %w",
			node.Name, LabelProvider, h.name(), cloudprovider.InstanceNotFound)
	}
	h.unowned.ambiguous(node, found)
	return nil, fmt.Errorf("node %s has no providerID and clouds %s each have an instance of that name; register it with --provider-id or --node-labels=%s=<cloud>",
		node.Name, strings.Join(found, " and "), LabelProvider)
}

var _ inventory.Source = (*Composite)(nil)

// Inventories implements inventory.Source: the members whose backends list
// their load balancers' parts.
func (h *Composite) Inventories() []inventory.Cloud {
	var out []inventory.Cloud
	for _, m := range h.members {
		if inv, ok := m.cloud.Inventory(); ok {
			out = append(out, inv)
		}
	}
	return out
}

// ServingCloud implements inventory.Source: the cloud the Service's
// annotation names, else the default.
func (h *Composite) ServingCloud(svc *v1.Service) (string, error) {
	m, err := (&loadBalancers{h: h}).pick(svc)
	if err != nil {
		return "", err
	}
	return m.name, nil
}
