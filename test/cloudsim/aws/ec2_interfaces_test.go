package aws_test

import (
	"errors"
	"io"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

// primaryENI is the ID of an instance's device-index-0 interface, as a
// node IPAM controller finds it: from DescribeInstances.
func primaryENI(t *testing.T, e *env, id string) string {
	t.Helper()
	insts := describeInstances(t, e, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	for _, ni := range insts[0].NetworkInterfaces {
		if ni.Attachment != nil && aws.ToInt32(ni.Attachment.DeviceIndex) == 0 {
			return aws.ToString(ni.NetworkInterfaceId)
		}
	}
	t.Fatalf("%s has no primary interface", id)
	return ""
}

// primaryInterface is the primary interface of an instance, from
// DescribeInstances.
func primaryInterface(t *testing.T, e *env, id string) ec2types.InstanceNetworkInterface {
	t.Helper()
	insts := describeInstances(t, e, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if len(insts) != 1 || len(insts[0].NetworkInterfaces) != 1 {
		t.Fatalf("%s: %+v", id, insts)
	}
	return insts[0].NetworkInterfaces[0]
}

// subnetIPv6 is a subnet's IPv6 /64 as DescribeSubnets reports it, or
// the zero Prefix.
func subnetIPv6(t *testing.T, e *env, id string) netip.Prefix {
	t.Helper()
	out := must[*ec2.DescribeSubnetsOutput](t)(e.ec2.DescribeSubnets(ctx(), &ec2.DescribeSubnetsInput{SubnetIds: []string{id}}))
	as := out.Subnets[0].Ipv6CidrBlockAssociationSet
	if len(as) == 0 {
		return netip.Prefix{}
	}
	if len(as) != 1 || as[0].Ipv6CidrBlockState == nil || as[0].Ipv6CidrBlockState.State != ec2types.SubnetCidrBlockStateCodeAssociated {
		t.Fatalf("subnet %s IPv6 associations %+v", id, as)
	}
	return netip.MustParsePrefix(aws.ToString(as[0].Ipv6CidrBlock))
}

// block80 is the /80 of a /64 whose 5th group is k.
func block80(p netip.Prefix, k uint16) string {
	b := p.Addr().As16()
	b[8], b[9] = byte(k>>8), byte(k)
	return netip.PrefixFrom(netip.AddrFrom16(b), 80).String()
}

func instPrefixes(ni ec2types.InstanceNetworkInterface) (v4, v6 []string) {
	for _, p := range ni.Ipv4Prefixes {
		v4 = append(v4, aws.ToString(p.Ipv4Prefix))
	}
	for _, p := range ni.Ipv6Prefixes {
		v6 = append(v6, aws.ToString(p.Ipv6Prefix))
	}
	return v4, v6
}

// rawBody POSTs a hand-written Query request and returns the body, for
// checks the SDK cannot make: it matches element names regardless of case.
func rawBody(t *testing.T, e *env, form string) string {
	t.Helper()
	resp, err := http.Post(e.srv.URL(), "application/x-www-form-urlencoded; charset=utf-8", strings.NewReader(form))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	return string(body)
}

// The fixture's VPC has an Amazon-provided /56 and every subnet a /64 of
// it, reported and filterable as EC2 does.
func TestFixtureIPv6Blocks(t *testing.T) {
	e := newEnv(t)
	vpcs := must[*ec2.DescribeVpcsOutput](t)(e.ec2.DescribeVpcs(ctx(), &ec2.DescribeVpcsInput{VpcIds: []string{e.fx.VPCID}})).Vpcs
	as := vpcs[0].Ipv6CidrBlockAssociationSet
	if len(as) != 1 || aws.ToString(as[0].Ipv6CidrBlock) != e.fx.VPCIPv6CIDR || as[0].Ipv6CidrBlockState.State != ec2types.VpcCidrBlockStateCodeAssociated ||
		aws.ToString(as[0].Ipv6Pool) != "Amazon" || aws.ToString(as[0].NetworkBorderGroup) != region {
		t.Fatalf("VPC IPv6 associations %+v", as)
	}
	vpcBlock := netip.MustParsePrefix(e.fx.VPCIPv6CIDR)
	if vpcBlock.Bits() != 56 {
		t.Fatalf("VPC block %s", vpcBlock)
	}
	seen := map[netip.Prefix]bool{}
	for _, id := range append(slices.Collect(maps.Values(e.fx.PrivateSubnets)), slices.Collect(maps.Values(e.fx.PublicSubnets))...) {
		b := subnetIPv6(t, e, id)
		if b.Bits() != 64 || !vpcBlock.Contains(b.Addr()) || seen[b] {
			t.Errorf("subnet %s IPv6 block %s", id, b)
		}
		seen[b] = true
	}
	priv := e.fx.PrivateSubnets[region+"a"]
	out := must[*ec2.DescribeSubnetsOutput](t)(e.ec2.DescribeSubnets(ctx(), &ec2.DescribeSubnetsInput{
		Filters: []ec2types.Filter{filter("ipv6-cidr-block-association.ipv6-cidr-block", subnetIPv6(t, e, priv).String())},
	}))
	if len(out.Subnets) != 1 || aws.ToString(out.Subnets[0].SubnetId) != priv {
		t.Fatalf("IPv6 block filter: %+v", out.Subnets)
	}
}

// AssignIpv6Addresses with Ipv6PrefixCount, as a node IPAM controller
// calls it for an instance without a prefix.
func TestAssignIPv6PrefixByCount(t *testing.T) {
	e := newEnv(t)
	ids := launch(t, e, cloudsimaws.LaunchSpec{Count: 2, Zone: region + "a"})
	block := subnetIPv6(t, e, e.fx.PrivateSubnets[region+"a"])
	eni := primaryENI(t, e, ids[0])
	if v4, v6 := instPrefixes(primaryInterface(t, e, ids[0])); len(v4)+len(v6) != 0 {
		t.Fatalf("fresh instance has prefixes %v %v", v4, v6)
	}

	out := must[*ec2.AssignIpv6AddressesOutput](t)(e.ec2.AssignIpv6Addresses(ctx(), &ec2.AssignIpv6AddressesInput{
		NetworkInterfaceId: aws.String(eni), Ipv6PrefixCount: aws.Int32(1),
	}))
	if aws.ToString(out.NetworkInterfaceId) != eni || len(out.AssignedIpv6Prefixes) != 1 || len(out.AssignedIpv6Addresses) != 0 {
		t.Fatalf("assign: %+v", out)
	}
	first := netip.MustParsePrefix(out.AssignedIpv6Prefixes[0])
	if first.Bits() != 80 || !block.Contains(first.Addr()) || first != first.Masked() {
		t.Fatalf("prefix %s not a /80 of %s", first, block)
	}

	// More by count, and addresses alongside: all distinct, none inside
	// a delegated prefix.
	out = must[*ec2.AssignIpv6AddressesOutput](t)(e.ec2.AssignIpv6Addresses(ctx(), &ec2.AssignIpv6AddressesInput{
		NetworkInterfaceId: aws.String(eni), Ipv6PrefixCount: aws.Int32(2), Ipv6AddressCount: aws.Int32(2),
	}))
	if len(out.AssignedIpv6Prefixes) != 2 || len(out.AssignedIpv6Addresses) != 2 {
		t.Fatalf("second assign: %+v", out)
	}
	all := append([]string{first.String()}, out.AssignedIpv6Prefixes...)
	other := primaryENI(t, e, ids[1])
	third := must[*ec2.AssignIpv6AddressesOutput](t)(e.ec2.AssignIpv6Addresses(ctx(), &ec2.AssignIpv6AddressesInput{
		NetworkInterfaceId: aws.String(other), Ipv6PrefixCount: aws.Int32(1),
	}))
	all = append(all, third.AssignedIpv6Prefixes...)
	for i, a := range all {
		pa := netip.MustParsePrefix(a)
		for _, b := range all[i+1:] {
			if pa.Overlaps(netip.MustParsePrefix(b)) {
				t.Errorf("%s and %s overlap", a, b)
			}
		}
		for _, addr := range out.AssignedIpv6Addresses {
			if pa.Contains(netip.MustParseAddr(addr)) || !block.Contains(netip.MustParseAddr(addr)) {
				t.Errorf("address %s is in prefix %s or outside %s", addr, a, block)
			}
		}
	}

	// DescribeInstances lists them in assignment order, with the addresses.
	ni := primaryInterface(t, e, ids[0])
	if _, v6 := instPrefixes(ni); !slices.Equal(v6, all[:3]) {
		t.Errorf("ipv6PrefixSet %v, want %v", v6, all[:3])
	}
	var addrs []string
	for _, a := range ni.Ipv6Addresses {
		addrs = append(addrs, aws.ToString(a.Ipv6Address))
	}
	if !slices.Equal(addrs, out.AssignedIpv6Addresses) {
		t.Errorf("ipv6AddressesSet %v, want %v", addrs, out.AssignedIpv6Addresses)
	}
	info, _ := e.emu.Instance(ids[0])
	if !slices.Equal(info.PodRanges, all[:3]) || info.NetworkInterfaceID != eni {
		t.Errorf("admin info %+v", info)
	}
}

// AssignIpv6Addresses with Ipv6Prefix.N takes exactly those /80s, which
// must be free /80s of the subnet's /64; UnassignIpv6Addresses gives
// them back.
func TestAssignIPv6PrefixExplicit(t *testing.T) {
	e := newEnv(t)
	ids := launch(t, e, cloudsimaws.LaunchSpec{Count: 2, Zone: region + "b"})
	block := subnetIPv6(t, e, e.fx.PrivateSubnets[region+"b"])
	a, b := primaryENI(t, e, ids[0]), primaryENI(t, e, ids[1])
	want := block80(block, 0x42)
	assign := func(eni string, in ec2.AssignIpv6AddressesInput) (*ec2.AssignIpv6AddressesOutput, error) {
		in.NetworkInterfaceId = aws.String(eni)
		return e.ec2.AssignIpv6Addresses(ctx(), &in)
	}
	out, err := assign(a, ec2.AssignIpv6AddressesInput{Ipv6Prefixes: []string{want}})
	ok(t, err)
	if !slices.Equal(out.AssignedIpv6Prefixes, []string{want}) {
		t.Fatalf("assigned %v, want %s", out.AssignedIpv6Prefixes, want)
	}
	// A prefix picked by count steers clear of one taken by name.
	counted, err := assign(b, ec2.AssignIpv6AddressesInput{Ipv6PrefixCount: aws.Int32(1)})
	ok(t, err)
	if counted.AssignedIpv6Prefixes[0] == want {
		t.Fatalf("count picked the taken %s", want)
	}

	outside := block80(netip.MustParsePrefix("2001:db8:ffff:ff00::/64"), 1)
	for name, tc := range map[string]struct {
		in   ec2.AssignIpv6AddressesInput
		code string
	}{
		"taken by another interface": {ec2.AssignIpv6AddressesInput{Ipv6Prefixes: []string{want}}, "InvalidParameterValue"},
		"outside the subnet's /64":   {ec2.AssignIpv6AddressesInput{Ipv6Prefixes: []string{outside}}, "InvalidParameterValue"},
		"not a /80":                  {ec2.AssignIpv6AddressesInput{Ipv6Prefixes: []string{block.String()}}, "InvalidParameterValue"},
		"host bits":                  {ec2.AssignIpv6AddressesInput{Ipv6Prefixes: []string{strings.Replace(block80(block, 7), "::/80", "::1/80", 1)}}, "InvalidParameterValue"},
		"holds reserved addresses":   {ec2.AssignIpv6AddressesInput{Ipv6Prefixes: []string{block80(block, 0)}}, "InvalidParameterValue"},
		"IPv4":                       {ec2.AssignIpv6AddressesInput{Ipv6Prefixes: []string{"10.0.0.0/28"}}, "InvalidParameterValue"},
		"count and list":             {ec2.AssignIpv6AddressesInput{Ipv6PrefixCount: aws.Int32(1), Ipv6Prefixes: []string{block80(block, 9)}}, "InvalidParameterCombination"},
		"address count and list":     {ec2.AssignIpv6AddressesInput{Ipv6AddressCount: aws.Int32(1), Ipv6Addresses: []string{"2001:db8::5"}}, "InvalidParameterCombination"},
		"nothing asked":              {ec2.AssignIpv6AddressesInput{}, "MissingParameter"},
		"zero count":                 {ec2.AssignIpv6AddressesInput{Ipv6PrefixCount: aws.Int32(0)}, "InvalidParameterValue"},
		"twice in one request":       {ec2.AssignIpv6AddressesInput{Ipv6Prefixes: []string{block80(block, 9), block80(block, 9)}}, "InvalidParameterValue"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := assign(b, tc.in)
			wantCode(t, err, tc.code)
		})
	}
	// A refused request takes nothing: the /80 named with a bad one is free.
	_, err = assign(b, ec2.AssignIpv6AddressesInput{Ipv6Prefixes: []string{block80(block, 9), outside}})
	wantCode(t, err, "InvalidParameterValue")
	if _, v6 := instPrefixes(primaryInterface(t, e, ids[1])); !slices.Equal(v6, counted.AssignedIpv6Prefixes) {
		t.Fatalf("after a refused request b holds %v", v6)
	}

	// Unassigning gives the prefix back for anyone to take.
	_, err = e.ec2.UnassignIpv6Addresses(ctx(), &ec2.UnassignIpv6AddressesInput{NetworkInterfaceId: aws.String(b), Ipv6Prefixes: []string{want}})
	wantCode(t, err, "InvalidParameterValue")
	un := must[*ec2.UnassignIpv6AddressesOutput](t)(e.ec2.UnassignIpv6Addresses(ctx(), &ec2.UnassignIpv6AddressesInput{
		NetworkInterfaceId: aws.String(a), Ipv6Prefixes: []string{want},
	}))
	if aws.ToString(un.NetworkInterfaceId) != a || !slices.Equal(un.UnassignedIpv6Prefixes, []string{want}) {
		t.Fatalf("unassign: %+v", un)
	}
	if _, v6 := instPrefixes(primaryInterface(t, e, ids[0])); len(v6) != 0 {
		t.Fatalf("after unassign a holds %v", v6)
	}
	out, err = assign(b, ec2.AssignIpv6AddressesInput{Ipv6Prefixes: []string{want}})
	ok(t, err)
	if _, v6 := instPrefixes(primaryInterface(t, e, ids[1])); !slices.Equal(v6, []string{counted.AssignedIpv6Prefixes[0], want}) {
		t.Fatalf("b holds %v", v6)
	}
}

// A subnet without an IPv6 block has nothing to delegate: EC2 refuses
// with InvalidParameterValue, and so does the admin launch.
func TestAssignIPv6RefusedWithoutIPv6Block(t *testing.T) {
	e := newEnv(t)
	sub := must[string](t)(e.emu.CreateSubnet(cloudsimaws.SubnetSpec{VPCID: e.fx.VPCID, Zone: region + "a", CIDR: "10.0.200.0/24"}))
	if b := subnetIPv6(t, e, sub); b.IsValid() {
		t.Fatalf("IPv4-only subnet has %s", b)
	}
	id := launch(t, e, cloudsimaws.LaunchSpec{SubnetID: sub})[0]
	eni := primaryENI(t, e, id)
	for _, in := range []*ec2.AssignIpv6AddressesInput{
		{NetworkInterfaceId: aws.String(eni), Ipv6PrefixCount: aws.Int32(1)},
		{NetworkInterfaceId: aws.String(eni), Ipv6AddressCount: aws.Int32(1)},
	} {
		_, err := e.ec2.AssignIpv6Addresses(ctx(), in)
		wantCode(t, err, "InvalidParameterValue")
	}
	if ni := primaryInterface(t, e, id); len(ni.Ipv6Prefixes)+len(ni.Ipv6Addresses) != 0 {
		t.Fatalf("refused requests left %+v", ni)
	}

	// IPv4 prefixes need no IPv6 block.
	must[*ec2.AssignPrivateIpAddressesOutput](t)(e.ec2.AssignPrivateIpAddresses(ctx(), &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(eni), Ipv4PrefixCount: aws.Int32(1),
	}))

	before := len(e.emu.Instances())
	_, err := e.emu.Launch(cloudsimaws.LaunchSpec{SubnetID: sub, PodRanges: []string{"/80"}})
	if !errors.Is(err, cloudsim.ErrInvalidRequest) || !strings.Contains(err.Error(), "no IPv6 CIDR block") {
		t.Fatalf("launch with /80 in an IPv4-only subnet: %v", err)
	}
	if n := len(e.emu.Instances()); n != before {
		t.Fatalf("refused launch left %d instances, want %d", n, before)
	}

	// Such subnets can only be in VPCs with a block; a block of another
	// VPC's, or a size other than /64, is refused as CreateSubnet does.
	if _, err := e.emu.CreateSubnet(cloudsimaws.SubnetSpec{VPCID: e.fx.VPCID, Zone: region + "a", CIDR: "10.0.201.0/24",
		IPv6CIDR: "2001:db8:ffff:ff00::/64"}); err == nil || !strings.Contains(err.Error(), "InvalidSubnet.Range") {
		t.Errorf("foreign IPv6 block: %v", err)
	}
	if _, err := e.emu.CreateSubnet(cloudsimaws.SubnetSpec{VPCID: e.fx.VPCID, Zone: region + "a", CIDR: "10.0.201.0/24",
		IPv6CIDR: subnetIPv6(t, e, e.fx.PublicSubnets[region+"a"]).String()}); err == nil || !strings.Contains(err.Error(), "InvalidSubnet.Conflict") {
		t.Errorf("IPv6 block of another subnet: %v", err)
	}
	vpcBlock := netip.MustParsePrefix(e.fx.VPCIPv6CIDR).Addr().As16()
	vpcBlock[7] = 0xfe
	free := netip.PrefixFrom(netip.AddrFrom16(vpcBlock), 64).String()
	dual := must[string](t)(e.emu.CreateSubnet(cloudsimaws.SubnetSpec{VPCID: e.fx.VPCID, Zone: region + "a", CIDR: "10.0.201.0/24", IPv6CIDR: free}))
	if got := subnetIPv6(t, e, dual).String(); got != free {
		t.Errorf("dual-stack subnet block %s, want %s", got, free)
	}
	// An admin-made VPC gets a block only when asked.
	vpc := must[string](t)(e.emu.CreateVPC("172.31.0.0/16", nil))
	if _, err := e.emu.CreateSubnet(cloudsimaws.SubnetSpec{VPCID: vpc, Zone: region + "a", CIDR: "172.31.0.0/24", IPv6CIDR: free}); err == nil {
		t.Error("IPv6 subnet in a VPC without IPv6 accepted")
	}
	var assoc struct {
		IPv6CIDR string `json:"ipv6Cidr"`
	}
	if st := admin(t, e, "POST", "/admin/aws/vpcs/ipv6", `{"vpcId": "`+vpc+`"}`, &assoc); st != http.StatusOK {
		t.Fatalf("associate over HTTP: %d", st)
	}
	if p := netip.MustParsePrefix(assoc.IPv6CIDR); p.Bits() != 56 || p.Overlaps(netip.MustParsePrefix(e.fx.VPCIPv6CIDR)) {
		t.Fatalf("second VPC block %s", p)
	}
	if _, err := e.emu.AssociateVPCIPv6CIDR(vpc); err == nil {
		t.Error("second IPv6 block for one VPC accepted")
	}
}

func TestUnknownInterface(t *testing.T) {
	e := newEnv(t)
	const unknown = "eni-00000000000000bad"
	_, err := e.ec2.AssignIpv6Addresses(ctx(), &ec2.AssignIpv6AddressesInput{NetworkInterfaceId: aws.String(unknown), Ipv6PrefixCount: aws.Int32(1)})
	wantCode(t, err, "InvalidNetworkInterfaceID.NotFound")
	_, err = e.ec2.AssignIpv6Addresses(ctx(), &ec2.AssignIpv6AddressesInput{NetworkInterfaceId: aws.String("eni-nope"), Ipv6PrefixCount: aws.Int32(1)})
	wantCode(t, err, "InvalidNetworkInterfaceID.Malformed")
	_, err = e.ec2.UnassignIpv6Addresses(ctx(), &ec2.UnassignIpv6AddressesInput{NetworkInterfaceId: aws.String(unknown), Ipv6Prefixes: []string{"2001:db8::/80"}})
	wantCode(t, err, "InvalidNetworkInterfaceID.NotFound")
	_, err = e.ec2.AssignPrivateIpAddresses(ctx(), &ec2.AssignPrivateIpAddressesInput{NetworkInterfaceId: aws.String(unknown), Ipv4PrefixCount: aws.Int32(1)})
	wantCode(t, err, "InvalidNetworkInterfaceID.NotFound")
	_, err = e.ec2.DescribeNetworkInterfaces(ctx(), &ec2.DescribeNetworkInterfacesInput{NetworkInterfaceIds: []string{unknown}})
	wantCode(t, err, "InvalidNetworkInterfaceID.NotFound")
	if code := rawCode(t, e, "Action=AssignIpv6Addresses&Version=2016-11-15&Ipv6PrefixCount=1"); code != "MissingParameter" {
		t.Errorf("no NetworkInterfaceId: %q", code)
	}
}

// The prefixes reach a client through the real SDK from both calls, and
// the XML carries EC2's element names exactly (the SDK itself matches
// them regardless of case, so it cannot tell).
func TestDescribeDelegatedPrefixes(t *testing.T) {
	e := newEnv(t)
	id := launch(t, e, cloudsimaws.LaunchSpec{Zone: region + "c", PodRanges: []string{"/80", "/28"}})[0]
	info, _ := e.emu.Instance(id)
	if len(info.PodRanges) != 2 {
		t.Fatalf("pod ranges %v", info.PodRanges)
	}
	v4, v6 := netip.MustParsePrefix(info.PodRanges[0]), netip.MustParsePrefix(info.PodRanges[1])
	if !v4.Addr().Is4() || v4.Bits() != 28 || !subnetCIDR(t, e, info.SubnetID).Contains(v4.Addr()) ||
		!v6.Addr().Is6() || v6.Bits() != 80 || !subnetIPv6(t, e, info.SubnetID).Contains(v6.Addr()) {
		t.Fatalf("pod ranges %v (IPv4 first) not of subnet %s", info.PodRanges, info.SubnetID)
	}
	if v4.Contains(netip.MustParseAddr(info.PrivateIP)) {
		t.Fatalf("prefix %s holds the instance's own address %s", v4, info.PrivateIP)
	}

	ni := primaryInterface(t, e, id)
	gotV4, gotV6 := instPrefixes(ni)
	if !slices.Equal(gotV4, info.PodRanges[:1]) || !slices.Equal(gotV6, info.PodRanges[1:]) || aws.ToString(ni.NetworkInterfaceId) != info.NetworkInterfaceID {
		t.Fatalf("DescribeInstances: %v %v, interface %s", gotV4, gotV6, aws.ToString(ni.NetworkInterfaceId))
	}

	byID := must[*ec2.DescribeNetworkInterfacesOutput](t)(e.ec2.DescribeNetworkInterfaces(ctx(), &ec2.DescribeNetworkInterfacesInput{
		NetworkInterfaceIds: []string{info.NetworkInterfaceID},
	})).NetworkInterfaces
	byInstance := must[*ec2.DescribeNetworkInterfacesOutput](t)(e.ec2.DescribeNetworkInterfaces(ctx(), &ec2.DescribeNetworkInterfacesInput{
		Filters: []ec2types.Filter{filter("attachment.instance-id", id), filter("attachment.device-index", "0")},
	})).NetworkInterfaces
	for name, list := range map[string][]ec2types.NetworkInterface{"by ID": byID, "by instance": byInstance} {
		if len(list) != 1 {
			t.Fatalf("%s: %d interfaces", name, len(list))
		}
		n := list[0]
		if len(n.Ipv4Prefixes) != 1 || aws.ToString(n.Ipv4Prefixes[0].Ipv4Prefix) != info.PodRanges[0] ||
			len(n.Ipv6Prefixes) != 1 || aws.ToString(n.Ipv6Prefixes[0].Ipv6Prefix) != info.PodRanges[1] {
			t.Errorf("%s: prefixes %+v %+v", name, n.Ipv4Prefixes, n.Ipv6Prefixes)
		}
		if n.Attachment == nil || aws.ToString(n.Attachment.InstanceId) != id || aws.ToInt32(n.Attachment.DeviceIndex) != 0 ||
			n.Status != ec2types.NetworkInterfaceStatusInUse || aws.ToString(n.SubnetId) != info.SubnetID ||
			aws.ToString(n.PrivateIpAddress) != info.PrivateIP || aws.ToString(n.AvailabilityZone) != region+"c" {
			t.Errorf("%s: interface %+v", name, n)
		}
	}

	// Other interfaces are not described; the filters pick.
	launch(t, e, cloudsimaws.LaunchSpec{Zone: region + "a"})
	all := must[*ec2.DescribeNetworkInterfacesOutput](t)(e.ec2.DescribeNetworkInterfaces(ctx(), &ec2.DescribeNetworkInterfacesInput{})).NetworkInterfaces
	inC := must[*ec2.DescribeNetworkInterfacesOutput](t)(e.ec2.DescribeNetworkInterfaces(ctx(), &ec2.DescribeNetworkInterfacesInput{
		Filters: []ec2types.Filter{filter("subnet-id", info.SubnetID)},
	})).NetworkInterfaces
	if len(all) != 2 || len(inC) != 1 {
		t.Fatalf("%d interfaces in all, %d in %s", len(all), len(inC), info.SubnetID)
	}
	_, err := e.ec2.DescribeNetworkInterfaces(ctx(), &ec2.DescribeNetworkInterfacesInput{Filters: []ec2types.Filter{filter("no-such-filter", "x")}})
	wantCode(t, err, "InvalidParameterValue")

	// Tags on interfaces, as CreateTags puts them.
	must[*ec2.CreateTagsOutput](t)(e.ec2.CreateTags(ctx(), &ec2.CreateTagsInput{
		Resources: []string{info.NetworkInterfaceID}, Tags: []ec2types.Tag{{Key: aws.String("role"), Value: aws.String("pods")}},
	}))
	tagged := must[*ec2.DescribeNetworkInterfacesOutput](t)(e.ec2.DescribeNetworkInterfaces(ctx(), &ec2.DescribeNetworkInterfacesInput{
		Filters: []ec2types.Filter{filter("tag:role", "pods")},
	})).NetworkInterfaces
	if len(tagged) != 1 || aws.ToString(tagged[0].NetworkInterfaceId) != info.NetworkInterfaceID {
		t.Fatalf("tag filter: %+v", tagged)
	}

	const version = "&Version=2016-11-15"
	body := rawBody(t, e, "Action=DescribeInstances"+version+"&InstanceId.1="+id)
	for _, want := range []string{
		"<ipv4PrefixSet><item><ipv4Prefix>" + info.PodRanges[0] + "</ipv4Prefix></item></ipv4PrefixSet>",
		"<ipv6PrefixSet><item><ipv6Prefix>" + info.PodRanges[1] + "</ipv6Prefix></item></ipv6PrefixSet>",
		"<deviceIndex>0</deviceIndex>",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("DescribeInstances lacks %s", want)
		}
	}
	body = rawBody(t, e, "Action=DescribeNetworkInterfaces"+version+"&NetworkInterfaceId.1="+info.NetworkInterfaceID)
	for _, want := range []string{
		"<networkInterfaceSet><item><networkInterfaceId>" + info.NetworkInterfaceID + "</networkInterfaceId>",
		"<ipv4PrefixSet><item><ipv4Prefix>" + info.PodRanges[0] + "</ipv4Prefix></item></ipv4PrefixSet>",
		"<ipv6PrefixSet><item><ipv6Prefix>" + info.PodRanges[1] + "</ipv6Prefix></item></ipv6PrefixSet>",
		"<instanceId>" + id + "</instanceId>",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("DescribeNetworkInterfaces lacks %s", want)
		}
	}
	body = rawBody(t, e, "Action=AssignIpv6Addresses"+version+"&NetworkInterfaceId="+info.NetworkInterfaceID+"&Ipv6PrefixCount=1&Ipv6AddressCount=1")
	for _, want := range []string{"<networkInterfaceId>", "<assignedIpv6PrefixSet><item>", "<assignedIpv6Addresses><item>"} {
		if !strings.Contains(body, want) {
			t.Errorf("AssignIpv6Addresses lacks %s: %s", want, body)
		}
	}
	body = rawBody(t, e, "Action=AssignPrivateIpAddresses"+version+"&NetworkInterfaceId="+info.NetworkInterfaceID+"&Ipv4PrefixCount=1")
	if !strings.Contains(body, "<assignedIpv4PrefixSet><item><ipv4Prefix>") {
		t.Errorf("AssignPrivateIpAddresses: %s", body)
	}
	body = rawBody(t, e, "Action=DescribeSubnets"+version+"&SubnetId.1="+info.SubnetID)
	if !strings.Contains(body, "<ipv6CidrBlockAssociationSet><item><associationId>subnet-cidr-assoc-") ||
		!strings.Contains(body, "<ipv6CidrBlockState><state>associated</state></ipv6CidrBlockState>") {
		t.Errorf("DescribeSubnets: %s", body)
	}
}

