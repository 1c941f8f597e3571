// Package aws is the AWS backend: EC2 instances for the node controllers, a
// Network Load Balancer (ELBv2) or a Classic ELB per LoadBalancer Service,
// and VPC route tables for pod CIDRs, all through aws-sdk-go-v2.
package aws

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
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/upstreamann"
)

// ProviderName is the cloud-config provider name and the providerID scheme.
const ProviderName = "aws"

// Cloud implements cloudprovider.Interface for AWS.
type Cloud struct {
	cfg       *Section
	clusterID string
	api       *clients
	nodes     *nodes.Lister
	instances *instances
	lb        *loadBalancers
	// serialLB is lb and its Classic ELB sibling, by Service type, with one
	// Service's calls never overlapping.
	serialLB *lbserial.LoadBalancer
	routes   *routes
}

var (
	_ cloudprovider.Interface    = (*Cloud)(nil)
	_ cloudprovider.InformerUser = (*Cloud)(nil)
)

// New builds the AWS cloud from a validated cloud-config. It makes no API
// call; lookups start once the manager runs the controllers.
func New(ctx context.Context, cc *config.CloudConfig) (*Cloud, error) {
	s, ok := cc.Section.(*Section)
	if !ok {
		return nil, fmt.Errorf("aws: cloud-config section has type %T", cc.Section)
	}
	api, err := newClients(ctx, s)
	if err != nil {
		return nil, err
	}
	c := &Cloud{cfg: s, clusterID: cc.ClusterID, api: api, nodes: nodes.New(instanceIDFromProviderID)}
	c.instances = newInstances(api, s, cc.ClusterID, c.nodes, clock.RealClock{})
	c.lb = newLoadBalancers(api, s, cc.ClusterID, c.instances, clock.RealClock{})
	// Each Service goes to the NLB or the Classic ELB code by its type.
	c.serialLB = lbserial.Wrap(newTypedLoadBalancers(c.lb, s.LoadBalancer.DefaultType))
	if s.Routes() {
		c.routes = newRoutes(api, s, cc.ClusterID, c.instances)
	}
	return c, nil
}

// UpstreamAnnotations is the upstream annotation table for this cloud's
// config: with defaultType classic, unannotated Services get Classic ELBs
// and their annotations are served (providers.NewCloud asks for it).
func (c *Cloud) UpstreamAnnotations() *upstreamann.Table {
	return upstreamAnnotations(c.cfg.LoadBalancer.DefaultType)
}

// Initialize is called once leadership is won.
func (c *Cloud) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {}

// SetInformers implements cloudprovider.InformerUser: the Node informer
// maps Node names to instances through their providerIDs.
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

// Routes is supported only when route tables are configured, so an empty
// --cluster-cidr never matters on clusters that don't use cloud routes.
func (c *Cloud) Routes() (cloudprovider.Routes, bool) {
	if c.routes == nil {
		return nil, false
	}
	return c.routes, true
}

// Backend describes the AWS backend for the registry.
func Backend() providers.Backend {
	return providers.Backend{
		Name:       ProviderName,
		NewSection: func() config.Section { return &Section{} },
		New: func(ctx context.Context, cc *config.CloudConfig) (cloudprovider.Interface, error) {
			return New(ctx, cc)
		},
		ImportConfig: ImportConfig,
		// What the reference documents: the default config (NLBs); each
		// Cloud gives the table for its own config.
		UpstreamAnnotations: upstreamAnnotations(defaultTypeNLB),
	}
}
