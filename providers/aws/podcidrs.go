package aws

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/podcidrs"
)

// The cloud allocator's answer on AWS: the prefixes delegated to the
// instance's primary interface (device index 0). An IPv6 /80 prefix is the
// Node's IPv6 pod CIDR, and with nodeIPAM.ipv4Prefix an IPv4 /28 prefix
// its IPv4 one; the VPC routes both to the interface, so no route is
// needed. An IPv4 family without a prefix is allocated from --cluster-cidr (the range allocator's way,
// routed by the route controller). No upstream CCM serves this
// (cloud-provider-aws PR #679 was closed unmerged); kops-controller and
// Gardener's aws-ipam-controller copy the /80 into spec.podCIDRs the same
// way. Read from the instance snapshot: DescribeInstances reports the
// prefixes, so N Nodes cost the node controller's listing, no call each.

var _ podcidrs.Allocator = (*instances)(nil)

// primaryInterface is the instance's network interface at device index 0
// (compact keeps what pod CIDRs need of it).
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

// PodCIDRs implements podcidrs.Allocator.
func (in *instances) PodCIDRs(ctx context.Context, node *v1.Node) (podcidrs.Answer, error) {
	inst, err := in.Lookup(ctx, node)
	if err != nil {
		return podcidrs.Answer{}, err
	}
	v4, v6 := inst.primary.ipv4Prefix, inst.primary.ipv6Prefix
	if !in.ipv4Prefix {
		// /28s on the primary interface are more often the VPC CNI's (or
		// Cilium's ENI mode's) pools of pod addresses than a Node's pod
		// range: read only when the config says so.
		v4 = ""
	}
	if p, ok := in.assignedPrefixes.Load(inst.id); ok && v6 == "" {
		v6 = p.(string)
	}
	return podcidrs.Answer{
		IPv4:        podcidrs.Family{CIDR: v4, Allocate: v4 == ""},
		IPv6:        podcidrs.Family{CIDR: v6},
		CloudRouted: true,
	}, nil
}

var _ podcidrs.RangeAssigner = (*instances)(nil)

// AssignIPv6Range implements podcidrs.RangeAssigner: with
// nodeIPAM.assignIPv6Prefix, one /80 for the primary interface of an
// instance without one (AssignIpv6Addresses, Ipv6PrefixCount 1), as kOps'
// nodeup asks for one at boot and Gardener's machine class at launch.
// The instance is read directly first, so a prefix given since the
// snapshot's listing is not doubled. A subnet without an IPv6 block is
// no range (the controller's CIDRNotAvailable), not an error to retry.
func (in *instances) AssignIPv6Range(ctx context.Context, node *v1.Node) (string, error) {
	if !in.assignIPv6Prefix {
		return "", nil
	}
	id, err := in.KeyForNode(ctx, node)
	if err != nil {
		return "", err
	}
	if p, ok := in.assignedPrefixes.Load(id); ok {
		return p.(string), nil
	}
	fresh, err := in.describeByIDs(ctx, []string{id})
	if err != nil {
		return "", err
	}
	inst, ok := fresh[id]
	if !ok {
		return "", fmt.Errorf("instance %s of node %s: %w", id, node.Name, cloudprovider.InstanceNotFound)
	}
	ni := inst.primary
	if !ni.found {
		return "", nil
	}
	if ni.ipv6Prefix != "" {
		return ni.ipv6Prefix, nil
	}
	v6, err := in.assignIPv6PrefixTo(ctx, ni.id)
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode() == "InvalidParameterValue" {
		klog.FromContext(ctx).Info("Not assigning an IPv6 prefix: EC2 refused it (does the subnet have an IPv6 CIDR block?)", "node", klog.KObj(node), "instanceID", id, "err", err)
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("assign an IPv6 prefix to %s of instance %s: %w", ni.id, id, err)
	}
	in.assignedPrefixes.Store(id, v6)
	klog.FromContext(ctx).V(2).Info("Assigned an IPv6 prefix to the instance's primary interface", "node", klog.KObj(node), "instanceID", id, "prefix", v6)
	return v6, nil
}

// assignIPv6PrefixTo asks EC2 for one /80 on the interface and returns
// it. The caller remembers it by instance, so a retry (a failed Node
// write) within the snapshot's age never assigns a second prefix.
func (in *instances) assignIPv6PrefixTo(ctx context.Context, eni string) (string, error) {
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
	return p.Masked().String(), nil
}
