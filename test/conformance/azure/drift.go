package azure

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// The drift-repair scenario's out-of-band changes: what a person in the
// portal or with the SDK does to a Service's part of the cluster's shared
// load balancer, through ARM with the real clients (never the emulator's
// internals). Which frontends and public IPs are the Service's is the
// adapter's view (serviceFrontends); what is written, and whether it is
// gone, is ARM's answer. Every write of a load balancer is a GET and a
// PUT with If-Match on its ETag, retried on a 412 (the manager wrote it
// meanwhile), and waited for as a long-running operation.

var _ conformance.DriftMaker = (*Cloud)(nil)

// DeletePart deletes the load-balancing rule of the Service's lowest
// frontend port: the frontend, its other rules and the pool stay, but
// LoadBalancers reports the port missing until the manager makes the
// rule again.
func (c *Cloud) DeletePart(svc types.NamespacedName) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fes, _ := c.serviceFrontends(c.view(), svc)
	if len(fes) == 0 {
		return "", fmt.Errorf("service %s has no frontend", svc)
	}
	f, err := c.clients()
	if err != nil {
		return "", err
	}
	lbName, feName := deref(fes[0].lb.Name), fes[0].name
	var what string
	err = c.editLoadBalancer(ctx, f.NewLoadBalancersClient(), lbName, func(lb *armnetwork.LoadBalancer) (bool, error) {
		lp := lb.Properties
		best := -1
		for i, r := range lp.LoadBalancingRules {
			if r.Properties == nil || !refersTo(r.Properties.FrontendIPConfiguration, feName) {
				continue
			}
			if best < 0 || deref(r.Properties.FrontendPort) < deref(lp.LoadBalancingRules[best].Properties.FrontendPort) {
				best = i
			}
		}
		if best < 0 {
			return false, fmt.Errorf("service %s: frontend %s of %s has no load-balancing rule", svc, feName, lbName)
		}
		r := lp.LoadBalancingRules[best]
		what = fmt.Sprintf("load-balancing rule %s of port %d", deref(r.Name), deref(r.Properties.FrontendPort))
		lp.LoadBalancingRules = slices.Delete(lp.LoadBalancingRules, best, best+1)
		return true, nil
	})
	if err != nil {
		return "", err
	}
	return what, nil
}

// DeleteLoadBalancer deletes the Service's part of the shared load
// balancers: its frontends, the rules on them and the probes only those
// rules used (a PUT of the load balancer without them, or when they were
// its last frontends, a DELETE of the load balancer after the network
// interfaces in its pools are taken out of them), then the public IPs
// the manager made for it (tagged for the Service and the cluster, named
// "<cluster>-<frontend>"); a public IP the user named is kept. A part
// already gone counts as deleted.
func (c *Cloud) DeleteLoadBalancer(svc types.NamespacedName) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fes, pips := c.serviceFrontends(c.view(), svc)
	f, err := c.clients()
	if err != nil {
		return err
	}
	byLB := map[string][]string{}
	var lbNames, feNames []string
	for _, fe := range fes {
		n := deref(fe.lb.Name)
		if byLB[n] == nil {
			lbNames = append(lbNames, n)
		}
		byLB[n] = append(byLB[n], fe.name)
		feNames = append(feNames, fe.name)
	}
	lbs := f.NewLoadBalancersClient()
	for _, name := range lbNames {
		if err := c.removeFrontends(ctx, lbs, name, byLB[name]); err != nil {
			return fmt.Errorf("service %s: %w", svc, err)
		}
	}
	pipc := f.NewPublicIPAddressesClient()
	for _, id := range pips {
		segs := strings.Split(id, "/")
		rg, name := segs[4], segs[len(segs)-1]
		resp, err := pipc.Get(ctx, rg, name, nil)
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("service %s: get public IP %s: %w", svc, name, err)
		}
		if !c.managerMadePublicIP(resp.PublicIPAddress, svc, feNames) {
			continue
		}
		p, err := pipc.BeginDelete(ctx, rg, name, nil)
		if err == nil {
			_, err = p.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: time.Second})
		}
		if err != nil && !isNotFound(err) {
			return fmt.Errorf("service %s: delete public IP %s: %w", svc, name, err)
		}
	}
	return nil
}

