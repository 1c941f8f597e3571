package hybrid

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/providers/podcidrs"
)

var _ podcidrs.Source = (*instances)(nil)

// PodCIDRAllocator is the allocator that asks each Node's own cloud, for
// controllers/nodeipam; false when no member has a cloud allocator.
func (i *instances) PodCIDRAllocator() (podcidrs.Allocator, bool) {
	for _, m := range i.h.members {
		if _, ok := m.instances.(podcidrs.Allocator); ok {
			return podCIDRs{i.h}, true
		}
	}
	return nil, false
}

// podCIDRs routes a Node's question to its cloud. A Node of no configured
// cloud, or of a cloud without an allocator, is not served: the
// controller leaves it alone.
type podCIDRs struct{ h *Composite }

var _ podcidrs.RangeAssigner = podCIDRs{}

// AssignIPv6Range asks the Node's cloud, when it can assign ranges.
func (p podCIDRs) AssignIPv6Range(ctx context.Context, node *v1.Node) (string, error) {
	m, err := p.h.owner(ctx, node)
	if err != nil {
		return "", err
	}
	a, ok := m.instances.(podcidrs.RangeAssigner)
	if !ok {
		return "", nil
	}
	release, err := m.instShare.acquire(ctx)
	if err != nil {
		return "", err
	}
	defer release()
	return a.AssignIPv6Range(ctx, node)
}

func (p podCIDRs) PodCIDRs(ctx context.Context, node *v1.Node) (podcidrs.Answer, error) {
	m, err := p.h.owner(ctx, node)
	if errors.Is(err, errForeign) {
		return podcidrs.Answer{}, fmt.Errorf("%w: %w", podcidrs.ErrNotServed, err)
	}
	if err != nil {
		return podcidrs.Answer{}, err
	}
	a, ok := m.instances.(podcidrs.Allocator)
	if !ok {
		return podcidrs.Answer{}, fmt.Errorf("%w: cloud %s has no cloud allocator", podcidrs.ErrNotServed, m.name)
	}
	release, err := m.instShare.acquire(ctx)
	if err != nil {
		return podcidrs.Answer{}, err
	}
	defer release()
	return a.PodCIDRs(ctx, node)
}
