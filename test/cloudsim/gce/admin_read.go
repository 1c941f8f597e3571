package gce

import (
	"slices"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// Typed reads for tests: a resource as a GET through the API shows it
// (computed fields such as an address's status included), without
// counting as an API call. Resources whose insert is not DONE are not
// there yet.

// readOne is the resource of collection in loc named name.
func readOne[T proto.Message](e *Emulator, s scope, collection, loc, name string) (T, bool) {
	var zero T
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settle(e.cfg.Now())
	k := e.kinds.get(s, collection)
	o, aerr := e.visible(k, e.objectPath(k, loc, name))
	if aerr != nil {
		return zero, false
	}
	return e.view(o).(T), true
}

// readAll is every visible resource of collection, in creation order.
func readAll[T proto.Message](e *Emulator, s scope, collection string) []T {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settle(e.cfg.Now())
	var out []T
	for _, o := range e.kinds.get(s, collection).store.All() {
		if !o.hidden {
			out = append(out, e.view(o).(T))
		}
	}
	return out
}

// Firewall returns a firewall rule.
func (e *Emulator) Firewall(name string) (*computepb.Firewall, bool) {
	return readOne[*computepb.Firewall](e, scopeGlobal, "firewalls", "", name)
}

// Firewalls returns every firewall rule.
func (e *Emulator) Firewalls() []*computepb.Firewall {
	return readAll[*computepb.Firewall](e, scopeGlobal, "firewalls")
}

// Route returns a route.
func (e *Emulator) Route(name string) (*computepb.Route, bool) {
	return readOne[*computepb.Route](e, scopeGlobal, "routes", "", name)
}

// Routes returns every route, GCE's own included.
func (e *Emulator) Routes() []*computepb.Route {
	return readAll[*computepb.Route](e, scopeGlobal, "routes")
}

// Address returns an address of the region.
func (e *Emulator) Address(name string) (*computepb.Address, bool) {
	return readOne[*computepb.Address](e, scopeRegional, "addresses", e.cfg.Region, name)
}

// Addresses returns every address.
func (e *Emulator) Addresses() []*computepb.Address {
	return readAll[*computepb.Address](e, scopeRegional, "addresses")
}

// InstanceResource returns an instance as the API shows it.
func (e *Emulator) InstanceResource(name string) (*computepb.Instance, bool) {
	e.mu.Lock()
	o := e.instanceByName(name)
	e.mu.Unlock()
	if o == nil {
		return nil, false
	}
	return readOne[*computepb.Instance](e, scopeZonal, "instances", o.location, name)
}

// TargetPool returns a target pool of the region.
func (e *Emulator) TargetPool(name string) (*computepb.TargetPool, bool) {
	return readOne[*computepb.TargetPool](e, scopeRegional, "targetPools", e.cfg.Region, name)
}

// TargetPools returns every target pool.
func (e *Emulator) TargetPools() []*computepb.TargetPool {
	return readAll[*computepb.TargetPool](e, scopeRegional, "targetPools")
}

// ForwardingRule returns a forwarding rule of the region.
func (e *Emulator) ForwardingRule(name string) (*computepb.ForwardingRule, bool) {
	return readOne[*computepb.ForwardingRule](e, scopeRegional, "forwardingRules", e.cfg.Region, name)
}

// ForwardingRules returns every forwarding rule.
func (e *Emulator) ForwardingRules() []*computepb.ForwardingRule {
	return readAll[*computepb.ForwardingRule](e, scopeRegional, "forwardingRules")
}

// HealthCheck returns a global health check.
func (e *Emulator) HealthCheck(name string) (*computepb.HealthCheck, bool) {
	return readOne[*computepb.HealthCheck](e, scopeGlobal, "healthChecks", "", name)
}

// HealthChecks returns every global health check.
func (e *Emulator) HealthChecks() []*computepb.HealthCheck {
	return readAll[*computepb.HealthCheck](e, scopeGlobal, "healthChecks")
}

// RegionHealthCheck returns a health check of the region.
func (e *Emulator) RegionHealthCheck(name string) (*computepb.HealthCheck, bool) {
	return readOne[*computepb.HealthCheck](e, scopeRegional, "healthChecks", e.cfg.Region, name)
}

// RegionHealthChecks returns every regional health check.
func (e *Emulator) RegionHealthChecks() []*computepb.HealthCheck {
	return readAll[*computepb.HealthCheck](e, scopeRegional, "healthChecks")
}

// RegionBackendService returns a backend service of the region.
func (e *Emulator) RegionBackendService(name string) (*computepb.BackendService, bool) {
	return readOne[*computepb.BackendService](e, scopeRegional, "backendServices", e.cfg.Region, name)
}

// RegionBackendServices returns every regional backend service.
func (e *Emulator) RegionBackendServices() []*computepb.BackendService {
	return readAll[*computepb.BackendService](e, scopeRegional, "backendServices")
}

// InstanceGroup returns an instance group of a zone.
func (e *Emulator) InstanceGroup(zone, name string) (*computepb.InstanceGroup, bool) {
	return readOne[*computepb.InstanceGroup](e, scopeZonal, "instanceGroups", zone, name)
}

// InstanceGroups returns every instance group.
func (e *Emulator) InstanceGroups() []*computepb.InstanceGroup {
	return readAll[*computepb.InstanceGroup](e, scopeZonal, "instanceGroups")
}

// InstanceGroupMembers returns the links of an instance group's
// instances in the order they were added, nil if there is no such group.
func (e *Emulator) InstanceGroupMembers(zone, name string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settle(e.cfg.Now())
	k := e.kinds.get(scopeZonal, "instanceGroups")
	o, aerr := e.visible(k, e.objectPath(k, zone, name))
	if aerr != nil {
		return nil
	}
	return slices.Clone(o.members)
}
