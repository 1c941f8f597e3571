package azure

import (
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"

	"github.com/multicloud-ccm/multicloud-ccm/providers/inventory"
	azemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/azure"
)

// TestInventoryUnneededLoadBalancer: the cluster's load balancer is
// listed Unneeded, with its pools, once no frontend is left on it (its
// Services' parts deleted by hand), and not while one is; DeleteOrphan
// deletes it then, through its shared writer, and nothing from a stale
// listing once a Service is on it again. The other load balancer, still
// needed, stays.
func TestInventoryUnneededLoadBalancer(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	nodes := env.lbNodes(t, 2)
	ctx := t.Context()
	web, _ := inventoryServices(t, env, nodes)
	env.serviceCache()
	public := env.cloud.lb.lbNameFor(false)

	unneeded := func() map[string]inventory.Owned {
		out := map[string]inventory.Owned{}
		for _, p := range env.owned(t) {
			if p.Unneeded {
				out[p.Kind+" "+p.Name] = p
			}
		}
		return out
	}
	if u := unneeded(); len(u) != 0 {
		t.Errorf("unneeded while the Services are there: %v", u)
	}
	for _, p := range env.owned(t) {
		if p.Kind == kindLoadBalancer {
			if err := env.cloud.lb.DeleteOrphan(ctx, p); err == nil {
				t.Errorf("DeleteOrphan deleted the needed %s", partLine(p))
			}
		}
	}

	// The public Service's frontends, rules and probes deleted by hand.
	dropAll := func() {
		env.lbEdit(t, public, func(p *armnetwork.LoadBalancerPropertiesFormat) { dropNamed(p, "") })
	}
	dropAll()
	u := unneeded()
	if len(u) != 2 || u[kindLoadBalancer+" "+public].Name == "" || u[kindBackendPool+" "+env.cloud.lb.poolName(false)].Name == "" {
		t.Fatalf("unneeded: %v, want the public load balancer and its pool", u)
	}
	for _, p := range u {
		if strings.Contains(p.ID, "-internal") {
			t.Errorf("the internal load balancer's %s listed unneeded", partLine(p))
		}
	}

	// A Service is on it again: the stale listing deletes nothing.
	env.cloud.lb.Forget(nn(web))
	env.ensure(t, web, nodes)
	for _, p := range u {
		if err := env.cloud.lb.DeleteOrphan(ctx, p); err == nil {
			t.Errorf("DeleteOrphan of %s from a stale listing: no error", partLine(p))
		}
	}
	if _, err := env.api.lbs.Get(ctx, env.fx.ResourceGroup, public, nil); err != nil {
		t.Fatalf("the load balancer a Service needs again: %v", err)
	}

	dropAll()
	for _, p := range env.owned(t) {
		if p.Unneeded {
			if err := env.cloud.lb.DeleteOrphan(ctx, p); err != nil {
				t.Errorf("DeleteOrphan of %s: %v", partLine(p), err)
			}
		}
	}
	if _, err := env.api.lbs.Get(ctx, env.fx.ResourceGroup, public, nil); !isNotFound(err) {
		t.Errorf("the unneeded load balancer after DeleteOrphan: %v", err)
	}
	if _, err := env.api.lbs.Get(ctx, env.fx.ResourceGroup, env.cloud.lb.lbNameFor(true), nil); err != nil {
		t.Errorf("the internal load balancer: %v", err)
	}
	for _, p := range env.owned(t) {
		if p.Unneeded {
			t.Errorf("listed unneeded after: %s", partLine(p))
		}
	}
}
