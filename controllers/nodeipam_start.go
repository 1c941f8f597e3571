package controllers

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	cloudcontrollerconfig "k8s.io/cloud-provider/app/config"
	"k8s.io/controller-manager/controller"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/controllers/nodeipam"
	"github.com/multicloud-ccm/multicloud-ccm/providers/podcidrs"
)

// startNodeIPAM starts the node-ipam controller when the flags ask for
// the cloud allocator, as upstream's do: --allocate-node-cidrs=true and
// --cidr-allocator-type=CloudAllocator. Any other allocator type is
// kube-controller-manager's (its range allocator), and
// --allocate-node-cidrs=true alone keeps its meaning for the route
// controller, so neither starts this one. Bad flags stop the manager with
// the flag's name.
func startNodeIPAM(ctx context.Context, o *Options, initCtx app.ControllerInitContext, completed *cloudcontrollerconfig.CompletedConfig, cloud cloudprovider.Interface) (controller.Interface, bool, error) {
	logger := klog.FromContext(ctx)
	shared := completed.ComponentConfig.KubeCloudShared
	if !shared.AllocateNodeCIDRs || shared.CIDRAllocatorType != nodeipam.CloudAllocator {
		logger.V(2).Info("Not starting the node-ipam controller: it runs with --allocate-node-cidrs=true --cidr-allocator-type=CloudAllocator",
			"allocateNodeCIDRs", shared.AllocateNodeCIDRs, "cidrAllocatorType", shared.CIDRAllocatorType)
		return nil, false, nil
	}
	opts, err := nodeIPAMOptions(shared.ClusterCIDR, o.NodeIPAM)
	if err != nil {
		return nil, false, fmt.Errorf("node-ipam controller: %w", err)
	}
	alloc, ok := podCIDRAllocator(cloud)
	if !ok {
		logger.Info("Not starting the node-ipam controller: no configured cloud has a cloud allocator (OpenStack has none: kube-controller-manager's range allocator serves)", "provider", cloud.ProviderName())
		return nil, false, nil
	}
	kube := completed.ClientBuilder.ClientOrDie(initCtx.ClientName)
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	// upstream's event source (cloud_cidr_allocator.go: "cidrAllocator").
	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "cidrAllocator"})
	c, err := nodeipam.New(opts, alloc, kube, completed.SharedInformers.Core().V1().Nodes(), recorder)
	if err != nil {
		broadcaster.Shutdown()
		return nil, false, fmt.Errorf("node-ipam controller: %w", err)
	}
	go func() {
		defer broadcaster.Shutdown()
		c.Run(ctx)
	}()
	return nil, true, nil
}

// nodeIPAMOptions reads the flags as upstream's starter does
// (cloud-provider-gcp pkg/controller/nodeipam/starter.go): --cluster-cidr
// is required (one range, or one of each family), --node-cidr-mask-size
// is for single-stack clusters only and not beside the per-family flags.
func nodeIPAMOptions(clusterCIDR string, f NodeIPAMFlags) (nodeipam.Options, error) {
	var o nodeipam.Options
	cluster, err := parseCIDRList("--cluster-cidr", clusterCIDR)
	if err != nil {
		return o, err
	}
	if len(cluster) == 0 {
		return o, fmt.Errorf("--cluster-cidr is required with --allocate-node-cidrs=true")
	}
	if len(cluster) > 2 {
		return o, fmt.Errorf("--cluster-cidr: %d ranges; give one, or one IPv4 and one IPv6", len(cluster))
	}
	svc, err := parseCIDRList("--service-cluster-ip-range", f.ServiceClusterIPRange)
	if err != nil {
		return o, err
	}
	if len(svc) > 2 || (len(svc) == 2 && svc[0].Addr().Is4() == svc[1].Addr().Is4()) {
		return o, fmt.Errorf("--service-cluster-ip-range %q: give one range, or one IPv4 and one IPv6", f.ServiceClusterIPRange)
	}
	o.ClusterCIDRs, o.ServiceCIDRs = cluster, svc
	o.MaskIPv4, o.MaskIPv6 = int(f.MaskSizeIPv4), int(f.MaskSizeIPv6)
	if f.MaskSize != 0 {
		if len(cluster) > 1 {
			return o, fmt.Errorf("--node-cidr-mask-size is not allowed with a dual-stack --cluster-cidr: use --node-cidr-mask-size-ipv4 and --node-cidr-mask-size-ipv6")
		}
		if f.MaskSizeIPv4 != 0 || f.MaskSizeIPv6 != 0 {
			return o, fmt.Errorf("--node-cidr-mask-size is not allowed beside --node-cidr-mask-size-ipv4/-ipv6")
		}
		if cluster[0].Addr().Is4() {
			o.MaskIPv4 = int(f.MaskSize)
		} else {
			o.MaskIPv6 = int(f.MaskSize)
		}
	}
	return o, o.Validate()
}

func parseCIDRList(flag, s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		p, err := netip.ParsePrefix(part)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a CIDR: %w", flag, part, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// podCIDRAllocator is the assembled cloud's allocator, when some
// configured cloud has one.
func podCIDRAllocator(cloud cloudprovider.Interface) (podcidrs.Allocator, bool) {
	in, ok := cloud.InstancesV2()
	if !ok {
		return nil, false
	}
	src, ok := in.(podcidrs.Source)
	if !ok {
		return nil, false
	}
	return src.PodCIDRAllocator()
}
