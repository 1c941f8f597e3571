package gce

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/providers/compose"
	"github.com/multicloud-ccm/multicloud-ccm/providers/inventory"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	gceemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/gce"
)

// namedSvc is an external Service of its own name and UID.
func namedSvc(name, uid string, ann map[string]string) *v1.Service {
	svc := svcWith(ann)
	svc.Name, svc.UID = name, types.UID(uid)
	return svc
}

func keyOf(svc *v1.Service) types.NamespacedName {
	return types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
}

func ownedNow(t *testing.T, lb *loadBalancers) []inventory.Owned {
	t.Helper()
	got, err := lb.Owned(t.Context())
	if err != nil {
		t.Fatalf("Owned: %v", err)
	}
	return got
}

// partsOf are the listed parts of svc (the zero name: the shared parts),
// by "<kind> <name>".
func partsOf(list []inventory.Owned, svc types.NamespacedName) map[string]inventory.Owned {
	out := map[string]inventory.Owned{}
	for _, o := range list {
		if o.Service == svc {
			out[o.Kind+" "+o.Name] = o
		}
	}
	return out
}

func partNames(m map[string]inventory.Owned) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func ensure(t *testing.T, lb *loadBalancers, svc *v1.Service, nodes []*v1.Node) string {
	t.Helper()
	st, err := lb.EnsureLoadBalancer(t.Context(), "kubernetes", svc, nodes)
	if err != nil {
		t.Fatalf("ensure %s: %v", svc.Name, err)
	}
	return st.Ingress[0].IP
}

func totalCalls(env *testEnv) int {
	n := 0
	for _, c := range env.srv.Calls() {
		n += c
	}
	return n
}

// inventoryEnv has two Nodes in two zones, an external Service (web), an
// external one with externalTrafficPolicy Local (local, its own health
// check), an internal one (web-9a1b) and one on the user's address
// (pinned); and another cluster's Service on the same project.
type inventoryEnv struct {
	env                           *testEnv
	lb                            *loadBalancers
	nodes                         []*v1.Node
	ext, local, internal, pinned  *v1.Service
	extIP, intIP, userIP, localIP string
	other                         *loadBalancers
	otherSvc                      *v1.Service
}

func newInventoryEnv(t *testing.T) *inventoryEnv {
	t.Helper()
	env, lb, nodes := ilbEnv(t, 2)
	ctx := t.Context()
	ie := &inventoryEnv{env: env, lb: lb, nodes: nodes}
	ie.ext = svcWith(nil)
	ie.local = namedSvc("local", "3d5e6f70-1b9a-4f3e-9d5c-0a1b2c3d4e5f", nil)
	ie.local.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	ie.local.Spec.HealthCheckNodePort = 31000
	ie.internal = internalSvc("9a1b2c3d-1b9a-4f3e-9d5c-0a1b2c3d4e5f", nil)
	userAddr := "user-reserved"
	if err := waitOp(ctx)(env.api.addresses.Insert(ctx, &computepb.InsertAddressRequest{Project: env.s.ProjectID, Region: env.s.Region,
		AddressResource: &computepb.Address{Name: &userAddr, Description: proto.String("made by hand")}})); err != nil {
		t.Fatal(err)
	}
	a, err := env.api.addresses.Get(ctx, &computepb.GetAddressRequest{Project: env.s.ProjectID, Region: env.s.Region, Address: userAddr})
	if err != nil {
		t.Fatal(err)
	}
	ie.userIP = a.GetAddress()
	ie.pinned = namedSvc("pinned", "7f7f7f7f-1b9a-4f3e-9d5c-0a1b2c3d4e5f", nil)
	ie.pinned.Spec.LoadBalancerIP = ie.userIP
	ie.extIP = ensure(t, lb, ie.ext, nodes)
	ie.localIP = ensure(t, lb, ie.local, nodes)
	ie.intIP = ensure(t, lb, ie.internal, nodes)
	ensure(t, lb, ie.pinned, nodes)

	// Another cluster in the project, and a rule with upstream's
	// description, which names no cluster.
	ie.other = newCloud(env.s, "other", env.api, env.cloud.zones, env.clk).lb
	ie.otherSvc = namedSvc("web", "0e0e0e0e-1b9a-4f3e-9d5c-0a1b2c3d4e5f", nil)
	ie.otherSvc.Namespace = "other-ns"
	ensure(t, ie.other, ie.otherSvc, nodes)
	if err := waitOp(ctx)(env.api.forwardingRules.Insert(ctx, &computepb.InsertForwardingRuleRequest{Project: env.s.ProjectID, Region: env.s.Region,
		ForwardingRuleResource: &computepb.ForwardingRule{Name: proto.String("aupstream1"), Description: proto.String(`{"kubernetes.io/service-name":"default/web"}`),
			IPProtocol: proto.String("TCP"), PortRange: proto.String("8080-8080"), Target: proto.String(lb.regionLink("targetPools", lbName(ie.otherSvc)))}})); err != nil {
		t.Fatal(err)
	}
	return ie
}

