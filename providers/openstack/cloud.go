package openstack

import (
	"context"
	"fmt"

	"k8s.io/client-go/informers"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/providers"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/lbserial"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodes"
)

// Cloud implements cloudprovider.Interface for OpenStack.
type Cloud struct {
	cfg       *Section
	clusterID string
	api       *clients
	nodes     *nodes.Lister
	instances *instances
	lb        *loadBalancers
	// serialLB is lb with one Service's calls never overlapping.
	serialLB *lbserial.LoadBalancer
	routes   *routes
}

var (
	_ cloudprovider.Interface    = (*Cloud)(nil)
	_ cloudprovider.InformerUser = (*Cloud)(nil)
)

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
	c.serialLB = lbserial.Wrap(c.lb)
	if s.RoutesEnabled() {
		c.routes = newRoutes(api, s, c.instances)
	}
	return c
}

// Initialize is called once leadership is won: it keeps a client to
// write the load-balancer-id annotation on Services, as upstream does.
func (c *Cloud) Initialize(b cloudprovider.ControllerClientBuilder, _ <-chan struct{}) {
	client, err := b.Client("cloud-controller-manager")
	if err != nil {
		klog.Background().Error(err, "No Kubernetes client; Services will not get the load-balancer-id annotation")
		return
	}
	c.lb.services = client.CoreV1()
}

// SetInformers implements cloudprovider.InformerUser: the Node informer
// maps Node names to servers through their providerIDs.
func (c *Cloud) SetInformers(f informers.SharedInformerFactory) { c.nodes.SetInformers(f) }

// ProviderName implements cloudprovider.Interface.
func (c *Cloud) ProviderName() string { return ProviderName }

// HasClusterID is always true: clusterID is required in the cloud-config.
func (c *Cloud) HasClusterID() bool { return true }

// InstancesV2 serves the node controllers.
func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) { return c.instances, true }

// Instances is not offered: InstancesV2 replaces it.
func (c *Cloud) Instances() (cloudprovider.Instances, bool) { return nil, false }

// Zones is not offered: InstancesV2 reports zones.
func (c *Cloud) Zones() (cloudprovider.Zones, bool) { return nil, false }

// Clusters is not offered.
func (c *Cloud) Clusters() (cloudprovider.Clusters, bool) { return nil, false }

// LoadBalancer serves the service controller.
func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return c.serialLB, true }

// Routes is supported only when routes.routerID is configured.
func (c *Cloud) Routes() (cloudprovider.Routes, bool) {
	if c.routes == nil {
		return nil, false
	}
	return c.routes, true
}

// Backend describes the OpenStack backend for the registry.
func Backend() providers.Backend {
	return providers.Backend{
		Name:       ProviderName,
		NewSection: func() config.Section { return &Section{} },
		New: func(ctx context.Context, cc *config.CloudConfig) (cloudprovider.Interface, error) {
			return New(ctx, cc)
		},
		ImportConfig:        ImportConfig,
		UpstreamAnnotations: upstreamAnnotations(),
	}
}
