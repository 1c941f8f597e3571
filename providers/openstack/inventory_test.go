package openstack

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/controllers/orphans"
	"github.com/multicloud-ccm/multicloud-ccm/providers/inventory"
	osemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

// The inventory (inventory.go) against the emulator, through gophercloud.

// newInvEnv is newLBEnv on an emulator configured whole (paging).
func newInvEnv(t *testing.T, nodeCount int, cfg osemu.Config, edit func(*Section)) *lbEnv {
	t.Helper()
	cfg.Octavia.ProvisioningDelay = 20 * time.Millisecond
	env := newTestEnv(t, cfg, func(s *Section) {
		s.LoadBalancer.WaitActiveTimeout = 5 * time.Second
		if edit != nil {
			edit(s)
		}
	})
	e := &lbEnv{testEnv: env, t: t, lb: env.cloud.lb}
	e.lb.firstPoll = 10 * time.Millisecond
	if nodeCount > 0 {
		e.nodes = e.addNodes(t, nodeCount)
	}
	env.srv.ResetCalls()
	return e
}

func (e *lbEnv) inventory() inventory.Inventory { return e.cloud.Parts().Inventory }

func (e *lbEnv) owned(t *testing.T) []inventory.Owned {
	t.Helper()
	o, err := e.inventory().Owned(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func keyOf(svc *v1.Service) types.NamespacedName {
	return types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
}

// partsOf are the Service's parts as lbrepair compares them: "kind id"
// -> detail.
func partsOf(owned []inventory.Owned, svc types.NamespacedName) map[string]string {
	out := map[string]string{}
	for _, o := range owned {
		if o.Service == svc {
			out[o.Kind+" "+o.ID] = o.Detail
		}
	}
	return out
}

// kinds counts a Service's parts by kind.
func kinds(owned []inventory.Owned, svc types.NamespacedName) map[string]int {
	out := map[string]int{}
	for _, o := range owned {
		if o.Service == svc {
			out[o.Kind]++
		}
	}
	return out
}

func partByID(t *testing.T, owned []inventory.Owned, kind, id string) inventory.Owned {
	t.Helper()
	for _, o := range owned {
		if o.Kind == kind && o.ID == id {
			return o
		}
	}
	t.Fatalf("no %s %s listed", kind, id)
	return inventory.Owned{}
}

func listed(owned []inventory.Owned, id string) bool {
	return slices.ContainsFunc(owned, func(o inventory.Owned) bool { return o.ID == id || strings.HasPrefix(o.ID, id+"/") })
}

func memberIDs(p osemu.PoolInfo) string {
	var ids []string
	for _, m := range p.Members {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	return strings.Join(ids, ",")
}

// TestInventoryListsParts: an external Service with a floating IP and
// monitors, two Services sharing a load balancer, one on a person's load
// balancer, one on the user's VIP port: each part under its Service with
// its Detail; the shared load balancer and its address under none, each
// Service's use of a load balancer apart (an only user's too); what the
// user gave Kept; nothing of another
// cluster's load balancer, of a person's own listener, or of an unmarked
// load balancer.
func TestInventoryListsParts(t *testing.T) {
	e := newLBEnv(t, 2, func(s *Section) {
		s.LoadBalancer.CreateMonitor = true
		s.LoadBalancer.ManageSecurityGroups = true
	})
	web := service("web", 80, 443)
	web.Spec.LoadBalancerSourceRanges = []string{"203.0.113.0/24"}
	st := e.ensure(t, web)
	owner := service("owner", 8000)
	e.ensure(t, owner)
	shared := e.lbOf(t, owner)
	sharer := sharing("sharer", shared.ID, 8080)
	sharer.Spec.Ports[0].NodePort = 31001 // NodePorts are the cluster's: one Service each
	e.ensure(t, sharer)

	person := e.makeLB(t, "web-front", true)
	guest := sharing("guest", person.ID, 80)
	guest.Spec.Ports[0].NodePort = 31002
	e.ensure(t, guest)
	unmarked := e.makeLB(t, "unmarked", false)

	vipPort, err := ports.Create(t.Context(), e.api.network, ports.CreateOpts{NetworkID: e.fx.NetworkID, Name: "reserved-vip"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	userFIP, err := floatingips.Create(t.Context(), e.api.network, floatingips.CreateOpts{
		FloatingNetworkID: e.fx.ExternalNetworkID, PortID: vipPort.ID, Description: "reserved by a person",
	}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	onPort := service("onport", 80)
	onPort.Spec.Ports[0].NodePort = 31003
	onPort.Annotations[annotationPortID.String()] = vipPort.ID
	e.ensure(t, onPort)

	// Another cluster, whose ID starts with this one's, in the same
	// project.
	other := newLoadBalancers(e.api, e.s, "kubernetes_prod", e.cloud.instances, clock.RealClock{})
	other.firstPoll = 10 * time.Millisecond
	if _, err := other.EnsureLoadBalancer(t.Context(), "", service("web", 80), e.nodes); err != nil {
		t.Fatal(err)
	}
	var otherLB osemu.LoadBalancerInfo
	for _, lb := range e.emu.LoadBalancers() {
		if strings.HasPrefix(lb.Name, "kube_service_kubernetes_prod_") {
			otherLB = lb
		}
	}

	owned := e.owned(t)
	if listed(owned, otherLB.ID) || listed(owned, unmarked.ID) {
		t.Errorf("listed another cluster's or an unmarked load balancer: %+v", owned)
	}
	for _, f := range e.emu.FloatingIPs() {
		if strings.HasSuffix(f.Description, "kubernetes_prod") && listed(owned, f.ID) {
			t.Errorf("listed another cluster's floating IP %s", f.Address)
		}
	}
	for _, l := range e.lbByID(t, person.ID).Listeners {
		if l.ProtocolPort == 22 && (listed(owned, l.ID) || listed(owned, l.DefaultPoolID)) {
			t.Errorf("listed the person's own listener or pool")
		}
	}
	for _, o := range owned {
		if o.UID != "" {
			t.Errorf("%s %s has UID %s", o.Kind, o.ID, o.UID)
		}
	}

	// The external Service: its whole tree, with the state its ensure set.
	lb := e.lbOf(t, web)
	if got, want := kinds(owned, keyOf(web)), map[string]int{
		kindLoadBalancer: 1, kindLBUse: 1, kindListener: 2, kindPool: 2, kindMonitor: 2, kindFloatingIP: 1, kindRule: 2,
	}; !maps.Equal(got, want) {
		t.Errorf("web's parts %v, want %v", got, want)
	}
	if o := partByID(t, owned, kindLoadBalancer, lb.ID); o.Detail != "VIP "+lb.VIPAddress || o.Kept || o.Name != lbName("kubernetes", web) || o.Order != orderLoadBalancer {
		t.Errorf("load balancer %+v", o)
	}
	for _, l := range lb.Listeners {
		o := partByID(t, owned, kindListener, l.ID)
		want := fmt.Sprintf("TCP:%d -> pool %s, connection limit -1, timeouts client-data/member-connect/member-data/tcp-inspect 50000/5000/50000/0 ms, allowed 203.0.113.0/24", l.ProtocolPort, l.DefaultPoolID)
		if o.Detail != want || o.Name != l.Name {
			t.Errorf("listener detail %q, want %q", o.Detail, want)
		}
		p := poolOf(t, lb, l)
		if o := partByID(t, owned, kindPool, p.ID); o.Detail != "TCP ROUND_ROBIN, members "+memberIDs(p) || o.Service != keyOf(web) {
			t.Errorf("pool %+v, want members %s", o, memberIDs(p))
		}
		if o := partByID(t, owned, kindMonitor, p.HealthMonitor.ID); o.Detail != "TCP every 5s, timeout 3s, retries 1 up 3 down" || o.Order != orderMonitor {
			t.Errorf("monitor %+v", o)
		}
	}
	for _, f := range e.emu.FloatingIPs() {
		if f.Address == st.Ingress[0].IP {
			if o := partByID(t, owned, kindFloatingIP, f.ID); o.Service != keyOf(web) || o.Kept || o.Detail != f.Address+" on port "+lb.VIPPortID {
				t.Errorf("floating IP %+v", o)
			}
		}
	}
	for _, o := range owned {
		if o.Kind == kindRule && o.Service == keyOf(web) && !strings.HasPrefix(o.Detail, "ingress IPv4 tcp port 30") {
			t.Errorf("rule %+v", o)
		}
	}

	// The shared load balancer and its address: no Service's; each
	// Service has its use, listener, pool.
	if o := partByID(t, owned, kindLoadBalancer, shared.ID); o.Service != (types.NamespacedName{}) || o.Kept {
		t.Errorf("shared load balancer %+v", o)
	}
	for _, svc := range []*v1.Service{owner, sharer} {
		if got, want := kinds(owned, keyOf(svc)), map[string]int{kindLBUse: 1, kindListener: 1, kindPool: 1, kindMonitor: 1, kindRule: 1}; !maps.Equal(got, want) {
			t.Errorf("%s's parts %v, want %v", svc.Name, got, want)
		}
		use := partByID(t, owned, kindLBUse, shared.ID+"/"+usageTag("kubernetes", svc))
		if use.Service != keyOf(svc) || use.Order != orderLBUse {
			t.Errorf("use %+v", use)
		}
	}
	for _, f := range e.emu.FloatingIPs() {
		if f.PortID == shared.VIPPortID {
			if o := partByID(t, owned, kindFloatingIP, f.ID); o.Service != (types.NamespacedName{}) || o.Kept {
				t.Errorf("shared address %+v", o)
			}
		}
	}

	// The person's load balancer: Kept, its only user's; its address
	// Kept.
	if o := partByID(t, owned, kindLoadBalancer, person.ID); !o.Kept || o.Service != keyOf(guest) {
		t.Errorf("the person's load balancer %+v", o)
	}
	if got, want := kinds(owned, keyOf(guest)), map[string]int{kindLoadBalancer: 1, kindLBUse: 1, kindListener: 1, kindPool: 1, kindMonitor: 1, kindFloatingIP: 1, kindRule: 1}; !maps.Equal(got, want) {
		t.Errorf("guest's parts %v, want %v", got, want)
	}
	for _, o := range owned {
		if o.Kind == kindFloatingIP && o.Service == keyOf(guest) && !o.Kept {
			t.Errorf("the person's floating IP is not Kept: %+v", o)
		}
	}

	// The user's VIP port and its floating IP: Kept.
	if o := partByID(t, owned, kindVIPPort, vipPort.ID); !o.Kept || o.Service != keyOf(onPort) {
		t.Errorf("user VIP port %+v", o)
	}
	if o := partByID(t, owned, kindFloatingIP, userFIP.ID); !o.Kept || o.Service != keyOf(onPort) {
		t.Errorf("user floating IP %+v", o)
	}
	for _, o := range owned {
		if o.Kind == kindVIPPort && o.ID != vipPort.ID {
			t.Errorf("an Octavia VIP port listed as the user's: %+v", o)
		}
	}
	// The cluster's member group: shared.
	if n := kinds(owned, types.NamespacedName{})[kindGroup]; n != 1 {
		t.Errorf("%d member groups listed", n)
	}
}

// TestInventoryCallsPerListing: Owned costs the same calls for 1
// Service as for 20 (one per listing), and pages through listings longer
// than a page, calls then growing with pages only.
func TestInventoryCallsPerListing(t *testing.T) {
	for _, page := range []int{0, 4} {
		t.Run(fmt.Sprintf("page %d", page), func(t *testing.T) {
			e := newInvEnv(t, 2, osemu.Config{
				Octavia: osemu.OctaviaConfig{PaginationMaxLimit: page},
				Neutron: osemu.NeutronConfig{PaginationMaxLimit: page},
			}, func(s *Section) { s.LoadBalancer.ManageSecurityGroups = true })
			list := func() (map[string]int, []inventory.Owned) {
				e.srv.ResetCalls()
				o := e.owned(t)
				return e.srv.Calls(), o
			}
			e.ensure(t, service("s00", 80))
			one, _ := list()
			for op := range one {
				if !strings.Contains(op, ":List") {
					t.Errorf("Owned made %s", op)
				}
			}
			for i := 1; i < 20; i++ {
				svc := service(fmt.Sprintf("s%02d", i), 80)
				svc.Spec.Ports[0].NodePort = int32(30100 + i)
				e.ensure(t, svc)
			}
			twenty, owned := list()
			for i := range 20 {
				if got := kinds(owned, types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("s%02d", i)}); got[kindLoadBalancer] != 1 || got[kindListener] != 1 || got[kindPool] != 1 || got[kindFloatingIP] != 1 || got[kindRule] != 1 {
					t.Errorf("s%02d: parts %v", i, got)
				}
			}
			if page == 0 {
				if !maps.Equal(one, twenty) {
					t.Errorf("calls for 1 Service %v, for 20 %v", one, twenty)
				}
				for op, n := range twenty {
					if n != 1 {
						t.Errorf("%d %s", n, op)
					}
				}
				return
			}
			// Pages of 4: 20 load balancers, listeners, pools, Octavia
			// ports and floating IPs, and 20 rules (and the group's two
			// egress rules) take 6 pages each (the last empty or short).
			for _, op := range []string{"octavia:ListLoadBalancers", "octavia:ListListeners", "octavia:ListPools", "neutron:ListFloatingIPs", "neutron:ListSecurityGroupRules"} {
				if n := twenty[op]; n != 6 {
					t.Errorf("%d %s, want 6 pages", n, op)
				}
			}
		})
	}
}

// TestInventoryDriftAndForget: a member, a listener or the whole load
// balancer deleted outside Kubernetes changes the listing; Forget and an
// ensure restore it, with nothing made twice (the listener gets the pool
// it left), the whole load balancer made again although the Service's
// annotation names the deleted one, with its floating IP again.
func TestInventoryDriftAndForget(t *testing.T) {
	e := newLBEnv(t, 3, func(s *Section) { s.LoadBalancer.CreateMonitor = true })
	web := service("web", 80, 443)
	st := e.ensure(t, web)
	lb := e.lbOf(t, web)
	// The annotation, as the service controller's informer has it once
	// written.
	web.Annotations[annotationLoadBalancerID.String()] = lb.ID
	key := keyOf(web)
	before := partsOf(e.owned(t), key)
	inv := e.inventory()
	restore := func() map[string]string {
		t.Helper()
		inv.Forget(key)
		if n := e.lb.records.Len(); n != 0 {
			t.Errorf("%d records after Forget", n)
		}
		if got := e.ensure(t, web); !reflect.DeepEqual(got, st) {
			t.Errorf("status %+v, want %+v", got, st)
		}
		lbs := e.emu.LoadBalancers()
		if len(lbs) != 1 || len(lbs[0].Listeners) != 2 || len(lbs[0].Pools) != 2 {
			t.Fatalf("after the repair: %+v", lbs)
		}
		for _, p := range lbs[0].Pools {
			if len(p.Members) != 3 || p.HealthMonitor == nil {
				t.Errorf("pool %+v", p)
			}
		}
		if n := len(e.emu.FloatingIPs()); n != 1 {
			t.Errorf("%d floating IPs", n)
		}
		return partsOf(e.owned(t), key)
	}

	// One member.
	p := lb.Pools[0]
	if err := pools.DeleteMember(t.Context(), e.api.lb, p.ID, p.Members[0].ID).Err; err != nil {
		t.Fatal(err)
	}
	if _, err := e.lb.waitActive(t.Context(), lb.ID); err != nil {
		t.Fatal(err)
	}
	drifted := partsOf(e.owned(t), key)
	if !slices.Equal(slices.Sorted(maps.Keys(drifted)), slices.Sorted(maps.Keys(before))) || drifted["pool "+p.ID] == before["pool "+p.ID] {
		t.Errorf("a member gone: pool detail %q, was %q", drifted["pool "+p.ID], before["pool "+p.ID])
	}
	after := restore()
	if !slices.Equal(slices.Sorted(maps.Keys(after)), slices.Sorted(maps.Keys(before))) {
		t.Errorf("parts after the repair %v, before %v", after, before)
	}
	if _, ids, _ := strings.Cut(after["pool "+p.ID], "members "); strings.Count(ids, ",") != 2 {
		t.Errorf("pool after the repair: %q", after["pool "+p.ID])
	}
	before = after

	// One listener: Octavia keeps its pool.
	lis := lb.Listeners[1]
	if err := listeners.Delete(t.Context(), e.api.lb, lis.ID).Err; err != nil {
		t.Fatal(err)
	}
	if _, err := e.lb.waitActive(t.Context(), lb.ID); err != nil {
		t.Fatal(err)
	}
	drifted = partsOf(e.owned(t), key)
	if _, ok := drifted["listener "+lis.ID]; ok || len(drifted) != len(before)-1 {
		t.Errorf("a listener gone: parts %v", drifted)
	}
	after = restore()
	var newLis string
	for k, d := range after {
		if _, ok := before[k]; !ok {
			newLis = k
			if !strings.HasPrefix(k, "listener ") || !strings.Contains(d, "-> pool "+lis.DefaultPoolID) {
				t.Errorf("new part %s: %s, want a listener on pool %s", k, d, lis.DefaultPoolID)
			}
		}
	}
	if newLis == "" || len(after) != len(before) {
		t.Errorf("parts after the repair %v, before %v", after, before)
	}
	before = after

	// The whole load balancer: its floating IP stays, unassociated
	// (Kept: nothing tells a kept one from one a crash left).
	if err := loadbalancers.Delete(t.Context(), e.api.lb, lb.ID, loadbalancers.DeleteOpts{Cascade: true}).Err; err != nil {
		t.Fatal(err)
	}
	if err := e.lb.waitGone(t.Context(), lb.ID); err != nil {
		t.Fatal(err)
	}
	owned := e.owned(t)
	if got := kinds(owned, key); !maps.Equal(got, map[string]int{kindFloatingIP: 1}) {
		t.Errorf("the load balancer gone: parts %v", got)
	}
	for _, o := range owned {
		if o.Kind == kindFloatingIP && (!o.Kept || !strings.HasSuffix(o.Detail, "unassociated")) {
			t.Errorf("floating IP %+v", o)
		}
	}
	after = restore()
	if len(after) != len(before) || e.lbOf(t, web).ID == lb.ID {
		t.Errorf("parts after the repair %v, before %v", after, before)
	}

	// An internal Service's address is its VIP: a new load balancer has
	// a new one.
	in := service("in", 80)
	in.Annotations[annotationInternal.String()] = "true"
	old := e.ensure(t, in)
	inLB := e.lbOf(t, in)
	in.Annotations[annotationLoadBalancerID.String()] = inLB.ID
	if err := loadbalancers.Delete(t.Context(), e.api.lb, inLB.ID, loadbalancers.DeleteOpts{Cascade: true}).Err; err != nil {
		t.Fatal(err)
	}
	if err := e.lb.waitGone(t.Context(), inLB.ID); err != nil {
		t.Fatal(err)
	}
	inv.Forget(keyOf(in))
	if got := e.ensure(t, in); got.Ingress[0].IP == old.Ingress[0].IP || got.Ingress[0].IP != e.lbOf(t, in).VIPAddress {
		t.Errorf("internal status %+v, was %+v", got, old)
	}

	// A manager that did not sync the Service (restarted) cannot tell
	// its own from one the user named: the annotation stays an error.
	restarted := newLoadBalancers(e.api, e.s, "kubernetes", e.cloud.instances, clock.RealClock{})
	gone := service("gone", 80)
	gone.Annotations[annotationLoadBalancerID.String()] = lb.ID
	if _, err := restarted.EnsureLoadBalancer(t.Context(), "", gone, e.nodes); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("an annotation naming a deleted load balancer: %v", err)
	}
}

// deleteInOrder deletes the Service's parts as orphan cleanup would.
func (e *lbEnv) deleteInOrder(t *testing.T, svc types.NamespacedName) {
	t.Helper()
	var parts []inventory.Owned
	for _, o := range e.owned(t) {
		if o.Service == svc && !o.Kept {
			parts = append(parts, o)
		}
	}
	if len(parts) == 0 {
		t.Fatalf("%s has no parts", svc)
	}
	slices.SortStableFunc(parts, func(a, b inventory.Owned) int { return a.Order - b.Order })
	for _, o := range parts {
		if err := e.inventory().DeleteOrphan(t.Context(), o); err != nil {
			t.Fatalf("delete %s %s: %v", o.Kind, o.ID, err)
		}
		// Gone already is success.
		if err := e.inventory().DeleteOrphan(t.Context(), o); err != nil {
			t.Fatalf("delete %s %s again: %v", o.Kind, o.ID, err)
		}
	}
}

// TestInventoryDeleteOrphans: the parts of a Service that no longer
// exists, deleted in Order, leave the cloud as it was before the
// Service; of Services sharing a load balancer, an orphan's parts go and
// the load balancer and its address stay for the other, until its own
// parts go. Kept parts are refused.
func TestInventoryDeleteOrphans(t *testing.T) {
	e := newLBEnv(t, 2, func(s *Section) {
		s.LoadBalancer.CreateMonitor = true
		s.LoadBalancer.ManageSecurityGroups = true
	})
	// A Service first, so the cluster's member group exists (it stays:
	// shared, as at a Service's deletion).
	e.ensure(t, service("stays", 80))
	cloud := e.emu.Resources()

	// NodePorts are the cluster's: one Service each.
	gone := service("gone", 80, 443)
	gone.Spec.Ports[0].NodePort, gone.Spec.Ports[1].NodePort = 31010, 31011
	e.ensure(t, gone)
	e.deleteInOrder(t, keyOf(gone))
	if got := e.emu.Resources(); !reflect.DeepEqual(got, cloud) {
		t.Errorf("after the orphan's deletion:\n%+v\nwant\n%+v", got, cloud)
	}

	owner := service("owner", 8000)
	owner.Spec.Ports[0].NodePort = 31020
	e.ensure(t, owner)
	shared := e.lbOf(t, owner)
	sharer := sharing("sharer", shared.ID, 8080)
	sharer.Spec.Ports[0].NodePort = 31021
	e.ensure(t, sharer)
	addr := e.emu.FloatingIPs()
	e.deleteInOrder(t, keyOf(owner))
	got := e.lbByID(t, shared.ID)
	if want := []string{"TCP:8080=" + lbName("kubernetes", sharer)}; !slices.Equal(listenersByPort(got), want) || !slices.Equal(usageTags(got.Tags), []string{lbName("kubernetes", sharer)}) {
		t.Errorf("after the owner's orphan parts went: listeners %v tags %v", listenersByPort(got), got.Tags)
	}
	if fips := e.emu.FloatingIPs(); !reflect.DeepEqual(fips, addr) {
		t.Errorf("floating IPs %+v, want the shared address kept", fips)
	}
	// The load balancer is now its only user's, and it still syncs.
	owned := e.owned(t)
	if o := partByID(t, owned, kindLoadBalancer, shared.ID); o.Service != keyOf(sharer) {
		t.Errorf("load balancer %+v, want the sharer's", o)
	}
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", sharer, e.nodes); err != nil {
		t.Fatal(err)
	}
	e.deleteInOrder(t, keyOf(sharer))
	if got := e.emu.Resources(); !reflect.DeepEqual(got, cloud) {
		t.Errorf("after both orphans' deletion:\n%+v\nwant\n%+v", got, cloud)
	}

	// Kept parts and shared ones are refused.
	person := e.makeLB(t, "web-front", true)
	guest := sharing("guest", person.ID, 80)
	guest.Spec.Ports[0].NodePort = 31022
	e.ensure(t, guest)
	for _, o := range e.owned(t) {
		if o.Kept || o.Service == (types.NamespacedName{}) {
			if err := e.inventory().DeleteOrphan(t.Context(), o); err == nil {
				t.Errorf("deleted %s %s (kept %v, service %q)", o.Kind, o.ID, o.Kept, o.Service)
			}
		}
	}
	if _, ok := e.emu.LoadBalancer(person.ID); !ok {
		t.Errorf("the person's load balancer was deleted")
	}
}

// TestInventoryPendingUpdate: while Octavia carries out the member
// update an UpdateLoadBalancer returned from once accepted, the listing
// still shows the members it removes, and marks every part of the load
// balancer Pending; once done, the pool's Detail is the update's and
// nothing is Pending.
func TestInventoryPendingUpdate(t *testing.T) {
	e := newLBEnv(t, 3, nil)
	web := service("web", 80)
	e.ensure(t, web)
	lb := e.lbOf(t, web)
	pool := "pool " + lb.Pools[0].ID
	before := e.owned(t)
	for _, o := range before {
		if o.Pending {
			t.Errorf("%s %s Pending after the ensure", o.Kind, o.ID)
		}
	}
	if err := e.emu.HoldLoadBalancer(lb.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.lb.UpdateLoadBalancer(t.Context(), "", web, e.nodes[:2]); err != nil {
		t.Fatal(err)
	}
	held := e.owned(t)
	for _, o := range held {
		if want := o.Kind != kindFloatingIP; o.Service == keyOf(web) && o.Pending != want {
			t.Errorf("%s %s: Pending %v while its load balancer is", o.Kind, o.ID, o.Pending)
		}
	}
	if got, was := partsOf(held, keyOf(web))[pool], partsOf(before, keyOf(web))[pool]; got != was {
		t.Errorf("pool while the update is held: %q, want the members before it, %q", got, was)
	}
	if err := e.emu.ReleaseLoadBalancer(lb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.lb.waitActive(t.Context(), lb.ID); err != nil {
		t.Fatal(err)
	}
	done := e.owned(t)
	for _, o := range done {
		if o.Pending {
			t.Errorf("%s %s Pending once done", o.Kind, o.ID)
		}
	}
	if _, ids, _ := strings.Cut(partsOf(done, keyOf(web))[pool], "members "); strings.Count(ids, ",") != 1 {
		t.Errorf("pool after the update: %q, want 2 members", partsOf(done, keyOf(web))[pool])
	}
}

// driftBeyondMoves is how svc's parts in cur differ from prev as drift
// repair (controllers/lbrepair) judges a listing with no sync of svc
// since: a part svc lost that cur lists under another Service or none
// moved, and so did a part new to svc that prev listed so; anything else
// lost, new or changed is drift.
func driftBeyondMoves(prev, cur []inventory.Owned, svc types.NamespacedName) []string {
	where := func(owned []inventory.Owned, k string) (mine, elsewhere bool) {
		for _, o := range owned {
			if o.Kind+" "+o.ID == k {
				mine = mine || o.Service == svc
				elsewhere = elsewhere || o.Service != svc
			}
		}
		return mine, elsewhere
	}
	before, after := partsOf(prev, svc), partsOf(cur, svc)
	var out []string
	for k, d := range before {
		a, ok := after[k]
		if _, elsewhere := where(cur, k); !ok && !elsewhere {
			out = append(out, k+" missing")
		} else if ok && a != d {
			out = append(out, k+" changed")
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			if _, elsewhere := where(prev, k); !elsewhere {
				out = append(out, k+" added")
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestInventorySharingMovesParts: a second Service starting to share a
// load balancer, and either Service leaving it, only moves the parts of
// the Service that stays between it and none (the load balancer, its
// address): no part of its own appears or goes, so drift repair has
// nothing to repair. Orphan cleanup still leaves the load balancer to
// the Service that stays, and finds it once both are gone.
func TestInventorySharingMovesParts(t *testing.T) {
	for _, ownerLeaves := range []bool{false, true} {
		t.Run(fmt.Sprintf("owner leaves %v", ownerLeaves), func(t *testing.T) {
			e := newLBEnv(t, 2, func(s *Section) { s.LoadBalancer.CreateMonitor = true })
			owner := service("owner", 8000)
			owner.Spec.Ports[0].NodePort = 31030
			e.ensure(t, owner)
			shared := e.lbOf(t, owner)
			alone := e.owned(t)

			sharer := sharing("sharer", shared.ID, 8080)
			sharer.Spec.Ports[0].NodePort = 31031
			e.ensure(t, sharer)
			both := e.owned(t)
			if d := driftBeyondMoves(alone, both, keyOf(owner)); len(d) != 0 {
				t.Errorf("sharing started: the owner's parts drifted: %v", d)
			}
			if o := partByID(t, both, kindLoadBalancer, shared.ID); o.Service != (types.NamespacedName{}) {
				t.Errorf("shared load balancer under %s", o.Service)
			}

			stays, leaves := owner, sharer
			if ownerLeaves {
				stays, leaves = sharer, owner
			}
			// Orphan cleanup while one Service is gone: only its own
			// parts, never the load balancer the other uses.
			live := map[types.NamespacedName]*v1.Service{keyOf(stays): stays}
			servingCloud := func(*v1.Service) (string, error) { return "openstack", nil }
			for _, o := range orphans.Find("openstack", both, live, servingCloud) {
				if o.Service != keyOf(leaves) || o.Kind == kindLoadBalancer || o.Kind == kindFloatingIP {
					t.Errorf("orphan while %s uses the load balancer: %s %s of %s", stays.Name, o.Kind, o.ID, o.Service)
				}
			}

			if err := e.lb.EnsureLoadBalancerDeleted(t.Context(), "", leaves); err != nil {
				t.Fatal(err)
			}
			one := e.owned(t)
			if d := driftBeyondMoves(both, one, keyOf(stays)); len(d) != 0 {
				t.Errorf("sharing stopped: %s's parts drifted: %v", stays.Name, d)
			}
			if d := driftBeyondMoves(one, e.owned(t), keyOf(stays)); len(d) != 0 {
				t.Errorf("the listing after: %s's parts drifted: %v", stays.Name, d)
			}
			if o := partByID(t, one, kindLoadBalancer, shared.ID); o.Service != keyOf(stays) {
				t.Errorf("load balancer under %q, want %s's", o.Service, stays.Name)
			}
			if !ownerLeaves && !maps.Equal(partsOf(one, keyOf(owner)), partsOf(alone, keyOf(owner))) {
				t.Errorf("the owner's parts after sharing %v, before %v", partsOf(one, keyOf(owner)), partsOf(alone, keyOf(owner)))
			}

			// Both gone: the load balancer is an orphan, and goes.
			found := orphans.Find("openstack", one, nil, servingCloud)
			if !slices.ContainsFunc(found, func(o orphans.Orphan) bool { return o.Kind == kindLoadBalancer && o.ID == shared.ID }) {
				t.Errorf("orphans with both Services gone %+v, want the load balancer", found)
			}
			e.deleteInOrder(t, keyOf(stays))
			if _, ok := e.emu.LoadBalancer(shared.ID); ok {
				t.Error("the load balancer outlived both Services")
			}
		})
	}
}

// TestInventoryLegacyAdopted: an upstream a<uid> load balancer a sync
// adopted is the Service's (by its usage tag), listed with its name and
// no UID (the name holds only 31 of the UID's 32 hex digits), with the
// floating IP described after it as a CCM's; its parts deleted in Order
// leave nothing.
func TestInventoryLegacyAdopted(t *testing.T) {
	e := newLBEnv(t, 2, nil)
	svc := service("old", 80)
	svc.UID = "6f1c2a3b-4d5e-4f60-8a9b-0c1d2e3f4a5b"
	name := legacyName(svc)
	var members []pools.CreateMemberOpts
	for _, n := range e.nodes {
		members = append(members, pools.CreateMemberOpts{Address: n.Status.Addresses[0].Address, ProtocolPort: int(svc.Spec.Ports[0].NodePort)})
	}
	lb, err := loadbalancers.Create(t.Context(), e.api.lb, loadbalancers.CreateOpts{
		Name: name, Description: "Kubernetes external service " + name + " from cluster kubernetes", VipSubnetID: e.fx.SubnetID,
		Listeners: []listeners.CreateOpts{{Name: "listener_" + name + "_0", Protocol: "TCP", ProtocolPort: 80,
			DefaultPool: &pools.CreateOpts{Name: "pool_" + name + "_0", Protocol: "TCP", LBMethod: pools.LBMethodRoundRobin, Members: members}}},
	}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if lb, err = e.lb.waitActive(t.Context(), lb.ID); err != nil {
		t.Fatal(err)
	}
	fip, err := floatingips.Create(t.Context(), e.api.network, floatingips.CreateOpts{
		FloatingNetworkID: e.fx.ExternalNetworkID, PortID: lb.VipPortID,
		Description: "Floating IP for Kubernetes external service " + name + " from cluster kubernetes",
	}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	// Not adopted yet: nothing marks it as this cluster's.
	if owned := e.owned(t); listed(owned, lb.ID) {
		t.Errorf("listed before a sync adopted it: %+v", owned)
	}
	e.ensure(t, svc)
	owned := e.owned(t)
	if o := partByID(t, owned, kindLoadBalancer, lb.ID); o.Service != keyOf(svc) || o.Name != name || o.UID != "" || o.Kept {
		t.Errorf("legacy load balancer %+v", o)
	}
	if o := partByID(t, owned, kindFloatingIP, fip.ID); o.Service != keyOf(svc) || o.Kept {
		t.Errorf("legacy floating IP %+v", o)
	}
	if got := kinds(owned, keyOf(svc)); !maps.Equal(got, map[string]int{kindLoadBalancer: 1, kindLBUse: 1, kindListener: 1, kindPool: 1, kindFloatingIP: 1}) {
		t.Errorf("parts %v", got)
	}
	e.deleteInOrder(t, keyOf(svc))
	if n, f := len(e.emu.LoadBalancers()), len(e.emu.FloatingIPs()); n != 0 || f != 0 {
		t.Errorf("%d load balancers and %d floating IPs left", n, f)
	}
}
