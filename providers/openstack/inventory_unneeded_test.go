package openstack

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/providers/inventory"
)

// TestInventoryUnneededMemberGroup: the cluster's member security group
// is listed Unneeded once no Service's rule is left in it (the Service's
// parts deleted as orphans, which leave it), and not while one is;
// DeleteOrphan deletes it then, detached from the nodes' ports, and
// nothing from a stale listing once a Service has rules in it again.
func TestInventoryUnneededMemberGroup(t *testing.T) {
	e := newLBEnv(t, 2, func(s *Section) { s.LoadBalancer.ManageSecurityGroups = true })
	before := e.emu.Resources()
	web := service("web", 80)
	e.ensure(t, web)

	group := func() inventory.Owned {
		t.Helper()
		var out []inventory.Owned
		for _, o := range e.owned(t) {
			if o.Kind == kindGroup {
				out = append(out, o)
			}
		}
		if len(out) != 1 || out[0].Service != (types.NamespacedName{}) {
			t.Fatalf("member groups listed: %+v", out)
		}
		return out[0]
	}
	if g := group(); g.Unneeded {
		t.Errorf("the group a Service's rules are in listed unneeded: %+v", g)
	} else if err := e.inventory().DeleteOrphan(t.Context(), g); err == nil {
		t.Error("DeleteOrphan deleted the group a Service needs")
	}

	e.deleteInOrder(t, keyOf(web))
	stale := group()
	if !stale.Unneeded {
		t.Fatalf("the group with no Service's rule left listed needed: %+v", stale)
	}

	// The Service is made again: the stale listing deletes nothing.
	e.ensure(t, web)
	now := e.emu.Resources()
	if err := e.inventory().DeleteOrphan(t.Context(), stale); err == nil {
		t.Error("DeleteOrphan of the group from a stale listing: no error")
	}
	if got := e.emu.Resources(); !reflect.DeepEqual(got, now) {
		t.Errorf("after a stale listing's DeleteOrphan:\n%+v\nwant\n%+v", got, now)
	}

	e.deleteInOrder(t, keyOf(web))
	if err := e.inventory().DeleteOrphan(t.Context(), group()); err != nil {
		t.Fatalf("DeleteOrphan of the unneeded group: %v", err)
	}
	if got := e.emu.Resources(); !reflect.DeepEqual(got, before) {
		t.Errorf("after the group's deletion:\n%+v\nwant\n%+v", got, before)
	}
	for _, o := range e.owned(t) {
		t.Errorf("listed after: %+v", o)
	}
}
