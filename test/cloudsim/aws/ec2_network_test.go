package aws_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

func TestDescribeAvailabilityZones(t *testing.T) {
	e := newEnv(t)
	out := must[*ec2.DescribeAvailabilityZonesOutput](t)(e.ec2.DescribeAvailabilityZones(ctx(), &ec2.DescribeAvailabilityZonesInput{}))
	var got []string
	for _, z := range out.AvailabilityZones {
		got = append(got, fmt.Sprintf("%s/%s/%s/%s", aws.ToString(z.ZoneName), aws.ToString(z.ZoneId), aws.ToString(z.RegionName), z.State))
	}
	want := "[eu-west-1a/euw1-az1/eu-west-1/available eu-west-1b/euw1-az2/eu-west-1/available eu-west-1c/euw1-az3/eu-west-1/available]"
	if fmt.Sprint(got) != want {
		t.Fatalf("got %v", got)
	}
	out = must[*ec2.DescribeAvailabilityZonesOutput](t)(e.ec2.DescribeAvailabilityZones(ctx(), &ec2.DescribeAvailabilityZonesInput{
		Filters: []ec2types.Filter{filter("zone-id", "euw1-az2")},
	}))
	if len(out.AvailabilityZones) != 1 || aws.ToString(out.AvailabilityZones[0].ZoneName) != "eu-west-1b" {
		t.Fatalf("zone-id filter: %+v", out.AvailabilityZones)
	}
	_, err := e.ec2.DescribeAvailabilityZones(ctx(), &ec2.DescribeAvailabilityZonesInput{ZoneNames: []string{"eu-west-1z"}})
	wantCode(t, err, "InvalidParameterValue")
}

func TestDescribeVpcs(t *testing.T) {
	e := newEnv(t)
	out := must[*ec2.DescribeVpcsOutput](t)(e.ec2.DescribeVpcs(ctx(), &ec2.DescribeVpcsInput{VpcIds: []string{e.fx.VPCID}}))
	if len(out.Vpcs) != 1 || aws.ToString(out.Vpcs[0].CidrBlock) != "10.0.0.0/16" || out.Vpcs[0].State != "available" {
		t.Fatalf("vpcs: %+v", out.Vpcs)
	}
	other := must[string](t)(e.emu.CreateVPC("172.16.0.0/16", map[string]string{"env": "other"}))
	out = must[*ec2.DescribeVpcsOutput](t)(e.ec2.DescribeVpcs(ctx(), &ec2.DescribeVpcsInput{
		Filters: []ec2types.Filter{filter("tag:env", "other")},
	}))
	if len(out.Vpcs) != 1 || aws.ToString(out.Vpcs[0].VpcId) != other {
		t.Fatalf("tag filter: %+v", out.Vpcs)
	}
	_, err := e.ec2.DescribeVpcs(ctx(), &ec2.DescribeVpcsInput{VpcIds: []string{"vpc-00000000000000999"}})
	wantCode(t, err, "InvalidVpcID.NotFound")
}