// TestInventoryOwned: Owned lists each part of each Service with its
// Service, UID and Detail, the shared parts with none, the user's
// address kept; nothing of another cluster nor unmarked; in deletion
// order.
func TestInventoryOwned(t *testing.T) {
	ie := newInventoryEnv(t)
	env := ie.env
	zones := env.emu.Config().Zones
	list := ownedNow(t, ie.lb)
	base, lbase, ibase, pbase := lbName(ie.ext), lbName(ie.local), lbName(ie.internal), lbName(ie.pinned)
	z0, z1 := zones[0]+"/ilb-node-0", zones[1]+"/ilb-node-1"

	want := map[types.NamespacedName]map[string]string{
		keyOf(ie.ext): {
			"forwarding rule " + base:      "EXTERNAL PREMIUM " + ie.extIP + " TCP 80-80 -> targetPools/" + base,
			"target pool " + base:          "instances " + z0 + "," + z1 + "; health check httpHealthChecks/k8s-kubernetes-node; affinity NONE",
			"firewall rule k8s-fw-" + base: "allow tcp:80 from 0.0.0.0/0 to tags k8s-node dest " + ie.extIP,
		},
		keyOf(ie.local): {
			"forwarding rule " + lbase:                "",
			"target pool " + lbase:                    "instances " + z0 + "," + z1 + "; health check httpHealthChecks/" + lbase + "; affinity NONE",
			"http health check " + lbase:              "HTTP port 31000 path /healthz; every 8s, unhealthy after 3",
			"firewall rule k8s-fw-" + lbase:           "",
			"firewall rule k8s-" + lbase + "-http-hc": "allow tcp:31000 from 130.211.0.0/22,209.85.152.0/22,209.85.204.0/22,35.191.0.0/16 to tags k8s-node dest " + ie.localIP,
		},
		keyOf(ie.internal): {
			"forwarding rule " + ibase:      "INTERNAL " + ie.intIP + " TCP ports 80 -> backendServices/" + ibase + "; subnetwork " + env.s.SubnetworkName + "; global access false",
			"backend service " + ibase:      "INTERNAL TCP; groups " + zones[0] + "/k8s-ig--kubernetes," + zones[1] + "/k8s-ig--kubernetes; health check healthChecks/k8s-kubernetes-node; affinity NONE",
			"firewall rule k8s-fw-" + ibase: "allow tcp:80 from 0.0.0.0/0 to tags k8s-node dest " + ie.intIP,
		},
		keyOf(ie.pinned): {
			"forwarding rule " + pbase:      "EXTERNAL PREMIUM " + ie.userIP + " TCP 80-80 -> targetPools/" + pbase,
			"target pool " + pbase:          "",
			"firewall rule k8s-fw-" + pbase: "",
			"address user-reserved":         ie.userIP + " EXTERNAL PREMIUM",
		},
		{}: {
			"http health check k8s-kubernetes-node":     "HTTP port 10256 path /healthz; every 8s, unhealthy after 3",
			"firewall rule k8s-kubernetes-node-http-hc": "",
			"health check k8s-kubernetes-node":          "HTTP port 10256 path /healthz; every 8s, unhealthy after 3",
			"firewall rule k8s-kubernetes-node-hc":      "",
			"instance group k8s-ig--kubernetes":         "",
		},
	}
	n := 0
	for svc, parts := range want {
		got := partsOf(list, svc)
		var names []string
		for k := range parts {
			names = append(names, k)
		}
		slices.Sort(names)
		if svc == (types.NamespacedName{}) {
			// Two instance groups, one per zone, under one name.
			names = append(names, "instance group k8s-ig--kubernetes")
			slices.Sort(names)
			names = slices.Compact(names)
		}
		if fmt.Sprint(partNames(got)) != fmt.Sprint(names) {
			t.Errorf("%v: parts %v, want %v", svc, partNames(got), names)
		}
		for k, detail := range parts {
			o := got[k]
			if detail != "" && o.Detail != detail {
				t.Errorf("%v %s: detail %q, want %q", svc, k, o.Detail, detail)
			}
			if o.Detail == "" {
				t.Errorf("%v %s: no detail", svc, k)
			}
		}
		for _, o := range list {
			if o.Service == svc {
				n++
			}
		}
	}
	if n != len(list) {
		for _, o := range list {
			t.Logf("listed: %+v", o)
		}
		t.Errorf("%d parts listed, %d of the cluster's Services and shared parts", len(list), n)
	}
	groups := 0
	for _, o := range list {
		switch {
		case o.Kind == kindInstanceGroup:
			groups++
			if !strings.Contains(o.ID, "/zones/") || !strings.HasSuffix(o.Detail, "1 instances") {
				t.Errorf("instance group %+v", o)
			}
		case strings.Contains(o.Name, "other") || o.Name == "aupstream1" || o.Name == lbName(ie.otherSvc) || strings.Contains(o.Name, lbName(ie.otherSvc)):
			t.Errorf("listed another cluster's or an unmarked part: %+v", o)
		}
		// Only the user's address is kept; the UID is the Service's
		// where its parts record it.
		if o.Kept != (o.Name == "user-reserved") {
			t.Errorf("%s %s: kept %v", o.Kind, o.Name, o.Kept)
		}
		wantOrder := map[string]int{kindForwardingRule: 1, kindTargetPool: 2, kindBackendService: 2, kindHTTPHealthCheck: 3, kindHealthCheck: 3, kindInstanceGroup: 3, kindFirewall: 4, kindAddress: 5}[o.Kind]
		if o.Order != wantOrder {
			t.Errorf("%s %s: order %d, want %d", o.Kind, o.Name, o.Order, wantOrder)
		}
		if !strings.HasPrefix(o.ID, "projects/"+env.s.ProjectID+"/") || !strings.HasSuffix(o.ID, "/"+o.Name) {
			t.Errorf("%s %s: ID %s", o.Kind, o.Name, o.ID)
		}
		var wantUID types.UID
		for _, svc := range []*v1.Service{ie.ext, ie.local, ie.internal, ie.pinned} {
			if o.Service == keyOf(svc) && o.Name != "user-reserved" {
				wantUID = svc.UID
			}
		}
		if o.UID != wantUID {
			t.Errorf("%s %s: UID %q, want %q", o.Kind, o.Name, o.UID, wantUID)
		}
	}
	if groups != 2 {
		t.Errorf("%d instance groups listed, want one per zone with nodes", groups)
	}
	if !slices.IsSortedFunc(list, func(a, b inventory.Owned) int { return a.Order - b.Order }) {
		t.Error("not in deletion order")
	}

	// The other cluster lists its own, not ours.
	for _, o := range ownedNow(t, ie.other) {
		if o.Service != (types.NamespacedName{}) && o.Service != keyOf(ie.otherSvc) {
			t.Errorf("the other cluster lists %+v", o)
		}
	}

	// The backend hands it to the kit.
	if compose.New(env.cloud.Parts()).Parts().Inventory == nil {
		t.Error("Parts has no Inventory")
	}
}

