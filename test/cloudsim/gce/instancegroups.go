package gce

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// Zonal unmanaged instance groups, the backends of an INTERNAL backend
// service: insert, get, list, aggregatedList, delete, and the custom
// methods addInstances, removeInstances, listInstances (instancegroups_list.go)
// and setNamedPorts. namedPorts are optional.
//
// Membership is checked as GCE checks it. An instance must exist, be in
// the group's zone and in its network: the group's network (and
// subnetwork) are those of the first instance added unless given at
// insert, since an empty unmanaged group has none on GCE. Adding a member
// is GCE's 400 memberAlreadyExists ("Resource '...' is already a member
// of '...'."). Removing an instance the group does not hold is 404
// notFound, which upstream's CCM ignores when it removes nodes. An
// instance may belong to one load-balanced group only (one a backend
// service uses): adding it to a second, or making a second one
// load-balanced, fails the operation with GCE's
// INSTANCE_IN_MULTIPLE_LOAD_BALANCED_IGS. A deleted instance leaves its
// groups. size counts the members.

func registerInstanceGroups(t *kindTable) {
	t.add(&kind{
		Resource: "InstanceGroups", Collection: "instanceGroups", Scope: scopeZonal, Kind: "compute#instanceGroup",
		Singular:      "instance_group",
		New:           func() proto.Message { return &computepb.InstanceGroup{} },
		NewList:       func() proto.Message { return &computepb.InstanceGroupList{} },
		NewAggregated: func() proto.Message { return &computepb.InstanceGroupAggregatedList{} },
		Verbs:         verbsCRUD,
		Prepare:       prepareInstanceGroup,
		View: func(e *Emulator, o *object, m proto.Message) {
			m.(*computepb.InstanceGroup).Size = proto.Int32(int32(len(o.members)))
		},
		Refs: func(e *Emulator, o *object) []ref {
			ig := o.msg.(*computepb.InstanceGroup)
			out := e.refsTo(o.members, false)
			return append(out, e.refsTo([]string{ig.GetNetwork(), ig.GetSubnetwork()}, true)...)
		},
		Forget: func(e *Emulator, o *object, gone string) {
			o.members = slices.DeleteFunc(slices.Clone(o.members), func(l string) bool { return l == link(gone) })
		},
		Actions: map[string]actionFunc{
			"addInstances":    customAction("addInstances", newMsg[computepb.InstanceGroupsAddInstancesRequest], planAddInstances),
			"removeInstances": customAction("removeInstances", newMsg[computepb.InstanceGroupsRemoveInstancesRequest], planRemoveInstances),
			"setNamedPorts":   customAction("setNamedPorts", newMsg[computepb.InstanceGroupsSetNamedPortsRequest], planSetNamedPorts),
			"listInstances":   listGroupInstances,
		},
	})
}

func prepareInstanceGroup(e *Emulator, c *change) *apiError {
	ig := c.Msg.(*computepb.InstanceGroup)
	if aerr := checkNamedPorts(ig.GetNamedPorts()); aerr != nil {
		return aerr
	}
	if ig.Subnetwork != nil {
		l, aerr := e.requireRef("resource.subnetwork", ig.GetSubnetwork(), "subnetworks")
		if aerr != nil {
			return aerr
		}
		ig.Subnetwork = proto.String(l)
		network := e.lookup(l).msg.(*computepb.Subnetwork).GetNetwork()
		if ig.Network == nil {
			ig.Network = proto.String(network)
		}
		if n, _ := e.refPath(ig.GetNetwork()); link(n) != network {
			return errInvalid("resource.subnetwork", ig.GetSubnetwork(), "The subnetwork is not in the group's network.")
		}
	}
	if ig.Network != nil {
		l, aerr := e.requireRef("resource.network", ig.GetNetwork(), "networks")
		if aerr != nil {
			return aerr
		}
		ig.Network = proto.String(l)
	}
	ig.Size = proto.Int32(0)
	ig.Fingerprint = proto.String(fingerprint(c.Obj.path + "/" + strconv.FormatUint(getUint64(ig, "id"), 10)))
	return nil
}

func checkNamedPorts(ports []*computepb.NamedPort) *apiError {
	for i, np := range ports {
		if !nameRE.MatchString(np.GetName()) {
			return errInvalid(fmt.Sprintf("resource.namedPorts[%d].name", i), np.GetName(), "Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'")
		}
		if p := np.GetPort(); p < 1 || p > 65535 {
			return errInvalid(fmt.Sprintf("resource.namedPorts[%d].port", i), fmt.Sprint(p), "Must be between 1 and 65535.")
		}
	}
	return nil
}

