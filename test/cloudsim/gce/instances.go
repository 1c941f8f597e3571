package gce

import (
	"net/http"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// Instances through the API: list (per zone, filtered), aggregatedList,
// get, delete, stop, start and updateNetworkInterface (instances_nic.go).
// Instances are made by the admin API (admin_instances.go), as a
// cluster's installer or autoscaler would; instances.insert is not
// emulated. A stopped instance keeps its internal address and its alias
// and IPv6 ranges (aliasranges.go); a deleted one releases them.
//
// Lifecycle as GCE runs it: stop goes STOPPING at once and TERMINATED
// when its operation is DONE, releasing an ephemeral external address
// (the access config stays, without natIP); start goes STAGING and then
// RUNNING with a new ephemeral address; delete goes STOPPING and the
// instance is gone when DONE. Stopping a TERMINATED instance or starting
// a RUNNING one is an operation that changes nothing.

// Instance statuses, as GCE spells them.
const (
	StatusProvisioning   = "PROVISIONING"
	StatusStaging        = "STAGING"
	StatusRunning        = "RUNNING"
	StatusStopping       = "STOPPING"
	StatusSuspending     = "SUSPENDING"
	StatusSuspended      = "SUSPENDED"
	StatusRepairing      = "REPAIRING"
	StatusTerminated     = "TERMINATED"
	StatusPendingStop    = "PENDING_STOP"
	StatusDeprovisioning = "DEPROVISIONING"
)

// instanceStatuses are every status SetStatus accepts.
var instanceStatuses = []string{StatusProvisioning, StatusStaging, StatusRunning, StatusStopping, StatusSuspending,
	StatusSuspended, StatusRepairing, StatusTerminated, StatusPendingStop, StatusDeprovisioning}

func registerInstances(t *kindTable) {
	t.add(&kind{
		Resource: "Instances", Collection: "instances", Scope: scopeZonal, Kind: "compute#instance", Singular: "instance",
		New:           func() proto.Message { return &computepb.Instance{} },
		NewList:       func() proto.Message { return &computepb.InstanceList{} },
		NewAggregated: func() proto.Message { return &computepb.InstanceAggregatedList{} },
		Verbs:         verbGet | verbList | verbDelete,
		Deleting: func(e *Emulator, o *object) {
			o.msg.(*computepb.Instance).Status = proto.String(StatusStopping)
			e.generation++
		},
		Removed: func(e *Emulator, o *object) {
			for _, ip := range instanceIPs(o) {
				e.ips.release(ip, o.path)
			}
			// Its alias and IPv6 ranges, and any an interface change still
			// in progress claimed.
			e.ips.releaseOwner(o.path)
		},
		Refs: instanceRefs,
		Actions: map[string]actionFunc{
			"stop":                   instanceAction("stop", StatusStopping, []string{StatusTerminated}, (*Emulator).stopInstance),
			"start":                  instanceAction("start", StatusStaging, []string{StatusRunning}, (*Emulator).startInstance),
			"updateNetworkInterface": updateNetworkInterface,
		},
	})
}

// instanceIPs are the addresses an instance holds: internal, then
// external.
func instanceIPs(o *object) []string {
	var out []string
	for _, nic := range o.msg.(*computepb.Instance).GetNetworkInterfaces() {
		if nic.NetworkIP != nil {
			out = append(out, nic.GetNetworkIP())
		}
		for _, ac := range nic.GetAccessConfigs() {
			if ac.NatIP != nil {
				out = append(out, ac.GetNatIP())
			}
		}
	}
	return out
}

// instanceRefs: the network and subnetwork, and the address resources
// holding its IPs (an external address promoted to static, an internal
// one reserved first), all blocking.
func instanceRefs(e *Emulator, o *object) []ref {
	var out []ref
	for _, nic := range o.msg.(*computepb.Instance).GetNetworkInterfaces() {
		out = append(out, e.refTo(nic.GetNetwork(), true)...)
		out = append(out, e.refTo(nic.GetSubnetwork(), true)...)
	}
	for _, ip := range instanceIPs(o) {
		if owner := e.ips.owner(ip); owner != "" && owner != o.path {
			out = append(out, ref{Path: owner, Blocks: true})
		}
	}
	return out
}

// instanceAction serves stop or start: the instance goes to interim at
// once and apply runs when the operation is DONE; from one of noop the
// operation changes nothing. A SUSPENDED instance must be resumed, not
// started; other transitional states are not ready.
func instanceAction(opType, interim string, noop []string, apply func(*Emulator, *object)) actionFunc {
	return func(e *Emulator, w http.ResponseWriter, r *http.Request, o *object, op string) {
		if r.Method != http.MethodPost {
			writeError(w, errNotEmulated(op))
			return
		}
		if e.replayed(w, r) {
			return
		}
		if aerr := checkChangeable(o); aerr != nil {
			writeError(w, aerr)
			return
		}
		inst := o.msg.(*computepb.Instance)
		status := inst.GetStatus()
		var change func()
		switch {
		case contains(noop, status):
		case opType == "start" && status == StatusSuspended:
			writeError(w, errInvalid("instance", o.name, "The instance is suspended; resume it instead."))
			return
		case opType == "start" && status != StatusTerminated:
			writeError(w, errNotReady(o.path))
			return
		default:
			inst.Status = proto.String(interim)
			e.generation++
			change = func() {
				if e.stored(o) {
					apply(e, o)
				}
			}
		}
		// A failed stop or start leaves the instance as it was.
		undo := func() { inst.Status = proto.String(status) }
		opObj := e.begin(r, op, o, opType, nil, change, undo)
		writeMessage(w, http.StatusOK, e.view(opObj))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// stored reports whether o is still the stored resource at its path (not
// deleted, by the API or the admin, since an operation began on it).
func (e *Emulator) stored(o *object) bool {
	cur, ok := o.kind.store.Get(o.path)
	return ok && cur == o
}

// stopInstance makes o TERMINATED, releasing its ephemeral external
// address.
func (e *Emulator) stopInstance(o *object) {
	inst := o.msg.(*computepb.Instance)
	inst.Status = proto.String(StatusTerminated)
	inst.LastStopTimestamp = proto.String(e.timestamp(e.cfg.Now()))
	e.releaseExternal(o)
	e.generation++
}

// startInstance makes o RUNNING with an external address for each access
// config that lost its ephemeral one.
func (e *Emulator) startInstance(o *object) {
	inst := o.msg.(*computepb.Instance)
	inst.Status = proto.String(StatusRunning)
	inst.LastStartTimestamp = proto.String(e.timestamp(e.cfg.Now()))
	e.ensureExternal(o)
	e.generation++
}

// releaseExternal drops the external addresses o holds itself; a static
// address (owned by an address resource) stays with the instance, as on
// GCE.
func (e *Emulator) releaseExternal(o *object) {
	for _, nic := range o.msg.(*computepb.Instance).GetNetworkInterfaces() {
		for _, ac := range nic.GetAccessConfigs() {
			if ac.NatIP != nil && e.ips.owner(ac.GetNatIP()) == o.path {
				e.ips.release(ac.GetNatIP(), o.path)
				ac.NatIP = nil
			}
		}
	}
}

// ensureExternal gives every access config without an address a new
// ephemeral one.
func (e *Emulator) ensureExternal(o *object) {
	for _, nic := range o.msg.(*computepb.Instance).GetNetworkInterfaces() {
		for _, ac := range nic.GetAccessConfigs() {
			if ac.NatIP != nil {
				continue
			}
			if ip, ok := e.ips.pool(externalPool).allocate(o.path); ok {
				ac.NatIP = proto.String(ip.String())
			}
		}
	}
}

// internalIP is an instance's first network interface's address.
func internalIP(inst *computepb.Instance) string {
	if nics := inst.GetNetworkInterfaces(); len(nics) > 0 {
		return nics[0].GetNetworkIP()
	}
	return ""
}

// externalIP is an instance's first access config's address.
func externalIP(inst *computepb.Instance) string {
	for _, nic := range inst.GetNetworkInterfaces() {
		for _, ac := range nic.GetAccessConfigs() {
			if ac.NatIP != nil {
				return ac.GetNatIP()
			}
		}
	}
	return ""
}
