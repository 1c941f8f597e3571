// Package aws is the AWS backend: EC2 instances for the node controllers, a
// Network Load Balancer (ELBv2) or a Classic ELB per LoadBalancer Service,
// and VPC route tables for pod CIDRs, all through aws-sdk-go-v2.
package aws

import (
	"context"
	"fmt"

	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/providers"
	"github.com/multicloud-ccm/multicloud-ccm/providers/compose"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodes"
	decl "github.com/multicloud-ccm/multicloud-ccm/providers/permissions"
)

// ProviderName is the cloud-config provider name and the providerID scheme.
const ProviderName = "aws"

// Cloud is the AWS backend's parts, which the registry assembles (providers/compose) into the
// cloudprovider.Interface.
type Cloud struct {
	cfg       *Section
	clusterID string
	api       *clients
	nodes     *nodes.Lister
	instances *instances
	lb        *loadBalancers
	// typedLB is lb and its Classic ELB sibling: each Service goes to the
	// NLB or the Classic ELB code by its type.
	typedLB cloudprovider.LoadBalancer
	// inv lists both kinds' resources for drift repair and orphan
	// cleanup (inventory.go).
	inv    *lbInventory
	routes *routes
}

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
	c.typedLB = newTypedLoadBalancers(c.lb, s.LoadBalancer.DefaultType)
	c.inv = newInventory(c.lb)
	if s.Routes() {
		c.routes = newRoutes(api, s, cc.ClusterID, c.instances)
	}
	return c, nil
}

// Parts are the backend's parts: routes only when route tables are
// configured, so an empty --cluster-cidr never matters on clusters that
// don't use cloud routes; the Node informer maps Node names to instances
// through their providerIDs. The upstream annotation table is this
// config's: with defaultType classic, unannotated Services get Classic
// ELBs and their annotations are served. The inventory lists NLBs and
// Classic ELBs alike, with their parts.
func (c *Cloud) Parts() compose.Parts {
	return compose.Parts{
		Name: ProviderName, Instances: c.instances, LoadBalancer: c.typedLB, Routes: c.routes,
		SetInformers:        c.nodes.SetInformers,
		UpstreamAnnotations: upstreamAnnotations(c.cfg.LoadBalancer.DefaultType),
		Inventory:           c.inv,
	}
}

// Backend describes the AWS backend for the registry.
func Backend() providers.Backend {
	return providers.Backend{
		Name:       ProviderName,
		NewSection: func() config.Section { return &Section{} },
		New: func(ctx context.Context, cc *config.CloudConfig) (compose.Parts, error) {
			return compose.PartsOf(New(ctx, cc))
		},
		ImportConfig: ImportConfig,
		// What the reference documents: the default config (NLBs); each
		// Cloud gives the table for its own config.
		UpstreamAnnotations: upstreamAnnotations(defaultTypeNLB),
		Permissions:         Permissions,
		PermissionFeatures: func(s config.Section, deleteOrphans bool) []string {
			return PermissionFeatures(s.(*Section), deleteOrphans)
		},
		Policy: decl.AWSPolicy,
	}
}
