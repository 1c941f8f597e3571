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
// first; see internalIPs), the public IP, the private and public DNS
// names, and the private DNS name as hostname.
func nodeAddresses(i *instance) []v1.NodeAddress {
	var out []v1.NodeAddress
	for _, ip := range i.internalIPs {
		out = append(out, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	}
	add := func(t v1.NodeAddressType, a string) {
		if a != "" {
			out = append(out, v1.NodeAddress{Type: t, Address: a})
		}
	}
	add(v1.NodeExternalIP, i.publicIP)
	add(v1.NodeInternalDNS, i.privateDNS)
	add(v1.NodeExternalDNS, i.publicDNS)
	add(v1.NodeHostName, i.privateDNS)
	return out
}

// internalIPs are the instance's private IPv4 addresses in nodeAddresses'
// order, each once: interfaces by device index, and within each its
// primary address, then the others, then the address EC2 gives for the
// interface itself (interfaces described without their address list
// still have one); last the instance's own private IP. Worked out once
// when the instance is read (compact).
func internalIPs(inst *ec2types.Instance) []string {
	var out []string
	seen := map[string]bool{}
	add := func(a string) {
		if a == "" || seen[a] {
			return
		}
		seen[a] = true
		out = append(out, a)
	}
	enis := slices.Clone(inst.NetworkInterfaces)
	slices.SortStableFunc(enis, func(a, b ec2types.InstanceNetworkInterface) int {
		return int(deviceIndex(a)) - int(deviceIndex(b))
	})
	for _, eni := range enis {
		for _, ip := range eni.PrivateIpAddresses {
			if aws.ToBool(ip.Primary) {
				add(aws.ToString(ip.PrivateIpAddress))
			}
		}
		for _, ip := range eni.PrivateIpAddresses {
			add(aws.ToString(ip.PrivateIpAddress))
		}
		add(aws.ToString(eni.PrivateIpAddress))
	}
	add(aws.ToString(inst.PrivateIpAddress))
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