func TestDescribeSubnets(t *testing.T) {
	e := newEnv(t)
	describe := func(in *ec2.DescribeSubnetsInput) []string {
		t.Helper()
		var ids []string
		p := ec2.NewDescribeSubnetsPaginator(e.ec2, in)
		for p.HasMorePages() {
			out := must[*ec2.DescribeSubnetsOutput](t)(p.NextPage(ctx()))
			for _, s := range out.Subnets {
				ids = append(ids, aws.ToString(s.SubnetId))
			}
		}
		slices.Sort(ids)
		return ids
	}
	sorted := func(ids ...string) []string { slices.Sort(ids); return ids }
	pub, priv := e.fx.PublicSubnets, e.fx.PrivateSubnets
	allIDs := sorted(pub[region+"a"], pub[region+"b"], pub[region+"c"], priv[region+"a"], priv[region+"b"], priv[region+"c"])

	for _, tc := range []struct {
		name string
		in   *ec2.DescribeSubnetsInput
		want []string
	}{
		{"all", &ec2.DescribeSubnetsInput{}, allIDs},
		{"paginated", &ec2.DescribeSubnetsInput{MaxResults: aws.Int32(5)}, allIDs},
		{"ids", &ec2.DescribeSubnetsInput{SubnetIds: []string{pub[region+"a"]}}, []string{pub[region+"a"]}},
		{"vpc-id", &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("vpc-id", e.fx.VPCID)}}, allIDs},
		{"subnet-id", &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("subnet-id", priv[region+"c"])}}, []string{priv[region+"c"]}},
		{"elb role", &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{filter("tag:kubernetes.io/role/elb", "1")}},
			sorted(pub[region+"a"], pub[region+"b"], pub[region+"c"])},
		{"cluster tag-key + az", &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{
			filter("tag-key", "kubernetes.io/cluster/test"), filter("availability-zone", region+"b")}},
			sorted(pub[region+"b"], priv[region+"b"])},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := describe(tc.in); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}

	out := must[*ec2.DescribeSubnetsOutput](t)(e.ec2.DescribeSubnets(ctx(), &ec2.DescribeSubnetsInput{SubnetIds: []string{pub[region+"a"]}}))
	s := out.Subnets[0]
	if aws.ToString(s.AvailabilityZone) != region+"a" || aws.ToString(s.AvailabilityZoneId) != "euw1-az1" ||
		aws.ToString(s.VpcId) != e.fx.VPCID || !aws.ToBool(s.MapPublicIpOnLaunch) || aws.ToString(s.CidrBlock) == "" {
		t.Fatalf("subnet %+v", s)
	}
	_, err := e.ec2.DescribeSubnets(ctx(), &ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-00000000000000999"}})
	wantCode(t, err, "InvalidSubnetID.NotFound")
}

func routesOf(t *testing.T, e *env, rtb string) map[string]ec2types.Route {
	t.Helper()
	out := must[*ec2.DescribeRouteTablesOutput](t)(e.ec2.DescribeRouteTables(ctx(), &ec2.DescribeRouteTablesInput{RouteTableIds: []string{rtb}}))
	routes := map[string]ec2types.Route{}
	for _, r := range out.RouteTables[0].Routes {
		dst := aws.ToString(r.DestinationCidrBlock)
		if dst == "" {
			dst = aws.ToString(r.DestinationIpv6CidrBlock)
		}
		routes[dst] = r
	}
	return routes
}

// IPv6 routes: DestinationIpv6CidrBlock, canonicalised and reported as
// destinationIpv6CidrBlock; an IPv6 CIDR in DestinationCidrBlock is EC2's
// "not a valid CIDR block" (kubernetes/kubernetes#78089); the VPC's IPv6
// block has its local route.
func TestIPv6Routes(t *testing.T) {
	e := newEnv(t)
	rtb := e.fx.RouteTableID
	if local := routesOf(t, e, rtb)[e.fx.VPCIPv6CIDR]; aws.ToString(local.GatewayId) != "local" || aws.ToString(local.DestinationCidrBlock) != "" {
		t.Fatalf("IPv6 local route %+v", local)
	}
	ids := launch(t, e, cloudsimaws.LaunchSpec{Count: 1})
	_, err := e.ec2.CreateRoute(ctx(), &ec2.CreateRouteInput{RouteTableId: aws.String(rtb), DestinationCidrBlock: aws.String("fd00:1234::300/120"), InstanceId: aws.String(ids[0])})
	if errorCode(err) != "InvalidParameterValue" || !strings.Contains(err.Error(), "Value (fd00:1234::300/120) for parameter destinationCidrBlock is invalid. This is not a valid CIDR block.") {
		t.Fatalf("IPv6 CIDR as DestinationCidrBlock: %v", err)
	}
	if _, err := e.ec2.CreateRoute(ctx(), &ec2.CreateRouteInput{RouteTableId: aws.String(rtb), DestinationIpv6CidrBlock: aws.String("10.1.0.0/16"), InstanceId: aws.String(ids[0])}); errorCode(err) != "InvalidParameterValue" {
		t.Fatalf("IPv4 CIDR as DestinationIpv6CidrBlock: %v", err)
	}
	if _, err := e.ec2.CreateRoute(ctx(), &ec2.CreateRouteInput{RouteTableId: aws.String(rtb), DestinationCidrBlock: aws.String("10.1.0.0/16"), DestinationIpv6CidrBlock: aws.String("fd00::/64"), InstanceId: aws.String(ids[0])}); errorCode(err) != "InvalidParameterCombination" {
		t.Fatalf("both destinations: %v", err)
	}
	must[*ec2.CreateRouteOutput](t)(e.ec2.CreateRoute(ctx(), &ec2.CreateRouteInput{RouteTableId: aws.String(rtb), DestinationIpv6CidrBlock: aws.String("fd00:1234:0::1/64"), InstanceId: aws.String(ids[0])}))
	r, found := routesOf(t, e, rtb)["fd00:1234::/64"]
	if !found || aws.ToString(r.InstanceId) != ids[0] || r.State != "active" {
		t.Fatalf("IPv6 route %+v (found %v)", r, found)
	}
	if _, err := e.ec2.CreateRoute(ctx(), &ec2.CreateRouteInput{RouteTableId: aws.String(rtb), DestinationIpv6CidrBlock: aws.String("fd00:1234::/64"), InstanceId: aws.String(ids[0])}); errorCode(err) != "RouteAlreadyExists" {
		t.Fatalf("duplicate IPv6 route: %v", err)
	}
	out := must[*ec2.DescribeRouteTablesOutput](t)(e.ec2.DescribeRouteTables(ctx(), &ec2.DescribeRouteTablesInput{Filters: []ec2types.Filter{filter("route.destination-ipv6-cidr-block", "fd00:1234::/64")}}))
	if len(out.RouteTables) != 1 {
		t.Fatalf("route.destination-ipv6-cidr-block filter: %d tables", len(out.RouteTables))
	}
	must[*ec2.DeleteRouteOutput](t)(e.ec2.DeleteRoute(ctx(), &ec2.DeleteRouteInput{RouteTableId: aws.String(rtb), DestinationIpv6CidrBlock: aws.String("fd00:1234::/64")}))
	if _, found := routesOf(t, e, rtb)["fd00:1234::/64"]; found {
		t.Fatal("IPv6 route left after DeleteRoute")
	}
}

