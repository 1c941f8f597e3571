package openstack

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
)

// computeMicroversion is the Nova API microversion the backend speaks:
// 2.47 embeds the flavor (name, vcpus, ram) in each server, so one server
// list serves every Node's instance type with no flavor call. Every
// release from Pike on has it; Zed, the oldest we support, goes to 2.93.
const computeMicroversion = "2.47"

// clients are the gophercloud service clients of one authenticated
// session. gophercloud authenticates, renews the token when it expires
// (AllowReauth), pages through lists and sets microversions; the backend
// adds the retry policy (clients_retry.go) and the metrics
// (clients_metrics.go) on its HTTP client.
type clients struct {
	provider *gophercloud.ProviderClient
	compute  *gophercloud.ServiceClient
	network  *gophercloud.ServiceClient
	lb       *gophercloud.ServiceClient
}

// newClients authenticates with the section's credentials and finds the
// compute, network and load-balancer endpoints in the catalog. It is the
// backend's only call at start: wrong credentials or a catalog without
// these services stop the manager with the reason, instead of failing
// every later sync.
func newClients(ctx context.Context, s *Section) (*clients, error) {
	a, err := resolveAuth(s)
	if err != nil {
		return nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = a.tls
	router := newServiceRouter(transport, a.opts.IdentityEndpoint, nil)

	pc, err := openstack.NewClient(a.opts.IdentityEndpoint)
	if err != nil {
		return nil, fmt.Errorf("openstack.authURL: %w", err)
	}
	pc.HTTPClient = http.Client{Transport: router, Timeout: s.RequestTimeout}
	pc.UserAgent.Prepend("multicloud-ccm")
	newRetryPolicy(s.MaxAttempts).install(pc)
	a.opts.AllowReauth = true
	if err := openstack.Authenticate(ctx, pc, a.opts); err != nil {
		return nil, fmt.Errorf("authenticate to %s: %w", a.opts.IdentityEndpoint, err)
	}

	c := &clients{provider: pc}
	for _, svc := range []struct {
		name string
		dst  **gophercloud.ServiceClient
		make func(*gophercloud.ProviderClient, gophercloud.EndpointOpts) (*gophercloud.ServiceClient, error)
	}{
		{"compute", &c.compute, openstack.NewComputeV2},
		{"network", &c.network, openstack.NewNetworkV2},
		{"load-balancer", &c.lb, openstack.NewLoadBalancerV2},
	} {
		sc, err := svc.make(pc, a.endpoint)
		if err != nil {
			return nil, fmt.Errorf("find the %s endpoint (region %q, interface %s) in the catalog: %w", svc.name, a.endpoint.Region, a.endpoint.Availability, err)
		}
		router.route(sc.Endpoint, svc.name)
		*svc.dst = sc
	}
	c.compute.Microversion = computeMicroversion
	return c, nil
}