// dump is a listing as "<kind> <name> = <detail>" lines, for
// comparing a listing before and after a repair.
func dump(list []inventory.Owned) string {
	var lines []string
	for _, o := range list {
		lines = append(lines, fmt.Sprintf("%s %s %s = %s (kept %v, order %d)", o.Service, o.Kind, o.ID, o.Detail, o.Kept, o.Order))
	}
	return strings.Join(lines, "\n")
}

// TestInventoryRepair: a part deleted out of band is missing from the
// listing; Forget and an ensure make exactly what is missing again and
// the listing is as before. A forwarding rule made again gets a new IP
// when the old one was ephemeral: the ensure returns it and the firewall
// rule follows it. The internal Service's instance group, deleted with
// its backend service, is made again only after Forget: before it, the
// ensure trusted its record of the groups.
func TestInventoryRepair(t *testing.T) {
	ie := newInventoryEnv(t)
	env, lb, ctx := ie.env, ie.lb, t.Context()
	p, r := env.s.ProjectID, env.s.Region
	before := dump(ownedNow(t, lb))
	base, ibase := lbName(ie.ext), lbName(ie.internal)
	missing := func(kind, name string) {
		t.Helper()
		for _, o := range ownedNow(t, lb) {
			if o.Kind == kind && o.Name == name {
				t.Fatalf("%s %s still listed after its deletion", kind, name)
			}
		}
	}
	repair := func(svc *v1.Service, wantInserts map[string]int) string {
		t.Helper()
		lb.Forget(keyOf(svc))
		env.srv.ResetCalls()
		ip := ensure(t, lb, svc, ie.nodes)
		calls := env.srv.Calls()
		for op, n := range calls {
			if strings.HasSuffix(op, ".Insert") && n != wantInserts[op] {
				t.Errorf("repair of %s: %s called %d times, want %d (calls %v)", svc.Name, op, n, wantInserts[op], calls)
			}
		}
		for op, n := range wantInserts {
			if calls[op] != n {
				t.Errorf("repair of %s: %s called %d times, want %d", svc.Name, op, calls[op], n)
			}
		}
		return ip
	}

	// The client firewall rule.
	if err := waitOp(ctx)(env.api.firewalls.Delete(ctx, &computepb.DeleteFirewallRequest{Project: p, Firewall: firewallName(base)})); err != nil {
		t.Fatal(err)
	}
	missing(kindFirewall, firewallName(base))
	repair(ie.ext, map[string]int{"compute:Firewalls.Insert": 1})
	if got := dump(ownedNow(t, lb)); got != before {
		t.Fatalf("after the firewall repair:\n%s\nwant\n%s", got, before)
	}

	// The target pool, with the forwarding rule that uses it.
	if err := waitOp(ctx)(env.api.forwardingRules.Delete(ctx, &computepb.DeleteForwardingRuleRequest{Project: p, Region: r, ForwardingRule: base})); err != nil {
		t.Fatal(err)
	}
	if err := waitOp(ctx)(env.api.targetPools.Delete(ctx, &computepb.DeleteTargetPoolRequest{Project: p, Region: r, TargetPool: base})); err != nil {
		t.Fatal(err)
	}
	missing(kindTargetPool, base)
	missing(kindForwardingRule, base)
	ip := repair(ie.ext, map[string]int{"compute:TargetPools.Insert": 1, "compute:ForwardingRules.Insert": 1, "compute:Addresses.Insert": 1})
	after := ownedNow(t, lb)
	rule := partsOf(after, keyOf(ie.ext))["forwarding rule "+base]
	fw := partsOf(after, keyOf(ie.ext))["firewall rule "+firewallName(base)]
	if !strings.Contains(rule.Detail, " "+ip+" ") || !strings.HasSuffix(fw.Detail, "dest "+ip) {
		t.Errorf("status IP %s; rule %q, firewall %q", ip, rule.Detail, fw.Detail)
	}
	if ip != ie.extIP {
		t.Logf("the rule made again has a new IP %s (was %s)", ip, ie.extIP)
		before = strings.ReplaceAll(before, ie.extIP, ip)
	}
	if got := dump(after); got != before {
		t.Fatalf("after the pool repair:\n%s\nwant\n%s", got, before)
	}

	// The internal Service's rule, backend service, and the instance
	// group of one zone.
	zone := env.emu.Config().Zones[1]
	ensure(t, lb, ie.internal, ie.nodes) // records the groups (the Forgets above dropped the record)
	if err := waitOp(ctx)(env.api.forwardingRules.Delete(ctx, &computepb.DeleteForwardingRuleRequest{Project: p, Region: r, ForwardingRule: ibase})); err != nil {
		t.Fatal(err)
	}
	if err := waitOp(ctx)(env.api.regionBackendServices.Delete(ctx, &computepb.DeleteRegionBackendServiceRequest{Project: p, Region: r, BackendService: ibase})); err != nil {
		t.Fatal(err)
	}
	if err := waitOp(ctx)(env.api.instanceGroups.Delete(ctx, &computepb.DeleteInstanceGroupRequest{Project: p, Zone: zone, InstanceGroup: instanceGroupName("kubernetes")})); err != nil {
		t.Fatal(err)
	}
	missing(kindBackendService, ibase)
	// Without Forget, the ensure trusts its record of the groups and
	// does not make the group again.
	_, err := lb.EnsureLoadBalancer(ctx, "kubernetes", ie.internal, ie.nodes)
	t.Log("ensure without Forget:", err)
	if err == nil {
		if _, ok := env.emu.InstanceGroup(zone, instanceGroupName("kubernetes")); ok {
			t.Fatal("the group was made again without Forget: the record is not what this test is about")
		}
	}
	// As upstream, the internal address is reserved only while the rule
	// is made (ensureInternalAddress): a rule deleted out of band comes
	// back with a new IP, as the external one does. (The failed ensure
	// above reserved it already; the repair takes that reservation and
	// releases it.)
	iip := repair(ie.internal, map[string]int{"compute:InstanceGroups.Insert": 1, "compute:RegionBackendServices.Insert": 1, "compute:ForwardingRules.Insert": 1})
	if iip != ie.intIP {
		t.Logf("the internal rule made again has a new IP %s (was %s)", iip, ie.intIP)
		before = strings.ReplaceAll(before, ie.intIP, iip)
	}
	if got := dump(ownedNow(t, lb)); got != before {
		t.Fatalf("after the internal repair:\n%s\nwant\n%s", got, before)
	}
	if got := groupMembers(env, zone); fmt.Sprint(got) != "[ilb-node-1]" {
		t.Errorf("group members %v", got)
	}
}