// IPv4 /28s come from the subnet's range, clear of every address in use,
// and later instances' addresses stay clear of them.
func TestAssignIPv4Prefixes(t *testing.T) {
	e := newEnv(t)
	sub := e.fx.PrivateSubnets[region+"a"]
	cidr := subnetCIDR(t, e, sub)
	first := launch(t, e, cloudsimaws.LaunchSpec{Count: 3, Zone: region + "a"})
	eni := primaryENI(t, e, first[0])
	available := func() int32 {
		out := must[*ec2.DescribeSubnetsOutput](t)(e.ec2.DescribeSubnets(ctx(), &ec2.DescribeSubnetsInput{SubnetIds: []string{sub}}))
		return aws.ToInt32(out.Subnets[0].AvailableIpAddressCount)
	}
	before := available()

	out := must[*ec2.AssignPrivateIpAddressesOutput](t)(e.ec2.AssignPrivateIpAddresses(ctx(), &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(eni), Ipv4PrefixCount: aws.Int32(2),
	}))
	if aws.ToString(out.NetworkInterfaceId) != eni || len(out.AssignedIpv4Prefixes) != 2 {
		t.Fatalf("assign: %+v", out)
	}
	var prefixes []netip.Prefix
	for _, p := range out.AssignedIpv4Prefixes {
		prefixes = append(prefixes, netip.MustParsePrefix(aws.ToString(p.Ipv4Prefix)))
	}
	if got := available(); got != before-32 {
		t.Errorf("available addresses %d, want %d", got, before-32)
	}
	// Enough instances to walk past both prefixes: none gets an address
	// inside one.
	more := launch(t, e, cloudsimaws.LaunchSpec{Count: 40, Zone: region + "a"})
	for _, id := range slices.Concat(first, more) {
		info, _ := e.emu.Instance(id)
		ip := netip.MustParseAddr(info.PrivateIP)
		for _, p := range prefixes {
			if p.Bits() != 28 || !cidr.Contains(p.Addr()) || p.Contains(ip) {
				t.Fatalf("prefix %s: instance %s has %s", p, id, ip)
			}
		}
	}
	// Nor may a load balancer be pinned inside one.
	_, err := e.elb.CreateLoadBalancer(ctx(), privateNLB(e, "pinned", map[string]string{region + "a": prefixes[0].Addr().Next().String()}))
	wantCode(t, err, "InvalidConfigurationRequest")

	second := primaryENI(t, e, more[0])
	secondInfo, _ := e.emu.Instance(more[0])
	last, _ := e.emu.Instance(more[len(more)-1])
	addrBlock := netip.PrefixFrom(netip.MustParseAddr(last.PrivateIP), 28).Masked().String()
	for name, tc := range map[string]struct {
		in   ec2.AssignPrivateIpAddressesInput
		code string
	}{
		"taken":                    {ec2.AssignPrivateIpAddressesInput{Ipv4Prefixes: []string{prefixes[0].String()}}, "InvalidParameterValue"},
		"holds an instance's":      {ec2.AssignPrivateIpAddressesInput{Ipv4Prefixes: []string{addrBlock}}, "InvalidParameterValue"},
		"holds reserved addresses": {ec2.AssignPrivateIpAddressesInput{Ipv4Prefixes: []string{cidr.Addr().String() + "/28"}}, "InvalidParameterValue"},
		"outside the subnet":       {ec2.AssignPrivateIpAddressesInput{Ipv4Prefixes: []string{"10.0.250.0/28"}}, "InvalidParameterValue"},
		"not a /28":                {ec2.AssignPrivateIpAddressesInput{Ipv4Prefixes: []string{"10.0.10.0/27"}}, "InvalidParameterValue"},
		"count and list":           {ec2.AssignPrivateIpAddressesInput{Ipv4PrefixCount: aws.Int32(1), Ipv4Prefixes: []string{"10.0.10.0/28"}}, "InvalidParameterCombination"},
		"nothing asked":            {ec2.AssignPrivateIpAddressesInput{}, "MissingParameter"},
		"secondary addresses":      {ec2.AssignPrivateIpAddressesInput{SecondaryPrivateIpAddressCount: aws.Int32(1)}, "UnsupportedOperation"},
	} {
		t.Run(name, func(t *testing.T) {
			tc.in.NetworkInterfaceId = aws.String(second)
			_, err := e.ec2.AssignPrivateIpAddresses(ctx(), &tc.in)
			wantCode(t, err, tc.code)
		})
	}
	explicit := must[*ec2.AssignPrivateIpAddressesOutput](t)(e.ec2.AssignPrivateIpAddresses(ctx(), &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(second), Ipv4Prefixes: []string{"10.0.10.0/28"},
	}))
	if len(explicit.AssignedIpv4Prefixes) != 1 || aws.ToString(explicit.AssignedIpv4Prefixes[0].Ipv4Prefix) != "10.0.10.0/28" {
		t.Fatalf("explicit: %+v", explicit.AssignedIpv4Prefixes)
	}

	// Unassigning frees a prefix for another interface.
	_, err = e.ec2.UnassignPrivateIpAddresses(ctx(), &ec2.UnassignPrivateIpAddressesInput{NetworkInterfaceId: aws.String(second), Ipv4Prefixes: []string{prefixes[0].String()}})
	wantCode(t, err, "InvalidParameterValue")
	_, err = e.ec2.UnassignPrivateIpAddresses(ctx(), &ec2.UnassignPrivateIpAddressesInput{NetworkInterfaceId: aws.String(second), PrivateIpAddresses: []string{secondInfo.PrivateIP}})
	wantCode(t, err, "InvalidParameterValue")
	must[*ec2.UnassignPrivateIpAddressesOutput](t)(e.ec2.UnassignPrivateIpAddresses(ctx(), &ec2.UnassignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(eni), Ipv4Prefixes: []string{prefixes[0].String()},
	}))
	if v4, _ := instPrefixes(primaryInterface(t, e, first[0])); !slices.Equal(v4, []string{prefixes[1].String()}) {
		t.Fatalf("after unassign: %v", v4)
	}
	must[*ec2.AssignPrivateIpAddressesOutput](t)(e.ec2.AssignPrivateIpAddresses(ctx(), &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(second), Ipv4Prefixes: []string{prefixes[0].String()},
	}))

	// A /26 has two /28s free of reserved addresses; the third is refused
	// with EC2's error for a subnet out of contiguous blocks.
	small := must[string](t)(e.emu.CreateSubnet(cloudsimaws.SubnetSpec{VPCID: e.fx.VPCID, Zone: region + "a", CIDR: "10.0.202.0/26"}))
	smallENI := primaryENI(t, e, launch(t, e, cloudsimaws.LaunchSpec{SubnetID: small})[0])
	_, err = e.ec2.AssignPrivateIpAddresses(ctx(), &ec2.AssignPrivateIpAddressesInput{NetworkInterfaceId: aws.String(smallENI), Ipv4PrefixCount: aws.Int32(3)})
	wantCode(t, err, "InsufficientCidrBlocks")
	got := must[*ec2.AssignPrivateIpAddressesOutput](t)(e.ec2.AssignPrivateIpAddresses(ctx(), &ec2.AssignPrivateIpAddressesInput{
		NetworkInterfaceId: aws.String(smallENI), Ipv4PrefixCount: aws.Int32(2),
	}))
	if len(got.AssignedIpv4Prefixes) != 2 || aws.ToString(got.AssignedIpv4Prefixes[0].Ipv4Prefix) != "10.0.202.16/28" ||
		aws.ToString(got.AssignedIpv4Prefixes[1].Ipv4Prefix) != "10.0.202.32/28" {
		t.Fatalf("small subnet: %+v", got.AssignedIpv4Prefixes)
	}
}

