package aws

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/podcidrs"
)

// The cloud allocator's answer on AWS: the prefixes delegated to the
// instance's primary interface (device index 0). An IPv6 /80 prefix is the
// Node's IPv6 pod CIDR, an IPv4 /28 prefix its IPv4 one; the VPC routes
// both to the interface, so no route is needed. An IPv4 family without a
// prefix is allocated from --cluster-cidr (the range allocator's way,
// routed by the route controller). No upstream CCM serves this
// (cloud-provider-aws PR #679 was closed unmerged); kops-controller and
// Gardener's aws-ipam-controller copy the /80 into spec.podCIDRs the same
// way. Read from the instance snapshot: DescribeInstances reports the
// prefixes, so N Nodes cost the node controller's listing, no call each.

var _ podcidrs.Allocator = (*instances)(nil)

// primaryInterface is the instance's network interface at device index 0.
func primaryInterface(inst *ec2types.Instance) *ec2types.InstanceNetworkInterface {
	for i := range inst.NetworkInterfaces {
		ni := &inst.NetworkInterfaces[i]
		if ni.Attachment != nil && aws.ToInt32(ni.Attachment.DeviceIndex) == 0 {
			return ni
		}
	}
	return nil
}

// delegatedPrefixes are the primary interface's first IPv4 and IPv6
// prefixes, "" where it has none.
func delegatedPrefixes(ni *ec2types.InstanceNetworkInterface) (v4, v6 string) {
	if ni == nil {
		return "", ""
	}
	for _, p := range ni.Ipv4Prefixes {
		if pp, err := netip.ParsePrefix(aws.ToString(p.Ipv4Prefix)); err == nil {
			v4 = pp.Masked().String()
			break
		}
	}
	for _, p := range ni.Ipv6Prefixes {
		if pp, err := netip.ParsePrefix(aws.ToString(p.Ipv6Prefix)); err == nil {
			v6 = pp.Masked().String()
			break
		}
	}
	return v4, v6
}

// PodCIDRs implements podcidrs.Allocator. With nodeIPAM.assignIPv6Prefix,
// a primary interface without an IPv6 prefix is given one first (one
// AssignIpv6Addresses call for that instance, as kops-controller does);
// refused because the subnet has no IPv6 block, the Node simply has no
// IPv6 range.
func (in *instances) PodCIDRs(ctx context.Context, node *v1.Node) (podcidrs.Answer, error) {
	id, err := in.instanceIDForNode(ctx, node)
	if err != nil {
		return podcidrs.Answer{}, err
	}
	inst, found, err := in.snap.Lookup(ctx, id)
	if err != nil {
		return podcidrs.Answer{}, err
	}
	if !found {
		return podcidrs.Answer{}, fmt.Errorf("instance %s of node %s: %w", id, node.Name, cloudprovider.InstanceNotFound)
	}
	ni := primaryInterface(inst)
	v4, v6 := delegatedPrefixes(ni)
	if v6 == "" && in.assignIPv6Prefix && ni != nil {
		v6, err = in.assignIPv6PrefixTo(ctx, aws.ToString(ni.NetworkInterfaceId))
		if err != nil {
			return podcidrs.Answer{}, fmt.Errorf("assign an IPv6 prefix to %s of instance %s: %w", aws.ToString(ni.NetworkInterfaceId), id, err)
		}
		klog.FromContext(ctx).V(2).Info("Assigned an IPv6 prefix to the instance's primary interface", "node", klog.KObj(node), "instanceID", id, "prefix", v6)
	}
	return podcidrs.Answer{
		IPv4:        podcidrs.Family{CIDR: v4, Allocate: v4 == ""},
		IPv6:        podcidrs.Family{CIDR: v6},
		CloudRouted: true,
	}, nil
}

// assignIPv6PrefixTo asks EC2 for one /80 on the interface and returns it.
// What was assigned is remembered until the snapshot shows it, so a retry
// (a failed Node write) within the snapshot's age never assigns a second
// prefix.
func (in *instances) assignIPv6PrefixTo(ctx context.Context, eni string) (string, error) {
	if p, ok := in.assignedPrefixes.Load(eni); ok {
		return p.(string), nil
	}
	out, err := in.ec2.AssignIpv6Addresses(ctx, &ec2.AssignIpv6AddressesInput{
		NetworkInterfaceId: aws.String(eni),
		Ipv6PrefixCount:    aws.Int32(1),
	})
	if err != nil {
		return "", err
	}
	if len(out.AssignedIpv6Prefixes) == 0 {
		return "", fmt.Errorf("EC2 assigned no prefix")
	}
	p, err := netip.ParsePrefix(out.AssignedIpv6Prefixes[0])
	if err != nil {
		return "", fmt.Errorf("EC2 assigned %q: %w", out.AssignedIpv6Prefixes[0], err)
	}
	in.assignedPrefixes.Store(eni, p.Masked().String())
	return p.Masked().String(), nil
}