// TestInventoryDeleteOrphans: every part of the cluster's Services,
// deleted one by one in Order as orphans, leaves the project as it was
// before them but for the shared parts; the user's address stays; a part
// already gone is success; a shared part goes once no load balancer uses
// it. Another cluster's parts are untouched.
func TestInventoryDeleteOrphans(t *testing.T) {
	env, lb, nodes := ilbEnv(t, 2)
	ctx := t.Context()
	userAddr := "user-reserved"
	if err := waitOp(ctx)(env.api.addresses.Insert(ctx, &computepb.InsertAddressRequest{Project: env.s.ProjectID, Region: env.s.Region,
		AddressResource: &computepb.Address{Name: &userAddr}})); err != nil {
		t.Fatal(err)
	}
	a, err := env.api.addresses.Get(ctx, &computepb.GetAddressRequest{Project: env.s.ProjectID, Region: env.s.Region, Address: userAddr})
	if err != nil {
		t.Fatal(err)
	}
	other := newCloud(env.s, "other", env.api, env.cloud.zones, env.clk).lb
	otherSvc := namedSvc("web", "0e0e0e0e-1b9a-4f3e-9d5c-0a1b2c3d4e5f", nil)
	otherSvc.Namespace = "other-ns"
	ensure(t, other, otherSvc, nodes)
	before := env.srv.Resources()

	local := namedSvc("local", "3d5e6f70-1b9a-4f3e-9d5c-0a1b2c3d4e5f", nil)
	local.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	local.Spec.HealthCheckNodePort = 31000
	pinned := namedSvc("pinned", "7f7f7f7f-1b9a-4f3e-9d5c-0a1b2c3d4e5f", nil)
	pinned.Spec.LoadBalancerIP = a.GetAddress()
	env.s.KeepAddresses = true // the external Services' addresses too
	for _, svc := range []*v1.Service{svcWith(nil), local, internalSvc("9a1b2c3d-1b9a-4f3e-9d5c-0a1b2c3d4e5f", nil), pinned} {
		ensure(t, lb, svc, nodes)
	}
	list := ownedNow(t, lb)
	var kept, shared []inventory.Owned
	for _, o := range list {
		switch {
		case o.Kept:
			kept = append(kept, o)
			continue
		case o.Service == (types.NamespacedName{}):
			shared = append(shared, o)
			continue
		}
		if err := lb.DeleteOrphan(ctx, o); err != nil {
			t.Fatalf("DeleteOrphan %s %s: %v", o.Kind, o.Name, err)
		}
	}
	if len(kept) != 1 || kept[0].Name != userAddr {
		t.Errorf("kept %+v", kept)
	}
	if err := lb.DeleteOrphan(ctx, kept[0]); err == nil {
		t.Error("DeleteOrphan deleted the user's address")
	}
	// Gone already: success.
	for _, o := range list {
		if !o.Kept && o.Service != (types.NamespacedName{}) {
			if err := lb.DeleteOrphan(ctx, o); err != nil {
				t.Errorf("DeleteOrphan of %s %s, gone: %v", o.Kind, o.Name, err)
			}
		}
	}
	isShared := func(r cloudsim.Resource) bool {
		for _, o := range shared {
			if r.ID == o.ID {
				return true
			}
		}
		return false
	}
	added, removed := cloudsim.DiffResources(before, env.srv.Resources())
	added = slices.DeleteFunc(added, isShared)
	if len(added) > 0 || len(removed) > 0 {
		t.Errorf("after deleting the orphans: added %v, removed %v", added, removed)
	}
	if len(shared) != 6 {
		t.Errorf("shared parts %+v", shared)
	}

	// The shared parts, now unused, go when asked for.
	for _, o := range shared {
		if err := lb.DeleteOrphan(ctx, o); err != nil {
			t.Errorf("DeleteOrphan of shared %s %s: %v", o.Kind, o.Name, err)
		}
	}
	if added, removed := cloudsim.DiffResources(before, env.srv.Resources()); len(added) > 0 || len(removed) > 0 {
		t.Errorf("after deleting the shared parts: added %v, removed %v", added, removed)
	}
}