// The neutral admin API maps InstanceSpec.PodRanges to delegated
// prefixes and reports them back, IPv4 first.
func TestLaunchWithPodRanges(t *testing.T) {
	e := newEnv(t)
	c := cloudsim.NewAdminClient(e.srv.URL())
	info, err := c.LaunchInstance(t.Context(), cloudsim.InstanceSpec{Zone: region + "a", PodRanges: []string{"/80", "/28"}})
	ok(t, err)
	if len(info.PodRanges) != 2 || !netip.MustParsePrefix(info.PodRanges[0]).Addr().Is4() || netip.MustParsePrefix(info.PodRanges[1]).Bits() != 80 {
		t.Fatalf("pod ranges %v", info.PodRanges)
	}
	v4, v6 := instPrefixes(primaryInterface(t, e, info.ID))
	if !slices.Equal(slices.Concat(v4, v6), info.PodRanges) {
		t.Fatalf("EC2 reports %v %v, admin %v", v4, v6, info.PodRanges)
	}

	block := subnetIPv6(t, e, e.fx.PrivateSubnets[region+"b"])
	want := []string{"10.0.32.64/28", block80(block, 0xabcd)}
	named, err := c.LaunchInstance(t.Context(), cloudsim.InstanceSpec{Zone: region + "b", PodRanges: []string{want[1], want[0]}})
	ok(t, err)
	if !slices.Equal(named.PodRanges, want) {
		t.Fatalf("named pod ranges %v, want %v", named.PodRanges, want)
	}
	got, err := c.GetInstance(t.Context(), named.ID)
	ok(t, err)
	if !slices.Equal(got.PodRanges, want) {
		t.Fatalf("GET reports %v", got.PodRanges)
	}

	count := len(e.emu.Instances())
	for _, bad := range [][]string{
		{"/24"}, {"/64"}, {"/"}, {"10.0.0.0/24"}, {"2001:db8::/64"}, {"bogus"}, {"10.0.40.1/28"},
		{want[0]},                               // taken
		{"/28", "10.0.48.0/28", "10.0.48.0/28"}, // twice
		{"10.0.0.64/28"},                        // zone a's: outside zone b's subnet, the one picked
	} {
		_, err := c.LaunchInstance(t.Context(), cloudsim.InstanceSpec{Zone: region + "b", PodRanges: bad})
		if !errors.Is(err, cloudsim.ErrInvalidRequest) {
			t.Errorf("pod ranges %q: %v", bad, err)
		}
	}
	if n := len(e.emu.Instances()); n != count {
		t.Fatalf("refused launches left %d instances, want %d", n, count)
	}
	// Named prefixes cannot go to several instances; sizes can.
	if _, err := e.emu.Launch(cloudsimaws.LaunchSpec{Count: 2, PodRanges: []string{"10.0.0.64/28"}}); !errors.Is(err, cloudsim.ErrInvalidRequest) {
		t.Errorf("named prefix for two instances: %v", err)
	}
	ids := launch(t, e, cloudsimaws.LaunchSpec{Count: 3, PodRanges: []string{"/80"}})
	seen := map[string]bool{}
	for _, id := range ids {
		i, _ := e.emu.Instance(id)
		if len(i.PodRanges) != 1 || seen[i.PodRanges[0]] {
			t.Fatalf("instance %s pod ranges %v", id, i.PodRanges)
		}
		seen[i.PodRanges[0]] = true
	}
}

