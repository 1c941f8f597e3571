package gce

import (
	cloudsimgce "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/gce"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

var _ conformance.PodCIDRCloud = (*Cloud)(nil)

// PodCIDRArgs are kOps' flags for the GCP CCM of a cluster with IP
// aliases (kops pkg/model/components/gcpcloudcontrollermanager.go:
// AllocateNodeCIDRs true, CIDRAllocatorType CloudAllocator, ClusterCIDR
// the pod range, ConfigureCloudRoutes false, Controllers "*").
func (c *Cloud) PodCIDRArgs() []string {
	return []string{
		"--allocate-node-cidrs=true",
		"--cidr-allocator-type=CloudAllocator",
		"--cluster-cidr=" + c.fx.PodCIDR,
		"--configure-cloud-routes=false",
		"--controllers=*",
	}
}

// LaunchPodCIDRs launches a node instance with an alias range of nic0
// from the subnetwork's "pods" range, as kOps' instance templates ask for
// one (ipCidrRange "/24", subnetworkRangeName "pods"); the other pool's
// is a /26, and PodCIDRsNone has none.
func (c *Cloud) LaunchPodCIDRs(spec conformance.InstanceSpec, kind conformance.PodCIDRKind) (conformance.Instance, conformance.PodCIDRWant, error) {
	s := cloudsimgce.InstanceSpec{
		Name: instanceName(spec.NameHint), Zone: spec.Zone, MachineType: spec.InstanceType, ExternalIP: spec.PublicIP, Tags: []string{c.nodeTag()},
	}
	switch kind {
	case conformance.PodCIDRsDefault:
		s.AliasIPRanges = []cloudsimgce.AliasIPRange{{IPCIDRRange: "/24", SubnetworkRangeName: c.fx.PodRangeName}}
	case conformance.PodCIDRsOtherPool:
		s.AliasIPRanges = []cloudsimgce.AliasIPRange{{IPCIDRRange: "/26", SubnetworkRangeName: c.fx.PodRangeName}}
	}
	info, err := c.emu.Launch(s)
	if err != nil {
		return conformance.Instance{}, conformance.PodCIDRWant{}, err
	}
	want := conformance.PodCIDRWant{None: true}
	if len(info.AliasIPRanges) > 0 {
		want = conformance.PodCIDRWant{Exact: []string{info.AliasIPRanges[0].IPCIDRRange}, NetworkAvailable: true}
	}
	return conformance.Instance{ID: info.Name, NodeName: info.Name, Zone: info.Zone}, want, nil
}
