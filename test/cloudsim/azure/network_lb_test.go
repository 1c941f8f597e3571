package azure

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
)

// TestLoadBalancerPublic: a Standard load balancer on a public IP with
// an IP-based pool, a probe and a rule gets every sub-resource's id,
// type, etag and state and the back-references between them; the
// public IP shows the frontend and cannot be deleted while it is used.
func TestLoadBalancerPublic(t *testing.T) {
	env := newTestEnv(t, Config{})
	f := env.emu.Fixture()
	ctx := nwCtx(t)
	pip := env.nwPublicIP(t, f.ResourceGroup, "web-pip", "web-svc")
	if a := deref(pip.Properties.IPAddress); !strings.HasPrefix(a, "20.") {
		t.Fatalf("public address %q, want one from 20.64.0.0/10", a)
	}
	if fqdn := deref(pip.Properties.DNSSettings.Fqdn); fqdn != "web-svc.eastus.cloudapp.azure.com" {
		t.Fatalf("fqdn %q", fqdn)
	}
	lbID := nwLBID(f, "kubernetes")
	lb := env.nwPutLB(t, f.ResourceGroup, "kubernetes", nwLB(f, lbID, *pip.ID, "10.240.0.4", "10.240.0.5", "10.240.0.6"))

	if deref(lb.ID) != lbID || deref(lb.Etag) == "" || deref(lb.Properties.ProvisioningState) != armnetwork.ProvisioningStateSucceeded {
		t.Fatalf("load balancer id %s etag %s state %s", deref(lb.ID), deref(lb.Etag), deref(lb.Properties.ProvisioningState))
	}
	// The inventory lists the load balancer's inline parts under it, so
	// a frontend or rule left behind shows.
	parts := map[string]bool{}
	for _, r := range env.emu.Resources() {
		if r.Parent == lbID {
			parts[r.Kind] = true
		}
	}
	for _, k := range []string{"frontendIPConfigurations", "loadBalancingRules", "probes", "backendAddressPools"} {
		if !parts["Microsoft.Network/loadBalancers/"+k] {
			t.Errorf("Resources() lacks the load balancer's %s: %v", k, parts)
		}
	}
	fe := lb.Properties.FrontendIPConfigurations[0]
	rule := lb.Properties.LoadBalancingRules[0]
	probe := lb.Properties.Probes[0]
	pool := lb.Properties.BackendAddressPools[0]
	for _, sub := range []struct{ id, typ, etag *string }{
		{fe.ID, fe.Type, fe.Etag}, {rule.ID, rule.Type, rule.Etag}, {probe.ID, probe.Type, probe.Etag}, {pool.ID, pool.Type, pool.Etag},
	} {
		if !strings.HasPrefix(deref(sub.id), lbID+"/") || !strings.HasPrefix(deref(sub.typ), "Microsoft.Network/loadBalancers/") || deref(sub.etag) == "" {
			t.Fatalf("sub-resource id %s type %s etag %s", deref(sub.id), deref(sub.typ), deref(sub.etag))
		}
	}
	if deref(fe.ID) != lbID+"/frontendIPConfigurations/fe" || deref(fe.Type) != "Microsoft.Network/loadBalancers/frontendIPConfigurations" {
		t.Fatalf("frontend id %s type %s", deref(fe.ID), deref(fe.Type))
	}
	for name, refs := range map[string][]*armnetwork.SubResource{
		"frontend": fe.Properties.LoadBalancingRules, "pool": pool.Properties.LoadBalancingRules, "probe": probe.Properties.LoadBalancingRules,
	} {
		if ids := nwIDs(refs); !slices.Equal(ids, []string{*rule.ID}) {
			t.Fatalf("%s loadBalancingRules %v, want [%s]", name, ids, *rule.ID)
		}
	}
	if n := len(pool.Properties.LoadBalancerBackendAddresses); n != 3 {
		t.Fatalf("pool has %d addresses", n)
	}
	rp := rule.Properties
	if deref(rp.IdleTimeoutInMinutes) != 4 || deref(rp.LoadDistribution) != armnetwork.LoadDistributionDefault || deref(rp.EnableFloatingIP) || !deref(rp.EnableTCPReset) {
		t.Fatalf("rule defaults: idle %d distribution %s floating %v reset %v", deref(rp.IdleTimeoutInMinutes), deref(rp.LoadDistribution), deref(rp.EnableFloatingIP), deref(rp.EnableTCPReset))
	}
	if nwIDs(rp.BackendAddressPools)[0] != *pool.ID {
		t.Fatalf("rule backendAddressPools %v", nwIDs(rp.BackendAddressPools))
	}

	pips := env.network.NewPublicIPAddressesClient()
	got, err := pips.Get(ctx, f.ResourceGroup, "web-pip", nil)
	if err != nil {
		t.Fatal(err)
	}
	if id := deref(got.Properties.IPConfiguration.ID); id != *fe.ID {
		t.Fatalf("public IP ipConfiguration %q, want %q", id, *fe.ID)
	}
	if deref(got.Etag) == deref(pip.Etag) {
		t.Fatal("public IP etag unchanged after a frontend took it")
	}
	p, err := pips.BeginDelete(ctx, f.ResourceGroup, "web-pip", nil)
	re := nwWantErr(t, nwErr(t, p, err), http.StatusBadRequest, "PublicIPAddressCannotBeDeleted")
	if !strings.Contains(re.Error(), "can not be deleted since it is still allocated to resource "+*fe.ID) {
		t.Fatalf("message: %v", re)
	}

	// A second load balancer cannot take the same address.
	err = env.nwLBErr(t, f.ResourceGroup, "other", nwLB(f, nwLBID(f, "other"), *pip.ID))
	nwWantErr(t, err, http.StatusBadRequest, "PublicIPAddressInUse")

	// Deleting the load balancer frees the address.
	dp, err := env.network.NewLoadBalancersClient().BeginDelete(ctx, f.ResourceGroup, "kubernetes", nil)
	nwDone(t, dp, err)
	if _, ok := env.emu.LoadBalancer(f.ResourceGroup, "kubernetes"); ok {
		t.Fatal("load balancer still there")
	}
	if ids := env.emu.ListNetwork("loadBalancers/backendAddressPools"); len(ids) != 0 {
		t.Fatalf("pools left: %v", ids)
	}
	got, _ = pips.Get(ctx, f.ResourceGroup, "web-pip", nil)
	if got.Properties.IPConfiguration != nil {
		t.Fatalf("public IP still shows %s", deref(got.Properties.IPConfiguration.ID))
	}
	p, err = pips.BeginDelete(ctx, f.ResourceGroup, "web-pip", nil)
	nwDone(t, p, err)
}