func TestRouteTablesAndRoutes(t *testing.T) {
	e := newEnv(t)
	rtb := e.fx.RouteTableID

	out := must[*ec2.DescribeRouteTablesOutput](t)(e.ec2.DescribeRouteTables(ctx(), &ec2.DescribeRouteTablesInput{
		Filters: []ec2types.Filter{filter("vpc-id", e.fx.VPCID), filter("tag-key", "kubernetes.io/cluster/test")},
	}))
	if len(out.RouteTables) != 1 || aws.ToString(out.RouteTables[0].RouteTableId) != rtb {
		t.Fatalf("route tables %+v", out.RouteTables)
	}
	if a := out.RouteTables[0].Associations; len(a) != 1 || !aws.ToBool(a[0].Main) {
		t.Fatalf("associations %+v", a)
	}
	for _, f := range []ec2types.Filter{filter("route-table-id", rtb), filter("tag:kubernetes.io/cluster/test", "owned")} {
		out := must[*ec2.DescribeRouteTablesOutput](t)(e.ec2.DescribeRouteTables(ctx(), &ec2.DescribeRouteTablesInput{Filters: []ec2types.Filter{f}}))
		if len(out.RouteTables) != 1 {
			t.Fatalf("filter %s: %d tables", aws.ToString(f.Name), len(out.RouteTables))
		}
	}
	if local := routesOf(t, e, rtb)["10.0.0.0/16"]; aws.ToString(local.GatewayId) != "local" || local.State != "active" {
		t.Fatalf("local route %+v", local)
	}

	ids := launch(t, e, cloudsimaws.LaunchSpec{Count: 2})
	must[*ec2.CreateRouteOutput](t)(e.ec2.CreateRoute(ctx(), &ec2.CreateRouteInput{
		RouteTableId: aws.String(rtb), DestinationCidrBlock: aws.String("100.96.1.0/24"), InstanceId: aws.String(ids[0]),
	}))
	r := routesOf(t, e, rtb)["100.96.1.0/24"]
	if aws.ToString(r.InstanceId) != ids[0] || r.State != "active" || aws.ToString(r.NetworkInterfaceId) == "" || r.Origin != "CreateRoute" {
		t.Fatalf("route %+v", r)
	}

	_, err := e.ec2.CreateRoute(ctx(), &ec2.CreateRouteInput{
		RouteTableId: aws.String(rtb), DestinationCidrBlock: aws.String("100.96.1.0/24"), InstanceId: aws.String(ids[1]),
	})
	wantCode(t, err, "RouteAlreadyExists")
	_, err = e.ec2.CreateRoute(ctx(), &ec2.CreateRouteInput{
		RouteTableId: aws.String("rtb-00000000000000999"), DestinationCidrBlock: aws.String("100.96.2.0/24"), InstanceId: aws.String(ids[1]),
	})
	wantCode(t, err, "InvalidRouteTableID.NotFound")
	_, err = e.ec2.CreateRoute(ctx(), &ec2.CreateRouteInput{
		RouteTableId: aws.String(rtb), DestinationCidrBlock: aws.String("100.96.2.0/24"), InstanceId: aws.String("i-0123456789abcdef0"),
	})
	wantCode(t, err, "InvalidInstanceID.NotFound")
	_, err = e.ec2.CreateRoute(ctx(), &ec2.CreateRouteInput{
		RouteTableId: aws.String(rtb), DestinationCidrBlock: aws.String("not-a-cidr"), InstanceId: aws.String(ids[1]),
	})
	wantCode(t, err, "InvalidParameterValue")

	// A terminated instance's route turns into a blackhole.
	ok(t, e.emu.Terminate(ids[0]))
	if r := routesOf(t, e, rtb)["100.96.1.0/24"]; r.State != "blackhole" {
		t.Fatalf("route to terminated instance is %s", r.State)
	}
	out = must[*ec2.DescribeRouteTablesOutput](t)(e.ec2.DescribeRouteTables(ctx(), &ec2.DescribeRouteTablesInput{
		Filters: []ec2types.Filter{filter("route.state", "blackhole")},
	}))
	if len(out.RouteTables) != 1 {
		t.Fatal("route.state filter found no table")
	}

	must[*ec2.DeleteRouteOutput](t)(e.ec2.DeleteRoute(ctx(), &ec2.DeleteRouteInput{
		RouteTableId: aws.String(rtb), DestinationCidrBlock: aws.String("100.96.1.0/24"),
	}))
	if _, ok := routesOf(t, e, rtb)["100.96.1.0/24"]; ok {
		t.Fatal("route not deleted")
	}
	_, err = e.ec2.DeleteRoute(ctx(), &ec2.DeleteRouteInput{RouteTableId: aws.String(rtb), DestinationCidrBlock: aws.String("100.96.1.0/24")})
	wantCode(t, err, "InvalidRoute.NotFound")
	_, err = e.ec2.DeleteRoute(ctx(), &ec2.DeleteRouteInput{RouteTableId: aws.String("rtb-00000000000000999"), DestinationCidrBlock: aws.String("100.96.1.0/24")})
	wantCode(t, err, "InvalidRouteTableID.NotFound")
}

