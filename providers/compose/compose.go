// Package compose is the assembly line between the manager's
// controllers and the cloud backends: the one place a cloud is put
// together from a backend's parts, and the steps a load-balancer call
// walks from the service controller to the cloud, each owning one
// decision:
//
//  1. the hybrid composite (compose/hybrid) picks the cloud that serves
//     the Service (with one cloud configured, that cloud);
//  2. the gate (gate.go) admits the Service or refuses it for an
//     upstream annotation this cloud does not serve, and warns about the
//     ones it ignores;
//  3. the serializer (compose/lbserial) gives each Service one call at a
//     time, skips a call a newer one makes moot, and keeps the records
//     drift repair reads;
//  4. the backend makes the cloud calls.
//
// The registry (providers.Registry.NewCloud) builds the line once: a
// *Cloud per configured cloud (New: steps 2-4), and the composite of
// them (step 1), itself a *Cloud. The controllers get the concrete type
// and call its capabilities (Inventory, InventorySource, the lanes) by
// name; nothing is found by asserting anonymous interfaces.
//
// Every backend offers the same shape (InstancesV2 only, no legacy
// Instances, Zones or Clusters; a cluster ID always; routes only when
// configured), so the plumbing lives here once instead of in each
// backend's cloud.go.
package compose

import (
	"reflect"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/multicloud-ccm/multicloud-ccm/providers/compose/lbserial"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/upstreamann"
	"github.com/multicloud-ccm/multicloud-ccm/providers/inventory"
)

// Parts are what a backend is made of.
type Parts struct {
	// Name is the provider's name, the cloud-config's provider value.
	Name string
	// Instances serve the node and node-lifecycle controllers.
	Instances cloudprovider.InstancesV2
	// LoadBalancer serves the service controller; nil for none. New
	// puts the gate and the per-Service serializer (lbserial) in front
	// of it, unless Routed.
	LoadBalancer cloudprovider.LoadBalancer
	// Routed says LoadBalancer only routes each call to a cloud that is
	// itself assembled by New (the hybrid composite), whose own gate and
	// lbserial stand in its line: a second pair around the router would
	// only double the bookkeeping.
	Routed bool
	// Routes serve the route controller; nil when routes are not
	// configured (the manager then does not run it).
	Routes cloudprovider.Routes
	// Initialize runs once leadership is won, before the controllers
	// start; nil for nothing to do.
	Initialize func(cloudprovider.ControllerClientBuilder, <-chan struct{})
	// SetInformers receives the manager's shared informer factory; nil
	// when the backend needs none.
	SetInformers func(informers.SharedInformerFactory)
	// UpstreamAnnotations is the backend's table of the upstream CCM's
	// Service annotations, which the gate applies: the backend sets it
	// when it depends on the cloud-config (AWS: which Services get
	// Classic ELBs), else the registry sets the registered one. nil: no
	// gate.
	UpstreamAnnotations *upstreamann.Table
	// Inventory lists the backend's load-balancer resources for drift
	// repair and orphan cleanup (controllers/lbrepair,
	// controllers/orphans); nil while the backend has none.
	Inventory inventory.Inventory
	// Source is what the manager's own controllers ask the assembled
	// cloud (the hybrid composite gives it); nil for none.
	Source inventory.Source
	// Lanes tell the service controller which cloud serves each
	// Service's load balancer and with which Nodes (the hybrid composite
	// gives them); nil: one cloud with every Node.
	Lanes Lanes
}

// Lanes is what the service controller (controllers/service) asks of a
// cloud that serves several clouds' load balancers, each on its own
// queue.
type Lanes interface {
	LoadBalancerLanes() []string
	LoadBalancerLane(svc *v1.Service) string
	LaneNodes(lane string, nodes []*v1.Node) []*v1.Node
	LanesInUse()
}

// Cloud is a cloudprovider.Interface assembled from Parts.
type Cloud struct {
	parts Parts
	// lb is the line's load balancer: the gate, then serial, then the
	// backend's (or, Routed, the composite's router alone).
	lb cloudprovider.LoadBalancer
	// serial is the backend's load balancer serialized per Service; nil
	// without one.
	serial *lbserial.LoadBalancer
	// gate applies the upstream annotation table; nil without one.
	gate *gate
}

var (
	_ cloudprovider.Interface    = (*Cloud)(nil)
	_ cloudprovider.InformerUser = (*Cloud)(nil)
)

