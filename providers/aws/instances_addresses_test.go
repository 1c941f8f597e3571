package aws

import (
	"reflect"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestNodeAddresses(t *testing.T) {
	eni := func(index int32, primary string, secondary ...string) ec2types.InstanceNetworkInterface {
		n := ec2types.InstanceNetworkInterface{
			Attachment:       &ec2types.InstanceNetworkInterfaceAttachment{DeviceIndex: aws.Int32(index)},
			PrivateIpAddress: aws.String(primary),
		}
		// EC2 does not promise the primary address comes first.
		for _, ip := range secondary {
			n.PrivateIpAddresses = append(n.PrivateIpAddresses, ec2types.InstancePrivateIpAddress{PrivateIpAddress: aws.String(ip), Primary: aws.Bool(false)})
		}
		n.PrivateIpAddresses = append(n.PrivateIpAddresses, ec2types.InstancePrivateIpAddress{PrivateIpAddress: aws.String(primary), Primary: aws.Bool(true)})
		return n
	}
	tests := []struct {
		name string
		inst ec2types.Instance
		want []v1.NodeAddress
	}{{
		name: "two interfaces, public",
		inst: ec2types.Instance{
			PrivateIpAddress: aws.String("10.0.0.5"),
			PrivateDnsName:   aws.String("ip-10-0-0-5.eu-west-1.compute.internal"),
			PublicIpAddress:  aws.String("54.1.2.3"),
			PublicDnsName:    aws.String("ec2-54-1-2-3.eu-west-1.compute.amazonaws.com"),
			// The secondary interface is listed first.
			NetworkInterfaces: []ec2types.InstanceNetworkInterface{eni(1, "10.0.1.9"), eni(0, "10.0.0.5", "10.0.0.6")},
		},
		want: []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: "10.0.0.5"},
			{Type: v1.NodeInternalIP, Address: "10.0.0.6"},
			{Type: v1.NodeInternalIP, Address: "10.0.1.9"},
			{Type: v1.NodeExternalIP, Address: "54.1.2.3"},
			{Type: v1.NodeInternalDNS, Address: "ip-10-0-0-5.eu-west-1.compute.internal"},
			{Type: v1.NodeExternalDNS, Address: "ec2-54-1-2-3.eu-west-1.compute.amazonaws.com"},
			{Type: v1.NodeHostName, Address: "ip-10-0-0-5.eu-west-1.compute.internal"},
		},
	}, {
		name: "interface without attachment last, repeats once",
		inst: ec2types.Instance{
			PrivateIpAddress: aws.String("10.0.0.5"),
			PrivateDnsName:   aws.String("ip-10-0-0-5.ec2.internal"),
			NetworkInterfaces: []ec2types.InstanceNetworkInterface{
				{PrivateIpAddress: aws.String("10.0.2.4")},
				eni(0, "10.0.0.5", "10.0.2.4"),
			},
		},
		want: []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: "10.0.0.5"},
			{Type: v1.NodeInternalIP, Address: "10.0.2.4"},
			{Type: v1.NodeInternalDNS, Address: "ip-10-0-0-5.ec2.internal"},
			{Type: v1.NodeHostName, Address: "ip-10-0-0-5.ec2.internal"},
		},
	}, {
		name: "nothing",
		inst: ec2types.Instance{},
	}, {
		name: "no interfaces listed, private only",
		inst: ec2types.Instance{
			PrivateIpAddress: aws.String("10.0.0.7"),
			PrivateDnsName:   aws.String("ip-10-0-0-7.ec2.internal"),
		},
		want: []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: "10.0.0.7"},
			{Type: v1.NodeInternalDNS, Address: "ip-10-0-0-7.ec2.internal"},
			{Type: v1.NodeHostName, Address: "ip-10-0-0-7.ec2.internal"},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Through the conversion the snapshot keeps, as in the backend.
			if got := nodeAddresses(compact(&tt.inst, ""), []string{familyIPv4}); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("nodeAddresses =\n%v\nwant\n%v", got, tt.want)
			}
		})
	}
}