// Terminating an instance deletes its interface, releasing the prefixes
// for others; stopping keeps them, as on EC2.
func TestPodRangesReleasedOnTerminate(t *testing.T) {
	e := newEnv(t)
	block := subnetIPv6(t, e, e.fx.PrivateSubnets[region+"a"])
	ranges := []string{"10.0.3.0/28", block80(block, 0x77)}
	id := launch(t, e, cloudsimaws.LaunchSpec{Zone: region + "a", PodRanges: ranges})[0]
	info, _ := e.emu.Instance(id)
	eni := info.NetworkInterfaceID

	ok(t, e.emu.Stop(id))
	ok(t, e.emu.Start(id))
	if i, _ := e.emu.Instance(id); !slices.Equal(i.PodRanges, ranges) {
		t.Fatalf("after stop/start: %v", i.PodRanges)
	}
	if _, err := e.emu.Launch(cloudsimaws.LaunchSpec{Zone: region + "a", PodRanges: ranges[:1]}); err == nil {
		t.Fatal("held prefix given to a second instance")
	}

	ok(t, e.emu.Terminate(id))
	if i, _ := e.emu.Instance(id); len(i.PodRanges) != 0 || i.NetworkInterfaceID != "" {
		t.Fatalf("terminated instance %+v", i)
	}
	_, err := e.ec2.DescribeNetworkInterfaces(ctx(), &ec2.DescribeNetworkInterfacesInput{NetworkInterfaceIds: []string{eni}})
	wantCode(t, err, "InvalidNetworkInterfaceID.NotFound")
	_, err = e.ec2.AssignIpv6Addresses(ctx(), &ec2.AssignIpv6AddressesInput{NetworkInterfaceId: aws.String(eni), Ipv6PrefixCount: aws.Int32(1)})
	wantCode(t, err, "InvalidNetworkInterfaceID.NotFound")

	again := launch(t, e, cloudsimaws.LaunchSpec{Zone: region + "a", PodRanges: ranges})[0]
	if i, _ := e.emu.Instance(again); !slices.Equal(i.PodRanges, ranges) {
		t.Fatalf("released prefixes not reusable: %v", i.PodRanges)
	}
	// Via the API too.
	other := primaryENI(t, e, launch(t, e, cloudsimaws.LaunchSpec{Zone: region + "a"})[0])
	ok(t, e.emu.Terminate(again))
	must[*ec2.AssignIpv6AddressesOutput](t)(e.ec2.AssignIpv6Addresses(ctx(), &ec2.AssignIpv6AddressesInput{
		NetworkInterfaceId: aws.String(other), Ipv6Prefixes: ranges[1:],
	}))
}

