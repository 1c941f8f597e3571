package aws_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

// Every network interface lists its addresses in privateIpAddressesSet,
// with the public association on the address that has one.
func TestNetworkInterfacePrivateIPAddresses(t *testing.T) {
	e := newEnv(t)
	pub := launch(t, e, cloudsimaws.LaunchSpec{PublicIP: true})[0]
	priv := launch(t, e, cloudsimaws.LaunchSpec{})[0]
	insts := describeInstances(t, e, &ec2.DescribeInstancesInput{InstanceIds: []string{pub, priv}})
	if len(insts) != 2 {
		t.Fatalf("got %d instances", len(insts))
	}
	for _, i := range insts {
		if len(i.NetworkInterfaces) != 1 {
			t.Fatalf("%s: %d interfaces", aws.ToString(i.InstanceId), len(i.NetworkInterfaces))
		}
		ni := i.NetworkInterfaces[0]
		if len(ni.PrivateIpAddresses) != 1 {
			t.Fatalf("%s: privateIpAddressesSet has %d items", aws.ToString(i.InstanceId), len(ni.PrivateIpAddresses))
		}
		a := ni.PrivateIpAddresses[0]
		if aws.ToString(a.PrivateIpAddress) != aws.ToString(i.PrivateIpAddress) || aws.ToString(a.PrivateDnsName) != aws.ToString(i.PrivateDnsName) ||
			!aws.ToBool(a.Primary) || a.PrivateDnsName == nil {
			t.Errorf("%s: address %+v, instance %s/%s", aws.ToString(i.InstanceId), a, aws.ToString(i.PrivateIpAddress), aws.ToString(i.PrivateDnsName))
		}
		switch aws.ToString(i.InstanceId) {
		case pub:
			if a.Association == nil || aws.ToString(a.Association.PublicIp) != aws.ToString(i.PublicIpAddress) ||
				aws.ToString(a.Association.PublicDnsName) != aws.ToString(i.PublicDnsName) || aws.ToString(a.Association.IpOwnerId) != "amazon" {
				t.Errorf("public instance's address association %+v", a.Association)
			}
		case priv:
			if a.Association != nil {
				t.Errorf("private instance's address has association %+v", a.Association)
			}
		}
	}
}

func topology(t *testing.T, e *env, in *ec2.DescribeInstanceTopologyInput) []ec2types.InstanceTopology {
	t.Helper()
	var out []ec2types.InstanceTopology
	p := ec2.NewDescribeInstanceTopologyPaginator(e.ec2, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx())
		ok(t, err)
		out = append(out, page.Instances...)
	}
	return out
}

func topologyIDs(ts []ec2types.InstanceTopology) []string {
	return idsOf(ts, func(x ec2types.InstanceTopology) *string { return x.InstanceId })
}