func planAddInstances(e *Emulator, o *object, req *computepb.InstanceGroupsAddInstancesRequest) (func(), *apiError) {
	links, aerr := e.memberLinks(req.GetInstances(), true)
	if aerr != nil {
		return nil, aerr
	}
	ig, applyMsg := editCopy[*computepb.InstanceGroup](o)
	members := slices.Clone(o.members)
	for i, l := range links {
		field := fmt.Sprintf("resource.instances[%d].instance", i)
		inst := e.lookup(l)
		if inst.location != o.location {
			return nil, errInvalid(field, l, "The instance is in zone "+inst.location+", the instance group in "+o.location+".")
		}
		var nic *computepb.NetworkInterface
		if nics := inst.msg.(*computepb.Instance).GetNetworkInterfaces(); len(nics) > 0 {
			nic = nics[0]
		}
		if ig.Network == nil {
			ig.Network, ig.Subnetwork = proto.String(nic.GetNetwork()), proto.String(nic.GetSubnetwork())
		}
		if nic.GetNetwork() != ig.GetNetwork() || ig.Subnetwork != nil && nic.GetSubnetwork() != ig.GetSubnetwork() {
			return nil, errInvalid(field, l, "All instances of an instance group must be in its network and subnetwork.")
		}
		if slices.Contains(members, l) {
			return nil, &apiError{Status: http.StatusBadRequest, Reason: "memberAlreadyExists",
				Message: fmt.Sprintf("Resource '%s' is already a member of '%s'.", inst.path, o.path)}
		}
		members = append(members, l)
	}
	if lb := e.loadBalancedGroups(""); lb[o.path] {
		if aerr := e.lbConflict(o.path, members, lb); aerr != nil {
			return nil, aerr
		}
	}
	return func() {
		applyMsg()
		o.members = members
	}, nil
}

func planRemoveInstances(e *Emulator, o *object, req *computepb.InstanceGroupsRemoveInstancesRequest) (func(), *apiError) {
	links, aerr := e.memberLinks(req.GetInstances(), false)
	if aerr != nil {
		return nil, aerr
	}
	members := slices.Clone(o.members)
	for _, l := range links {
		i := slices.Index(members, l)
		if i < 0 {
			p, _ := e.refPath(l)
			return nil, errNotFound(p)
		}
		members = slices.Delete(members, i, i+1)
	}
	return func() { o.members = members }, nil
}

func planSetNamedPorts(e *Emulator, o *object, req *computepb.InstanceGroupsSetNamedPortsRequest) (func(), *apiError) {
	ig, apply := editCopy[*computepb.InstanceGroup](o)
	if f := req.Fingerprint; f != nil && *f != ig.GetFingerprint() {
		return nil, errConditionNotMet("instance group " + o.name)
	}
	if aerr := checkNamedPorts(req.GetNamedPorts()); aerr != nil {
		return nil, aerr
	}
	ig.NamedPorts = req.GetNamedPorts()
	ig.Fingerprint = proto.String(fingerprint(o.path + "/" + strconv.FormatUint(e.newID(), 10)))
	return apply, nil
}

// loadBalancedGroups are the paths of the instance groups backend
// services use, but the one at except.
func (e *Emulator) loadBalancedGroups(except string) map[string]bool {
	out := map[string]bool{}
	for _, o := range e.kinds.get(scopeRegional, "backendServices").store.All() {
		if o.path == except {
			continue
		}
		for _, b := range o.msg.(*computepb.BackendService).GetBackends() {
			if p, ok := e.refPath(b.GetGroup()); ok {
				out[p] = true
			}
		}
	}
	return out
}

// lbConflict fails the operation when one of members, the instances of
// the load-balanced group at path, is in another load-balanced group.
func (e *Emulator) lbConflict(path string, members []string, lb map[string]bool) *apiError {
	for _, g := range e.kinds.get(scopeZonal, "instanceGroups").store.All() {
		if g.path == path || !lb[g.path] {
			continue
		}
		for _, m := range members {
			if slices.Contains(g.members, m) {
				p, _ := e.refPath(m)
				return &apiError{Status: http.StatusBadRequest, Reason: "instanceInMultipleLoadBalancedIgs", async: true,
					opCode:  "INSTANCE_IN_MULTIPLE_LOAD_BALANCED_IGS",
					Message: fmt.Sprintf("Validation failed for instance '%s': instance may belong to at most one load-balanced instance group.", p)}
			}
		}
	}
	return nil
}