// TestLoadBalancerValidation: the provider's refusals, with its codes.
func TestLoadBalancerValidation(t *testing.T) {
	env := newTestEnv(t, Config{})
	f := env.emu.Fixture()
	pip := env.nwPublicIP(t, f.ResourceGroup, "pip", "")
	lbID := nwLBID(f, "lb")
	base := func() armnetwork.LoadBalancer { return nwLB(f, lbID, *pip.ID, "10.240.0.4") }
	for _, tc := range []struct {
		name   string
		change func(lb *armnetwork.LoadBalancer)
		code   string
	}{
		{"rule names a probe the load balancer lacks", func(lb *armnetwork.LoadBalancer) {
			lb.Properties.LoadBalancingRules[0].Properties.Probe.ID = to.Ptr(lbID + "/probes/nope")
		}, "InvalidResourceReference"},
		{"rule names a pool the load balancer lacks", func(lb *armnetwork.LoadBalancer) {
			lb.Properties.LoadBalancingRules[0].Properties.BackendAddressPool.ID = to.Ptr(lbID + "/backendAddressPools/nope")
		}, "InvalidResourceReference"},
		{"rule names a frontend of another load balancer", func(lb *armnetwork.LoadBalancer) {
			lb.Properties.LoadBalancingRules[0].Properties.FrontendIPConfiguration.ID = to.Ptr(nwLBID(f, "x") + "/frontendIPConfigurations/fe")
		}, "InvalidResourceReference"},
		{"two rules on one frontend, protocol and port", func(lb *armnetwork.LoadBalancer) {
			r := *lb.Properties.LoadBalancingRules[0]
			props := *r.Properties
			props.BackendPort = to.Ptr[int32](30081)
			r.Name, r.Properties = to.Ptr("rule-80-again"), &props
			lb.Properties.LoadBalancingRules = append(lb.Properties.LoadBalancingRules, &r)
		}, "RulesUseSameFrontendIPConfigurationProtocolAndPort"},
		{"two rules on one pool, protocol and backend port", func(lb *armnetwork.LoadBalancer) {
			r := *lb.Properties.LoadBalancingRules[0]
			props := *r.Properties
			props.FrontendPort = to.Ptr[int32](81)
			r.Name, r.Properties = to.Ptr("rule-81"), &props
			lb.Properties.LoadBalancingRules = append(lb.Properties.LoadBalancingRules, &r)
		}, "RulesUseSameBackendPortProtocolAndPool"},
		{"duplicate frontend names", func(lb *armnetwork.LoadBalancer) {
			lb.Properties.FrontendIPConfigurations = append(lb.Properties.FrontendIPConfigurations, lb.Properties.FrontendIPConfigurations[0])
		}, "InvalidRequestFormat"},
		{"Http probe without a path", func(lb *armnetwork.LoadBalancer) {
			lb.Properties.Probes[0].Properties.Protocol = to.Ptr(armnetwork.ProbeProtocolHTTP)
		}, "ProbeRequestPathRequired"},
		{"Tcp probe with a path", func(lb *armnetwork.LoadBalancer) {
			lb.Properties.Probes[0].Properties.RequestPath = to.Ptr("/healthz")
		}, "ProbeRequestPathNotAllowedForTcp"},
		{"probe interval under 5 s", func(lb *armnetwork.LoadBalancer) {
			lb.Properties.Probes[0].Properties.IntervalInSeconds = to.Ptr[int32](2)
		}, "InvalidProbeInterval"},
		{"idle timeout out of range", func(lb *armnetwork.LoadBalancer) {
			lb.Properties.LoadBalancingRules[0].Properties.IdleTimeoutInMinutes = to.Ptr[int32](101)
		}, "LoadBalancingRuleIdleTimeoutOutOfRange"},
		{"frontend with neither subnet nor public IP", func(lb *armnetwork.LoadBalancer) {
			lb.Properties.FrontendIPConfigurations[0].Properties.PublicIPAddress = nil
		}, "FrontendIPConfigHasNoSubnetOrPublicIP"},
		{"frontend with both", func(lb *armnetwork.LoadBalancer) {
			lb.Properties.FrontendIPConfigurations[0].Properties.Subnet = &armnetwork.Subnet{ID: to.Ptr(f.SubnetID)}
		}, "FrontendIPConfigHasBothSubnetAndPublicIP"},
		{"public IP that does not exist", func(lb *armnetwork.LoadBalancer) {
			lb.Properties.FrontendIPConfigurations[0].Properties.PublicIPAddress.ID = to.Ptr(*pip.ID + "-missing")
		}, "InvalidResourceReference"},
		{"Basic load balancer on a Standard public IP", func(lb *armnetwork.LoadBalancer) {
			lb.SKU = nil
		}, "PublicIPAndLBSkuDoNotMatch"},
		{"backend address without a virtual network", func(lb *armnetwork.LoadBalancer) {
			lb.Properties.BackendAddressPools[0].Properties.LoadBalancerBackendAddresses[0].Properties.VirtualNetwork = nil
		}, "InvalidLoadBalancerBackendAddress"},
		{"one address twice in a pool", func(lb *armnetwork.LoadBalancer) {
			addrs := lb.Properties.BackendAddressPools[0].Properties.LoadBalancerBackendAddresses
			twin := *addrs[0]
			twin.Name = to.Ptr("twin")
			lb.Properties.BackendAddressPools[0].Properties.LoadBalancerBackendAddresses = append(addrs, &twin)
		}, "InvalidLoadBalancerBackendAddress"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lb := base()
			tc.change(&lb)
			nwWantErr(t, env.nwLBErr(t, f.ResourceGroup, "lb", lb), http.StatusBadRequest, tc.code)
		})
	}
	// A probe no rule uses is fine, and the refused PUTs left nothing.
	lb := base()
	lb.Properties.Probes = append(lb.Properties.Probes, &armnetwork.Probe{Name: to.Ptr("spare"), Properties: &armnetwork.ProbePropertiesFormat{
		Protocol: to.Ptr(armnetwork.ProbeProtocolHTTP), Port: to.Ptr[int32](10256), RequestPath: to.Ptr("/healthz"),
	}})
	got := env.nwPutLB(t, f.ResourceGroup, "lb", lb)
	if len(got.Properties.Probes) != 2 || got.Properties.Probes[1].Properties.LoadBalancingRules != nil {
		t.Fatalf("probes: %+v", got.Properties.Probes)
	}
	pip2 := env.nwPublicIP(t, f.ResourceGroup, "pip2", "")
	msg := env.nwLBErr(t, f.ResourceGroup, "lb2", func() armnetwork.LoadBalancer {
		lb := nwLB(f, nwLBID(f, "lb2"), *pip2.ID)
		lb.Properties.LoadBalancingRules[0].Properties.Probe.ID = to.Ptr(nwLBID(f, "lb2") + "/probes/nope")
		return lb
	}()).Error()
	if !strings.Contains(msg, "Resource "+nwLBID(f, "lb2")+"/probes/nope referenced by resource "+nwLBID(f, "lb2")+" was not found.") {
		t.Fatalf("InvalidResourceReference message: %s", msg)
	}
}

