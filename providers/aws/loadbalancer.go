package aws

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/flight"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/keylock"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/lbrecords"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/ttlcache"
)

// instanceLookup is what load balancers need from the instances code:
// batched, cached instance reads, never one call per node.
type instanceLookup interface {
	byIDs(ctx context.Context, ids []string) (map[string]*instance, error)
	KeyForNode(ctx context.Context, node *v1.Node) (string, error)
	vpcID(ctx context.Context) (string, error)
}

// Cache ages. They bound how long a change made behind our back (a subnet
// tagged, a target deregistered by hand) can go unnoticed; every sync that
// could change the answer reads again regardless.
const (
	subnetCacheTTL = 5 * time.Minute
	targetCacheTTL = 5 * time.Minute
	nodeSGCacheTTL = 5 * time.Minute
)

// loadBalancers implements cloudprovider.LoadBalancer with one Network Load
// Balancer per Service. Everything is found again by deterministic name
// and ownership tags, so a restart mid-operation converges. The caches only
// save reads. The records let a node set change skip reads altogether;
// they are kept only after success, dropped on any doubt, and trusted for
// at most lbRecordTTL, so a restart (no records) only costs reads.
type loadBalancers struct {
	api       *clients
	cfg       *Section
	clusterID string
	in        instanceLookup
	clock     clock.Clock

	subnets *ttlcache.Cache[[]string]
	// subnetFills shares one discovery among concurrent misses per key.
	subnetFills flight.Group[[]string]
	// targets remembers, per target group ARN, the targets last confirmed
	// registered, so a sync with an unchanged node set skips
	// DescribeTargetHealth.
	targets *ttlcache.Cache[string]
	// nodeRules remembers, per Service, the node security group inputs last
	// reconciled, so a sync with unchanged node SGs skips reading them.
	nodeRules *ttlcache.Cache[string]
	// clusterGroups remembers, per set of backend security group lists,
	// which groups are the backends' cluster groups (the ones node rules
	// go into), so a new load balancer's rules need no read of them.
	clusterGroups *ttlcache.Cache[[]string]
	// records remembers, per Service, what the last full sync established,
	// so a node set change costs only the target calls it needs.
	records *lbrecords.Store[lbRecord]
	// shared is the backend set the last syncs worked out, for the next
	// Services synced with the same Nodes.
	shared sharedBackends
	// forgotten holds the keys of Services the inventory's Forget named
	// (inventory.go): their next ensure drops the confirmed target sets of
	// their target groups before it reconciles targets, so it reads them.
	// Keyed by target group ARN, those cannot be dropped by Service
	// before the ensure has found the target groups.
	forgotten sync.Map
	// groupLocks serializes, per node security group, the read-decide-write
	// of rules several load balancers share there (upstream's NLB MTU
	// rule), so concurrent workers decide from each other's writes.
	groupLocks keylock.Locks
}

var _ cloudprovider.LoadBalancer = (*loadBalancers)(nil)

func newLoadBalancers(api *clients, s *Section, clusterID string, in *instances, clk clock.Clock) *loadBalancers {
	l := &loadBalancers{
		api:       api,
		cfg:       s,
		clusterID: clusterID,
		shared:    sharedBackends{seed: maphash.MakeSeed()},
	}
	// A nil *instances must stay a nil interface, so ensure reports it
	// instead of panicking.
	if in != nil {
		l.in = in
	}
	l.setClock(clk)
	return l
}

// setClock (re)builds the caches and records on clk; tests use a fake one.
func (l *loadBalancers) setClock(clk clock.Clock) {
	l.clock = clk
	l.subnets = ttlcache.New[[]string](subnetCacheTTL, clk)
	l.targets = ttlcache.New[string](targetCacheTTL, clk)
	l.nodeRules = ttlcache.New[string](nodeSGCacheTTL, clk)
	l.clusterGroups = ttlcache.New[[]string](nodeSGCacheTTL, clk)
	l.records = lbrecords.New[lbRecord](lbRecordTTL, clk)
}

// GetLoadBalancerName ignores clusterName (the --cluster-name flag): the
// cloud-config's clusterID is what tags and names every resource we own.
// It is the name a new NLB gets: upstream's with loadBalancer.upstreamShape.
func (l *loadBalancers) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return l.newState(svc).name
}