func TestAdminFixtures(t *testing.T) {
	e := newEnv(t)
	vpc := must[string](t)(e.emu.CreateVPC("172.20.0.0/16", map[string]string{"Name": "extra"}))
	sub := must[string](t)(e.emu.CreateSubnet(cloudsimaws.SubnetSpec{VPCID: vpc, Zone: region + "a", CIDR: "172.20.1.0/24"}))
	if _, err := e.emu.CreateSubnet(cloudsimaws.SubnetSpec{VPCID: vpc, Zone: region + "a", CIDR: "172.20.1.128/25"}); err == nil {
		t.Fatal("overlapping subnet accepted")
	}
	if _, err := e.emu.CreateSubnet(cloudsimaws.SubnetSpec{VPCID: vpc, Zone: region + "a", CIDR: "10.9.0.0/24"}); err == nil {
		t.Fatal("subnet outside VPC accepted")
	}
	rtb := must[string](t)(e.emu.CreateRouteTable(vpc, []string{sub}, map[string]string{"Name": "extra-rtb"}))
	out := must[*ec2.DescribeRouteTablesOutput](t)(e.ec2.DescribeRouteTables(ctx(), &ec2.DescribeRouteTablesInput{
		Filters: []ec2types.Filter{filter("association.subnet-id", sub)},
	}))
	if len(out.RouteTables) != 1 || aws.ToString(out.RouteTables[0].RouteTableId) != rtb {
		t.Fatalf("association filter: %+v", out.RouteTables)
	}
	ids := launch(t, e, cloudsimaws.LaunchSpec{SubnetID: sub})
	info, _ := e.emu.Instance(ids[0])
	if info.VPCID != vpc || info.PrivateIP != "172.20.1.4" || len(info.SecurityGroupIDs) != 0 {
		t.Fatalf("instance in extra VPC: %+v", info)
	}
}
