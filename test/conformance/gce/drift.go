package gce

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// The drift-repair scenario's out-of-band changes: what a person in the
// console or a cleanup script does to a Service's load balancer, through
// the Compute Engine API with the real clients (never the emulator's
// internals). Which resources are the Service's is the adapter's view
// (ServiceResources, LoadBalancers); what is deleted, and whether it is
// gone, is the API's answer.

var _ conformance.DriftMaker = (*Cloud)(nil)

// descAddress is the key with which providers/gce marks an address it
// reserved itself (loadbalancer_names.go), as opposed to the user's.
const descAddress = "kubernetes.io/reserved-by"

// DeletePart deletes the Service's own firewall rule, k8s-fw-<base>,
// which admits clients to its ports: the load balancer's forwarding rule
// and backends stay, but LoadBalancers reports no ports until the
// manager makes the rule again.
func (c *Cloud) DeletePart(svc types.NamespacedName) (string, error) {
	v := c.view()
	var name string
	for _, base := range v.bases[svc.String()] {
		if _, ok := v.fws[firewallPrefix+base]; !ok {
			continue
		}
		// The base of a load balancer (one with a forwarding rule) first.
		name = firewallPrefix + base
		if _, ok := v.rules[base]; ok {
			break
		}
	}
	if name == "" {
		return "", fmt.Errorf("service %s has no firewall rule %s<base>", svc, firewallPrefix)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	api, err := c.driftClients(ctx)
	if err != nil {
		return "", err
	}
	defer api.close()
	if err := api.deleteFirewall(ctx, c.fx.Project, name); err != nil {
		return "", err
	}
	return "firewall rule " + name, nil
}

// DeleteLoadBalancer deletes every part ServiceResources lists, in
// dependency order as GCE requires it (forwarding rules, then target
// pools and backend services, then health checks and firewall rules,
// then addresses), each operation waited for and a part already gone
// taken as deleted. An address is deleted only when its description says
// it was reserved for the Service (by the manager, or left by the
// upstream CCM): one the user named for the Service is kept. A part
// still in use when its turn comes (the manager made a forwarding rule
// again meanwhile) starts the round over, a few times at most.
func (c *Cloud) DeleteLoadBalancer(svc types.NamespacedName) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	api, err := c.driftClients(ctx)
	if err != nil {
		return err
	}
	defer api.close()
	for attempt := 1; ; attempt++ {
		err := c.deleteServiceParts(ctx, api, svc)
		if err == nil || !resourceInUse(err) || attempt == 5 {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// deleteServiceParts is one round of DeleteLoadBalancer.
func (c *Cloud) deleteServiceParts(ctx context.Context, api *driftAPI, svc types.NamespacedName) error {
	rank := map[string]int{
		kindForwardingRule: 1,
		kindTargetPool:     2, kindBackendService: 2,
		kindHTTPHealthCheck: 3, kindHealthCheck: 3, kindFirewall: 3,
		kindAddress: 4,
	}
	parts := c.ServiceResources(svc)
	for _, r := range parts {
		if rank[r.Kind] == 0 {
			return fmt.Errorf("service %s: do not know how to delete %s %s", svc, r.Kind, r.ID)
		}
	}
	slices.SortStableFunc(parts, func(a, b cloudsim.Resource) int { return rank[a.Kind] - rank[b.Kind] })
	fx := c.fx
	for _, r := range parts {
		name := lastSegment(r.ID)
		var err error
		switch r.Kind {
		case kindForwardingRule:
			err = api.wait(ctx, "delete forwarding rule "+name)(api.rules.Delete(ctx, &computepb.DeleteForwardingRuleRequest{Project: fx.Project, Region: fx.Region, ForwardingRule: name}))
		case kindTargetPool:
			err = api.wait(ctx, "delete target pool "+name)(api.pools.Delete(ctx, &computepb.DeleteTargetPoolRequest{Project: fx.Project, Region: fx.Region, TargetPool: name}))
		case kindBackendService:
			err = api.wait(ctx, "delete backend service "+name)(api.backendServices.Delete(ctx, &computepb.DeleteRegionBackendServiceRequest{Project: fx.Project, Region: fx.Region, BackendService: name}))
		case kindHTTPHealthCheck:
			op, derr := api.legacyHC.Delete(fx.Project, name).Context(ctx).Do()
			if err = api.waitLegacy(ctx, fx.Project, op, derr); err != nil {
				err = fmt.Errorf("delete HTTP health check %s: %w", name, err)
			}
		case kindHealthCheck:
			if strings.Contains(r.ID, "/regions/") {
				err = api.wait(ctx, "delete regional health check "+name)(api.regionHealthChecks.Delete(ctx, &computepb.DeleteRegionHealthCheckRequest{Project: fx.Project, Region: fx.Region, HealthCheck: name}))
			} else {
				err = api.wait(ctx, "delete health check "+name)(api.healthChecks.Delete(ctx, &computepb.DeleteHealthCheckRequest{Project: fx.Project, HealthCheck: name}))
			}
		case kindFirewall:
			err = api.deleteFirewall(ctx, fx.Project, name)
		case kindAddress:
			err = c.deleteReservedAddress(ctx, api, svc, name)
		}
		if err != nil && !notFound(err) {
			return fmt.Errorf("service %s: %w", svc, err)
		}
	}
	return nil
}

// deleteReservedAddress deletes the address if it was reserved for the
// Service: described as the Service's, by this manager's reservation
// mark and cluster, or by the upstream CCM (no cluster), which leaves
// one behind only when its sync failed. Any other is the user's.
func (c *Cloud) deleteReservedAddress(ctx context.Context, api *driftAPI, svc types.NamespacedName, name string) error {
	fx := c.fx
	a, err := api.addresses.Get(ctx, &computepb.GetAddressRequest{Project: fx.Project, Region: fx.Region, Address: name})
	if err != nil {
		return fmt.Errorf("get address %s: %w", name, err)
	}
	var d map[string]string
	if json.Unmarshal([]byte(a.GetDescription()), &d) != nil || d[descService] != svc.String() {
		return nil
	}
	mine := d[descCluster] == c.clusterID && d[descAddress] != ""
	upstream := d[descCluster] == ""
	if !mine && !upstream {
		return nil
	}
	return api.wait(ctx, "delete address "+name)(api.addresses.Delete(ctx, &computepb.DeleteAddressRequest{Project: fx.Project, Region: fx.Region, Address: name}))
}

// driftAPI are upstreamClients and the regional health checks' client
// (which the manager made before it used global ones).
type driftAPI struct {
	*upstreamAPI
	regionHealthChecks *compute.RegionHealthChecksClient
}

func (c *Cloud) driftClients(ctx context.Context) (*driftAPI, error) {
	api, err := c.upstreamClients(ctx)
	if err != nil {
		return nil, err
	}
	rhc, err := compute.NewRegionHealthChecksRESTClient(ctx, c.adminOptions("")...)
	if err != nil {
		api.close()
		return nil, err
	}
	api.closers = append(api.closers, rhc)
	return &driftAPI{upstreamAPI: api, regionHealthChecks: rhc}, nil
}

func (a *driftAPI) deleteFirewall(ctx context.Context, project, name string) error {
	return a.wait(ctx, "delete firewall rule "+name)(a.firewalls.Delete(ctx, &computepb.DeleteFirewallRequest{Project: project, Firewall: name}))
}

// resourceInUse is GCE's refusal to delete what another resource uses,
// from the call or from its operation.
func resourceInUse(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "resourceInUseByAnotherResource") || strings.Contains(s, "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE")
}
