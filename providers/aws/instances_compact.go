package aws

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// instance is what the backend keeps of an EC2 instance: only the fields
// its code reads, copied out of each DescribeInstances page
// (describeInstances), so that the page's SDK structs are garbage once it
// is read. The SDK's ec2types.Instance has some 60 fields, most of them
// pointers to further structs; kept in the snapshot at 5000 Nodes they
// were 31.8 MB of live heap, the largest single item, against a peak-RSS
// goal of 200 MB. This is a few strings each.
type instance struct {
	id         string
	privateDNS string
	publicDNS  string
	publicIP   string
	// internalIPs are the private IPv4 addresses in the order and without
	// the repeats nodeAddresses lists them (instances_addresses.go).
	internalIPs []string
	// ipv6s are the first IPv6 address of each in-use interface, by
	// device index (nodeAddresses' ipv6 family).
	ipv6s []string
	// state is EC2's state name; an instance described without one is
	// taken as running (compact).
	state        ec2types.InstanceStateName
	zone         string
	instanceType string
	vpc          string
	// securityGroups are the IDs of the instance's security groups in
	// EC2's order (the node rules fall back to the first), "" for one
	// described without its ID.
	securityGroups []string
	// clusterTagged says the instance has the cluster tag: the only tag
	// the backend reads (routes.go replaces only the cluster's routes).
	clusterTagged bool
	// sourceDestCheckOff says EC2 reports the source/destination check
	// disabled, so CreateRoute need not disable it (routes_ec2.go).
	sourceDestCheckOff bool
	// primary is the network interface at device index 0: what the pod
	// CIDRs are read from and assigned to (podcidrs.go).
	primary primaryENI
}

// primaryENI is what pod CIDRs need of an instance's primary interface.
type primaryENI struct {
	// found is false for an instance described without one.
	found bool
	id    string
	// ipv4Prefix and ipv6Prefix are its first delegated prefixes, masked,
	// "" where it has none.
	ipv4Prefix, ipv6Prefix string
}

// compact copies what the backend reads out of an SDK instance; it keeps
// no pointer into inst. clusterTag is the cluster tag's key.
func compact(inst *ec2types.Instance, clusterTag string) *instance {
	i := &instance{
		id:           aws.ToString(inst.InstanceId),
		privateDNS:   aws.ToString(inst.PrivateDnsName),
		publicDNS:    aws.ToString(inst.PublicDnsName),
		publicIP:     aws.ToString(inst.PublicIpAddress),
		internalIPs:  internalIPs(inst),
		ipv6s:        interfaceIPv6s(inst),
		instanceType: string(inst.InstanceType),
		vpc:          aws.ToString(inst.VpcId),
		// The load balancer code has always registered an instance
		// described without a state, and nothing else reads a missing
		// state as anything but "not terminated, not shut down".
		state:              ec2types.InstanceStateNameRunning,
		sourceDestCheckOff: inst.SourceDestCheck != nil && !*inst.SourceDestCheck,
	}
	if inst.State != nil {
		i.state = inst.State.Name
	}
	if inst.Placement != nil {
		i.zone = aws.ToString(inst.Placement.AvailabilityZone)
	}
	if len(inst.SecurityGroups) > 0 {
		i.securityGroups = make([]string, len(inst.SecurityGroups))
		for n, g := range inst.SecurityGroups {
			i.securityGroups[n] = aws.ToString(g.GroupId)
		}
	}
	for _, t := range inst.Tags {
		if aws.ToString(t.Key) == clusterTag {
			i.clusterTagged = true
			break
		}
	}
	if ni := primaryInterface(inst); ni != nil {
		v4, v6 := delegatedPrefixes(ni)
		i.primary = primaryENI{found: true, id: aws.ToString(ni.NetworkInterfaceId), ipv4Prefix: v4, ipv6Prefix: v6}
	}
	return i
}

// shutdown says the instance is stopped or stopping.
func (i *instance) shutdown() bool {
	switch i.state {
	case ec2types.InstanceStateNameStopped, ec2types.InstanceStateNameStopping:
		return true
	}
	return false
}
