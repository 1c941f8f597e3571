package azure

import (
	"context"
	"fmt"

	"k8s.io/client-go/informers"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/providers"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/lbserial"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodes"
)

// Cloud implements cloudprovider.Interface for Azure.
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

// New builds the Azure cloud from a validated cloud-config. It gets one
// Azure AD token (wrong credentials stop the manager with the reason) and
// makes no other call until the controllers run.
func New(ctx context.Context, cc *config.CloudConfig) (*Cloud, error) {
	s, ok := cc.Section.(*Section)
	if !ok {
		return nil, fmt.Errorf("azure: cloud-config section has type %T", cc.Section)
	}
	if name := s.lbName(cc.ClusterID); !nameRE.MatchString(name) || len(name) > 80-len("-internal") {
		return nil, fmt.Errorf("azure.loadBalancerName: the default, clusterID %q, is not a valid load balancer name (1-71 letters, digits, '_', '-', '.'); set loadBalancerName", cc.ClusterID)
	}
	setup, err := newClientSetup(s, nil)
	if err != nil {
		return nil, err
	}
	api, err := newClients(ctx, s, setup)
	if err != nil {
		return nil, err
	}
	return newCloud(s, cc.ClusterID, api, clock.RealClock{}), nil
}

func newCloud(s *Section, clusterID string, api *clients, clk clock.Clock) *Cloud {
	c := &Cloud{cfg: s, clusterID: clusterID, api: api, nodes: nodes.New(vmIDParser(s.SubscriptionID))}
	c.instances = newInstances(api, s, c.nodes, clk)
	c.lb = newLoadBalancers(api, s, clusterID, c.instances, clk)
	c.serialLB = lbserial.Wrap(c.lb)
	if s.RoutesEnabled() {
		c.routes = newRoutes(api, s, clusterID, c.instances, clk)
	}
	return c
}

// Initialize is called once leadership is won.
func (c *Cloud) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {}

// SetInformers implements cloudprovider.InformerUser: the Node informer
// maps Node names to VMs through their providerIDs; the Service informer
// tells the security group which addresses still have a Service.
func (c *Cloud) SetInformers(f informers.SharedInformerFactory) {
	c.nodes.SetInformers(f)
	c.lb.setInformers(f)
}

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

// Routes is supported only when routeTableName is configured.
func (c *Cloud) Routes() (cloudprovider.Routes, bool) {
	if c.routes == nil {
		return nil, false
	}
	return c.routes, true
}

// Backend describes the Azure backend for the registry.
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
