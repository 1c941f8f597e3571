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
// rely on: family by family in the order of families (nodeIPFamilies;
// upstream getInstanceNodeAddress, aws.go:865-886). ipv4 is every private
// IPv4 (primary interface first, primary address first; see internalIPs),
// the public IP, the private and public DNS names, and the private DNS
// name as hostname (aws.go:750-812); ipv6 is the first IPv6 address of
// each in-use interface as an InternalIP, "even if publicly routable"
// (aws.go:814-842).
func nodeAddresses(i *instance, families []string) []v1.NodeAddress {
	var out []v1.NodeAddress
	add := func(t v1.NodeAddressType, a string) {
		if a != "" {
			out = append(out, v1.NodeAddress{Type: t, Address: a})
		}
	}
	for _, f := range families {
		switch f {
		case familyIPv4:
			for _, ip := range i.internalIPs {
				add(v1.NodeInternalIP, ip)
			}
			add(v1.NodeExternalIP, i.publicIP)
			add(v1.NodeInternalDNS, i.privateDNS)
			add(v1.NodeExternalDNS, i.publicDNS)
			add(v1.NodeHostName, i.privateDNS)
		case familyIPv6:
			for _, ip := range i.ipv6s {
				add(v1.NodeInternalIP, ip)
			}
		}
	}
	return out
}

// interfaceIPv6s are the first IPv6 address of each in-use interface, by
// device index (upstream: "return only the first address for each ENI",
// aws.go:832-833). Upstream keeps DescribeInstances' interface order when
// ipv6 is listed before ipv4 (its sort runs in the ipv4 block); here the
// order is the device index's either way, which is the same for the
// usual single interface and stable for several.
func interfaceIPv6s(inst *ec2types.Instance) []string {
	enis := slices.Clone(inst.NetworkInterfaces)
	slices.SortStableFunc(enis, func(a, b ec2types.InstanceNetworkInterface) int {
		return int(deviceIndex(a)) - int(deviceIndex(b))
	})
	var out []string
	for _, eni := range enis {
		if eni.Status != ec2types.NetworkInterfaceStatusInUse || len(eni.Ipv6Addresses) == 0 {
			continue
		}
		if a := aws.ToString(eni.Ipv6Addresses[0].Ipv6Address); a != "" {
			out = append(out, a)
		}
	}
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