func TestDescribeInstanceTopology(t *testing.T) {
	e := newEnv(t)
	m5 := launch(t, e, cloudsimaws.LaunchSpec{Count: 2, InstanceType: "m5.large"})
	p4d := launch(t, e, cloudsimaws.LaunchSpec{Count: 3, InstanceType: "p4d.24xlarge", Zone: region + "b"})
	trn := launch(t, e, cloudsimaws.LaunchSpec{InstanceType: "trn1.32xlarge", Zone: region + "c"})
	p6 := launch(t, e, cloudsimaws.LaunchSpec{InstanceType: "p6-b200.48xlarge", Zone: region + "c"})
	supported := slices.Concat(p4d, trn, p6)

	// Instance types without topology data get no entry, and no error:
	// clients call this for every node.
	if got := topology(t, e, &ec2.DescribeInstanceTopologyInput{InstanceIds: m5}); len(got) != 0 {
		t.Fatalf("m5 instances have topology %+v", got)
	}
	all := topology(t, e, &ec2.DescribeInstanceTopologyInput{})
	if !slices.Equal(topologyIDs(all), supported) {
		t.Fatalf("topology for %v, want %v", topologyIDs(all), supported)
	}
	for _, x := range all {
		want := 3
		if aws.ToString(x.InstanceType) == "p6-b200.48xlarge" {
			want = 4
		}
		if len(x.NetworkNodes) != want || !strings.HasPrefix(x.NetworkNodes[0], "nn-") ||
			aws.ToString(x.ZoneId) == "" || aws.ToString(x.AvailabilityZone) == "" {
			t.Errorf("entry %+v", x)
		}
	}
	// Instances in one zone share the top of the hierarchy.
	if all[0].NetworkNodes[0] != all[1].NetworkNodes[0] || all[0].NetworkNodes[0] == all[3].NetworkNodes[0] {
		t.Errorf("spines: %v %v %v", all[0].NetworkNodes, all[1].NetworkNodes, all[3].NetworkNodes)
	}

	filtered := []struct {
		name string
		in   *ec2.DescribeInstanceTopologyInput
		want []string
	}{
		{"ids", &ec2.DescribeInstanceTopologyInput{InstanceIds: append([]string{trn[0], "i-0000000000000dead"}, m5...)}, trn},
		{"family wildcard", &ec2.DescribeInstanceTopologyInput{Filters: []ec2types.Filter{filter("instance-type", "p4d*")}}, p4d},
		{"zone", &ec2.DescribeInstanceTopologyInput{Filters: []ec2types.Filter{filter("availability-zone", region+"c")}}, slices.Concat(trn, p6)},
		{"zone id", &ec2.DescribeInstanceTopologyInput{Filters: []ec2types.Filter{filter("zone-id", "euw1-az2")}}, p4d},
		{"placement group", &ec2.DescribeInstanceTopologyInput{GroupNames: []string{"my-cpg"}}, nil},
		{"paged", &ec2.DescribeInstanceTopologyInput{MaxResults: aws.Int32(1)}, supported},
		{"paged by 2", &ec2.DescribeInstanceTopologyInput{MaxResults: aws.Int32(2)}, supported},
	}
	for _, c := range filtered {
		t.Run(c.name, func(t *testing.T) {
			if got := topologyIDs(topology(t, e, c.in)); !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
	out := must[*ec2.DescribeInstanceTopologyOutput](t)(e.ec2.DescribeInstanceTopology(ctx(), &ec2.DescribeInstanceTopologyInput{MaxResults: aws.Int32(2)}))
	if len(out.Instances) != 2 || out.NextToken == nil {
		t.Errorf("first page of 2: %d items, next %v", len(out.Instances), out.NextToken)
	}

	// Network nodes are reported only while running.
	ok(t, e.emu.Stop(p4d[0]))
	got := topology(t, e, &ec2.DescribeInstanceTopologyInput{InstanceIds: p4d[:1]})
	if len(got) != 1 || len(got[0].NetworkNodes) != 0 {
		t.Errorf("stopped instance: %+v", got)
	}

	for _, c := range []struct {
		in   *ec2.DescribeInstanceTopologyInput
		code string
	}{
		{&ec2.DescribeInstanceTopologyInput{InstanceIds: trn, MaxResults: aws.Int32(5)}, "InvalidParameterCombination"},
		{&ec2.DescribeInstanceTopologyInput{MaxResults: aws.Int32(101)}, "InvalidParameterValue"},
		{&ec2.DescribeInstanceTopologyInput{Filters: []ec2types.Filter{filter("instance-state-name", "running")}}, "InvalidParameterValue"},
		{&ec2.DescribeInstanceTopologyInput{InstanceIds: []string{"i-nope"}}, "InvalidInstanceID.Malformed"},
		{&ec2.DescribeInstanceTopologyInput{NextToken: aws.String("garbage!")}, "InvalidParameterValue"},
	} {
		_, err := e.ec2.DescribeInstanceTopology(ctx(), c.in)
		wantCode(t, err, c.code)
	}
}

// isPublic decides publicness the way the upstream AWS CCM does: the
// subnet's explicitly associated route table, else the VPC's main one,
// must route 0.0.0.0/0 to an internet gateway.
func isPublic(t *testing.T, e *env, subnetID string) bool {
	t.Helper()
	out := must[*ec2.DescribeRouteTablesOutput](t)(e.ec2.DescribeRouteTables(ctx(), &ec2.DescribeRouteTablesInput{
		Filters: []ec2types.Filter{filter("vpc-id", e.fx.VPCID)},
	}))
	var table *ec2types.RouteTable
	for i, rt := range out.RouteTables {
		for _, a := range rt.Associations {
			if aws.ToString(a.SubnetId) == subnetID || table == nil && aws.ToBool(a.Main) {
				table = &out.RouteTables[i]
			}
		}
	}
	if table == nil {
		t.Fatalf("no route table for %s", subnetID)
	}
	for _, r := range table.Routes {
		if aws.ToString(r.DestinationCidrBlock) == "0.0.0.0/0" && strings.HasPrefix(aws.ToString(r.GatewayId), "igw-") {
			return true
		}
	}
	return false
}

func TestDefaultFixturePublicSubnetsRouteToInternetGateway(t *testing.T) {
	e := newEnv(t)
	for zone, id := range e.fx.PublicSubnets {
		if !isPublic(t, e, id) {
			t.Errorf("public subnet %s in %s is not public by its routes", id, zone)
		}
	}
	for zone, id := range e.fx.PrivateSubnets {
		if isPublic(t, e, id) {
			t.Errorf("private subnet %s in %s routes to the internet gateway", id, zone)
		}
	}

	// The public table as EC2 renders it.
	out := must[*ec2.DescribeRouteTablesOutput](t)(e.ec2.DescribeRouteTables(ctx(), &ec2.DescribeRouteTablesInput{
		Filters: []ec2types.Filter{filter("route.gateway-id", e.fx.InternetGatewayID)},
	}))
	if len(out.RouteTables) != 1 || aws.ToString(out.RouteTables[0].RouteTableId) != e.fx.PublicRouteTableID {
		t.Fatalf("tables routing to the gateway: %+v", out.RouteTables)
	}
	rt := out.RouteTables[0]
	var assoc []string
	for _, a := range rt.Associations {
		if aws.ToBool(a.Main) || a.AssociationState == nil || a.AssociationState.State != ec2types.RouteTableAssociationStateCodeAssociated {
			t.Errorf("association %+v", a)
		}
		assoc = append(assoc, aws.ToString(a.SubnetId))
	}
	var public []string
	for _, id := range e.fx.PublicSubnets {
		public = append(public, id)
	}
	slices.Sort(assoc)
	slices.Sort(public)
	if !slices.Equal(assoc, public) {
		t.Errorf("associated with %v, want %v", assoc, public)
	}
	i := slices.IndexFunc(rt.Routes, func(r ec2types.Route) bool { return aws.ToString(r.DestinationCidrBlock) == "0.0.0.0/0" })
	if i < 0 {
		t.Fatalf("routes %+v", rt.Routes)
	}
	if r := rt.Routes[i]; aws.ToString(r.GatewayId) != e.fx.InternetGatewayID || r.State != ec2types.RouteStateActive || r.Origin != ec2types.RouteOriginCreateRoute {
		t.Errorf("default route %+v", r)
	}

	// The main table, which pod routes go into, stays main and keeps no
	// explicit associations.
	main := must[*ec2.DescribeRouteTablesOutput](t)(e.ec2.DescribeRouteTables(ctx(), &ec2.DescribeRouteTablesInput{RouteTableIds: []string{e.fx.RouteTableID}}))
	if as := main.RouteTables[0].Associations; len(as) != 1 || !aws.ToBool(as[0].Main) || as[0].SubnetId != nil {
		t.Errorf("main table associations %+v", as)
	}
}

func TestDescribeInternetGateways(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name string
		in   *ec2.DescribeInternetGatewaysInput
		want []string
	}{
		{"all", &ec2.DescribeInternetGatewaysInput{}, []string{e.fx.InternetGatewayID}},
		{"by id", &ec2.DescribeInternetGatewaysInput{InternetGatewayIds: []string{e.fx.InternetGatewayID}}, []string{e.fx.InternetGatewayID}},
		{"by vpc", &ec2.DescribeInternetGatewaysInput{Filters: []ec2types.Filter{filter("attachment.vpc-id", e.fx.VPCID)}}, []string{e.fx.InternetGatewayID}},
		{"other vpc", &ec2.DescribeInternetGatewaysInput{Filters: []ec2types.Filter{filter("attachment.vpc-id", "vpc-0000000000000dead")}}, nil},
		{"by state", &ec2.DescribeInternetGatewaysInput{Filters: []ec2types.Filter{filter("attachment.state", "available")}}, []string{e.fx.InternetGatewayID}},
		{"by tag", &ec2.DescribeInternetGatewaysInput{Filters: []ec2types.Filter{filter("tag:Name", "test-igw")}}, []string{e.fx.InternetGatewayID}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := must[*ec2.DescribeInternetGatewaysOutput](t)(e.ec2.DescribeInternetGateways(ctx(), c.in))
			var got []string
			for _, g := range out.InternetGateways {
				got = append(got, aws.ToString(g.InternetGatewayId))
				if len(g.Attachments) != 1 || aws.ToString(g.Attachments[0].VpcId) != e.fx.VPCID || g.Attachments[0].State != "available" {
					t.Errorf("attachments %+v", g.Attachments)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
	_, err := e.ec2.DescribeInternetGateways(ctx(), &ec2.DescribeInternetGatewaysInput{InternetGatewayIds: []string{"igw-0000000000000dead"}})
	wantCode(t, err, "InvalidInternetGatewayID.NotFound")

	// Gateways are taggable like every EC2 resource.
	_, err = e.ec2.CreateTags(ctx(), &ec2.CreateTagsInput{Resources: []string{e.fx.InternetGatewayID}, Tags: []ec2types.Tag{{Key: aws.String("team"), Value: aws.String("net")}}})
	ok(t, err)
	out := must[*ec2.DescribeInternetGatewaysOutput](t)(e.ec2.DescribeInternetGateways(ctx(), &ec2.DescribeInternetGatewaysInput{
		Filters: []ec2types.Filter{filter("tag:team", "net")},
	}))
	if len(out.InternetGateways) != 1 {
		t.Errorf("tagged gateway not found: %+v", out.InternetGateways)
	}
}
