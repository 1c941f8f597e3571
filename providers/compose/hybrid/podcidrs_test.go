package hybrid

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/providers/podcidrs"
)

// allocatingCloud is a fakeCloud with a cloud allocator answering its
// instance's name as an IPv4 range.
type allocatingCloud struct{ *fakeCloud }

func (a allocatingCloud) PodCIDRs(_ context.Context, n *v1.Node) (podcidrs.Answer, error) {
	i, err := a.instanceOf(n)
	if err != nil {
		return podcidrs.Answer{}, err
	}
	return podcidrs.Answer{IPv4: podcidrs.Family{CIDR: i}, CloudRouted: true}, nil
}

// TestPodCIDRRouting: each Node's own cloud answers; a Node of a cloud
// without an allocator, or of no configured cloud, is not served; a
// composite whose clouds have none offers no allocator.
func TestPodCIDRRouting(t *testing.T) {
	gce, os := newFake("gce", "10.4.1.0/24"), newFake("openstack", "o1")
	h := composite(t, "openstack", os, gce)
	// Members hold the InstancesV2 their cloud gave; give gce's an
	// allocator as a backend's instances carry one.
	for _, m := range h.members {
		if m.name == "gce" {
			m.instances = allocatingCloud{gce}
		}
	}
	in := &instances{h: h}
	alloc, ok := in.PodCIDRAllocator()
	if !ok {
		t.Fatal("a composite with an allocating cloud offers no allocator")
	}
	ctx := context.Background()
	a, err := alloc.PodCIDRs(ctx, node("g", "gce://10.4.1.0/24", nil))
	if err != nil || a.IPv4.CIDR != "10.4.1.0/24" {
		t.Fatalf("gce Node: %+v, %v", a, err)
	}
	for _, n := range []*v1.Node{node("o", "openstack://o1", nil), node("k3s", "k3s://x", nil)} {
		if _, err := alloc.PodCIDRs(ctx, n); !errors.Is(err, podcidrs.ErrNotServed) {
			t.Errorf("Node %s: %v, want ErrNotServed", n.Name, err)
		}
	}
	if _, ok := (&instances{h: composite(t, "openstack", newFake("openstack"))}).PodCIDRAllocator(); ok {
		t.Error("a composite without an allocating cloud offers an allocator")
	}
}
