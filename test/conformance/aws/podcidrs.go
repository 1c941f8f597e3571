package aws

import (
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

var _ conformance.PodCIDRCloud = (*Cloud)(nil)

// PodCIDRArgs turn the allocator on for an IPv6 cluster whose nodes have
// a delegated /80 each (as kOps and Gardener run theirs): pod CIDRs are
// IPv6 only, from the VPC's /56, routed by the VPC itself.
func (c *Cloud) PodCIDRArgs() []string {
	return []string{
		"--allocate-node-cidrs=true",
		"--cidr-allocator-type=CloudAllocator",
		"--cluster-cidr=" + c.fx.VPCIPv6CIDR,
		"--configure-cloud-routes=false",
	}
}

// LaunchPodCIDRs launches a cluster instance whose primary interface has
// a delegated /80 (AWS has no pools: the other pool's is the same), or,
// for PodCIDRsNone, none.
func (c *Cloud) LaunchPodCIDRs(spec conformance.InstanceSpec, kind conformance.PodCIDRKind) (conformance.Instance, conformance.PodCIDRWant, error) {
	it := spec.InstanceType
	if it == "" {
		it = c.DefaultInstanceType()
	}
	s := cloudsim.InstanceSpec{
		Name: spec.NameHint, Zone: spec.Zone, InstanceType: it, PublicIP: spec.PublicIP,
		Tags: map[string]string{c.fx.ClusterTagKey: "owned"},
	}
	if kind != conformance.PodCIDRsNone {
		s.PodRanges = []string{"/80"}
	}
	info, err := c.emu.LaunchInstance(s)
	if err != nil {
		return conformance.Instance{}, conformance.PodCIDRWant{}, err
	}
	want := conformance.PodCIDRWant{None: true}
	if len(info.PodRanges) > 0 {
		want = conformance.PodCIDRWant{Exact: info.PodRanges, NetworkAvailable: true}
	}
	return conformance.Instance{ID: info.ID, NodeName: info.Hostname, Zone: info.Zone}, want, nil
}
