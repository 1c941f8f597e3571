package azure

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/providers/inventory"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	azemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/azure"
)

// serviceCache gives the backend a Service informer's cache holding
// svcs; the returned func replaces what it holds (a Service deleted).
func (e *testEnv) serviceCache(svcs ...*v1.Service) func(...*v1.Service) {
	var mu sync.Mutex
	cur := svcs
	e.cloud.lb.services = func() ([]*v1.Service, error) {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(cur), nil
	}
	return func(s ...*v1.Service) {
		mu.Lock()
		cur = s
		mu.Unlock()
	}
}

func (e *testEnv) owned(t *testing.T) []inventory.Owned {
	t.Helper()
	parts, err := e.cloud.lb.Owned(t.Context())
	if err != nil {
		t.Fatalf("Owned: %v", err)
	}
	ids := map[string]bool{}
	for _, p := range parts {
		if ids[p.Kind+" "+p.ID] {
			t.Errorf("%s %s listed twice", p.Kind, p.ID)
		}
		ids[p.Kind+" "+p.ID] = true
	}
	return parts
}

// ensure syncs svc and puts its addresses in its status, as the service
// controller does.
func (e *testEnv) ensure(t *testing.T, svc *v1.Service, nodes []*v1.Node) {
	t.Helper()
	st, err := e.cloud.lb.EnsureLoadBalancer(t.Context(), "kubernetes", svc, nodes)
	if err != nil {
		t.Fatalf("ensure %s: %v", svc.Name, err)
	}
	svc.Status.LoadBalancer = *st
}

func nn(svc *v1.Service) types.NamespacedName {
	return types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
}

// partLine is a listed part as the tests compare it.
func partLine(p inventory.Owned) string {
	return fmt.Sprintf("%s %s %s|%s|uid=%s|kept=%v|order=%d|%s", p.Kind, p.Name, p.ID, p.Service, p.UID, p.Kept, p.Order, p.Detail)
}

func partLines(parts []inventory.Owned) []string {
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		out = append(out, partLine(p))
	}
	slices.Sort(out)
	return out
}

// partsOf are the listed parts of one Service.
func partsOf(parts []inventory.Owned, svc types.NamespacedName) map[string]inventory.Owned {
	out := map[string]inventory.Owned{}
	for _, p := range parts {
		if p.Service == svc {
			out[p.Kind+" "+p.Name] = p
		}
	}
	return out
}

func diffLines(before, after []string) (gone, added []string) {
	for _, l := range before {
		if !slices.Contains(after, l) {
			gone = append(gone, l)
		}
	}
	for _, l := range after {
		if !slices.Contains(before, l) {
			added = append(added, l)
		}
	}
	return gone, added
}

// inventoryServices are a public Service of two ports and an internal
// one admitting a range, made on the env's nodes.
func inventoryServices(t *testing.T, env *testEnv, nodes []*v1.Node) (web, db *v1.Service) {
	t.Helper()
	web, db = lbService("web", 80, 443), lbService("db", 5432)
	db.UID = "dbdbdbdb-1111-2222-3333-444455556666"
	db.Annotations = map[string]string{string(annotationInternal): "true"}
	db.Spec.LoadBalancerSourceRanges = []string{"10.1.0.0/16"}
	env.ensure(t, web, nodes)
	env.ensure(t, db, nodes)
	return web, db
}