// TestInventoryDeleteOrphanRefusals: a shared part in use stays (and
// says so); a part whose description names another Service or UID than
// the caller's is refused; one of another cluster too.
func TestInventoryDeleteOrphanRefusals(t *testing.T) {
	env, lb, nodes := ilbEnv(t, 1)
	ctx := t.Context()
	svc := svcWith(nil)
	ensure(t, lb, svc, nodes)
	list := ownedNow(t, lb)
	var rule, check inventory.Owned
	for _, o := range list {
		switch o.Kind {
		case kindForwardingRule:
			rule = o
		case kindHTTPHealthCheck:
			check = o
		}
	}
	if err := lb.DeleteOrphan(ctx, check); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("deleting the shared check in use: %v", err)
	}
	wrong := rule
	wrong.Service.Name = "else"
	if err := lb.DeleteOrphan(ctx, wrong); err == nil {
		t.Error("deleted a rule under another Service's name")
	}
	wrong = rule
	wrong.UID = "11111111-2222-3333-4444-555555555555"
	if err := lb.DeleteOrphan(ctx, wrong); err == nil {
		t.Error("deleted a rule of another UID")
	}
	other := newCloud(env.s, "other", env.api, env.cloud.zones, env.clk).lb
	if err := other.DeleteOrphan(ctx, rule); err == nil {
		t.Error("another cluster deleted our rule")
	}
	if _, ok := env.emu.ForwardingRule(rule.Name); !ok {
		t.Error("the rule is gone")
	}
	// A part the Service still uses is refused by GCE: dependents first.
	pool := partsOf(list, keyOf(svc))["target pool "+lbName(svc)]
	if err := lb.DeleteOrphan(ctx, pool); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("deleting the pool before its rule: %v", err)
	}
}