// New assembles p. A part given as a typed nil pointer (a backend's
// unset *routes) counts as absent, so Routes reports unsupported rather
// than handing the controller a nil receiver.
func New(p Parts) *Cloud {
	if isNil(p.LoadBalancer) {
		p.LoadBalancer = nil
	}
	if isNil(p.Routes) {
		p.Routes = nil
	}
	if isNil(p.Inventory) {
		p.Inventory = nil
	}
	c := &Cloud{parts: p}
	switch {
	case p.LoadBalancer != nil && p.Routed:
		c.lb = p.LoadBalancer
	case p.LoadBalancer != nil:
		c.serial = lbserial.Wrap(p.LoadBalancer)
		c.lb = c.serial
		if p.UpstreamAnnotations != nil {
			c.gate = newGate(p.UpstreamAnnotations)
			c.lb = &gatedLB{LoadBalancer: c.serial, gate: c.gate}
		}
	}
	return c
}

func isNil(v any) bool {
	if v == nil {
		return true
	}
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return r.IsNil()
	}
	return false
}

// LoadBalancerLanes are the clouds that serve load balancers, one lane
// each in the service controller.
func (c *Cloud) LoadBalancerLanes() []string {
	if c.parts.Lanes == nil || c.lb == nil {
		return []string{c.parts.Name}
	}
	return c.parts.Lanes.LoadBalancerLanes()
}

// LoadBalancerLane is the cloud that serves svc's load balancer.
func (c *Cloud) LoadBalancerLane(svc *v1.Service) string {
	if c.parts.Lanes == nil {
		return c.parts.Name
	}
	return c.parts.Lanes.LoadBalancerLane(svc)
}

// LaneNodes are the nodes lane's load balancers can use.
func (c *Cloud) LaneNodes(lane string, nodes []*v1.Node) []*v1.Node {
	if c.parts.Lanes == nil {
		return nodes
	}
	return c.parts.Lanes.LaneNodes(lane, nodes)
}

// LanesInUse passes the service controller's word on to the lanes.
func (c *Cloud) LanesInUse() {
	if c.parts.Lanes != nil {
		c.parts.Lanes.LanesInUse()
	}
}

// Parts are the parts c was assembled from.
func (c *Cloud) Parts() Parts { return c.parts }

// Initialize implements cloudprovider.Interface: the gate's Event
// recorder, then the backend's.
func (c *Cloud) Initialize(b cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	if c.gate != nil {
		c.gate.start(b, stop)
	}
	if c.parts.Initialize != nil {
		c.parts.Initialize(b, stop)
	}
}

// SetInformers implements cloudprovider.InformerUser.
func (c *Cloud) SetInformers(f informers.SharedInformerFactory) {
	if c.parts.SetInformers != nil {
		c.parts.SetInformers(f)
	}
}

// ProviderName implements cloudprovider.Interface.
func (c *Cloud) ProviderName() string { return c.parts.Name }

// HasClusterID is true: clusterID is required in the cloud-config, and
// every backend names or tags what it makes with it.
func (c *Cloud) HasClusterID() bool { return true }

// InstancesV2 serves the node controllers.
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) {
	return c.parts.Instances, c.parts.Instances != nil
}

// Instances is not offered: InstancesV2 replaces it.
func (c *Cloud) Instances() (cloudprovider.Instances, bool) { return nil, false }

// Zones is not offered: InstancesV2 reports zones.
func (c *Cloud) Zones() (cloudprovider.Zones, bool) { return nil, false }

// Clusters is not offered.
func (c *Cloud) Clusters() (cloudprovider.Clusters, bool) { return nil, false }

// LoadBalancer serves the service controller: the gate, then one
// Service's calls at a time.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return c.lb, c.lb != nil }

// Routes serves the route controller when routes are configured.
func (c *Cloud) Routes() (cloudprovider.Routes, bool) { return c.parts.Routes, c.parts.Routes != nil }

// Inventory is the backend's inventory with what its serialized load
// balancer knows of the syncs; false when it has no inventory or no load
// balancers. A repair re-ensures only a Service that synced, so one the
// gate admitted before: it goes to the serializer directly.
func (c *Cloud) Inventory() (inventory.Cloud, bool) {
	if c.parts.Inventory == nil || c.serial == nil {
		return inventory.Cloud{}, false
	}
	return inventory.Cloud{
		Name:      c.parts.Name,
		Inventory: c.parts.Inventory,
		LastSync: func(svc types.NamespacedName) (inventory.Sync, bool) {
			at, ensured, ok := c.serial.LastSync(svc.Namespace, svc.Name)
			return inventory.Sync{At: at, EnsuredAt: ensured}, ok
		},
		Repair: c.serial.EnsureIf,
	}, true
}

// InventorySource is what the manager's own controllers ask; nil when
// the assembled cloud offers nothing.
func (c *Cloud) InventorySource() inventory.Source { return c.parts.Source }

// PartsOf is a backend constructor's result as parts, for
// providers.Backend.New: return compose.PartsOf(New(ctx, cc)).
func PartsOf[B interface{ Parts() Parts }](b B, err error) (Parts, error) {
	if err != nil {
		return Parts{}, err
	}
	return b.Parts(), nil
}