// TestLoadBalancerInternal: an internal frontend gets an address from its
// subnet (skipping the reserved ones), keeps it across updates, shows in
// the subnet's ipConfigurations and keeps the subnet from being deleted.
func TestLoadBalancerInternal(t *testing.T) {
	env := newTestEnv(t, Config{})
	f := env.emu.Fixture()
	ctx := nwCtx(t)
	lbID := nwLBID(f, "kubernetes-internal")
	internal := func(name, static string) armnetwork.LoadBalancer {
		lb := nwLB(f, nwLBID(f, name), "", "10.240.0.10")
		fp := lb.Properties.FrontendIPConfigurations[0].Properties
		fp.PublicIPAddress, fp.Subnet = nil, &armnetwork.Subnet{ID: to.Ptr(f.SubnetID)}
		if static != "" {
			fp.PrivateIPAllocationMethod, fp.PrivateIPAddress = to.Ptr(armnetwork.IPAllocationMethodStatic), to.Ptr(static)
		}
		return lb
	}
	lb := env.nwPutLB(t, f.ResourceGroup, "kubernetes-internal", internal("kubernetes-internal", ""))
	fp := lb.Properties.FrontendIPConfigurations[0].Properties
	if deref(fp.PrivateIPAddress) != "10.240.0.4" || deref(fp.PrivateIPAllocationMethod) != armnetwork.IPAllocationMethodDynamic {
		t.Fatalf("frontend address %s (%s), want 10.240.0.4 Dynamic", deref(fp.PrivateIPAddress), deref(fp.PrivateIPAllocationMethod))
	}
	// An update keeps the dynamic address.
	lb = env.nwPutLB(t, f.ResourceGroup, "kubernetes-internal", lb)
	if a := deref(lb.Properties.FrontendIPConfigurations[0].Properties.PrivateIPAddress); a != "10.240.0.4" {
		t.Fatalf("address after update %s", a)
	}
	sub, err := env.network.NewSubnetsClient().Get(ctx, f.ResourceGroup, f.VNetName, f.SubnetName, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sub.Properties.IPConfigurations) != 1 || deref(sub.Properties.IPConfigurations[0].ID) != lbID+"/frontendIPConfigurations/fe" {
		t.Fatalf("subnet ipConfigurations %+v", sub.Properties.IPConfigurations)
	}
	p, err := env.network.NewSubnetsClient().BeginDelete(ctx, f.ResourceGroup, f.VNetName, f.SubnetName, nil)
	re := nwWantErr(t, nwErr(t, p, err), http.StatusBadRequest, "InUseSubnetCannotBeDeleted")
	if !strings.Contains(re.Error(), "Subnet "+f.SubnetName+" is in use by "+lbID+"/frontendIPConfigurations/fe and cannot be deleted.") {
		t.Fatalf("message: %v", re)
	}

	// Static addresses: taken, reserved, outside the subnet, free.
	for addr, code := range map[string]string{
		"10.240.0.4": "PrivateIPAddressIsAllocated",
		"10.240.0.2": "PrivateIPAddressInReservedRange",
		"10.1.0.9":   "PrivateIPAddressNotInSubnet",
	} {
		other := internal("other", addr)
		err := env.nwLBErr(t, f.ResourceGroup, "other", other)
		nwWantErr(t, err, http.StatusBadRequest, code)
	}
	other := env.nwPutLB(t, f.ResourceGroup, "other", internal("other", "10.240.7.7"))
	if a := deref(other.Properties.FrontendIPConfigurations[0].Properties.PrivateIPAddress); a != "10.240.7.7" {
		t.Fatalf("static address %s", a)
	}
	// The next dynamic one skips what is taken.
	env.emu.mu.Lock()
	next, err := env.emu.allocatePrivateIP(f.SubnetID)
	env.emu.mu.Unlock()
	if err != nil || next != "10.240.0.5" {
		t.Fatalf("next address %s %v", next, err)
	}
}

