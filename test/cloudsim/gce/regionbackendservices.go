package gce

import (
	"fmt"
	"slices"
	"strconv"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// Regional backend services of internal passthrough load balancers: insert,
// get, list, delete, patch and update. What GCE requires of one is kept:
// loadBalancingScheme INTERNAL (the default here; other schemes are not
// emulated), protocol TCP (default) or UDP, exactly one health check,
// global or of the region (GCE lets an internal passthrough load
// balancer's backend service use either, but not a legacy HTTP one),
// backends that are instance groups of the region, each once (GCE's
// "Duplicate instance groups in backend service."), with balancingMode
// CONNECTION (the default, and the only mode of the scheme), and a
// session affinity the scheme has. GCE's defaults are filled in
// (sessionAffinity NONE, timeoutSec 30, connectionDraining 0 s).
//
// A change must carry the current fingerprint, else 412 conditionNotMet:
// an update always sends the whole resource, so one without it is stale;
// a patch that leaves it out keeps the stored one. Every change gets a
// new fingerprint. The protocol cannot change under a forwarding rule of
// another protocol. usedBy lists the forwarding rules using the service.
// Its health check and instance groups cannot be deleted while it uses
// them; it cannot be deleted while a forwarding rule uses it.

func registerRegionBackendServices(t *kindTable) {
	t.add(&kind{
		Resource: "RegionBackendServices", Collection: "backendServices", Scope: scopeRegional, Kind: "compute#backendService",
		Singular: "backend_service",
		New:      func() proto.Message { return &computepb.BackendService{} },
		NewList:  func() proto.Message { return &computepb.BackendServiceList{} },
		Verbs:    verbsCRUD | verbPatch | verbUpdate,
		Prepare:  prepareBackendService,
		View: func(e *Emulator, o *object, m proto.Message) {
			bs := m.(*computepb.BackendService)
			bs.UsedBy = nil
			for _, u := range e.users(o.path, true) {
				bs.UsedBy = append(bs.UsedBy, &computepb.BackendServiceUsedBy{Reference: proto.String(link(u))})
			}
		},
		Refs: func(e *Emulator, o *object) []ref {
			bs := o.msg.(*computepb.BackendService)
			out := e.refsTo(bs.GetHealthChecks(), true)
			for _, b := range bs.GetBackends() {
				out = append(out, e.refTo(b.GetGroup(), true)...)
			}
			return append(out, e.refTo(bs.GetNetwork(), true)...)
		},
	})
}

// internalAffinities are the session affinities of the INTERNAL scheme.
var internalAffinities = []string{"NONE", "CLIENT_IP", "CLIENT_IP_PROTO", "CLIENT_IP_PORT_PROTO"}

func prepareBackendService(e *Emulator, c *change) *apiError {
	bs := c.Msg.(*computepb.BackendService)
	bs.UsedBy = nil
	if old, ok := c.Old.(*computepb.BackendService); ok && bs.GetFingerprint() != old.GetFingerprint() {
		return errConditionNotMet("backend service " + c.Obj.name)
	}
	switch s := bs.GetLoadBalancingScheme(); s {
	case "":
		bs.LoadBalancingScheme = proto.String(schemeInternal)
	case schemeInternal:
	default:
		return errInvalid("resource.loadBalancingScheme", s, "cloudsim emulates INTERNAL backend services only.")
	}
	switch p := bs.GetProtocol(); p {
	case "":
		bs.Protocol = proto.String("TCP")
	case "TCP", "UDP":
	default:
		return errInvalid("resource.protocol", p, "An INTERNAL backend service's protocol is TCP or UDP.")
	}
	switch a := bs.GetSessionAffinity(); {
	case a == "":
		bs.SessionAffinity = proto.String("NONE")
	case !slices.Contains(internalAffinities, a):
		return errInvalid("resource.sessionAffinity", a, "Must be NONE, CLIENT_IP, CLIENT_IP_PROTO or CLIENT_IP_PORT_PROTO.")
	}
	if len(bs.GetHealthChecks()) != 1 {
		return errInvalid("resource.healthChecks", fmt.Sprint(bs.GetHealthChecks()), "An INTERNAL backend service has exactly one health check.")
	}
	// Global and regional health checks are both the collection
	// healthChecks; a legacy httpHealthChecks one is refused.
	hc, aerr := e.requireRef("resource.healthChecks[0]", bs.HealthChecks[0], "healthChecks")
	if aerr != nil {
		return aerr
	}
	bs.HealthChecks[0] = hc
	// An async refusal (an instance in two load-balanced groups) fails the
	// operation of a call that is otherwise valid, so it is kept for last.
	lbErr := e.prepareBackends(c.Obj, bs)
	if lbErr != nil && !lbErr.async {
		return lbErr
	}
	if bs.Network != nil {
		l, aerr := e.requireRef("resource.network", bs.GetNetwork(), "networks")
		if aerr != nil {
			return aerr
		}
		bs.Network = proto.String(l)
	}
	if bs.TimeoutSec == nil {
		bs.TimeoutSec = proto.Int32(30)
	}
	if bs.ConnectionDraining == nil {
		bs.ConnectionDraining = &computepb.ConnectionDraining{DrainingTimeoutSec: proto.Int32(0)}
	}
	if c.Old != nil && bs.GetProtocol() != c.Old.(*computepb.BackendService).GetProtocol() {
		for _, u := range e.users(c.Obj.path, true) {
			if fr := e.objectAt(u); fr != nil && getString(fr.msg, "IPProtocol") != bs.GetProtocol() {
				return errInvalid("resource.protocol", bs.GetProtocol(), "The forwarding rule "+link(u)+" uses this backend service with another protocol.")
			}
		}
	}
	bs.Fingerprint = proto.String(fingerprint(c.Obj.path + "/" + strconv.FormatUint(e.newID(), 10)))
	return lbErr
}

// prepareBackends normalises and checks the backends of o, a backend
// service. A group must have a network, which an unmanaged group gets
// with its first instance, and making the groups load-balanced must not
// put an instance in two load-balanced groups (instancegroups.go).
func (e *Emulator) prepareBackends(o *object, bs *computepb.BackendService) *apiError {
	var groups []*object
	lb := e.loadBalancedGroups(o.path)
	for i, b := range bs.GetBackends() {
		field := fmt.Sprintf("resource.backends[%d]", i)
		l, aerr := e.requireRef(field+".group", b.GetGroup(), "instanceGroups")
		if aerr != nil {
			return aerr
		}
		g := e.lookup(l)
		if slices.Contains(groups, g) {
			// GCE's own words for this.
			return errInvalid(field+".group", l, "Duplicate instance groups in backend service.")
		}
		if g.msg.(*computepb.InstanceGroup).Network == nil {
			return errInvalid(field+".group", l, "The instance group has no network yet; it gets one with its first instance.")
		}
		groups = append(groups, g)
		lb[g.path] = true
		b.Group = proto.String(l)
		switch m := b.GetBalancingMode(); m {
		case "":
			b.BalancingMode = proto.String("CONNECTION")
		case "CONNECTION":
		default:
			return errInvalid(field+".balancingMode", m, "An INTERNAL backend service balances by CONNECTION.")
		}
	}
	for _, g := range groups {
		if aerr := e.lbConflict(g.path, g.members, lb); aerr != nil {
			return aerr
		}
	}
	return nil
}