// TestInventoryCalls: Owned costs one call per listing page, the same
// for 1 and for 20 Services: 9 listings, 11 with the upstream cluster
// ID; smaller pages cost more calls and list the same.
func TestInventoryCalls(t *testing.T) {
	env, lb, nodes := ilbEnv(t, 2)
	ensure(t, lb, svcWith(nil), nodes)
	count := func() (int, []inventory.Owned) {
		env.srv.ResetCalls()
		list := ownedNow(t, lb)
		return totalCalls(env), list
	}
	one, _ := count()
	if one != 9 {
		t.Errorf("Owned with one Service: %d calls (%v), want 9", one, env.srv.Calls())
	}
	for i := range 19 {
		uid := fmt.Sprintf("%08x-1b9a-4f3e-9d5c-0a1b2c3d4e5f", i+1)
		svc := namedSvc(fmt.Sprintf("svc-%d", i), uid, nil)
		if i%2 == 1 {
			svc = internalSvc(uid, nil)
			svc.Name = fmt.Sprintf("isvc-%d", i)
		}
		ensure(t, lb, svc, nodes)
	}
	twenty, list := count()
	if twenty != one {
		t.Errorf("Owned with 20 Services: %d calls (%v), with one %d", twenty, env.srv.Calls(), one)
	}
	services := map[types.NamespacedName]bool{}
	for _, o := range list {
		services[o.Service] = true
	}
	if len(services) != 21 { // 20 and the shared parts
		t.Errorf("%d Services listed, want 20 and the shared parts", len(services)-1)
	}

	// A cluster switched from the upstream CCM: its internal shared
	// check and that check's firewall rule have no description, the
	// external check's rule names the upstream cluster ID.
	ctx := t.Context()
	const up = "3b2c1a0f9e8d7c6b"
	hc := nodeHealthCheckName(up)
	if err := waitOp(ctx)(env.api.healthChecks.Insert(ctx, &computepb.InsertHealthCheckRequest{Project: env.s.ProjectID, HealthCheckResource: &computepb.HealthCheck{
		Name: proto.String(hc), Type: proto.String("HTTP"), HttpHealthCheck: &computepb.HTTPHealthCheck{Port: proto.Int32(10256), RequestPath: proto.String("/healthz")}}})); err != nil {
		t.Fatal(err)
	}
	for name, desc := range map[string]string{
		internalHealthCheckFirewallName(hc): "",
		healthCheckFirewallName(hc, true):   `{"kubernetes.io/cluster-id":"` + up + `"}`,
		"k8s-fw-by-hand":                    "",
		"k8s-someone-else-node-http-hc":     `{"kubernetes.io/cluster-id":"someone-else"}`,
	} {
		if err := waitOp(ctx)(env.api.firewalls.Insert(ctx, &computepb.InsertFirewallRequest{Project: env.s.ProjectID, FirewallResource: &computepb.Firewall{
			Name: proto.String(name), Description: proto.String(desc), Network: proto.String(env.s.networkURL()),
			Allowed: []*computepb.Allowed{{IPProtocol: proto.String("tcp"), Ports: []string{"10256"}}}}})); err != nil {
			t.Fatal(err)
		}
	}
	lb.setSharedID(up)
	n, list := count()
	if n != 11 {
		t.Errorf("Owned with the upstream cluster ID: %d calls (%v), want 11", n, env.srv.Calls())
	}
	var upstream []string
	for _, o := range list {
		if strings.Contains(o.Name, up) {
			if o.Service != (types.NamespacedName{}) {
				t.Errorf("upstream's shared part %+v has a Service", o)
			}
			upstream = append(upstream, o.Kind+" "+o.Name)
		}
		if o.Name == "k8s-fw-by-hand" || strings.Contains(o.Name, "someone-else") {
			t.Errorf("listed %+v", o)
		}
	}
	slices.Sort(upstream)
	want := []string{"firewall rule " + healthCheckFirewallName(hc, true), "firewall rule " + internalHealthCheckFirewallName(hc), "health check " + hc}
	if slices.Sort(want); !slices.Equal(upstream, want) {
		t.Errorf("upstream's shared parts listed: %v, want %v", upstream, want)
	}
	lb.setSharedID("")
}

