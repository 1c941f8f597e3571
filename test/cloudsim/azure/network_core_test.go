package azure

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// TestNetworkPaging: lists per resource group and per subscription come
// in pages of Config.PageSize with nextLinks azcore follows.
func TestNetworkPaging(t *testing.T) {
	env := newTestEnv(t, Config{PageSize: 2})
	f := env.emu.Fixture()
	ctx := nwCtx(t)
	for i := range 5 {
		if _, _, err := env.emu.CreatePublicIP(f.ResourceGroup, fmt.Sprintf("pip-%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	pips := env.network.NewPublicIPAddressesClient()
	count := func(pg interface {
		More() bool
	}, next func() (int, error)) (items, pages int) {
		for pg.More() {
			n, err := next()
			if err != nil {
				t.Fatal(err)
			}
			items += n
			pages++
		}
		return items, pages
	}
	list := pips.NewListPager(f.ResourceGroup, nil)
	items, pages := count(list, func() (int, error) { p, err := list.NextPage(ctx); return len(p.Value), err })
	if items != 5 || pages != 3 {
		t.Fatalf("List: %d items in %d pages", items, pages)
	}
	all := pips.NewListAllPager(nil)
	items, pages = count(all, func() (int, error) { p, err := all.NextPage(ctx); return len(p.Value), err })
	if items != 5 || pages != 3 {
		t.Fatalf("ListAll: %d items in %d pages", items, pages)
	}
	if n := env.srv.CallCount("network:PublicIPAddresses_List"); n != 3 {
		t.Fatalf("PublicIPAddresses_List calls %d", n)
	}
	defaults := env.network.NewDefaultSecurityRulesClient().NewListPager(f.ResourceGroup, f.SecurityGroupName, nil)
	items, pages = count(defaults, func() (int, error) { p, err := defaults.NextPage(ctx); return len(p.Value), err })
	if items != 6 || pages != 3 {
		t.Fatalf("DefaultSecurityRules_List: %d items in %d pages", items, pages)
	}
}

// TestNetworkOperationDelay: with an operation delay, writes answer
// Updating or Deleting until done and pollers wait; a write on a busy
// family is refused with AnotherOperationInProgress, a reference to a
// resource still Updating with 429 RetryableError.
func TestNetworkOperationDelay(t *testing.T) {
	env := newTestEnv(t, Config{OperationDelay: time.Second})
	f := env.emu.Fixture()
	ctx := nwCtx(t)
	tables := env.network.NewRouteTablesClient()
	routes := env.network.NewRoutesClient()

	start := time.Now()
	p, err := routes.BeginCreateOrUpdate(ctx, f.RouteTableResourceGroup, f.RouteTableName, "node-0", nwRoute("10.244.0.0/24", "10.240.0.4"), nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := routes.Get(ctx, f.RouteTableResourceGroup, f.RouteTableName, "node-0", nil)
	if err != nil || deref(r.Properties.ProvisioningState) != armnetwork.ProvisioningStateUpdating {
		t.Fatalf("route while in progress: %v %s", err, deref(r.Properties.ProvisioningState))
	}
	rt, _ := tables.Get(ctx, f.RouteTableResourceGroup, f.RouteTableName, nil)
	if deref(rt.Properties.ProvisioningState) != armnetwork.ProvisioningStateUpdating {
		t.Fatalf("table while a route is in progress: %s", deref(rt.Properties.ProvisioningState))
	}
	// A sibling route, or the table itself, must wait.
	_, err = routes.BeginCreateOrUpdate(ctx, f.RouteTableResourceGroup, f.RouteTableName, "node-1", nwRoute("10.244.1.0/24", "10.240.0.5"), nil)
	nwWantErr(t, err, http.StatusConflict, "AnotherOperationInProgress")
	_, err = tables.BeginCreateOrUpdate(ctx, f.RouteTableResourceGroup, f.RouteTableName, rt.RouteTable, nil)
	nwWantErr(t, err, http.StatusConflict, "AnotherOperationInProgress")
	// Associating the table with a subnet while it is Updating: 429,
	// which azcore retries until it gives up.
	sub, _ := env.network.NewSubnetsClient().Get(ctx, f.VNetResourceGroup, f.VNetName, f.SubnetName, nil)
	sub.Properties.RouteTable = &armnetwork.RouteTable{ID: to.Ptr(f.RouteTableID)}
	_, err = env.network.NewSubnetsClient().BeginCreateOrUpdate(ctx, f.VNetResourceGroup, f.VNetName, f.SubnetName, sub.Subnet, nil)
	re := nwWantErr(t, err, http.StatusTooManyRequests, "RetryableError")
	if n := env.srv.CallCount("network:Subnets_CreateOrUpdate"); n != 3 {
		t.Fatalf("Subnets_CreateOrUpdate tried %d times, want 3 (2 retries): %v", n, re)
	}

	r2, err := p.PollUntilDone(ctx, nwPoll)
	if err != nil || deref(r2.Properties.ProvisioningState) != armnetwork.ProvisioningStateSucceeded {
		t.Fatalf("route after polling: %v %s", err, deref(r2.Properties.ProvisioningState))
	}
	if waited := time.Since(start); waited < time.Second {
		t.Fatalf("poller returned after %s, before the operation was done", waited)
	}

	// DELETE: Deleting until done.
	dp, err := routes.BeginDelete(ctx, f.RouteTableResourceGroup, f.RouteTableName, "node-0", nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err = routes.Get(ctx, f.RouteTableResourceGroup, f.RouteTableName, "node-0", nil)
	if err != nil || deref(r.Properties.ProvisioningState) != armnetwork.ProvisioningStateDeleting {
		t.Fatalf("route while deleting: %v %s", err, deref(r.Properties.ProvisioningState))
	}
	// A write racing the deletion is a conflicting concurrent request.
	_, err = routes.BeginCreateOrUpdate(ctx, f.RouteTableResourceGroup, f.RouteTableName, "node-0", nwRoute("10.244.0.0/24", "10.240.0.4"), nil)
	nwWantErr(t, err, http.StatusConflict, "Conflict")
	if _, err := dp.PollUntilDone(ctx, nwPoll); err != nil {
		t.Fatal(err)
	}
	_, err = routes.Get(ctx, f.RouteTableResourceGroup, f.RouteTableName, "node-0", nil)
	nwWantErr(t, err, http.StatusNotFound, "NotFound")
}

// TestNetworkThrottle: a throttled read is retried by azcore.
func TestNetworkThrottle(t *testing.T) {
	env := newTestEnv(t, Config{})
	f := env.emu.Fixture()
	pip := env.nwPublicIP(t, f.ResourceGroup, "pip", "")
	env.nwPutLB(t, f.ResourceGroup, "lb", nwLB(f, nwLBID(f, "lb"), *pip.ID))
	if err := env.srv.SetFault(cloudsim.FaultSpec{Op: "network:LoadBalancers_Get", ThrottleNext: 1}); err != nil {
		t.Fatal(err)
	}
	// azcore gives up at once when Retry-After (1 s) is over MaxRetryDelay,
	// which newTestEnv's options keep short.
	opts := *env.opts
	opts.Retry.MaxRetryDelay = 2 * time.Second
	nf, err := armnetwork.NewClientFactory(f.SubscriptionID, env.cred, &opts)
	if err != nil {
		t.Fatal(err)
	}
	before := env.srv.CallCount("network:LoadBalancers_Get")
	if _, err := nf.NewLoadBalancersClient().Get(context.Background(), f.ResourceGroup, "lb", nil); err != nil {
		t.Fatal(err)
	}
	if n := env.srv.CallCount("network:LoadBalancers_Get") - before; n != 2 {
		t.Fatalf("LoadBalancers_Get calls %d, want 2 (one throttled, one retried)", n)
	}
}

// TestNetworkFixtureResources: the fixture shows in Resources with
// parents for nested resources, and an API version the provider lacks is
// refused.
func TestNetworkFixtureResources(t *testing.T) {
	env := newTestEnv(t, Config{})
	f := env.emu.Fixture()
	kinds := map[string]int{}
	for _, r := range env.emu.Resources() {
		kinds[r.Kind]++
		if r.Kind == "Microsoft.Network/virtualNetworks/subnets" && r.Parent != f.VNetID {
			t.Fatalf("subnet parent %q", r.Parent)
		}
	}
	for kind, n := range map[string]int{
		"Microsoft.Network/virtualNetworks": 1, "Microsoft.Network/virtualNetworks/subnets": 1, "Microsoft.Network/routeTables": 1,
		"Microsoft.Network/networkSecurityGroups": 1, "Microsoft.Network/networkSecurityGroups/defaultSecurityRules": 6,
	} {
		if kinds[kind] != n {
			t.Fatalf("%d %s, want %d (%v)", kinds[kind], kind, n, kinds)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, env.srv.URL()+"/subscriptions/"+f.SubscriptionID+"/resourceGroups/"+f.ResourceGroup+
		"/providers/Microsoft.Network/virtualNetworks/"+f.VNetName+"?api-version=2015-01-01", nil)
	req.Header.Set("Authorization", "Bearer "+env.emu.IssueToken())
	resp, err := env.emu.TestHTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("old api-version: %d", resp.StatusCode)
	}
}
