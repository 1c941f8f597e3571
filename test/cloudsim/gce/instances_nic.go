package gce

import (
	"fmt"
	"net/http"
	"slices"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// instances.updateNetworkInterface: PATCH
// .../instances/{name}/updateNetworkInterface?networkInterface=nic0 with
// a NetworkInterface, answered with an Operation; what a node-ipam
// controller uses to give a Node's instance an alias IP range, or a test
// to move one.
//
// As on GCE the body must carry the interface's current fingerprint:
// none is 400 required, a stale one 412 conditionNotMet (so two writers
// cannot both change the ranges they read). The emulator changes alias IP
// ranges only: aliasIpRanges replaces the interface's list whole (an
// absent list is the empty one: protojson cannot tell them apart, and
// gcloud removes every alias range by sending none). A range the
// interface holds and the body names again, with the same secondary
// range, is kept; new ones are checked and claimed as at launch
// (aliasranges.go) when the call is made, so no one else can take them
// while the operation runs, and the ones left out are released when it is
// DONE. A block in use or a range without a free block fails the
// operation (IP_IN_USE_BY_ANOTHER_RESOURCE, IP_SPACE_EXHAUSTED_WITH_DETAILS)
// and changes nothing. A body changing anything else the interface has
// (its network, subnetwork, networkIP, stack type or IPv6 address) is
// answered 501: migrating an interface is not emulated.

// updateNetworkInterface serves the method.
func updateNetworkInterface(e *Emulator, w http.ResponseWriter, r *http.Request, o *object, op string) {
	if r.Method != http.MethodPatch {
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
	nicName := r.URL.Query().Get("networkInterface")
	if nicName == "" {
		writeError(w, errRequired("networkInterface"))
		return
	}
	nic := nicNamed(o, nicName)
	if nic == nil {
		writeError(w, errInvalid("networkInterface", nicName, "The instance has no network interface with this name."))
		return
	}
	req := &computepb.NetworkInterface{}
	if aerr := readMessage(r, req); aerr != nil {
		writeError(w, aerr)
		return
	}
	if req.Fingerprint == nil {
		writeError(w, errRequired("resource.fingerprint"))
		return
	}
	if req.GetFingerprint() != nic.GetFingerprint() {
		writeError(w, errConditionNotMet("network interface "+nicName+" of instance "+o.name))
		return
	}
	if aerr := e.checkNICUnchanged(nic, req); aerr != nil {
		writeError(w, aerr)
		return
	}
	apply, rollback, aerr := e.planAliasRanges(o, nic, "resource.aliasIpRanges", req.GetAliasIpRanges())
	var fail *apiError
	if aerr != nil {
		if !aerr.async {
			writeError(w, aerr)
			return
		}
		fail = aerr
	}
	change := func() {
		// The admin API may have deleted the instance meanwhile.
		if e.stored(o) {
			apply()
			e.generation++
		}
	}
	opObj := e.begin(r, op, o, "updateNetworkInterface", fail, change, rollback)
	writeMessage(w, http.StatusOK, e.view(opObj))
}

// nicNamed is o's network interface named name, nil if it has none.
func nicNamed(o *object, name string) *computepb.NetworkInterface {
	for _, nic := range o.msg.(*computepb.Instance).GetNetworkInterfaces() {
		if nic.GetName() == name {
			return nic
		}
	}
	return nil
}

// checkNICUnchanged refuses a body that changes more than alias ranges:
// fields it leaves out or sends as they are pass.
func (e *Emulator) checkNICUnchanged(nic, req *computepb.NetworkInterface) *apiError {
	sameRef := func(a, b string) bool {
		pa, oka := e.refPath(a)
		pb, okb := e.refPath(b)
		return oka && okb && pa == pb
	}
	for _, f := range []struct {
		name string
		set  bool
		same bool
	}{
		{"name", req.Name != nil, req.GetName() == nic.GetName()},
		{"network", req.Network != nil, sameRef(req.GetNetwork(), nic.GetNetwork())},
		{"subnetwork", req.Subnetwork != nil, sameRef(req.GetSubnetwork(), nic.GetSubnetwork())},
		{"networkIP", req.NetworkIP != nil, req.GetNetworkIP() == nic.GetNetworkIP()},
		{"stackType", req.StackType != nil, req.GetStackType() == nic.GetStackType()},
		{"ipv6Address", req.Ipv6Address != nil, req.GetIpv6Address() == nic.GetIpv6Address()},
	} {
		if f.set && !f.same {
			return &apiError{Status: http.StatusNotImplemented, Reason: "notImplemented",
				Message: fmt.Sprintf("cloudsim: updateNetworkInterface changes alias IP ranges only, not resource.%s", f.name)}
		}
	}
	return nil
}

// planAliasRanges checks and claims the alias ranges want for nic of
// instance o: apply gives nic the ranges (and a new fingerprint) and
// releases the ones it no longer has; rollback releases what was claimed.
func (e *Emulator) planAliasRanges(o *object, nic *computepb.NetworkInterface, field string,
	want []*computepb.AliasIpRange) (apply, rollback func(), aerr *apiError) {
	subnetPath, sn, ok := e.subnetwork(nic.GetSubnetwork())
	if !ok {
		return nil, nil, errNotFound(nic.GetSubnetwork())
	}
	if len(want) > 0 && nic.GetStackType() == StackIPv6Only {
		return nil, nil, errInvalid(field, want[0].GetIpCidrRange(), "An IPV6_ONLY network interface cannot have IPv4 alias IP ranges.")
	}
	held := blocksOf(nic.GetAliasIpRanges())
	ranges, claimed, aerr := e.claimAliasRanges(o.path, subnetPath, sn, field, want, held)
	if aerr != nil {
		return nil, nil, aerr
	}
	kept := blocksOf(ranges)
	name := nic.GetName()
	apply = func() {
		cur := nicNamed(o, name)
		if cur == nil {
			return
		}
		for _, b := range held {
			if !slices.Contains(kept, b) {
				e.releaseAliasBlock(o.path, subnetPath, b)
			}
		}
		cur.AliasIpRanges = ranges
		cur.Fingerprint = proto.String(nicFingerprint(o.path, cur))
	}
	rollback = func() {
		for _, b := range claimed {
			e.releaseAliasBlock(o.path, subnetPath, b)
		}
	}
	return apply, rollback, nil
}

// SetAliasRanges gives an instance's nic0 the alias IP ranges given, at
// once and without a fingerprint: the admin's way to do what
// updateNetworkInterface does (the ranges nic0 holds and ranges names
// again are kept, the others released, new ones checked and claimed as at
// launch).
func (e *Emulator) SetAliasRanges(name string, ranges []AliasIPRange) error {
	return e.changeInstance(name, func(o *object) error {
		if o.busy != nil {
			// An operation on the instance would undo or redo this.
			return fmt.Errorf("instance %s has a change in progress: %w", name, cloudsim.ErrInstanceState)
		}
		nic := nicNamed(o, "nic0")
		if nic == nil {
			return errAdmin("instance %s has no nic0", name)
		}
		apply, _, aerr := e.planAliasRanges(o, nic, "resource.aliasIpRanges", aliasesToAPI(ranges))
		if aerr != nil {
			return errAdminAPI(aerr)
		}
		apply()
		e.generation++
		return nil
	})
}
