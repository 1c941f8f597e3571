package gce

import (
	"slices"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/providers/inventory"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// deleteOwnParts deletes, as orphans in Order, the parts of svc's load
// balancer but the shared ones: what an older version or a person
// deleting the Services' parts by hand leaves.
func deleteOwnParts(t *testing.T, lb *loadBalancers, svc *v1.Service) {
	t.Helper()
	for _, o := range ownedNow(t, lb) {
		if o.Service == keyOf(svc) && !o.Kept {
			if err := lb.DeleteOrphan(t.Context(), o); err != nil {
				t.Fatalf("DeleteOrphan %s %s: %v", o.Kind, o.Name, err)
			}
		}
	}
}

// TestInventoryUnneededShared: the cluster's shared parts (the node
// health checks, their firewall rules, the instance groups) are listed
// Unneeded once no target pool or backend service uses them, each
// check's firewall rule with it, and not while one does (an adopted
// Service's pool with upstream's description too); DeleteOrphan deletes
// them then, and nothing from a stale listing once Services use them
// again. The listing costs the calls it did.
func TestInventoryUnneededShared(t *testing.T) {
	env, lb, nodes := ilbEnv(t, 2)
	ctx := t.Context()
	before := env.srv.Resources()
	ext, internal := svcWith(nil), internalSvc("9a1b2c3d-1b9a-4f3e-9d5c-0a1b2c3d4e5f", nil)
	ensure(t, lb, ext, nodes)
	ensure(t, lb, internal, nodes)

	hc := nodeHealthCheckName(lb.sharedID())
	zones := env.emu.Config().Zones
	extParts := []string{kindHTTPHealthCheck + " " + hc, kindFirewall + " " + healthCheckFirewallName(hc, true)}
	intParts := []string{kindHealthCheck + " " + hc, kindFirewall + " " + internalHealthCheckFirewallName(hc),
		kindInstanceGroup + " " + instanceGroupName(lb.sharedID()) + "@" + zones[0], kindInstanceGroup + " " + instanceGroupName(lb.sharedID()) + "@" + zones[1]}
	// Instance groups have one name in every zone: key them by zone.
	shared := func() map[string]bool {
		out := map[string]bool{}
		for _, o := range ownedNow(t, lb) {
			if o.Service != (types.NamespacedName{}) {
				continue
			}
			key := o.Kind + " " + o.Name
			if o.Kind == kindInstanceGroup {
				zone, err := partZone(o)
				if err != nil {
					t.Fatal(err)
				}
				key += "@" + zone
			}
			out[key] = o.Unneeded
		}
		return out
	}
	check := func(when string, unneeded, needed []string) {
		t.Helper()
		got := shared()
		if len(got) != len(unneeded)+len(needed) {
			t.Errorf("%s: shared parts %v, want %v unneeded and %v needed", when, got, unneeded, needed)
		}
		for _, p := range unneeded {
			if u, ok := got[p]; !ok || !u {
				t.Errorf("%s: %s listed %v, unneeded %v: want listed unneeded", when, p, ok, u)
			}
		}
		for _, p := range needed {
			if u, ok := got[p]; !ok || u {
				t.Errorf("%s: %s listed %v, unneeded %v: want listed needed", when, p, ok, u)
			}
		}
	}
	check("both Services there", nil, append(slices.Clone(extParts), intParts...))

	env.srv.ResetCalls()
	ownedNow(t, lb)
	if n := totalCalls(env); n != 9 {
		t.Errorf("Owned: %d calls (%v), want 9", n, env.srv.Calls())
	}

	deleteOwnParts(t, lb, ext)
	check("the external Service's parts deleted by hand", extParts, intParts)

	// An adopted Service's pool keeps upstream's description, which names
	// no cluster, and uses the shared check: needed.
	pool := "aadopted"
	if err := waitOp(ctx)(env.api.targetPools.Insert(ctx, &computepb.InsertTargetPoolRequest{Project: env.s.ProjectID, Region: env.s.Region,
		TargetPoolResource: &computepb.TargetPool{Name: proto.String(pool), Description: proto.String(`{"kubernetes.io/service-name":"default/adopted"}`),
			HealthChecks: []string{lb.globalLink("httpHealthChecks", hc)}}})); err != nil {
		t.Fatal(err)
	}
	check("an upstream pool uses the check", nil, append(slices.Clone(extParts), intParts...))
	if err := waitOp(ctx)(env.api.targetPools.Delete(ctx, &computepb.DeleteTargetPoolRequest{Project: env.s.ProjectID, Region: env.s.Region, TargetPool: pool})); err != nil {
		t.Fatal(err)
	}

	deleteOwnParts(t, lb, internal)
	check("both Services' parts deleted by hand", append(slices.Clone(extParts), intParts...), nil)
	var stale []inventory.Owned // in Order, as Owned sorts them
	for _, o := range ownedNow(t, lb) {
		if o.Unneeded {
			stale = append(stale, o)
		}
	}

	// The Services are made again, on the shared parts: the stale listing
	// deletes nothing.
	ensure(t, lb, ext, nodes)
	ensure(t, lb, internal, nodes)
	check("both Services made again", nil, append(slices.Clone(extParts), intParts...))
	now := env.srv.Resources()
	for _, o := range stale {
		if err := lb.DeleteOrphan(ctx, o); err == nil {
			t.Errorf("DeleteOrphan of %s %s from a stale listing: no error", o.Kind, o.Name)
		}
	}
	if added, removed := cloudsim.DiffResources(now, env.srv.Resources()); len(added) > 0 || len(removed) > 0 {
		t.Errorf("a stale listing's shared parts: added %v, removed %v", added, removed)
	}

	// Left alone again, they go as orphans, in Order.
	deleteOwnParts(t, lb, ext)
	deleteOwnParts(t, lb, internal)
	var n int
	for _, o := range ownedNow(t, lb) {
		if o.Unneeded {
			n++
			if err := lb.DeleteOrphan(ctx, o); err != nil {
				t.Errorf("DeleteOrphan of %s %s: %v", o.Kind, o.Name, err)
			}
		}
	}
	if n != len(extParts)+len(intParts) {
		t.Errorf("%d parts listed unneeded, want %d", n, len(extParts)+len(intParts))
	}
	if added, removed := cloudsim.DiffResources(before, env.srv.Resources()); len(added) > 0 || len(removed) > 0 {
		t.Errorf("after deleting the unneeded shared parts: added %v, removed %v", added, removed)
	}
	if list := ownedNow(t, lb); len(list) != 0 {
		t.Errorf("listed after all: %s", dump(list))
	}
}
