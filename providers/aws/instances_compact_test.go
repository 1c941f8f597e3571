package aws

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

const compactTestCluster = "kubernetes.io/cluster/test"

// realisticInstance is an instance as DescribeInstances describes a
// typical Node: one interface with a secondary address, an IPv4 and an
// IPv6 prefix, a public address, two security groups and a handful of
// tags. Its strings are allocated one by one, as the SDK's decoder
// does.
func realisticInstance(n int) ec2types.Instance {
	// str is a string of its own, as the decoder makes each one.
	str := func(s string) *string { return aws.String(strings.Clone(s)) }
	id := fmt.Sprintf("i-0%016x", n)
	ip := fmt.Sprintf("10.0.%d.%d", n/250, n%250+4)
	dns := fmt.Sprintf("ip-10-0-%d-%d.eu-west-1.compute.internal", n/250, n%250+4)
	public := fmt.Sprintf("54.1.%d.%d", n/250, n%250+4)
	publicDNS := fmt.Sprintf("ec2-54-1-%d-%d.eu-west-1.compute.amazonaws.com", n/250, n%250+4)
	eni := fmt.Sprintf("eni-0%016x", n)
	groups := func() []ec2types.GroupIdentifier {
		return []ec2types.GroupIdentifier{
			{GroupId: str("sg-0000000000000nodes"), GroupName: str("nodes.test")},
			{GroupId: str("sg-00000000000shared"), GroupName: str("shared.test")},
		}
	}
	launched := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return ec2types.Instance{
		AmiLaunchIndex:   aws.Int32(0),
		ImageId:          str("ami-0123456789abcdef0"),
		InstanceId:       aws.String(id),
		InstanceType:     ec2types.InstanceTypeM5Large,
		KeyName:          str("nodes-key"),
		LaunchTime:       &launched,
		Monitoring:       &ec2types.Monitoring{State: ec2types.MonitoringStateDisabled},
		Placement:        &ec2types.Placement{AvailabilityZone: str("eu-west-1b"), GroupName: aws.String(""), Tenancy: ec2types.TenancyDefault},
		PrivateDnsName:   aws.String(dns),
		PrivateIpAddress: aws.String(ip),
		PublicDnsName:    aws.String(publicDNS),
		PublicIpAddress:  aws.String(public),
		State:            &ec2types.InstanceState{Code: aws.Int32(16), Name: ec2types.InstanceStateNameRunning},
		SubnetId:         str("subnet-0123456789abcdef0"),
		VpcId:            str("vpc-0123456789abcdef0"),
		Architecture:     ec2types.ArchitectureValuesX8664,
		BlockDeviceMappings: []ec2types.InstanceBlockDeviceMapping{{
			DeviceName: str("/dev/xvda"),
			Ebs: &ec2types.EbsInstanceBlockDevice{
				AttachTime: &launched, DeleteOnTermination: aws.Bool(true),
				Status: ec2types.AttachmentStatusAttached, VolumeId: aws.String(fmt.Sprintf("vol-0%016x", n)),
			},
		}},
		ClientToken:  aws.String(fmt.Sprintf("fleet-%08x-%04x", n, n)),
		EbsOptimized: aws.Bool(true),
		EnaSupport:   aws.Bool(true),
		Hypervisor:   ec2types.HypervisorTypeXen,
		IamInstanceProfile: &ec2types.IamInstanceProfile{
			Arn: str("arn:aws:iam::123456789012:instance-profile/nodes.test"),
			Id:  str("AIPAEXAMPLEPROFILEID"),
		},
		NetworkInterfaces: []ec2types.InstanceNetworkInterface{{
			Association: &ec2types.InstanceNetworkInterfaceAssociation{IpOwnerId: str("amazon"), PublicDnsName: aws.String(publicDNS), PublicIp: aws.String(public)},
			Attachment: &ec2types.InstanceNetworkInterfaceAttachment{
				AttachTime: &launched, AttachmentId: aws.String(fmt.Sprintf("eni-attach-0%016x", n)), DeleteOnTermination: aws.Bool(true),
				DeviceIndex: aws.Int32(0), Status: ec2types.AttachmentStatusAttached, NetworkCardIndex: aws.Int32(0),
			},
			Description:        aws.String(""),
			Groups:             groups(),
			InterfaceType:      str("interface"),
			Ipv4Prefixes:       []ec2types.InstanceIpv4Prefix{{Ipv4Prefix: aws.String(fmt.Sprintf("10.0.%d.16/28", 128+n%100))}},
			Ipv6Prefixes:       []ec2types.InstanceIpv6Prefix{{Ipv6Prefix: aws.String(fmt.Sprintf("2a05:d018:0:%x:1::/80", n))}},
			MacAddress:         aws.String(fmt.Sprintf("06:00:00:%02x:%02x:%02x", n>>16&0xff, n>>8&0xff, n&0xff)),
			NetworkInterfaceId: aws.String(eni),
			OwnerId:            str("123456789012"),
			PrivateDnsName:     aws.String(dns),
			PrivateIpAddress:   aws.String(ip),
			PrivateIpAddresses: []ec2types.InstancePrivateIpAddress{
				{Association: &ec2types.InstanceNetworkInterfaceAssociation{IpOwnerId: str("amazon"), PublicDnsName: aws.String(publicDNS), PublicIp: aws.String(public)},
					Primary: aws.Bool(true), PrivateDnsName: aws.String(dns), PrivateIpAddress: aws.String(ip)},
				{Primary: aws.Bool(false), PrivateDnsName: aws.String(dns + "x"), PrivateIpAddress: aws.String(ip + "0")},
			},
			SourceDestCheck: aws.Bool(true),
			Status:          ec2types.NetworkInterfaceStatusInUse,
			SubnetId:        str("subnet-0123456789abcdef0"),
			VpcId:           str("vpc-0123456789abcdef0"),
		}},
		RootDeviceName:  str("/dev/xvda"),
		RootDeviceType:  ec2types.DeviceTypeEbs,
		SecurityGroups:  groups(),
		SourceDestCheck: aws.Bool(true),
		Tags: []ec2types.Tag{
			{Key: str("Name"), Value: str("nodes.test")},
			{Key: str(compactTestCluster), Value: str("owned")},
			{Key: str("aws:autoscaling:groupName"), Value: str("nodes-eu-west-1b.test")},
			{Key: str("aws:ec2launchtemplate:id"), Value: str("lt-0123456789abcdef0")},
			{Key: str("aws:ec2launchtemplate:version"), Value: str("3")},
			{Key: str("k8s.io/role/node"), Value: str("1")},
			{Key: str("kops.k8s.io/instancegroup"), Value: str("nodes-eu-west-1b")},
		},
		VirtualizationType:               ec2types.VirtualizationTypeHvm,
		CpuOptions:                       &ec2types.CpuOptions{CoreCount: aws.Int32(1), ThreadsPerCore: aws.Int32(2)},
		CapacityReservationSpecification: &ec2types.CapacityReservationSpecificationResponse{CapacityReservationPreference: ec2types.CapacityReservationPreferenceOpen},
		HibernationOptions:               &ec2types.HibernationOptions{Configured: aws.Bool(false)},
		MetadataOptions: &ec2types.InstanceMetadataOptionsResponse{
			State: ec2types.InstanceMetadataOptionsStateApplied, HttpTokens: ec2types.HttpTokensStateRequired,
			HttpPutResponseHopLimit: aws.Int32(1), HttpEndpoint: ec2types.InstanceMetadataEndpointStateEnabled,
		},
		EnclaveOptions:           &ec2types.EnclaveOptions{Enabled: aws.Bool(false)},
		PlatformDetails:          str("Linux/UNIX"),
		UsageOperation:           str("RunInstances"),
		UsageOperationUpdateTime: &launched,
		PrivateDnsNameOptions:    &ec2types.PrivateDnsNameOptionsResponse{HostnameType: ec2types.HostnameTypeIpName},
		MaintenanceOptions:       &ec2types.InstanceMaintenanceOptions{AutoRecovery: ec2types.InstanceAutoRecoveryStateDefault},
		CurrentInstanceBootMode:  ec2types.InstanceBootModeValuesLegacyBios,
	}
}