// TestInventoryOwned: every part of a public and an internal Service is
// listed with its Service, UID and what the ensure set; the load
// balancers, their pool and the subnet are listed shared; with the
// informer's Services gone the parts carry what the cloud records.
func TestInventoryOwned(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	nodes := env.lbNodes(t, 2)
	web, db := inventoryServices(t, env, nodes)
	setServices := env.serviceCache(web, db)
	rg := env.fx.ResourceGroup
	lbID := env.cloud.lb.lbID("kubernetes")
	ilbID := env.cloud.lb.lbID("kubernetes-internal")
	wn, dn := upstreamNames("kubernetes", web), upstreamNames("kubernetes", db)
	webIP, dbIP := web.Status.LoadBalancer.Ingress[0].IP, db.Status.LoadBalancer.Ingress[0].IP
	pip, _ := env.emu.PublicIP(rg, wn.pip)
	nsgID := env.fx.SecurityGroupID
	webRule := allowRuleName(armnetwork.SecurityRuleProtocolTCP, false, []string{"Internet"}, []int32{80, 443})
	dbRule := allowRuleName(armnetwork.SecurityRuleProtocolTCP, false, []string{"10.1.0.0/16"}, []int32{5432})
	np := func(svc *v1.Service, i int) int32 { return svc.Spec.Ports[i].NodePort }
	wantWeb := []string{
		fmt.Sprintf("frontend IP configuration %s %s/frontendIPConfigurations/%s|default/web|uid=%s|kept=false|order=4|public IP %s/%s", wn.base, lbID, wn.base, web.UID, rg, wn.pip),
		fmt.Sprintf("health probe %s-TCP-443 %s/probes/%s-TCP-443|default/web|uid=%s|kept=false|order=2|Tcp port %d every 5s threshold 2", wn.base, lbID, wn.base, web.UID, np(web, 1)),
		fmt.Sprintf("health probe %s-TCP-80 %s/probes/%s-TCP-80|default/web|uid=%s|kept=false|order=2|Tcp port %d every 5s threshold 2", wn.base, lbID, wn.base, web.UID, np(web, 0)),
		fmt.Sprintf("load-balancing rule %s-TCP-443 %s/loadBalancingRules/%s-TCP-443|default/web|uid=%s|kept=false|order=1|Tcp 443->443 frontend %s pool kubernetes probe %s-TCP-443 floating IP on idle 4 min TCP reset on distribution Default", wn.base, lbID, wn.base, web.UID, wn.base, wn.base),
		fmt.Sprintf("load-balancing rule %s-TCP-80 %s/loadBalancingRules/%s-TCP-80|default/web|uid=%s|kept=false|order=1|Tcp 80->80 frontend %s pool kubernetes probe %s-TCP-80 floating IP on idle 4 min TCP reset on distribution Default", wn.base, lbID, wn.base, web.UID, wn.base, wn.base),
		fmt.Sprintf("public IP address %s %s#default/web|default/web|uid=%s|kept=false|order=5|%s Static IPv4 Standard", wn.pip, deref(pip.ID), web.UID, webIP),
		fmt.Sprintf("security rule %s %s/securityRules/%s#%s|default/web|uid=%s|kept=false|order=0|Allow Inbound Tcp from Internet to %s ports 80,443", webRule, nsgID, webRule, wn.base, web.UID, webIP),
	}
	wantDB := []string{
		fmt.Sprintf("frontend IP configuration %s %s/frontendIPConfigurations/%s|default/db|uid=%s|kept=false|order=4|private %s Dynamic IPv4 subnet virtualNetworks/%s/subnets/%s", dn.base, ilbID, dn.base, db.UID, dbIP, env.fx.VNetName, env.fx.SubnetName),
		fmt.Sprintf("health probe %s-TCP-5432 %s/probes/%s-TCP-5432|default/db|uid=%s|kept=false|order=2|Tcp port %d every 5s threshold 2", dn.base, ilbID, dn.base, db.UID, np(db, 0)),
		fmt.Sprintf("load-balancing rule %s-TCP-5432 %s/loadBalancingRules/%s-TCP-5432|default/db|uid=%s|kept=false|order=1|Tcp 5432->5432 frontend %s pool kubernetes probe %s-TCP-5432 floating IP on idle 4 min TCP reset on distribution Default", dn.base, ilbID, dn.base, db.UID, dn.base, dn.base),
		fmt.Sprintf("security rule %s %s/securityRules/%s#%s|default/db|uid=%s|kept=false|order=0|Allow Inbound Tcp from 10.1.0.0/16 to %s ports 5432", dbRule, nsgID, dbRule, dn.base, db.UID, dbIP),
	}
	parts := env.owned(t)
	check := func(svc types.NamespacedName, want []string) {
		t.Helper()
		got := partLines(slices.Collect(maps.Values(partsOf(parts, svc))))
		slices.Sort(want)
		if gone, added := diffLines(want, got); len(gone)+len(added) > 0 {
			t.Errorf("%s's parts:\nmissing %s\nunexpected %s", svc, strings.Join(gone, "\n\t"), strings.Join(added, "\n\t"))
		}
	}
	check(nn(web), wantWeb)
	check(nn(db), wantDB)
	var shared []string
	for _, p := range parts {
		if p.Service == (types.NamespacedName{}) {
			if p.UID != "" {
				t.Errorf("shared part with a UID: %s", partLine(p))
			}
			shared = append(shared, fmt.Sprintf("%s %s kept=%v order=%d", p.Kind, p.ID, p.Kept, p.Order))
			if p.Kind == kindBackendPool && p.Detail != "members "+strings.Join([]string{nodes[0].Name + "=" + nodeIPs(nodes[:1])[0], nodes[1].Name + "=" + nodeIPs(nodes[1:])[0]}, ",") {
				t.Errorf("pool %s: %s", p.ID, p.Detail)
			}
		}
	}
	wantShared := []string{
		"backend address pool " + ilbID + "/backendAddressPools/kubernetes kept=false order=6",
		"backend address pool " + lbID + "/backendAddressPools/kubernetes kept=false order=6",
		"load balancer " + ilbID + " kept=false order=6",
		"load balancer " + lbID + " kept=false order=6",
		"subnet " + env.fx.SubnetID + " kept=true order=6",
	}
	slices.Sort(shared)
	slices.Sort(wantShared)
	if !slices.Equal(shared, wantShared) {
		t.Errorf("shared parts:\n%s\nwant\n%s", strings.Join(shared, "\n"), strings.Join(wantShared, "\n"))
	}
	if len(parts) != len(wantWeb)+len(wantDB)+len(wantShared) {
		t.Errorf("%d parts listed:\n%s", len(parts), strings.Join(partLines(parts), "\n"))
	}
	// The listing is in deletion order.
	if !slices.IsSortedFunc(parts, func(a, b inventory.Owned) int { return a.Order - b.Order }) {
		t.Error("listing not in Order")
	}

	// Without the informer: the public Service's name from its public
	// IP's tag, the internal one's unknown; no UID (upstream's names
	// keep 31 of its 32 digits).
	env.cloud.lb.services = nil
	parts = env.owned(t)
	for _, p := range partsOf(parts, nn(web)) {
		if p.UID != "" || p.Service != nn(web) {
			t.Errorf("without the informer: %s", partLine(p))
		}
	}
	if got := len(partsOf(parts, nn(web))); got != len(wantWeb) {
		t.Errorf("without the informer, %d of web's parts named after it", got)
	}
	if got := len(slices.DeleteFunc(slices.Clone(parts), func(p inventory.Owned) bool { return p.Service != types.NamespacedName{} })); got != len(wantDB)+len(wantShared) {
		t.Errorf("without the informer, %d parts of no known Service, want db's and the shared ones:\n%s", got, strings.Join(partLines(parts), "\n"))
	}

	// The Services gone from the informer (deleted): the parts carry the
	// name the tag records, and their UID's first 35 characters, which
	// is no Service's UID.
	env.cloud.lb.services = nil
	setServices = env.serviceCache()
	parts = env.owned(t)
	for _, p := range parts {
		if p.Service == (types.NamespacedName{}) && p.UID == "" {
			continue
		}
		var want types.UID
		var wantSvc types.NamespacedName
		switch {
		case strings.Contains(p.ID, wn.base):
			want, wantSvc = web.UID[:35], nn(web)
		case strings.Contains(p.ID, dn.base):
			want = db.UID[:35]
		}
		if p.UID != want || p.Service != wantSvc {
			t.Errorf("Services gone: %s, want %q uid %q", partLine(p), wantSvc, want)
		}
	}
	setServices(web, db)

	// An informer not yet synced lists nothing.
	env.cloud.lb.services = func() ([]*v1.Service, error) { return nil, fmt.Errorf("not synced") }
	if _, err := env.cloud.lb.Owned(t.Context()); err == nil {
		t.Error("Owned listed with the informer not synced")
	}
}