// GetLoadBalancer reports whether anything of the Service's load balancer
// is left. The service controller calls EnsureLoadBalancerDeleted only when
// this says exists, so a security group still waiting for AWS to detach
// the deleted NLB counts too: answering false would leak it.
//
// For Services the AWS Load Balancer Controller owns it answers "does not
// exist" instead of ImplementedElsewhere: the service controller treats any
// error here as fatal to cleanup and would keep its finalizer forever. For
// the same reason a malformed annotation is not an error here.
func (l *loadBalancers) GetLoadBalancer(ctx context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	if elsewhere, _ := implementedElsewhere(svc); elsewhere {
		return nil, false, nil
	}
	st, err := l.load(ctx, svc, false)
	if err != nil {
		return nil, false, err
	}
	if st.lb != nil && st.owned {
		return lbStatus(st.lb), true, nil
	}
	vpc, err := l.vpcFor(ctx, st.lb)
	if err != nil {
		return nil, false, err
	}
	sg, err := l.findLBSecurityGroup(ctx, svc, vpc)
	if err != nil {
		return nil, false, err
	}
	if sg != nil && l.ownedSG(sg, svc) {
		return &v1.LoadBalancerStatus{}, true, nil
	}
	return nil, false, nil
}

// EnsureLoadBalancer creates or updates the Service's NLB and returns its
// DNS name as the status.
//
// A Service handed to the AWS Load Balancer Controller (type external or
// nlb-ip) may have had an NLB from us before the annotation changed; that
// NLB is ours alone to remove, so it is deleted (found by name and
// ownership tags, like every deletion) before ImplementedElsewhere hands
// the Service over. Otherwise it would leak for the Service's lifetime.
func (l *loadBalancers) EnsureLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	if elsewhere, _ := implementedElsewhere(svc); elsewhere {
		if err := l.delete(l.logContext(ctx, svc), svc); err != nil {
			return nil, fmt.Errorf("remove NLB %s left from before service %s moved to the AWS Load Balancer Controller: %w",
				l.newState(svc).name, serviceKey(svc), err)
		}
		return nil, cloudprovider.ImplementedElsewhere
	}
	if err := ensureSupported(svc); err != nil {
		return nil, err
	}
	opts, err := parseLBOptions(svc)
	if err != nil {
		return nil, err
	}
	ctx = l.logContext(ctx, svc)
	lb, err := l.ensure(ctx, svc, opts, nodes)
	if err != nil {
		return nil, fmt.Errorf("ensure NLB %s for service %s: %w", l.newState(svc).name, serviceKey(svc), err)
	}
	return lbStatus(lb), nil
}

// UpdateLoadBalancer follows a node set change: it touches targets, and
// node security group rules when the nodes' security groups changed.
func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) error {
	if err := ensureSupported(svc); err != nil {
		return err
	}
	opts, err := parseLBOptions(svc)
	if err != nil {
		return err
	}
	ctx = l.logContext(ctx, svc)
	if err := l.update(ctx, svc, opts, nodes); err != nil {
		return fmt.Errorf("update NLB %s targets for service %s: %w", l.newState(svc).name, serviceKey(svc), err)
	}
	return nil
}

// EnsureLoadBalancerDeleted removes everything created for the Service.
// It never returns ImplementedElsewhere (the service controller would keep
// the finalizer). For Services another controller owns it still removes
// what we created before a type change, and nothing else: deletion only
// touches resources carrying our name and ownership tags.
func (l *loadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, _ string, svc *v1.Service) error {
	ctx = l.logContext(ctx, svc)
	if err := l.delete(ctx, svc); err != nil {
		return fmt.Errorf("delete NLB %s of service %s: %w", l.newState(svc).name, serviceKey(svc), err)
	}
	return nil
}

func (l *loadBalancers) logContext(ctx context.Context, svc *v1.Service) context.Context {
	logger := klog.FromContext(ctx).WithValues("service", klog.KObj(svc), "loadBalancer", l.newState(svc).name)
	return klog.NewContext(ctx, logger)
}

func lbStatus(lb *elbv2types.LoadBalancer) *v1.LoadBalancerStatus {
	if lb == nil || aws.ToString(lb.DNSName) == "" {
		return &v1.LoadBalancerStatus{}
	}
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{Hostname: aws.ToString(lb.DNSName)}}}
}

// vpcFor is the VPC the Service's resources live in: the NLB's when it
// exists, else the configured or discovered cluster VPC.
func (l *loadBalancers) vpcFor(ctx context.Context, lb *elbv2types.LoadBalancer) (string, error) {
	if lb != nil && aws.ToString(lb.VpcId) != "" {
		return aws.ToString(lb.VpcId), nil
	}
	if l.cfg != nil && l.cfg.VPCID != "" {
		return l.cfg.VPCID, nil
	}
	if l.in == nil {
		return "", errors.New("no VPC configured and no instance lookup to discover it")
	}
	vpc, err := l.in.vpcID(ctx)
	if err != nil {
		return "", fmt.Errorf("discover cluster VPC: %w", err)
	}
	return vpc, nil
}