// TestCompact checks every field the backend keeps of an instance.
func TestCompact(t *testing.T) {
	off := realisticInstance(1)
	off.SourceDestCheck = aws.Bool(false)
	off.Tags = off.Tags[:1]
	off.State = &ec2types.InstanceState{Name: ec2types.InstanceStateNameStopping}
	tests := []struct {
		name string
		inst ec2types.Instance
		want *instance
	}{{
		name: "typical",
		inst: realisticInstance(1),
		want: &instance{
			id:             "i-00000000000000001",
			privateDNS:     "ip-10-0-0-5.eu-west-1.compute.internal",
			publicDNS:      "ec2-54-1-0-5.eu-west-1.compute.amazonaws.com",
			publicIP:       "54.1.0.5",
			internalIPs:    []string{"10.0.0.5", "10.0.0.50"},
			state:          ec2types.InstanceStateNameRunning,
			zone:           "eu-west-1b",
			instanceType:   "m5.large",
			vpc:            "vpc-0123456789abcdef0",
			securityGroups: []string{"sg-0000000000000nodes", "sg-00000000000shared"},
			clusterTagged:  true,
			primary:        primaryENI{found: true, id: "eni-00000000000000001", ipv4Prefix: "10.0.129.16/28", ipv6Prefix: "2a05:d018:0:1:1::/80"},
		},
	}, {
		name: "check off, another cluster's, stopping",
		inst: off,
		want: &instance{
			id:                 "i-00000000000000001",
			privateDNS:         "ip-10-0-0-5.eu-west-1.compute.internal",
			publicDNS:          "ec2-54-1-0-5.eu-west-1.compute.amazonaws.com",
			publicIP:           "54.1.0.5",
			internalIPs:        []string{"10.0.0.5", "10.0.0.50"},
			state:              ec2types.InstanceStateNameStopping,
			zone:               "eu-west-1b",
			instanceType:       "m5.large",
			vpc:                "vpc-0123456789abcdef0",
			securityGroups:     []string{"sg-0000000000000nodes", "sg-00000000000shared"},
			sourceDestCheckOff: true,
			primary:            primaryENI{found: true, id: "eni-00000000000000001", ipv4Prefix: "10.0.129.16/28", ipv6Prefix: "2a05:d018:0:1:1::/80"},
		},
	}, {
		// A missing state reads as running, as the load balancer code
		// always took it; a group without an ID keeps its place.
		name: "sparse",
		inst: ec2types.Instance{
			InstanceId:     aws.String("i-0abc"),
			SecurityGroups: []ec2types.GroupIdentifier{{GroupName: aws.String("no-id")}, {GroupId: aws.String("sg-1")}},
			// Attached without a device index is the primary interface
			// to primaryInterface; its prefixes are masked, unparsable
			// ones skipped.
			NetworkInterfaces: []ec2types.InstanceNetworkInterface{{
				Attachment:   &ec2types.InstanceNetworkInterfaceAttachment{},
				Ipv4Prefixes: []ec2types.InstanceIpv4Prefix{{Ipv4Prefix: aws.String("bad")}, {Ipv4Prefix: aws.String("10.1.0.17/28")}},
			}},
		},
		want: &instance{
			id:             "i-0abc",
			state:          ec2types.InstanceStateNameRunning,
			securityGroups: []string{"", "sg-1"},
			primary:        primaryENI{found: true, ipv4Prefix: "10.1.0.16/28"},
		},
	}, {
		name: "no primary interface",
		inst: ec2types.Instance{
			InstanceId:       aws.String("i-0abc"),
			State:            &ec2types.InstanceState{Name: ec2types.InstanceStateNameTerminated},
			PrivateIpAddress: aws.String("10.0.0.9"),
			NetworkInterfaces: []ec2types.InstanceNetworkInterface{{
				Attachment:       &ec2types.InstanceNetworkInterfaceAttachment{DeviceIndex: aws.Int32(1)},
				PrivateIpAddress: aws.String("10.0.1.9"),
			}},
		},
		want: &instance{
			id:          "i-0abc",
			state:       ec2types.InstanceStateNameTerminated,
			internalIPs: []string{"10.0.1.9", "10.0.0.9"},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := compact(&tt.inst, compactTestCluster); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("compact =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// TestCompactSize measures what the snapshot keeps per instance, SDK
// struct against compact one, as live heap after a GC (-v prints both),
// and holds the compact one to a quarter of the other: a size, not a
// timing.
func TestCompactSize(t *testing.T) {
	const n = 2000
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	sdk := make([]*ec2types.Instance, n)
	for i := range sdk {
		inst := realisticInstance(i)
		sdk[i] = &inst
	}
	withSDK := heap()
	kept := make([]*instance, n)
	for i, inst := range sdk {
		kept[i] = compact(inst, compactTestCluster)
	}
	sdk = nil
	withCompact := heap()
	perSDK := (int64(withSDK) - int64(before)) / n
	perCompact := (int64(withCompact) - int64(before)) / n
	t.Logf("Live heap per instance: SDK struct %d bytes, compact %d bytes (struct %d bytes)", perSDK, perCompact, unsafe.Sizeof(instance{}))
	runtime.KeepAlive(kept)
	// The reason for the type: the snapshot at 5000 Nodes must not keep
	// the SDK's structs (about 4.4 KB each against 0.6 KB). A quarter
	// leaves room for the heap measurement's noise.
	if perCompact*4 > perSDK {
		t.Errorf("a compact instance keeps %d bytes, more than a quarter of the SDK struct's %d", perCompact, perSDK)
	}
}
