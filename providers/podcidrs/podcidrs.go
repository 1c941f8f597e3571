// Package podcidrs is what a backend gives controllers/nodeipam: the pod
// CIDRs the cloud holds for the instance behind a Node (GCE's alias IP
// range and IPv6 range of nic0, AWS's prefixes delegated to the primary
// interface), or the size of the range the controller is to allocate for
// it from the cluster CIDR (Azure's node-pool mask tags). The controller
// finds it through the assembled cloud's InstancesV2 (see Source), so a
// hybrid cluster asks each Node's own cloud.
//
// It is its own package, outside providers/internal, because controllers/
// reads it and Go's internal rule keeps providers/internal to providers/.
package podcidrs

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
)

var (
	// ErrNotServed: the Node is not this allocator's to serve (a Node of
	// no configured cloud, of a cloud without a cloud allocator, or one
	// its cloud marks as unmanaged). The controller leaves it alone.
	ErrNotServed = errors.New("the Node's pod CIDRs are not served by a cloud allocator")
	// ErrNoRanges: the instance exists and has no range the cloud could
	// give as pod CIDRs (no alias IP range, no delegated prefix). The
	// controller records CIDRNotAvailable on the Node and retries.
	ErrNoRanges = errors.New("the instance has no range for pod CIDRs")
)

// Family is one IP family's answer.
type Family struct {
	// CIDR is the range the cloud holds for the instance in this family;
	// "" when it holds none.
	CIDR string
	// Allocate, when CIDR is "", asks the controller to allocate a range
	// for the Node from the cluster CIDR of this family.
	Allocate bool
	// Mask is the size of that range; 0 takes the
	// --node-cidr-mask-size-ipv4/-ipv6 flags' (default /24 and /64).
	Mask int
}

// Answer is what a cloud says of a Node's pod CIDRs.
type Answer struct {
	IPv4, IPv6 Family
	// CloudRouted says the cloud itself routes the ranges it holds to
	// the instance (alias IP ranges, delegated prefixes), so no route is
	// needed and the controller sets the Node's NetworkUnavailable
	// condition to False as it writes them, as upstream GCE's allocator
	// does. Ranges allocated from the cluster CIDR still need routes: when
	// any family is allocated, the route controller sets the condition.
	CloudRouted bool
}

// Allocator answers for Nodes of one cloud, or, assembled, of each
// Node's own cloud.
type Allocator interface {
	// PodCIDRs answers for node, from the backend's batched instance
	// snapshot (no call per Node). Errors wrap ErrNotServed or
	// ErrNoRanges where those apply; anything else is retried.
	PodCIDRs(ctx context.Context, node *v1.Node) (Answer, error)
}

// RangeAssigner is what an Allocator may also offer: giving an instance
// the IPv6 range it lacks (AWS with nodeIPAM.assignIPv6Prefix: one /80
// delegated to its primary interface). The controller asks only for a
// Node that has no pod CIDRs yet, of a cluster with an IPv6 family, so a
// Node that does not need one never gets one.
type RangeAssigner interface {
	// AssignIPv6Range gives the Node's instance an IPv6 range and returns
	// it; "" and no error when the cloud assigns none for this Node (the
	// setting is off, the subnet has no IPv6 block): the Node then has no
	// IPv6 range (CIDRNotAvailable).
	AssignIPv6Range(ctx context.Context, node *v1.Node) (string, error)
}

// Source is what the assembled cloud's InstancesV2 offers when some
// configured cloud has a cloud allocator.
type Source interface {
	// PodCIDRAllocator is the allocator; false when no configured cloud
	// has one (OpenStack: kube-controller-manager's range allocator
	// serves).
	PodCIDRAllocator() (Allocator, bool)
}
