package openstack_test

import (
	"slices"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/monitors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"

	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

// TestOctaviaProjectWideChildListings: the listings of a project's
// listeners, pools and health monitors (no load balancer filter), as a
// controller reading every load balancer at once uses them: paged with
// links, each item naming its load balancer, a pool its listeners and
// its members' IDs inline, a monitor its pool. A listener deleted
// leaves its pool, with no listener, which a new listener may take as
// its default pool.
func TestOctaviaProjectWideChildListings(t *testing.T) {
	e := newOctaviaEnv(t, cloudsimopenstack.Config{Octavia: cloudsimopenstack.OctaviaConfig{ProvisioningDelay: -1}})
	a := e.activeLB(t, fullyPopulated("a"))
	b := e.activeLB(t, fullyPopulated("b"))
	lbOf := map[string]bool{a.ID: true, b.ID: true}

	e.srv.ResetCalls()
	pages, err := pools.List(e.lb, pools.ListOpts{Limit: 1}).AllPages(ctx(t))
	ok(t, err)
	ps, err := pools.ExtractPools(pages)
	ok(t, err)
	if len(ps) != 2 || e.srv.CallCount("octavia:ListPools") != 3 {
		t.Fatalf("%d pools in %d calls, want 2 in pages of one (and a last empty one)", len(ps), e.srv.CallCount("octavia:ListPools"))
	}
	poolOfListener := map[string]string{}
	for _, p := range ps {
		if len(p.Loadbalancers) != 1 || !lbOf[p.Loadbalancers[0].ID] || len(p.Listeners) != 1 || p.MonitorID == "" {
			t.Errorf("pool %+v", p)
		}
		poolOfListener[p.Listeners[0].ID] = p.ID
		mpages, err := pools.ListMembers(e.lb, p.ID, pools.ListMembersOpts{}).AllPages(ctx(t))
		ok(t, err)
		ms, err := pools.ExtractMembers(mpages)
		ok(t, err)
		var inline, listed []string
		for _, m := range p.Members {
			inline = append(inline, m.ID)
		}
		for _, m := range ms {
			listed = append(listed, m.ID)
		}
		slices.Sort(inline)
		slices.Sort(listed)
		if len(inline) != 2 || !slices.Equal(inline, listed) {
			t.Errorf("pool %s: member IDs inline %v, listed %v", p.ID, inline, listed)
		}
	}

	lpages, err := listeners.List(e.lb, listeners.ListOpts{Limit: 1}).AllPages(ctx(t))
	ok(t, err)
	ls, err := listeners.ExtractListeners(lpages)
	ok(t, err)
	if len(ls) != 2 {
		t.Fatalf("%d listeners", len(ls))
	}
	for _, l := range ls {
		if len(l.Loadbalancers) != 1 || !lbOf[l.Loadbalancers[0].ID] || l.DefaultPoolID == "" || poolOfListener[l.ID] != l.DefaultPoolID {
			t.Errorf("listener %+v", l)
		}
	}
	hpages, err := monitors.List(e.lb, monitors.ListOpts{Limit: 1}).AllPages(ctx(t))
	ok(t, err)
	hs, err := monitors.ExtractMonitors(hpages)
	ok(t, err)
	for _, h := range hs {
		if len(h.Pools) != 1 || !slices.ContainsFunc(ps, func(p pools.Pool) bool { return p.ID == h.Pools[0].ID && p.MonitorID == h.ID }) {
			t.Errorf("monitor %+v", h)
		}
	}
	if len(hs) != 2 {
		t.Errorf("%d monitors", len(hs))
	}

	var lis listeners.Listener
	for _, l := range ls {
		if l.Loadbalancers[0].ID == a.ID {
			lis = l
		}
	}
	ok(t, listeners.Delete(ctx(t), e.lb, lis.ID).Err)
	e.settle()
	p, err := pools.Get(ctx(t), e.lb, lis.DefaultPoolID).Extract()
	ok(t, err)
	if len(p.Listeners) != 0 || len(p.Members) != 2 {
		t.Fatalf("the pool of a deleted listener: %+v", p)
	}
	again, err := listeners.Create(ctx(t), e.lb, listeners.CreateOpts{
		LoadbalancerID: a.ID, Protocol: listeners.ProtocolTCP, ProtocolPort: 80, DefaultPoolID: p.ID,
	}).Extract()
	ok(t, err)
	e.settle()
	p, err = pools.Get(ctx(t), e.lb, p.ID).Extract()
	ok(t, err)
	if len(p.Listeners) != 1 || p.Listeners[0].ID != again.ID {
		t.Errorf("the pool taken again: listeners %+v, want %s", p.Listeners, again.ID)
	}
}
