package azure

import (
	"strings"
	"sync"

	cloudsimazure "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/azure"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

var _ conformance.PodCIDRCloud = (*Cloud)(nil)

// podClusterCIDR is the scenario's --cluster-cidr: room for 1024 /24s, so
// the benchmark's 1000 Nodes fit.
const podClusterCIDR = "10.244.0.0/14"

// otherPool is the scale set whose instances get /26 pod CIDRs through
// upstream's mask tag (cloud-provider-azure pkg/consts/consts.go:113).
const otherPool = "ipam-pool-26"

var otherPoolMu sync.Mutex

// PodCIDRArgs turn upstream Azure's cloud allocator on as its users do:
// ranges allocated from --cluster-cidr at each pool's mask, routed by the
// route controller.
func (c *Cloud) PodCIDRArgs() []string {
	return []string{
		"--allocate-node-cidrs=true",
		"--cidr-allocator-type=CloudAllocator",
		"--cluster-cidr=" + podClusterCIDR,
	}
}

// LaunchPodCIDRs launches a standalone VM (the default /24) or an
// instance of a scale set tagged kubernetesNodeCIDRMaskIPV4=26. Azure
// allocates from the cluster CIDR: no instance lacks a range.
func (c *Cloud) LaunchPodCIDRs(spec conformance.InstanceSpec, kind conformance.PodCIDRKind) (conformance.Instance, conformance.PodCIDRWant, error) {
	switch kind {
	case conformance.PodCIDRsNone:
		return conformance.Instance{}, conformance.PodCIDRWant{}, conformance.ErrNoSuchKind
	case conformance.PodCIDRsOtherPool:
		otherPoolMu.Lock()
		defer otherPoolMu.Unlock()
		if _, ok := c.emu.ScaleSet(otherPool); !ok {
			if _, err := c.emu.CreateScaleSet(cloudsimazure.ScaleSetSpec{Name: otherPool, Tags: map[string]string{"kubernetesNodeCIDRMaskIPV4": "26"}}); err != nil {
				return conformance.Instance{}, conformance.PodCIDRWant{}, err
			}
		}
		vms, err := c.emu.ScaleOut(otherPool, 1)
		if err != nil {
			return conformance.Instance{}, conformance.PodCIDRWant{}, err
		}
		vm := vms[0]
		return conformance.Instance{ID: vm.Name, NodeName: strings.ToLower(vm.ComputerName), Zone: zoneLabel(vm)},
			conformance.PodCIDRWant{Within: []string{podClusterCIDR}, Masks: []int{26}}, nil
	}
	inst, err := c.Launch(spec)
	if err != nil {
		return conformance.Instance{}, conformance.PodCIDRWant{}, err
	}
	return inst, conformance.PodCIDRWant{Within: []string{podClusterCIDR}, Masks: []int{24}}, nil
}