// TestInventoryPages: with pages of 2 items, every listing follows its
// pages: more calls, every part listed.
func TestInventoryPages(t *testing.T) {
	env := newTestEnv(t, gceemu.Config{PageSize: 2}, func(s *Section) { s.NodeTags = []string{"k8s-node"} })
	nodes := env.launch(t, cloudsim.InstanceSpec{Name: "page-node-0"})
	initNode(t, env, nodes[0])
	lb := env.cloud.lb
	for i := range 5 {
		ensure(t, lb, namedSvc(fmt.Sprintf("svc-%d", i), fmt.Sprintf("%08x-1b9a-4f3e-9d5c-0a1b2c3d4e5f", i+1), nil), nodes)
	}
	env.srv.ResetCalls()
	list := ownedNow(t, lb)
	// Each Service: a rule, a pool, a firewall rule; shared: the check
	// and its firewall rule.
	if len(list) != 5*3+2 {
		t.Errorf("%d parts listed in pages, want %d: %s", len(list), 5*3+2, dump(list))
	}
	if n := totalCalls(env); n <= 9 {
		t.Errorf("%d calls in pages of 2", n)
	}
	if calls := env.srv.Calls(); calls["compute:Firewalls.List"] != 3 || calls["compute:ForwardingRules.List"] != 3 {
		t.Errorf("calls %v: want 3 pages of firewall rules (6), 3 of forwarding rules (5)", calls)
	}
}

// TestInventoryForget: Forget drops the Service's target pool record, so
// the next node update reads the pool; records of other Services stay.
func TestInventoryForget(t *testing.T) {
	env, lb, nodes := lbEnv(t, 2)
	ctx := t.Context()
	web, api := svcWith(nil), namedSvc("api", "5a5a5a5a-1b9a-4f3e-9d5c-0a1b2c3d4e5f", nil)
	ensure(t, lb, web, nodes)
	ensure(t, lb, api, nodes)
	gets := func(svc *v1.Service) int {
		t.Helper()
		env.srv.ResetCalls()
		if err := lb.UpdateLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
			t.Fatal(err)
		}
		return env.srv.CallCount("compute:TargetPools.Get")
	}
	if n := gets(web); n != 0 {
		t.Fatalf("an update with the record read the pool %d times", n)
	}
	lb.Forget(keyOf(web))
	if n := gets(web); n != 1 {
		t.Errorf("the update after Forget read the pool %d times, want 1", n)
	}
	if n := gets(api); n != 0 {
		t.Errorf("Forget of web dropped api's record: %d reads", n)
	}
}