// TestInventoryOtherClusterAndUserIPs: another cluster's load balancer,
// public IPs and its destinations in a security rule shared with this
// cluster's Service are never listed; the user's public IP a Service
// names is listed Kept, one no Service uses not at all.
func TestInventoryOtherClusterAndUserIPs(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	nodes := env.lbNodes(t, 1)
	s2 := *env.s
	other := newCloud(&s2, "other", env.api, env.clk)
	theirs := lbService("theirs", 80)
	theirs.UID = "eeeeeeee-1111-2222-3333-444455556666"
	if _, err := other.lb.EnsureLoadBalancer(t.Context(), "other", theirs, nodes); err != nil {
		t.Fatal(err)
	}
	if _, _, err := env.emu.CreatePublicIP(env.fx.ResourceGroup, "user-pip", nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := env.emu.CreatePublicIP(env.fx.ResourceGroup, "idle-user-pip", map[string]string{tagCluster: "kubernetes"}); err != nil {
		t.Fatal(err)
	}
	ours, named := lbService("ours", 80), lbService("named", 8080)
	named.Annotations = map[string]string{string(annotationPIPName): "user-pip"}
	env.ensure(t, ours, nodes)
	env.ensure(t, named, nodes)
	env.serviceCache(ours, named)
	shared := allowRuleName(armnetwork.SecurityRuleProtocolTCP, false, []string{"Internet"}, []int32{80})
	if r := env.nsgRule(t, shared); !strings.Contains(r, ",") {
		t.Fatalf("the two clusters' Services do not share rule %s: %s", shared, r)
	}
	parts := env.owned(t)
	for _, p := range parts {
		if strings.Contains(strings.ToLower(p.ID), "/loadbalancers/other") || strings.Contains(p.Name, "other-") ||
			strings.Contains(p.Detail, "idle-user-pip") || p.Name == "idle-user-pip" || strings.Contains(p.ID, upstreamNames("other", theirs).base) {
			t.Errorf("listed: %s", partLine(p))
		}
		if p.Kind == kindSecurityRule && p.Name == shared && (p.Service != nn(ours) || strings.Contains(p.Detail, ",")) {
			t.Errorf("shared rule: %s", partLine(p))
		}
	}
	userPIP, _ := env.emu.PublicIP(env.fx.ResourceGroup, "user-pip")
	got := partsOf(parts, nn(named))["public IP address user-pip"]
	if !got.Kept || got.ID != deref(userPIP.ID) || got.UID != named.UID || got.Detail != deref(userPIP.Properties.IPAddress)+" Static IPv4 Standard" {
		t.Errorf("the user's public IP: %s", partLine(got))
	}
	if err := env.cloud.lb.DeleteOrphan(t.Context(), got); err == nil {
		t.Error("DeleteOrphan deleted a Kept public IP")
	}
	got.Kept = false
	if err := env.cloud.lb.DeleteOrphan(t.Context(), got); err == nil {
		t.Error("DeleteOrphan deleted the user's public IP listed Kept")
	}
	if _, ok := env.emu.PublicIP(env.fx.ResourceGroup, "user-pip"); !ok {
		t.Error("the user's public IP is gone")
	}
	// The other cluster's listing is the mirror image.
	for _, p := range func() []inventory.Owned { ps, _ := other.lb.Owned(t.Context()); return ps }() {
		if strings.Contains(p.ID, upstreamNames("", ours).base) || strings.Contains(p.ID, "user-pip") {
			t.Errorf("the other cluster lists ours: %s", partLine(p))
		}
	}
}

// TestInventoryCalls: the listing costs the same calls for 1 Service as
// for 20, one per page of each listing; with small pages, one per page.
func TestInventoryCalls(t *testing.T) {
	for _, pageSize := range []int{100, 4} {
		t.Run(fmt.Sprintf("pages of %d", pageSize), func(t *testing.T) {
			env := newTestEnv(t, azemu.Config{PageSize: pageSize}, nil)
			nodes := env.lbNodes(t, 1)
			var svcs []*v1.Service
			count := func() (int, map[string]int) {
				env.serviceCache(svcs...)
				env.srv.ResetCalls()
				parts := env.owned(t)
				calls := env.srv.Calls()
				total := 0
				for _, n := range calls {
					total += n
				}
				for _, svc := range svcs {
					if len(partsOf(parts, nn(svc))) < 3 {
						t.Errorf("%d Services: %s's parts not all listed", len(svcs), svc.Name)
					}
				}
				return total, calls
			}
			add := func(n int) {
				for range n {
					i := len(svcs)
					svc := lbService(fmt.Sprintf("svc-%02d", i), 80)
					svc.UID = types.UID(fmt.Sprintf("%08x-1111-2222-3333-444455556666", i+1))
					if i%2 == 1 {
						svc.Annotations = map[string]string{string(annotationInternal): "true"}
					}
					env.ensure(t, svc, nodes)
					svcs = append(svcs, svc)
				}
			}
			add(2)
			few, fewCalls := count()
			add(18)
			many, manyCalls := count()
			t.Logf("2 Services: %v; 20: %v", fewCalls, manyCalls)
			pipPages := func(n int) int { return max(1, (n+pageSize-1)/pageSize) }
			pips := len(env.emu.ListNetwork("publicIPAddresses"))
			want := map[string]int{
				"network:LoadBalancers_List":        pipPages(2),
				"network:PublicIPAddresses_List":    pipPages(pips),
				"network:NetworkSecurityGroups_Get": 1,
			}
			for op, n := range want {
				if manyCalls[op] != n {
					t.Errorf("20 Services: %s %d calls, want %d", op, manyCalls[op], n)
				}
			}
			if pageSize >= 100 && few != many {
				t.Errorf("calls for 2 Services %d, for 20 %d", few, many)
			}
			if many != len(manyCalls) && pageSize >= 100 {
				t.Errorf("calls %v", manyCalls)
			}
		})
	}
}

// lbEdit writes a load balancer as another client would.
func (e *testEnv) lbEdit(t *testing.T, name string, edit func(p *armnetwork.LoadBalancerPropertiesFormat)) {
	t.Helper()
	ctx := t.Context()
	resp, err := e.api.lbs.Get(ctx, e.fx.ResourceGroup, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	edit(resp.Properties)
	p, err := e.api.lbs.BeginCreateOrUpdate(ctx, e.fx.ResourceGroup, name, resp.LoadBalancer, nil)
	if err == nil {
		_, err = p.PollUntilDone(ctx, pollOptions)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// dropNamed takes the parts named after base out of a load balancer,
// as an out-of-band cleanup would (rules first, as ARM requires).
func dropNamed(p *armnetwork.LoadBalancerPropertiesFormat, prefix string) {
	has := func(n *string) bool { return strings.HasPrefix(deref(n), prefix) }
	p.LoadBalancingRules = slices.DeleteFunc(p.LoadBalancingRules, func(r *armnetwork.LoadBalancingRule) bool { return has(r.Name) })
	p.Probes = slices.DeleteFunc(p.Probes, func(r *armnetwork.Probe) bool { return has(r.Name) })
	p.FrontendIPConfigurations = slices.DeleteFunc(p.FrontendIPConfigurations, func(r *armnetwork.FrontendIPConfiguration) bool { return has(r.Name) })
}

func (e *testEnv) nsgEdit(t *testing.T, edit func(g *armnetwork.SecurityGroup)) {
	t.Helper()
	ctx := t.Context()
	resp, err := e.api.nsgs.Get(ctx, e.fx.SecurityGroupResourceGroup, e.fx.SecurityGroupName, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := resp.SecurityGroup
	g.Properties.DefaultSecurityRules = nil
	edit(&g)
	p, err := e.api.nsgs.BeginCreateOrUpdate(ctx, e.fx.SecurityGroupResourceGroup, e.fx.SecurityGroupName, g, nil)
	if err == nil {
		_, err = p.PollUntilDone(ctx, pollOptions)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func (e *testEnv) deletePIP(t *testing.T, name string) {
	t.Helper()
	p, err := e.api.publicIPs.BeginDelete(t.Context(), e.fx.ResourceGroup, name, nil)
	if err == nil {
		_, err = p.PollUntilDone(t.Context(), pollOptions)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func resourceKeys(rs []cloudsim.Resource) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Kind+" "+r.ID)
	}
	return out
}

// TestInventoryRepair: a part deleted out of band (a rule, the frontend
// with its rules, the public IP, a security rule, an internal frontend)
// leaves the listing; Forget and an ensure make it again, the address
// too where it had to change, and nothing twice. Without Forget the
// ensure trusts the copy it wrote and repairs nothing.
func TestInventoryRepair(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	nodes := env.lbNodes(t, 2)
	web, db := inventoryServices(t, env, nodes)
	env.serviceCache(web, db)
	wn, dn := upstreamNames("kubernetes", web), upstreamNames("kubernetes", db)
	webRule := allowRuleName(armnetwork.SecurityRuleProtocolTCP, false, []string{"Internet"}, []int32{80, 443})
	before := partLines(env.owned(t))
	resources := resourceKeys(env.emu.Resources())

	repair := func(t *testing.T, svc *v1.Service, wantGone []string) []string {
		t.Helper()
		gone, added := diffLines(before, partLines(env.owned(t)))
		for _, w := range wantGone {
			if !slices.ContainsFunc(gone, func(l string) bool { return strings.Contains(l, w) }) {
				t.Errorf("after the deletion, %s still listed", w)
			}
		}
		if len(wantGone) > 0 && len(added) > 0 {
			t.Errorf("after the deletion, listed anew: %v", added)
		}
		env.cloud.lb.Forget(nn(svc))
		env.ensure(t, svc, nodes)
		after := partLines(env.owned(t))
		if got := resourceKeys(env.emu.Resources()); !slices.Equal(got, resources) {
			g, ad := diffLines(resources, got)
			t.Errorf("resources after the repair: gone %v, added %v", g, ad)
		}
		return after
	}

	t.Run("without Forget nothing is repaired", func(t *testing.T) {
		env.lbEdit(t, "kubernetes", func(p *armnetwork.LoadBalancerPropertiesFormat) {
			p.LoadBalancingRules = slices.DeleteFunc(p.LoadBalancingRules, func(r *armnetwork.LoadBalancingRule) bool { return deref(r.Name) == wn.base+"-TCP-443" })
		})
		env.ensure(t, web, nodes)
		if lb, _ := env.lb(t, "kubernetes"); len(lb.Properties.LoadBalancingRules) != 1 {
			t.Errorf("the ensure repaired without Forget (the test's premise is gone): %d rules", len(lb.Properties.LoadBalancingRules))
		}
		after := repair(t, web, nil)
		if !slices.Equal(after, before) {
			t.Errorf("after Forget and the ensure:\n%s\nwant\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
		}
	})
	t.Run("a rule", func(t *testing.T) {
		env.lbEdit(t, "kubernetes", func(p *armnetwork.LoadBalancerPropertiesFormat) {
			p.LoadBalancingRules = slices.DeleteFunc(p.LoadBalancingRules, func(r *armnetwork.LoadBalancingRule) bool { return deref(r.Name) == wn.base+"-TCP-80" })
		})
		if after := repair(t, web, []string{"load-balancing rule " + wn.base + "-TCP-80"}); !slices.Equal(after, before) {
			t.Errorf("after the repair:\n%s\nwant\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
		}
	})
	t.Run("the frontend", func(t *testing.T) {
		env.lbEdit(t, "kubernetes", func(p *armnetwork.LoadBalancerPropertiesFormat) { dropNamed(p, wn.base) })
		if after := repair(t, web, []string{"frontend IP configuration " + wn.base, "health probe " + wn.base}); !slices.Equal(after, before) {
			t.Errorf("after the repair:\n%s\nwant\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
		}
	})
	t.Run("a probe changed", func(t *testing.T) {
		env.lbEdit(t, "kubernetes", func(p *armnetwork.LoadBalancerPropertiesFormat) {
			for _, pr := range p.Probes {
				if deref(pr.Name) == wn.base+"-TCP-80" {
					*pr.Properties.Port = 31999
				}
			}
		})
		gone, added := diffLines(before, partLines(env.owned(t)))
		if len(gone) != 1 || len(added) != 1 || !strings.Contains(added[0], "Tcp port 31999 ") {
			t.Errorf("after the change: gone %v, added %v", gone, added)
		}
		if after := repair(t, web, nil); !slices.Equal(after, before) {
			t.Errorf("after the repair:\n%s\nwant\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
		}
	})
	t.Run("a security rule", func(t *testing.T) {
		env.nsgEdit(t, func(g *armnetwork.SecurityGroup) {
			g.Properties.SecurityRules = slices.DeleteFunc(g.Properties.SecurityRules, func(r *armnetwork.SecurityRule) bool { return deref(r.Name) == webRule })
		})
		if after := repair(t, web, []string{"security rule " + webRule}); !slices.Equal(after, before) {
			t.Errorf("after the repair:\n%s\nwant\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
		}
	})
	t.Run("the public IP", func(t *testing.T) {
		old := web.Status.LoadBalancer.Ingress[0].IP
		env.lbEdit(t, "kubernetes", func(p *armnetwork.LoadBalancerPropertiesFormat) { dropNamed(p, wn.base) })
		env.deletePIP(t, wn.pip)
		after := repair(t, web, []string{"public IP address " + wn.pip})
		now := web.Status.LoadBalancer.Ingress[0].IP
		if now == old {
			t.Fatalf("the new public IP has the old address %s", old)
		}
		// Only the address changed, in the public IP and in the
		// security rule.
		gone, added := diffLines(before, after)
		if len(gone) != 2 || len(added) != 2 {
			t.Errorf("after the repair, gone %v, added %v", gone, added)
		}
		for _, l := range added {
			if !strings.Contains(l, now) {
				t.Errorf("changed without the new address: %s", l)
			}
		}
		if r := env.nsgRule(t, webRule); strings.Contains(r, old) || !strings.Contains(r, now) {
			t.Errorf("security rule %s", r)
		}
		before = after
	})
	t.Run("an internal frontend", func(t *testing.T) {
		env.lbEdit(t, "kubernetes-internal", func(p *armnetwork.LoadBalancerPropertiesFormat) { dropNamed(p, dn.base) })
		after := repair(t, db, []string{"frontend IP configuration " + dn.base, "load-balancing rule " + dn.base})
		ip := db.Status.LoadBalancer.Ingress[0].IP
		for _, l := range after {
			if strings.Contains(l, dn.base) && strings.Contains(l, "frontend IP configuration") && !strings.Contains(l, "private "+ip+" ") {
				t.Errorf("frontend %s, status %s", l, ip)
			}
		}
		if gone, added := diffLines(before, after); len(gone) != len(added) || len(gone) > 2 {
			t.Errorf("after the repair, gone %v, added %v", gone, added)
		}
	})
}

// orphansOf are the listed parts of Services no longer in the informer,
// in Order.
func orphansOf(parts []inventory.Owned, live ...*v1.Service) []inventory.Owned {
	var out []inventory.Owned
	for _, p := range parts {
		if p.Kept || p.Service == (types.NamespacedName{}) && p.UID == "" {
			continue
		}
		if slices.ContainsFunc(live, func(s *v1.Service) bool { return s.UID == p.UID }) {
			continue
		}
		out = append(out, p)
	}
	slices.SortStableFunc(out, func(a, b inventory.Owned) int { return a.Order - b.Order })
	return out
}

// nsgState is every security rule as the tests compare them.
func (e *testEnv) nsgState(t *testing.T) []string {
	var out []string
	for _, n := range e.nsgRules(t) {
		out = append(out, e.nsgRule(t, n))
	}
	return out
}

// TestInventoryDeleteOrphans: the parts of Services that are gone (a
// public one sharing a security rule with a live Service, an internal
// one, one without floating IP), deleted in Order, leave the cloud as it was before them, shared
// parts aside; the last Service's parts take the load balancer along.
func TestInventoryDeleteOrphans(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	nodes := env.lbNodes(t, 2)
	ctx := t.Context()
	pristine := resourceKeys(env.emu.Resources())
	pristineNSG := env.nsgState(t)
	keep, keepInt := lbService("keep", 80), lbService("keep-int", 6379)
	keep.UID, keepInt.UID = "aaaa0001-1111-2222-3333-444455556666", "aaaa0002-1111-2222-3333-444455556666"
	keepInt.Annotations = map[string]string{string(annotationInternal): "true"}
	env.ensure(t, keep, nodes)
	env.ensure(t, keepInt, nodes)
	setServices := env.serviceCache(keep, keepInt)
	resources := resourceKeys(env.emu.Resources())
	nsg := env.nsgState(t)
	parts := partLines(env.owned(t))

	gone, goneInt := lbService("gone", 80), lbService("gone-int", 5432)
	gone.UID, goneInt.UID = "bbbb0001-1111-2222-3333-444455556666", "bbbb0002-1111-2222-3333-444455556666"
	goneInt.Annotations = map[string]string{string(annotationInternal): "true"}
	goneInt.Spec.LoadBalancerSourceRanges = []string{"10.9.0.0/16"}
	// Without floating IP the security rule admits clients to the nodes'
	// NodePorts: told apart by the load balancer rule's backend port.
	goneNF := lbService("gone-nf", 8080)
	goneNF.UID = "bbbb0003-1111-2222-3333-444455556666"
	goneNF.Annotations = map[string]string{string(annotationDisableFloatingIP): "true"}
	env.ensure(t, gone, nodes)
	env.ensure(t, goneInt, nodes)
	env.ensure(t, goneNF, nodes)
	nfRule := allowRuleName(armnetwork.SecurityRuleProtocolTCP, false, []string{"Internet"}, []int32{goneNF.Spec.Ports[0].NodePort})
	if p := partsOf(env.owned(t), nn(goneNF))[kindSecurityRule+" "+nfRule]; p.Detail != fmt.Sprintf("Allow Inbound Tcp from Internet to %s ports %d", strings.Join(nodeIPs(nodes), ","), goneNF.Spec.Ports[0].NodePort) {
		t.Errorf("security rule without floating IP: %s", partLine(p))
	}
	// The Services are deleted and their finalizers removed by hand: the
	// informer no longer has them.
	orphans := orphansOf(env.owned(t), keep, keepInt)
	if len(orphans) != 14 {
		t.Fatalf("%d orphans:\n%s", len(orphans), strings.Join(partLines(orphans), "\n"))
	}
	for _, o := range orphans {
		if strings.Contains(o.ID, upstreamNames("", gone).base) != (o.Service == nn(gone)) || strings.Contains(o.ID, upstreamNames("", goneNF).base) != (o.Service == nn(goneNF)) {
			t.Errorf("orphan %s", partLine(o))
		}
	}
	for _, o := range orphans {
		if err := env.cloud.lb.DeleteOrphan(ctx, o); err != nil {
			t.Fatalf("DeleteOrphan %s: %v", partLine(o), err)
		}
	}
	if got := resourceKeys(env.emu.Resources()); !slices.Equal(got, resources) {
		g, a := diffLines(resources, got)
		t.Errorf("after the orphans' deletion: gone %v, left %v", g, a)
	}
	if got := env.nsgState(t); !slices.Equal(got, nsg) {
		t.Errorf("security rules:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(nsg, "\n"))
	}
	if got := partLines(env.owned(t)); !slices.Equal(got, parts) {
		g, a := diffLines(parts, got)
		t.Errorf("listing after: gone %v, added %v", g, a)
	}
	// Gone already: success.
	if err := env.cloud.lb.DeleteOrphan(ctx, orphans[0]); err != nil {
		t.Errorf("DeleteOrphan of a part gone: %v", err)
	}
	// Shared parts and live Services' parts changed since: refused.
	for _, p := range env.owned(t) {
		if p.Kind == kindLoadBalancer {
			if err := env.cloud.lb.DeleteOrphan(ctx, p); err == nil {
				t.Errorf("DeleteOrphan deleted the shared %s", partLine(p))
			}
		}
		if p.Service == nn(keep) && p.Kind == kindPublicIP {
			p.UID = "cccc0001-1111-2222-3333-444455556666"
			if err := env.cloud.lb.DeleteOrphan(ctx, p); err == nil {
				t.Errorf("DeleteOrphan deleted %s listed for another UID", partLine(p))
			}
		}
	}

	// The live Services go too: the load balancers go with their last
	// frontends, and the cloud is as before any Service.
	setServices()
	orphans = orphansOf(env.owned(t))
	for _, o := range orphans {
		if err := env.cloud.lb.DeleteOrphan(ctx, o); err != nil {
			t.Fatalf("DeleteOrphan %s: %v", partLine(o), err)
		}
	}
	if got := resourceKeys(env.emu.Resources()); !slices.Equal(got, pristine) {
		g, a := diffLines(pristine, got)
		t.Errorf("after every orphan's deletion: gone %v, left %v", g, a)
	}
	if got := env.nsgState(t); !slices.Equal(got, pristineNSG) {
		t.Errorf("security rules left: %v", got)
	}
	if parts := env.owned(t); len(parts) != 0 {
		t.Errorf("listed after everything went:\n%s", strings.Join(partLines(parts), "\n"))
	}
}

// TestInventoryNICPool: with NIC-based pools, a node taken out of the
// pool behind the manager's back is put back by Forget and an ensure
// (the ensure alone trusts what it wrote), and a Service's orphaned parts
// deleted in Order take the load balancer along, its pool's members
// released first as ARM requires.
func TestInventoryNICPool(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, func(s *Section) {
		s.LoadBalancerBackendPoolConfigurationType = "NodeIPConfiguration"
	})
	ctx := t.Context()
	nodes := env.lbNodes(t, 2)
	svc := lbService("nic", 80)
	env.ensure(t, svc, nodes)
	setServices := env.serviceCache(svc)
	poolID := env.cloud.lb.lbID("kubernetes") + "/backendAddressPools/kubernetes"
	inPool := func(n *v1.Node) bool {
		return slices.ContainsFunc(env.poolsOf(t, n.Name), func(p string) bool { return strings.EqualFold(p, poolID) })
	}
	before := partLines(env.owned(t))
	// The first node's NIC leaves the pool out of band.
	vm, err := env.api.vms.Get(ctx, env.fx.ResourceGroup, nodes[0].Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, nicName, _ := resourceGroupAndName(deref(vm.Properties.NetworkProfile.NetworkInterfaces[0].ID))
	nic, err := env.api.nics.Get(ctx, env.fx.ResourceGroup, nicName, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range nic.Properties.IPConfigurations {
		c.Properties.LoadBalancerBackendAddressPools = nil
	}
	p, err := env.api.nics.BeginCreateOrUpdate(ctx, env.fx.ResourceGroup, nicName, nic.Interface, nil)
	if err == nil {
		_, err = p.PollUntilDone(ctx, pollOptions)
	}
	if err != nil {
		t.Fatal(err)
	}
	if inPool(nodes[0]) {
		t.Fatal("the NIC is still in the pool")
	}
	if gone, _ := diffLines(before, partLines(env.owned(t))); len(gone) != 1 || !strings.HasPrefix(gone[0], kindBackendPool) {
		t.Errorf("listing after the NIC left: gone %v", gone)
	}
	env.ensure(t, svc, nodes)
	if inPool(nodes[0]) {
		t.Error("the ensure alone put the NIC back (the test's premise is gone)")
	}
	env.cloud.lb.Forget(nn(svc))
	env.ensure(t, svc, nodes)
	if !inPool(nodes[0]) || !inPool(nodes[1]) {
		t.Error("Forget and the ensure did not put the NIC back")
	}
	if after := partLines(env.owned(t)); !slices.Equal(after, before) {
		t.Errorf("listing after the repair:\n%s\nwant\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
	}

	setServices()
	for _, o := range orphansOf(env.owned(t)) {
		if err := env.cloud.lb.DeleteOrphan(ctx, o); err != nil {
			t.Fatalf("DeleteOrphan %s: %v", partLine(o), err)
		}
	}
	if _, ok := env.lb(t, "kubernetes"); ok {
		t.Error("the load balancer outlived its last frontend")
	}
	if inPool(nodes[0]) || inPool(nodes[1]) {
		t.Error("a NIC still names the deleted pool")
	}
	if n := len(env.emu.ListNetwork("publicIPAddresses")); n != 0 {
		t.Errorf("%d public IPs left", n)
	}
}

// TestInventoryDualStack: a dual-stack Service's parts of both families
// ("-IPv6" names, two public IPs, a security rule per family) are its
// own, and go in Order.
func TestInventoryDualStack(t *testing.T) {
	env := newTestEnv(t, azemu.Config{DualStack: true}, func(s *Section) { s.VMType = VMTypeStandard })
	ctx := t.Context()
	nodes := env.lbNodes(t, 2)
	pristine := resourceKeys(env.emu.Resources())
	svc := dualStack(lbService("ds", 80), v1.IPv4Protocol, v1.IPv6Protocol)
	env.ensure(t, svc, nodes)
	setServices := env.serviceCache(svc)
	mine := partsOf(env.owned(t), nn(svc))
	n := upstreamNames("kubernetes", svc)
	for _, want := range []string{
		kindFrontend + " " + n.base, kindFrontend + " " + n.base + "-IPv6",
		kindPublicIP + " " + n.pip, kindPublicIP + " " + n.pip + "-IPv6",
		kindRule + " " + n.base + "-TCP-80", kindRule + " " + n.base + "-TCP-80-IPv6",
		kindProbe + " " + n.base + "-TCP-80", kindProbe + " " + n.base + "-TCP-80-IPv6",
		kindSecurityRule + " " + allowRuleName(armnetwork.SecurityRuleProtocolTCP, false, []string{"Internet"}, []int32{80}),
		kindSecurityRule + " " + allowRuleName(armnetwork.SecurityRuleProtocolTCP, true, []string{"Internet"}, []int32{80}),
	} {
		p, ok := mine[want]
		if !ok || p.UID != svc.UID {
			t.Errorf("%s: %s", want, partLine(p))
		}
	}
	if len(mine) != 10 {
		t.Errorf("%d parts:\n%s", len(mine), strings.Join(partLines(slices.Collect(maps.Values(mine))), "\n"))
	}
	if p := mine[kindSecurityRule+" "+allowRuleName(armnetwork.SecurityRuleProtocolTCP, true, []string{"Internet"}, []int32{80})]; !strings.Contains(p.Detail, svc.Status.LoadBalancer.Ingress[1].IP) {
		t.Errorf("IPv6 security rule %s, status %v", partLine(p), svc.Status.LoadBalancer.Ingress)
	}
	setServices()
	for _, o := range orphansOf(env.owned(t)) {
		if err := env.cloud.lb.DeleteOrphan(ctx, o); err != nil {
			t.Fatalf("DeleteOrphan %s: %v", partLine(o), err)
		}
	}
	if got := resourceKeys(env.emu.Resources()); !slices.Equal(got, pristine) {
		g, a := diffLines(pristine, got)
		t.Errorf("after the orphans' deletion: gone %v, left %v", g, a)
	}
}

// TestInventorySharedAddress: a Service on another's public IP (its
// loadBalancerIP) has its rules and probes on that Service's frontend and
// the IP's tag names both: each public IP entry, rule, probe and security
// rule is listed for its own Service; the second's orphaned parts go
// without touching the first's, then the first's take the IP along.
func TestInventorySharedAddress(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	ctx := t.Context()
	nodes := env.lbNodes(t, 1)
	pristine := resourceKeys(env.emu.Resources())
	a, b := lbService("first", 80), lbService("second", 8443)
	b.UID = "bbbbbbbb-1111-2222-3333-444455556666"
	env.ensure(t, a, nodes)
	an, bn := upstreamNames("kubernetes", a), upstreamNames("kubernetes", b)
	// The first's entry keeps its ID as the second starts sharing: a new
	// ID would be a part gone and another added to drift repair.
	alone := partsOf(env.owned(t), nn(a))[kindPublicIP+" "+an.pip].ID
	b.Spec.LoadBalancerIP = a.Status.LoadBalancer.Ingress[0].IP
	env.ensure(t, b, nodes)
	setServices := env.serviceCache(a, b)
	parts := env.owned(t)
	if shared := partsOf(parts, nn(a))[kindPublicIP+" "+an.pip].ID; shared != alone {
		t.Errorf("the first's public IP entry was %s alone, %s shared", alone, shared)
	}
	pip, _ := env.emu.PublicIP(env.fx.ResourceGroup, an.pip)
	if tag := deref(pip.Tags[tagService]); tag != "default/first,default/second" {
		t.Fatalf("public IP tag %q", tag)
	}
	pb := partsOf(parts, nn(b))
	if p := pb[kindPublicIP+" "+an.pip]; p.ID != deref(pip.ID)+"#default/second" || p.UID != "" {
		t.Errorf("second's share of the public IP: %s", partLine(p))
	}
	if p := pb[kindRule+" "+bn.base+"-TCP-8443"]; p.UID != b.UID || !strings.Contains(p.Detail, "frontend "+an.base+" ") {
		t.Errorf("second's rule: %s", partLine(p))
	}
	if p := pb[kindSecurityRule+" "+allowRuleName(armnetwork.SecurityRuleProtocolTCP, false, []string{"Internet"}, []int32{8443})]; p.UID != b.UID {
		t.Errorf("second's security rule: %s", partLine(p))
	}
	if len(pb) != 4 {
		t.Errorf("second's parts:\n%s", strings.Join(partLines(slices.Collect(maps.Values(pb))), "\n"))
	}
	pa := partsOf(parts, nn(a))
	if p := pa[kindPublicIP+" "+an.pip]; p.ID != deref(pip.ID)+"#default/first" || p.UID != a.UID {
		t.Errorf("first's share of the public IP: %s", partLine(p))
	}
	if len(pa) != 5 {
		t.Errorf("first's parts:\n%s", strings.Join(partLines(slices.Collect(maps.Values(pa))), "\n"))
	}
	// The first's frontend, which the second's rules use, is not deleted.
	if err := env.cloud.lb.DeleteOrphan(ctx, pa[kindFrontend+" "+an.base]); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("DeleteOrphan of a frontend in use: %v", err)
	}
	firstParts := partLines(slices.Collect(maps.Values(pa)))
	setServices(a)
	orphans := orphansOf(env.owned(t), a)
	for _, o := range orphans {
		if err := env.cloud.lb.DeleteOrphan(ctx, o); err != nil {
			t.Fatalf("DeleteOrphan %s: %v", partLine(o), err)
		}
	}
	pa = partsOf(env.owned(t), nn(a))
	pipLine := func(lines []string) []string {
		return slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return strings.HasPrefix(l, kindPublicIP) })
	}
	if got := partLines(slices.Collect(maps.Values(pa))); !slices.Equal(pipLine(got), pipLine(firstParts)) || len(got) != len(firstParts) {
		t.Errorf("first's parts after the second's went:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(firstParts, "\n"))
	}
	if pip, _ := env.emu.PublicIP(env.fx.ResourceGroup, an.pip); deref(pip.Tags[tagService]) != "default/first" {
		t.Errorf("public IP tag %q after the second went", deref(pip.Tags[tagService]))
	}
	setServices()
	for _, o := range orphansOf(env.owned(t)) {
		if err := env.cloud.lb.DeleteOrphan(ctx, o); err != nil {
			t.Fatalf("DeleteOrphan %s: %v", partLine(o), err)
		}
	}
	if got := resourceKeys(env.emu.Resources()); !slices.Equal(got, pristine) {
		g, a := diffLines(pristine, got)
		t.Errorf("after the orphans' deletion: gone %v, left %v", g, a)
	}
}

// The base of a part's name: upstream's (31 hex digits) or legacy (32),
// alone or before a dash; anything else is not a Service's part.
func TestPartBase(t *testing.T) {
	up := "a0123456789abcdef0123456789abcde"      // "a" and 31 digits
	legacy := "a0123456789abcdef0123456789abcdef" // "a" and 32
	for name, want := range map[string]string{
		up:                             up,
		up + "-TCP-80":                 up,
		up + "-TCP-80-IPv6":            up,
		up + "-internal-subnet-UDP-53": up,
		legacy:                         legacy,
		legacy + "-TCP-80":             legacy,
		"A0123456789ABCDEF0123456789ABCDE-TCP-80":                  "A0123456789ABCDEF0123456789ABCDE",
		"a0123456789abcdef0123456789abcd":                          "", // 30 digits
		"a0123456789abcdef0123456789abcdefa":                       "", // 33
		"a0123456789abcdef0123456789abcdx":                         "",
		"operator-probe":                                           "",
		"k8s-azure-lb_allow_IPv4_0123456789abcdef0123456789abcdef": "",
	} {
		if got, ok := partBase(name); got != want || ok != (want != "") {
			t.Errorf("partBase(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	if got := baseUID(legacy, false); got != "01234567-89ab-cdef-0123-456789abcdef" {
		t.Errorf("legacy UID %q", got)
	}
	if got := baseUID(up, false); got != "" {
		t.Errorf("upstream UID without the informer %q", got)
	}
	if got := baseUID(up, true); got != "01234567-89ab-cdef-0123-456789abcde" {
		t.Errorf("upstream UID prefix %q", got)
	}
	l := &loadBalancers{clusterID: "kubernetes"}
	for name, want := range map[string]string{
		"kubernetes-" + up:                     up,
		"kubernetes-" + up + "-IPv6":           up,
		"kubernetes-" + legacy:                 legacy,
		"ubernetes-" + legacy:                  legacy, // the legacy name's last 80 characters
		"kubernetes-" + up + "x":               "",
		"user-pip":                             "",
		"other-" + up:                          "",
		strings.Repeat("c", 60) + "-" + up:     "",
		strings.Repeat("c", 60) + "-" + legacy: legacy,
	} {
		if got := l.pipBase(name); got != want {
			t.Errorf("pipBase(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestInventoryDeleteOrphanLRO: with every write a long-running
// operation that takes a while (provisioningState Updating, then
// Deleting), the orphan's parts still go in Order, each write awaited
// before the next is computed.
func TestInventoryDeleteOrphanLRO(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	nodes := env.lbNodes(t, 1)
	pristine := resourceKeys(env.emu.Resources())
	svc := lbService("slow", 80)
	env.ensure(t, svc, nodes)
	env.serviceCache()
	env.emu.SetOperationDelay(100 * time.Millisecond)
	orphans := orphansOf(env.owned(t))
	if len(orphans) != 5 {
		t.Fatalf("orphans:\n%s", strings.Join(partLines(orphans), "\n"))
	}
	for _, o := range orphans {
		if err := env.cloud.lb.DeleteOrphan(t.Context(), o); err != nil {
			t.Fatalf("DeleteOrphan %s: %v", partLine(o), err)
		}
	}
	if got := resourceKeys(env.emu.Resources()); !slices.Equal(got, pristine) {
		g, a := diffLines(pristine, got)
		t.Errorf("after the orphans' deletion: gone %v, left %v", g, a)
	}
}
