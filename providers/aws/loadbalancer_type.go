package aws

import (
	"context"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/lbmove"
	"github.com/multicloud-ccm/multicloud-ccm/providers/lbhosts"
)

// lbKind is the kind of load balancer a Service gets.
type lbKind int

const (
	kindNLB lbKind = iota
	kindClassic
	// kindElsewhere is the AWS Load Balancer Controller's.
	kindElsewhere
)

func (k lbKind) String() string {
	switch k {
	case kindClassic:
		return "Classic ELB"
	case kindElsewhere:
		return "AWS Load Balancer Controller"
	}
	return "NLB"
}

// serviceLBKind applies upstream's rule (kubernetes/cloud-provider-aws
// pkg/providers/v1/aws_loadbalancer.go:84-96 isNLB and isLBExternal, and
// aws.go:2359-2540 EnsureLoadBalancer): "nlb" is an NLB, "external" and
// "nlb-ip" are the AWS Load Balancer Controller's, any other value a
// Classic ELB; unset is defaultType.
func serviceLBKind(svc *v1.Service, defaultType string) lbKind {
	switch t, _ := annotationLBType.Lookup(svc); t {
	case lbTypeNLB:
		return kindNLB
	case lbTypeExternal, lbTypeNLBIP:
		return kindElsewhere
	case "":
		if defaultType == defaultTypeClassic {
			return kindClassic
		}
		return kindNLB
	default:
		return kindClassic
	}
}

// servedClassic says the Service gets a Classic ELB when unannotated
// Services get defaultType; the upstream annotation table asks it.
func servedClassic(svc *v1.Service, defaultType string) bool {
	return serviceLBKind(svc, defaultType) == kindClassic
}

// typedLoadBalancers sends each Service to the NLB or the Classic ELB code
// by its kind, and removes what the other kind left: upstream leaks the
// old load balancer when a Service's type changes
// (kubernetes/cloud-provider-aws#1254); here a Service has at most one.
type typedLoadBalancers struct {
	nlb         *loadBalancers
	clb         *classicLoadBalancers
	defaultType string
	// moves knows the kind each Service's load balancer was last made
	// as, the other kind being clear, so only the first sync after a
	// start (or a type change) pays the reads that look for leftovers.
	// Only this process makes load balancers for the Service.
	moves *lbmove.Tracker
}

// The kinds as places a Service's load balancer can be (lbmove).
const (
	placeNLB       = "NLB"
	placeClassic   = "Classic ELB"
	placeElsewhere = "the AWS Load Balancer Controller"
)

// places are the kinds this backend makes, cleared by their own
// deletion (which reads first).
func (t *typedLoadBalancers) places(clusterName string) []lbmove.Place {
	return []lbmove.Place{
		{Name: placeNLB, Clear: func(ctx context.Context, svc *v1.Service) error {
			return t.nlb.EnsureLoadBalancerDeleted(ctx, clusterName, svc)
		}},
		{Name: placeClassic, Clear: func(ctx context.Context, svc *v1.Service) error {
			return t.clb.EnsureLoadBalancerDeleted(ctx, clusterName, svc)
		}},
	}
}

var _ cloudprovider.LoadBalancer = (*typedLoadBalancers)(nil)

func newTypedLoadBalancers(nlb *loadBalancers, defaultType string) *typedLoadBalancers {
	// A Service without an address may still have a load balancer of
	// the other kind (made, its status not yet written), and an AWS
	// call that fails fails the sync.
	return &typedLoadBalancers{nlb: nlb, clb: newClassicLoadBalancers(nlb), defaultType: defaultType, moves: lbmove.New(lbmove.Options{})}
}

func (t *typedLoadBalancers) kind(svc *v1.Service) lbKind { return serviceLBKind(svc, t.defaultType) }

// GetLoadBalancerName is the name of the kind the Service gets.
func (t *typedLoadBalancers) GetLoadBalancerName(ctx context.Context, clusterName string, svc *v1.Service) string {
	if t.kind(svc) == kindClassic {
		return t.clb.GetLoadBalancerName(ctx, clusterName, svc)
	}
	return t.nlb.GetLoadBalancerName(ctx, clusterName, svc)
}