// The new actions are counted, classified and faulted like every other.
func TestInterfaceCallsCountedAndFaulted(t *testing.T) {
	e := newEnv(t)
	eni := primaryENI(t, e, launch(t, e, cloudsimaws.LaunchSpec{})[0])
	for op, mutating := range map[string]bool{
		"ec2:AssignIpv6Addresses": true, "ec2:UnassignIpv6Addresses": true,
		"ec2:AssignPrivateIpAddresses": true, "ec2:UnassignPrivateIpAddresses": true,
		"ec2:DescribeNetworkInterfaces": false,
	} {
		if e.emu.Mutating(op) != mutating {
			t.Errorf("%s mutating = %v", op, !mutating)
		}
	}
	assign := &ec2.AssignIpv6AddressesInput{NetworkInterfaceId: aws.String(eni), Ipv6PrefixCount: aws.Int32(1)}
	setFault(t, e, cloudsim.FaultSpec{Op: "ec2:AssignIpv6Addresses", FailNext: 1})
	_, err := e.ec2.AssignIpv6Addresses(ctx(), assign)
	wantCode(t, err, "InternalError")
	setFault(t, e, cloudsim.FaultSpec{Op: cloudsim.MutatingOps, ThrottleNext: 1})
	_, err = e.ec2.AssignPrivateIpAddresses(ctx(), &ec2.AssignPrivateIpAddressesInput{NetworkInterfaceId: aws.String(eni), Ipv4PrefixCount: aws.Int32(1)})
	wantCode(t, err, "RequestLimitExceeded")
	if v4, v6 := instPrefixes(primaryInterface(t, e, e.emu.Instances()[0].ID)); len(v4)+len(v6) != 0 {
		t.Fatalf("faulted calls assigned %v %v", v4, v6)
	}
	must[*ec2.AssignIpv6AddressesOutput](t)(e.ec2.AssignIpv6Addresses(ctx(), assign))
	must[*ec2.DescribeNetworkInterfacesOutput](t)(e.ec2.DescribeNetworkInterfaces(ctx(), &ec2.DescribeNetworkInterfacesInput{}))
	for op, want := range map[string]int{
		"ec2:AssignIpv6Addresses": 2, "ec2:AssignPrivateIpAddresses": 1, "ec2:DescribeNetworkInterfaces": 1,
	} {
		if n := e.srv.CallCount(op); n != want {
			t.Errorf("%s counted %d times, want %d", op, n, want)
		}
	}
}