// TestLoadBalancerETag: If-Match with the current etag succeeds, a stale
// one gets 412 PreconditionFailed; If-None-Match * refuses to overwrite.
func TestLoadBalancerETag(t *testing.T) {
	env := newTestEnv(t, Config{})
	f := env.emu.Fixture()
	pip := env.nwPublicIP(t, f.ResourceGroup, "pip", "")
	lbID := nwLBID(f, "lb")
	lb := env.nwPutLB(t, f.ResourceGroup, "lb", nwLB(f, lbID, *pip.ID, "10.240.0.4"))
	lbs := env.network.NewLoadBalancersClient()
	stale := deref(lb.Etag)

	lb.Properties.BackendAddressPools[0].Properties.LoadBalancerBackendAddresses = nil
	ctx := policy.WithHTTPHeader(nwCtx(t), http.Header{"If-Match": {stale}})
	p, err := lbs.BeginCreateOrUpdate(ctx, f.ResourceGroup, "lb", lb, nil)
	updated := nwDone(t, p, err)
	if deref(updated.Etag) == stale {
		t.Fatal("etag unchanged by a write")
	}
	if n := len(updated.Properties.BackendAddressPools[0].Properties.LoadBalancerBackendAddresses); n != 0 {
		t.Fatalf("pool still has %d addresses", n)
	}
	_, err = lbs.BeginCreateOrUpdate(ctx, f.ResourceGroup, "lb", lb, nil)
	nwWantErr(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
	_, err = lbs.BeginDelete(ctx, f.ResourceGroup, "lb", nil)
	nwWantErr(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
	ctx = policy.WithHTTPHeader(nwCtx(t), http.Header{"If-None-Match": {"*"}})
	_, err = lbs.BeginCreateOrUpdate(ctx, f.ResourceGroup, "lb", lb, nil)
	nwWantErr(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
}

// TestBackendAddressPoolEndpoints: LoadBalancerBackendAddressPools_*
// change the same pools the load balancer shows.
func TestBackendAddressPoolEndpoints(t *testing.T) {
	env := newTestEnv(t, Config{})
	f := env.emu.Fixture()
	ctx := nwCtx(t)
	pip := env.nwPublicIP(t, f.ResourceGroup, "pip", "")
	lbID := nwLBID(f, "lb")
	lb := env.nwPutLB(t, f.ResourceGroup, "lb", nwLB(f, lbID, *pip.ID))
	pools := env.network.NewLoadBalancerBackendAddressPoolsClient()

	p, err := pools.BeginCreateOrUpdate(ctx, f.ResourceGroup, "lb", "pool", armnetwork.BackendAddressPool{
		Properties: &armnetwork.BackendAddressPoolPropertiesFormat{LoadBalancerBackendAddresses: []*armnetwork.LoadBalancerBackendAddress{{
			Name:       to.Ptr("node-0"),
			Properties: &armnetwork.LoadBalancerBackendAddressPropertiesFormat{IPAddress: to.Ptr("10.240.0.9"), VirtualNetwork: &armnetwork.SubResource{ID: to.Ptr(f.VNetID)}},
		}}},
	}, nil)
	pool := nwDone(t, p, err).BackendAddressPool
	if ids := nwIDs(pool.Properties.LoadBalancingRules); len(ids) != 1 {
		t.Fatalf("pool loadBalancingRules %v", ids)
	}
	got, _ := env.emu.LoadBalancer(f.ResourceGroup, "lb")
	if deref(got.Etag) == deref(lb.Etag) {
		t.Fatal("load balancer etag unchanged by a pool write")
	}
	if addrs := got.Properties.BackendAddressPools[0].Properties.LoadBalancerBackendAddresses; len(addrs) != 1 || deref(addrs[0].Properties.IPAddress) != "10.240.0.9" {
		t.Fatalf("load balancer's pool: %+v", got.Properties.BackendAddressPools[0].Properties)
	}
	var names []string
	for pg := pools.NewListPager(f.ResourceGroup, "lb", nil); pg.More(); {
		page, err := pg.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range page.Value {
			names = append(names, deref(v.Name))
		}
	}
	if !slices.Equal(names, []string{"pool"}) {
		t.Fatalf("pools %v", names)
	}
	dp, err := pools.BeginDelete(ctx, f.ResourceGroup, "lb", "pool", nil)
	nwWantErr(t, nwErr(t, dp, err), http.StatusBadRequest, "InvalidResourceReference")
	_, err = pools.Get(ctx, f.ResourceGroup, "lb", "nope", nil)
	re := nwWantErr(t, err, http.StatusNotFound, "NotFound")
	if !strings.Contains(re.Error(), "Resource "+lbID+"/backendAddressPools/nope not found.") {
		t.Fatalf("message: %v", re)
	}
	_, err = pools.Get(ctx, f.ResourceGroup, "nolb", "pool", nil)
	nwWantErr(t, err, http.StatusNotFound, "ResourceNotFound")

	// Without the rule the pool can go; a pool the LB's PUT leaves out goes too.
	lb = got
	lb.Properties.LoadBalancingRules = nil
	lb.Properties.BackendAddressPools = append(lb.Properties.BackendAddressPools, &armnetwork.BackendAddressPool{Name: to.Ptr("second")})
	lb = env.nwPutLB(t, f.ResourceGroup, "lb", lb)
	if len(lb.Properties.BackendAddressPools) != 2 {
		t.Fatalf("pools %d", len(lb.Properties.BackendAddressPools))
	}
	dp, err = pools.BeginDelete(ctx, f.ResourceGroup, "lb", "pool", nil)
	nwDone(t, dp, err)
	lb.Properties.BackendAddressPools = nil
	lb = env.nwPutLB(t, f.ResourceGroup, "lb", lb)
	if len(lb.Properties.BackendAddressPools) != 0 || len(env.emu.ListNetwork("loadBalancers/backendAddressPools")) != 0 {
		t.Fatalf("pools left: %v", env.emu.ListNetwork("loadBalancers/backendAddressPools"))
	}
}

// TestLoadBalancerListPaging: LoadBalancers_List of a resource group
// comes in pages of Config.PageSize with nextLinks, and each load
// balancer in it is whole, as its GET shows it: frontends, rules, probes
// and pools (their addresses too) inline, so one listing serves every
// Service's parts.
func TestLoadBalancerListPaging(t *testing.T) {
	env := newTestEnv(t, Config{PageSize: 2})
	f := env.emu.Fixture()
	ctx := nwCtx(t)
	client := env.network.NewLoadBalancersClient()
	for _, name := range []string{"lb-a", "lb-b", "lb-c"} {
		pip := env.nwPublicIP(t, f.ResourceGroup, name+"-pip", "")
		env.nwPutLB(t, f.ResourceGroup, name, nwLB(f, nwLBID(f, name), *pip.ID, "10.240.0.4"))
	}
	var listed []*armnetwork.LoadBalancer
	pages := 0
	for p := client.NewListPager(f.ResourceGroup, nil); p.More(); pages++ {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, page.Value...)
	}
	if pages != 2 || len(listed) != 3 {
		t.Fatalf("%d load balancers in %d pages, want 3 in 2", len(listed), pages)
	}
	if n := env.srv.CallCount("network:LoadBalancers_List"); n != 2 {
		t.Errorf("LoadBalancers_List called %d times, want one per page", n)
	}
	for _, lb := range listed {
		got, err := client.Get(ctx, f.ResourceGroup, deref(lb.Name), nil)
		if err != nil {
			t.Fatal(err)
		}
		p, gp := lb.Properties, got.Properties
		if len(p.FrontendIPConfigurations) != 1 || len(p.LoadBalancingRules) != 1 || len(p.Probes) != 1 || len(p.BackendAddressPools) != 1 {
			t.Fatalf("%s listed without its parts: %+v", deref(lb.Name), p)
		}
		addrs := p.BackendAddressPools[0].Properties.LoadBalancerBackendAddresses
		if len(addrs) != 1 || deref(addrs[0].Properties.IPAddress) != "10.240.0.4" {
			t.Errorf("%s pool addresses %+v", deref(lb.Name), addrs)
		}
		if deref(lb.Etag) != deref(got.Etag) || deref(p.LoadBalancingRules[0].ID) != deref(gp.LoadBalancingRules[0].ID) ||
			deref(p.FrontendIPConfigurations[0].Properties.PublicIPAddress.ID) != deref(gp.FrontendIPConfigurations[0].Properties.PublicIPAddress.ID) {
			t.Errorf("%s listed otherwise than its GET shows it", deref(lb.Name))
		}
	}
}