func TestInstanceIDFromNodeName(t *testing.T) {
	for name, want := range map[string]string{
		"i-0123456789abcdef0":                            "i-0123456789abcdef0",
		"i-0123456789abcdef0.eu-west-1.compute.internal": "i-0123456789abcdef0",
		"i-0123456789abcdef0.ec2.internal":               "i-0123456789abcdef0",
		"ip-10-0-0-5.eu-west-1.compute.internal":         "",
		"i-0123456789abcdef0.example.com":                "",
		"node-1":                                         "",
	} {
		if got := instanceIDFromNodeName(name); got != want {
			t.Errorf("instanceIDFromNodeName(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestNodeAddressFamilies: nodeIPFamilies orders the families as
// upstream's NodeIPFamilies does: ipv4 brings the IPv4 addresses and
// every DNS name, ipv6 the first IPv6 address of each in-use interface
// (by device index) as an InternalIP.
func TestNodeAddressFamilies(t *testing.T) {
	eni := func(index int32, status ec2types.NetworkInterfaceStatus, v4 string, v6 ...string) ec2types.InstanceNetworkInterface {
		n := ec2types.InstanceNetworkInterface{
			Attachment:       &ec2types.InstanceNetworkInterfaceAttachment{DeviceIndex: aws.Int32(index)},
			Status:           status,
			PrivateIpAddress: aws.String(v4),
		}
		for _, a := range v6 {
			n.Ipv6Addresses = append(n.Ipv6Addresses, ec2types.InstanceIpv6Address{Ipv6Address: aws.String(a)})
		}
		return n
	}
	inst := compact(&ec2types.Instance{
		PrivateIpAddress: aws.String("10.0.0.5"),
		PrivateDnsName:   aws.String("ip-10-0-0-5.ec2.internal"),
		NetworkInterfaces: []ec2types.InstanceNetworkInterface{
			eni(2, ec2types.NetworkInterfaceStatusDetaching, "10.0.2.9", "2600:1f18::29"),
			eni(1, ec2types.NetworkInterfaceStatusInUse, "10.0.1.9", "2600:1f18::19"),
			eni(0, ec2types.NetworkInterfaceStatusInUse, "10.0.0.5", "2600:1f18::5", "2600:1f18::6"),
		},
	}, "")
	v4 := []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: "10.0.0.5"},
		{Type: v1.NodeInternalIP, Address: "10.0.1.9"},
		{Type: v1.NodeInternalIP, Address: "10.0.2.9"},
		{Type: v1.NodeInternalDNS, Address: "ip-10-0-0-5.ec2.internal"},
		{Type: v1.NodeHostName, Address: "ip-10-0-0-5.ec2.internal"},
	}
	v6 := []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: "2600:1f18::5"},
		{Type: v1.NodeInternalIP, Address: "2600:1f18::19"},
	}
	for _, tt := range []struct {
		families []string
		want     []v1.NodeAddress
	}{
		{[]string{familyIPv4}, v4},
		{[]string{familyIPv4, familyIPv6}, append(slices.Clone(v4), v6...)},
		{[]string{familyIPv6, familyIPv4}, append(slices.Clone(v6), v4...)},
		{[]string{familyIPv6}, v6},
	} {
		if got := nodeAddresses(inst, tt.families); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%v:\n got %v\nwant %v", tt.families, got, tt.want)
		}
	}
}

// TestNodeIPFamiliesConfig: default ipv4; an unknown or repeated family
// is an error at start naming its place (upstream ignores the one and
// doubles the other).
func TestNodeIPFamiliesConfig(t *testing.T) {
	s := &Section{Region: "eu-west-1"}
	s.SetDefaults()
	if !slices.Equal(s.NodeIPFamilies, []string{"ipv4"}) {
		t.Errorf("default %v, want [ipv4]", s.NodeIPFamilies)
	}
	s.NodeIPFamilies = []string{"ipv6", "ipv4"}
	if errs := s.Validate(field.NewPath("aws")); len(errs) != 0 {
		t.Errorf("[ipv6 ipv4]: %v", errs)
	}
	s.NodeIPFamilies = []string{"ipv4", "IPv6", "ipv4"}
	errs := s.Validate(field.NewPath("aws"))
	if len(errs) != 2 || errs[0].Field != "aws.nodeIPFamilies[1]" || errs[1].Field != "aws.nodeIPFamilies[2]" || errs[1].Type != field.ErrorTypeDuplicate {
		t.Errorf("[ipv4 IPv6 ipv4]: %v, want IPv6 unsupported and ipv4 repeated", errs)
	}
}
