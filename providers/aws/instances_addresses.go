package aws

import (
	"math"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v1 "k8s.io/api/core/v1"
)

// nodeAddresses lists the instance's addresses in the order the upstream
// AWS CCM uses, which kubelets' --node-ip and the provided-node-ip check
// rely on: every private IPv4 (primary interface first, primary address
// first), the public IP, the private and public DNS names, and the private
// DNS name as hostname.
func nodeAddresses(inst *ec2types.Instance) []v1.NodeAddress {
	var out []v1.NodeAddress
	seen := map[string]bool{}
	add := func(t v1.NodeAddressType, a string) {
		if a == "" || seen[string(t)+"/"+a] {
			return
		}
		seen[string(t)+"/"+a] = true
		out = append(out, v1.NodeAddress{Type: t, Address: a})
	}

	enis := slices.Clone(inst.NetworkInterfaces)
	slices.SortStableFunc(enis, func(a, b ec2types.InstanceNetworkInterface) int {
		return int(deviceIndex(a)) - int(deviceIndex(b))
	})
	for _, eni := range enis {
		for _, ip := range eni.PrivateIpAddresses {
			if aws.ToBool(ip.Primary) {
				add(v1.NodeInternalIP, aws.ToString(ip.PrivateIpAddress))
			}
		}
		for _, ip := range eni.PrivateIpAddresses {
			add(v1.NodeInternalIP, aws.ToString(ip.PrivateIpAddress))
		}
		// Interfaces described without their address list still have one.
		add(v1.NodeInternalIP, aws.ToString(eni.PrivateIpAddress))
	}
	add(v1.NodeInternalIP, aws.ToString(inst.PrivateIpAddress))

	add(v1.NodeExternalIP, aws.ToString(inst.PublicIpAddress))
	add(v1.NodeInternalDNS, aws.ToString(inst.PrivateDnsName))
	add(v1.NodeExternalDNS, aws.ToString(inst.PublicDnsName))
	add(v1.NodeHostName, aws.ToString(inst.PrivateDnsName))
	return out
}

// deviceIndex orders interfaces: the primary one has index 0; interfaces
// without attachment data go last.
func deviceIndex(eni ec2types.InstanceNetworkInterface) int32 {
	if eni.Attachment == nil || eni.Attachment.DeviceIndex == nil {
		return math.MaxInt32
	}
	return *eni.Attachment.DeviceIndex
}
