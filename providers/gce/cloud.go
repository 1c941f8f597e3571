package gce

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/iterator"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/providers"
	"github.com/multicloud-ccm/multicloud-ccm/providers/compose"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/lbrecords"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodes"
	decl "github.com/multicloud-ccm/multicloud-ccm/providers/permissions"
)

// Cloud is the GCE backend's parts, which the registry assembles (providers/compose) into the
// cloudprovider.Interface.
type Cloud struct {
	cfg       *Section
	clusterID string
	api       *clients
	// zones are the managed zones: the config's, or every zone of the
	// region.
	zones     []string
	nodes     *nodes.Lister
	instances *instances
	lb        *loadBalancers
	routes    *routes
}

// New builds the backend from a validated cloud-config. It fetches an
// access token (wrong credentials stop the manager with the reason; a
// throttled or failing token endpoint does not, see newClients) and,
// without zones in the config, lists the region's zones, waiting out a
// throttled or failing Compute Engine (zonesAtStart).
func New(ctx context.Context, cc *config.CloudConfig) (*Cloud, error) {
	s, ok := cc.Section.(*Section)
	if !ok {
		return nil, fmt.Errorf("gce: cloud-config section has type %T", cc.Section)
	}
	setup, err := newClientSetup(ctx, s, nil)
	if err != nil {
		return nil, err
	}
	api, err := newClients(ctx, setup)
	if err != nil {
		return nil, err
	}
	zones, err := zonesAtStart(ctx, api, s, startupWait)
	if err != nil {
		return nil, err
	}
	return newCloud(s, cc.ClusterID, api, zones, clock.RealClock{}), nil
}

// waitPolicy is how long zonesAtStart waits out transient failures.
type waitPolicy struct {
	// first and max are the pauses between listings, doubling.
	first, max time.Duration
	// patience is how long it tries before it gives up with the error.
	patience time.Duration
}

// startupWait: a project's read quota refills within a minute, and a
// failing API usually recovers within minutes; a manager stopped instead
// would only be restarted by the kubelet, with a growing back-off, to
// make the same call.
var startupWait = waitPolicy{first: time.Second, max: 15 * time.Second, patience: 10 * time.Minute}

// zonesAtStart is managedZones, listed again while Compute Engine (or
// the token endpoint) is throttled or failing: the backend cannot map a
// Node to its instance without the zones. Any other error (no such
// project, no permission) stops the manager at once with the reason.
func zonesAtStart(ctx context.Context, api *clients, s *Section, w waitPolicy) ([]string, error) {
	deadline := time.Now().Add(w.patience)
	pause := w.first
	for {
		zones, err := managedZones(ctx, api, s)
		if err == nil || !(retryable(err) || transientTokenError(err)) || time.Now().Add(pause).After(deadline) {
			return zones, err
		}
		klog.FromContext(ctx).Error(err, "Compute Engine is busy or failing; listing the zones again", "after", pause)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(pause):
		}
		pause = min(2*pause, w.max)
	}
}

// managedZones are the config's zones, or every zone of the region (one
// listing at start).
func managedZones(ctx context.Context, api *clients, s *Section) ([]string, error) {
	if len(s.Zones) > 0 {
		return slices.Clone(s.Zones), nil
	}
	it := api.zones.List(ctx, &computepb.ListZonesRequest{Project: s.ProjectID}, api.retry)
	var out []string
	for {
		z, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("gce: list the zones of project %s: %w", s.ProjectID, err)
		}
		if lastSegment(z.GetRegion()) == s.Region || strings.HasPrefix(z.GetName(), s.Region+"-") {
			out = append(out, z.GetName())
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("gce.region: project %s has no zone in region %s", s.ProjectID, s.Region)
	}
	slices.Sort(out)
	return out, nil
}

func newCloud(s *Section, clusterID string, api *clients, zones []string, clk clock.Clock) *Cloud {
	c := &Cloud{cfg: s, clusterID: clusterID, api: api, zones: zones, nodes: nodes.New(instanceKeyOf)}
	c.instances = newInstances(api, s, zones, c.nodes, clk)
	c.lb = &loadBalancers{cfg: s, clusterID: clusterID, api: api, in: c.instances,
		groups: &instanceGroups{cfg: s, clusterID: clusterID, api: api, clk: clk},
		pools:  lbrecords.New[[]string](poolRecordTTL, clk)}
	c.lb.groups.sharedID = c.lb.sharedID
	c.routes = &routes{cfg: s, clusterID: clusterID, api: api, in: c.instances}
	return c
}

// Parts are the backend's parts: external (target pool) and internal
// (backend service) passthrough load balancers, pod CIDR routes in the
// nodes' network, and the Node informer, so Node names map to instances
// without cloud calls; the load balancers' inventory (inventory.go) for
// drift repair and orphan cleanup.
func (c *Cloud) Parts() compose.Parts {
	return compose.Parts{
		Name: ProviderName, Instances: c.instances, LoadBalancer: c.lb, Routes: c.routes,
		Initialize: c.initialize, SetInformers: c.nodes.SetInformers,
		Inventory: c.lb,
	}
}

// initialize is called once leadership is won, before the controllers
// start: it reads the upstream GCE CCM's cluster ID (clusterid.go), which
// names the cluster's shared load balancer parts when present, and keeps
// a client to remove upstream's finalizers from Services.
func (c *Cloud) initialize(b cloudprovider.ControllerClientBuilder, _ <-chan struct{}) {
	client, err := b.Client("cloud-controller-manager")
	if err != nil {
		klog.Background().Error(err, "No client to read the upstream GCE cluster ID; the shared load balancer parts are named after clusterID")
		return
	}
	c.lb.services = client.CoreV1()
	if id := readSharedID(context.Background(), client); id != "" {
		klog.Background().Info("Naming the cluster's shared load balancer parts after the upstream GCE CCM's cluster ID", "configMap", clusterIDNamespace+"/"+clusterIDConfigMap, "id", id)
		c.lb.setSharedID(id)
	}
}

// Backend describes the GCE backend for the registry.
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
		Policy: decl.GCEPolicy,
	}
}