// managerMadePublicIP says pip is one the manager made for the Service:
// its tags name only this Service and this cluster, and its name is the
// manager's for one of the Service's frontends ("<cluster>-<frontend>",
// at most 75 characters). A public IP the user named for the Service
// (which upstream tags too) has another name.
func (c *Cloud) managerMadePublicIP(pip armnetwork.PublicIPAddress, svc types.NamespacedName, frontends []string) bool {
	if !strings.EqualFold(strings.TrimSpace(deref(pip.Tags[tagService])), svc.String()) || !strings.EqualFold(deref(pip.Tags[tagCluster]), c.clusterID) {
		return false
	}
	name := strings.ToLower(deref(pip.Name))
	return slices.ContainsFunc(frontends, func(fe string) bool {
		want := strings.ToLower(c.clusterID + "-" + fe)
		return name == want[:min(len(want), 75)] || strings.HasPrefix(name, want+"-")
	})
}

// removeFrontends writes load balancer lbName without the frontends, the
// rules on them and the probes no remaining rule uses; with no frontend
// left, deletes it.
func (c *Cloud) removeFrontends(ctx context.Context, lbs *armnetwork.LoadBalancersClient, lbName string, frontends []string) error {
	last := false
	err := c.editLoadBalancer(ctx, lbs, lbName, func(lb *armnetwork.LoadBalancer) (bool, error) {
		lp := lb.Properties
		ours := func(ref *armnetwork.SubResource) bool {
			return slices.ContainsFunc(frontends, func(fe string) bool { return refersTo(ref, fe) })
		}
		n := len(lp.FrontendIPConfigurations)
		lp.FrontendIPConfigurations = slices.DeleteFunc(lp.FrontendIPConfigurations, func(fe *armnetwork.FrontendIPConfiguration) bool {
			return slices.ContainsFunc(frontends, func(name string) bool { return strings.EqualFold(deref(fe.Name), name) })
		})
		if len(lp.FrontendIPConfigurations) == n {
			return false, nil // gone already
		}
		if len(lp.FrontendIPConfigurations) == 0 {
			last = true
			return false, nil
		}
		probes := map[string]bool{} // lower-cased IDs of probes our rules use
		lp.LoadBalancingRules = slices.DeleteFunc(lp.LoadBalancingRules, func(r *armnetwork.LoadBalancingRule) bool {
			if r.Properties == nil || !ours(r.Properties.FrontendIPConfiguration) {
				return false
			}
			if r.Properties.Probe != nil {
				probes[strings.ToLower(deref(r.Properties.Probe.ID))] = true
			}
			return true
		})
		for _, r := range lp.LoadBalancingRules {
			if r.Properties != nil && r.Properties.Probe != nil {
				delete(probes, strings.ToLower(deref(r.Properties.Probe.ID)))
			}
		}
		lp.Probes = slices.DeleteFunc(lp.Probes, func(p *armnetwork.Probe) bool { return probes[strings.ToLower(deref(p.ID))] })
		lp.InboundNatRules = slices.DeleteFunc(lp.InboundNatRules, func(r *armnetwork.InboundNatRule) bool {
			return r.Properties != nil && ours(r.Properties.FrontendIPConfiguration)
		})
		for _, o := range lp.OutboundRules {
			if o.Properties != nil && slices.ContainsFunc(o.Properties.FrontendIPConfigurations, ours) {
				return false, fmt.Errorf("load balancer %s: outbound rule %s uses the Service's frontend", lbName, deref(o.Name))
			}
		}
		return true, nil
	})
	if err != nil || !last {
		return err
	}
	// ARM refuses to delete a load balancer whose pool a network
	// interface names; the portal has the person remove them first.
	if err := c.leavePools(ctx, lbs, lbName); err != nil {
		return err
	}
	p, err := lbs.BeginDelete(ctx, c.fx.ResourceGroup, lbName, nil)
	if err == nil {
		_, err = p.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: time.Second})
	}
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("delete load balancer %s: %w", lbName, err)
	}
	return nil
}