// GetLoadBalancer reports the Service's load balancer of its kind, and
// otherwise whether anything of the other kind is left, so the service
// controller calls EnsureLoadBalancerDeleted for leftovers too.
func (t *typedLoadBalancers) GetLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	first, second := cloudprovider.LoadBalancer(t.nlb), cloudprovider.LoadBalancer(t.clb)
	if t.kind(svc) == kindClassic {
		first, second = second, first
	}
	st, exists, err := first.GetLoadBalancer(ctx, clusterName, svc)
	if err != nil || exists {
		return st, exists, err
	}
	if _, exists, err := second.GetLoadBalancer(ctx, clusterName, svc); err != nil || exists {
		return &v1.LoadBalancerStatus{}, exists, err
	}
	return nil, false, nil
}

// EnsureLoadBalancer makes the load balancer of the Service's kind, then
// removes the other kind's. The new one comes first so a type change
// never leaves the Service without one; an error removing the old one
// (its security group still in use) is returned so the controller comes
// back until nothing is left. A Service handed to the AWS Load Balancer
// Controller has the NLB code remove its own NLB and hand it over; its
// Classic ELB goes after.
func (t *typedLoadBalancers) EnsureLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	nodes, err := targetNodes(svc, nodes)
	if err != nil {
		return nil, err
	}
	var to string
	var lb cloudprovider.LoadBalancer
	switch t.kind(svc) {
	case kindClassic:
		to, lb = placeClassic, t.clb
	case kindElsewhere:
		to, lb = placeElsewhere, t.nlb
	default:
		to, lb = placeNLB, t.nlb
	}
	// The NLB code answers a handed-over Service ImplementedElsewhere
	// (unwrapped, as the service controller reads it), once it removed
	// its own NLB: for the move, that is the new place made.
	var elsewhere error
	st, err := t.moves.Ensure(ctx, svc, to, t.places(clusterName), func() (*v1.LoadBalancerStatus, error) {
		st, err := lb.EnsureLoadBalancer(ctx, clusterName, svc, nodes)
		if to == placeElsewhere && err == cloudprovider.ImplementedElsewhere {
			elsewhere, err = err, nil
		}
		return st, err
	})
	if err == nil && elsewhere != nil {
		return nil, elsewhere
	}
	return st, err
}

// UpdateLoadBalancer follows a node set change on the Service's kind only:
// a type change always comes with an EnsureLoadBalancer.
func (t *typedLoadBalancers) UpdateLoadBalancer(ctx context.Context, clusterName string, svc *v1.Service, nodes []*v1.Node) error {
	nodes, err := targetNodes(svc, nodes)
	if err != nil {
		return err
	}
	if t.kind(svc) == kindClassic {
		return t.clb.UpdateLoadBalancer(ctx, clusterName, svc, nodes)
	}
	return t.nlb.UpdateLoadBalancer(ctx, clusterName, svc, nodes)
}

// EnsureLoadBalancerDeleted removes both kinds: the annotation may have
// changed since either was made.
func (t *typedLoadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, clusterName string, svc *v1.Service) error {
	// Read again regardless of what is known: deletion is rare and must
	// leave nothing.
	t.moves.Forget(svc.UID)
	return t.moves.Delete(ctx, svc, "", t.places(clusterName))
}

// batchParallel is how many Services' targets a node pass changes at
// once: each has its own target group (or Classic ELB), so their
// RegisterTargets calls share nothing, and ELB's API rate limits leave
// room for this many.
const batchParallel = 20

var _ lbhosts.Updater = (*typedLoadBalancers)(nil)

// UpdateLoadBalancerHosts updates every Service's targets in one pass,
// batchParallel at a time.
func (t *typedLoadBalancers) UpdateLoadBalancerHosts(ctx context.Context, clusterName string, svcs []*v1.Service, nodes []*v1.Node) []error {
	return lbhosts.Parallel(ctx, batchParallel, svcs, func(ctx context.Context, svc *v1.Service) error {
		return t.UpdateLoadBalancer(ctx, clusterName, svc, nodes)
	})
}
