package openstack

import (
	"context"
	"fmt"

	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/providers"
	"github.com/multicloud-ccm/multicloud-ccm/providers/compose"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/events"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodes"
	decl "github.com/multicloud-ccm/multicloud-ccm/providers/permissions"
)

// Cloud is the OpenStack backend's parts, which the registry assembles (providers/compose) into
// the cloudprovider.Interface.
type Cloud struct {
	cfg       *Section
	clusterID string
	api       *clients
	nodes     *nodes.Lister
	instances *instances
	lb        *loadBalancers
	routes    *routes
}

// New builds the OpenStack cloud from a validated cloud-config. It
// authenticates once (wrong credentials stop the manager with the reason)
// and, when the config names no floating network, lists the external
// networks once (detectFloatingNetwork); it makes no other call until the
// controllers run.
func New(ctx context.Context, cc *config.CloudConfig) (*Cloud, error) {
	s, ok := cc.Section.(*Section)
	if !ok {
		return nil, fmt.Errorf("openstack: cloud-config section has type %T", cc.Section)
	}
	api, err := newClients(ctx, s)
	if err != nil {
		return nil, err
	}
	if err := detectFloatingNetwork(ctx, api.network, s); err != nil {
		return nil, err
	}
	return newCloud(s, cc.ClusterID, api, clock.RealClock{}), nil
}

func newCloud(s *Section, clusterID string, api *clients, clk clock.Clock) *Cloud {
	c := &Cloud{cfg: s, clusterID: clusterID, api: api, nodes: nodes.New(serverIDParser(s.Region))}
	c.instances = newInstances(api, s, c.nodes, clk)
	c.lb = newLoadBalancers(api, s, clusterID, c.instances, clk)
	if s.RoutesEnabled() {
		c.routes = newRoutes(api, s, c.instances)
	}
	return c
}

// Parts are the backend's parts: routes only with routes.routerID; the
// Node informer maps Node names to servers through their providerIDs;
// the inventory lists the load balancers' parts (inventory.go).
func (c *Cloud) Parts() compose.Parts {
	return compose.Parts{
		Name: ProviderName, Instances: c.instances, LoadBalancer: c.lb, Routes: c.routes,
		Initialize: c.initialize, SetInformers: c.nodes.SetInformers,
		Inventory: lbInventory{c.lb},
	}
}

// initialize is called once leadership is won: it keeps a client to
// write the load-balancer-id annotation on Services, as upstream does.
func (c *Cloud) initialize(b cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	client, err := b.Client("cloud-controller-manager")
	if err != nil {
		klog.Background().Error(err, "No Kubernetes client; Services will not get the load-balancer-id annotation")
		return
	}
	c.lb.services = client.CoreV1()
	// The service controller's identity has the RBAC for Events, also
	// under --use-service-account-credentials.
	rec, err := events.NewRecorder(b, "service-controller", eventSource, stop)
	if err != nil {
		klog.Background().Error(err, "No Event recorder; Services will not get the backend's Warning Events")
		return
	}
	c.lb.recorder = rec
}

// eventSource names the backend in the Events it records.
const eventSource = "multicloud-ccm"

// Backend describes the OpenStack backend for the registry.
func Backend() providers.Backend {
	return providers.Backend{
		Name:       ProviderName,
		NewSection: func() config.Section { return &Section{} },
		New: func(ctx context.Context, cc *config.CloudConfig) (compose.Parts, error) {
			return compose.PartsOf(New(ctx, cc))
		},
		ImportConfig:        ImportConfig,
		UpstreamAnnotations: upstreamAnnotations(),
		Permissions:         Permissions,
		PermissionFeatures: func(s config.Section, deleteOrphans bool) []string {
			return PermissionFeatures(s.(*Section), deleteOrphans)
		},
		Policy: decl.OpenStackPolicy,
	}
}