// leavePools takes every network interface out of the load balancer's
// pools (a NIC-based pool, upstream's default type, is in the interfaces'
// IP configurations): a GET and a PUT with If-Match of each interface.
func (c *Cloud) leavePools(ctx context.Context, lbs *armnetwork.LoadBalancersClient, lbName string) error {
	resp, err := lbs.Get(ctx, c.fx.ResourceGroup, lbName, nil)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get load balancer %s: %w", lbName, err)
	}
	var pools, nics []string // lower-cased pool IDs; interface IDs
	for _, p := range resp.Properties.BackendAddressPools {
		pools = append(pools, strings.ToLower(deref(p.ID)))
		if p.Properties == nil {
			continue
		}
		for _, cfg := range p.Properties.BackendIPConfigurations {
			id := deref(cfg.ID)
			i := strings.Index(strings.ToLower(id), "/ipconfigurations/")
			if i < 0 || !strings.Contains(strings.ToLower(id), "/providers/microsoft.network/networkinterfaces/") {
				return fmt.Errorf("load balancer %s: pool %s holds %s, not a network interface's IP configuration", lbName, deref(p.Name), id)
			}
			if !slices.Contains(nics, id[:i]) {
				nics = append(nics, id[:i])
			}
		}
	}
	if len(nics) == 0 {
		return nil
	}
	f, err := c.clients()
	if err != nil {
		return err
	}
	client := f.NewInterfacesClient()
	for _, id := range nics {
		segs := strings.Split(id, "/")
		rg, name := segs[4], segs[len(segs)-1]
		got, err := client.Get(ctx, rg, name, nil)
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("get network interface %s: %w", name, err)
		}
		nic := got.Interface
		for _, cfg := range nic.Properties.IPConfigurations {
			if cfg.Properties != nil {
				cfg.Properties.LoadBalancerBackendAddressPools = slices.DeleteFunc(cfg.Properties.LoadBalancerBackendAddressPools, func(p *armnetwork.BackendAddressPool) bool {
					return slices.Contains(pools, strings.ToLower(deref(p.ID)))
				})
			}
		}
		p, err := client.BeginCreateOrUpdate(policy.WithHTTPHeader(ctx, http.Header{"If-Match": {deref(nic.Etag)}}), rg, name, nic, nil)
		if err == nil {
			_, err = p.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: time.Second})
		}
		if err != nil {
			return fmt.Errorf("take network interface %s out of %s's pools: %w", name, lbName, err)
		}
	}
	return nil
}

// editLoadBalancer GETs load balancer name, lets edit change it, and PUTs
// it back with If-Match on the ETag it read, until ARM accepts the write
// or edit says there is nothing to write (false). A 412 (the manager
// wrote the load balancer meanwhile) starts over, a few times at most.
func (c *Cloud) editLoadBalancer(ctx context.Context, lbs *armnetwork.LoadBalancersClient, name string, edit func(*armnetwork.LoadBalancer) (bool, error)) error {
	rg := c.fx.ResourceGroup
	for attempt := 1; ; attempt++ {
		resp, err := lbs.Get(ctx, rg, name, nil)
		if isNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("get load balancer %s: %w", name, err)
		}
		lb := resp.LoadBalancer
		if lb.Properties == nil {
			lb.Properties = &armnetwork.LoadBalancerPropertiesFormat{}
		}
		write, err := edit(&lb)
		if err != nil || !write {
			return err
		}
		p, err := lbs.BeginCreateOrUpdate(policy.WithHTTPHeader(ctx, http.Header{"If-Match": {deref(lb.Etag)}}), rg, name, lb, nil)
		if err == nil {
			_, err = p.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: time.Second})
		}
		if err == nil {
			return nil
		}
		if !isPreconditionFailed(err) || attempt == 5 {
			return fmt.Errorf("write load balancer %s: %w", name, err)
		}
	}
}

// refersTo says ref names the frontend (or other child) called name.
func refersTo(ref *armnetwork.SubResource, name string) bool {
	return ref != nil && strings.HasSuffix(strings.ToLower(deref(ref.ID)), "/"+strings.ToLower(name))
}

// isPreconditionFailed is ARM's 412: the ETag changed since the GET.
func isPreconditionFailed(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusPreconditionFailed
}
