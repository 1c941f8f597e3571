package azure

import (
	"context"
	"fmt"

	"k8s.io/client-go/informers"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/providers"
	"github.com/multicloud-ccm/multicloud-ccm/providers/compose"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodes"
	decl "github.com/multicloud-ccm/multicloud-ccm/providers/permissions"
)

// Cloud is the Azure backend's parts, which the registry assembles (providers/compose) into the
// cloudprovider.Interface.
type Cloud struct {
	cfg       *Section
	clusterID string
	api       *clients
	nodes     *nodes.Lister
	instances *instances
	lb        *loadBalancers
	routes    *routes
}

// New builds the Azure cloud from a validated cloud-config. It gets one
// Azure AD token (wrong credentials stop the manager with the reason; a
// throttled or failing Azure AD does not, see newClients) and makes no
// other call until the controllers run.
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
	if c.lb.nics != nil {
		c.lb.nics.isBackend = func(vmID string) bool {
			r, err := parseVMID(vmID)
			return err == nil && c.nodes.LoadBalancerBackend(r.key())
		}
	}
	if s.RoutesEnabled() {
		c.routes = newRoutes(api, s, clusterID, c.instances, clk)
	}
	return c
}

// Parts are the backend's parts: routes only with routeTableName; the
// Node informer maps Node names to VMs through their providerIDs, and the
// Service informer tells the security group which addresses still have a
// Service, and the inventory which Service a part named after a UID is
// for.
func (c *Cloud) Parts() compose.Parts {
	return compose.Parts{
		Name: ProviderName, Instances: c.instances, LoadBalancer: c.lb, Routes: c.routes, Inventory: c.lb,
		SetInformers: func(f informers.SharedInformerFactory) {
			c.nodes.SetInformers(f)
			c.lb.setInformers(f)
		},
	}
}

// Backend describes the Azure backend for the registry.
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
		Policy: decl.AzurePolicy,
	}
}
