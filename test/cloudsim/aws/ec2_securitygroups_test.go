package aws_test

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

func createSG(t *testing.T, e *env, name string, tags map[string]string) string {
	t.Helper()
	in := &ec2.CreateSecurityGroupInput{
		GroupName: aws.String(name), Description: aws.String("test group " + name), VpcId: aws.String(e.fx.VPCID),
	}
	if len(tags) > 0 {
		spec := ec2types.TagSpecification{ResourceType: ec2types.ResourceTypeSecurityGroup}
		for k, v := range tags {
			spec.Tags = append(spec.Tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(v)})
		}
		in.TagSpecifications = []ec2types.TagSpecification{spec}
	}
	out := must[*ec2.CreateSecurityGroupOutput](t)(e.ec2.CreateSecurityGroup(ctx(), in))
	return aws.ToString(out.GroupId)
}

func describeSG(t *testing.T, e *env, id string) ec2types.SecurityGroup {
	t.Helper()
	out := must[*ec2.DescribeSecurityGroupsOutput](t)(e.ec2.DescribeSecurityGroups(ctx(), &ec2.DescribeSecurityGroupsInput{GroupIds: []string{id}}))
	return out.SecurityGroups[0]
}

func tcp(port int32, cidrs ...string) ec2types.IpPermission {
	p := ec2types.IpPermission{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(port), ToPort: aws.Int32(port)}
	for _, c := range cidrs {
		p.IpRanges = append(p.IpRanges, ec2types.IpRange{CidrIp: aws.String(c)})
	}
	return p
}

func TestSecurityGroupCRUD(t *testing.T) {
	e := newEnv(t)
	id := createSG(t, e, "k8s-elb-abc", map[string]string{"kubernetes.io/cluster/test": "owned", "svc": "default/web"})

	sg := describeSG(t, e, id)
	if aws.ToString(sg.GroupName) != "k8s-elb-abc" || aws.ToString(sg.VpcId) != e.fx.VPCID || len(sg.Tags) != 2 ||
		len(sg.IpPermissionsEgress) != 1 || aws.ToString(sg.IpPermissionsEgress[0].IpProtocol) != "-1" {
		t.Fatalf("group %+v", sg)
	}

	for _, tc := range []struct {
		f    ec2types.Filter
		want int
	}{
		{filter("group-id", id), 1},
		{filter("group-name", "k8s-elb-abc"), 1},
		{filter("vpc-id", e.fx.VPCID), 3}, // default, node, ours
		{filter("tag:svc", "default/web"), 1},
		{filter("tag-key", "kubernetes.io/cluster/test"), 2}, // node and ours
	} {
		out := must[*ec2.DescribeSecurityGroupsOutput](t)(e.ec2.DescribeSecurityGroups(ctx(), &ec2.DescribeSecurityGroupsInput{
			Filters: []ec2types.Filter{tc.f},
		}))
		if len(out.SecurityGroups) != tc.want {
			t.Errorf("filter %s: %d groups, want %d", aws.ToString(tc.f.Name), len(out.SecurityGroups), tc.want)
		}
	}

	_, err := e.ec2.CreateSecurityGroup(ctx(), &ec2.CreateSecurityGroupInput{
		GroupName: aws.String("k8s-elb-abc"), Description: aws.String("again"), VpcId: aws.String(e.fx.VPCID),
	})
	wantCode(t, err, "InvalidGroup.Duplicate")
	_, err = e.ec2.CreateSecurityGroup(ctx(), &ec2.CreateSecurityGroupInput{
		GroupName: aws.String("sg-bad"), Description: aws.String("d"), VpcId: aws.String(e.fx.VPCID),
	})
	wantCode(t, err, "InvalidParameterValue")
	_, err = e.ec2.CreateSecurityGroup(ctx(), &ec2.CreateSecurityGroupInput{
		GroupName: aws.String("x"), Description: aws.String("d"), VpcId: aws.String("vpc-00000000000000999"),
	})
	wantCode(t, err, "InvalidVpcID.NotFound")
	// The SDK validates required fields itself, so send the raw query.
	if code := rawCode(t, e, "Action=CreateSecurityGroup&Version=2016-11-15&GroupName=x&VpcId="+e.fx.VPCID); code != "MissingParameter" {
		t.Fatalf("no description: %s", code)
	}
	_, err = e.ec2.DescribeSecurityGroups(ctx(), &ec2.DescribeSecurityGroupsInput{GroupIds: []string{"sg-0123456789abcdef0"}})
	wantCode(t, err, "InvalidGroup.NotFound")
	_, err = e.ec2.DescribeSecurityGroups(ctx(), &ec2.DescribeSecurityGroupsInput{GroupIds: []string{"bogus"}})
	wantCode(t, err, "InvalidGroupId.Malformed")

	must[*ec2.DeleteSecurityGroupOutput](t)(e.ec2.DeleteSecurityGroup(ctx(), &ec2.DeleteSecurityGroupInput{GroupId: aws.String(id)}))
	_, err = e.ec2.DeleteSecurityGroup(ctx(), &ec2.DeleteSecurityGroupInput{GroupId: aws.String(id)})
	wantCode(t, err, "InvalidGroup.NotFound")
	_, err = e.ec2.DeleteSecurityGroup(ctx(), &ec2.DeleteSecurityGroupInput{GroupId: aws.String(e.fx.DefaultSecurityGroupID)})
	wantCode(t, err, "CannotDelete")
}

func TestSecurityGroupPagination(t *testing.T) {
	e := newEnv(t)
	for i := range 8 {
		createSG(t, e, fmt.Sprintf("pager-%d", i), nil)
	}
	n, pages := 0, 0
	p := ec2.NewDescribeSecurityGroupsPaginator(e.ec2, &ec2.DescribeSecurityGroupsInput{MaxResults: aws.Int32(5)})
	for p.HasMorePages() {
		out := must[*ec2.DescribeSecurityGroupsOutput](t)(p.NextPage(ctx()))
		n += len(out.SecurityGroups)
		pages++
	}
	if n != 10 || pages != 2 {
		t.Fatalf("%d groups in %d pages", n, pages)
	}
}

func TestSecurityGroupIngress(t *testing.T) {
	e := newEnv(t)
	id := createSG(t, e, "lb", nil)
	node := e.fx.NodeSecurityGroupID

	authorize := func(perms ...ec2types.IpPermission) error {
		_, err := e.ec2.AuthorizeSecurityGroupIngress(ctx(), &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(node), IpPermissions: perms})
		return err
	}
	revoke := func(perms ...ec2types.IpPermission) error {
		_, err := e.ec2.RevokeSecurityGroupIngress(ctx(), &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(node), IpPermissions: perms})
		return err
	}
	fromGroup := ec2types.IpPermission{
		IpProtocol: aws.String("tcp"), FromPort: aws.Int32(30000), ToPort: aws.Int32(32767),
		UserIdGroupPairs: []ec2types.UserIdGroupPair{{GroupId: aws.String(id), Description: aws.String("from lb")}},
	}
	ok(t, authorize(tcp(80, "10.0.0.0/16", "192.168.0.0/24"), fromGroup))

	perms := map[string]ec2types.IpPermission{}
	for _, p := range describeSG(t, e, node).IpPermissions {
		perms[fmt.Sprintf("%s/%d-%d", aws.ToString(p.IpProtocol), aws.ToInt32(p.FromPort), aws.ToInt32(p.ToPort))] = p
	}
	if p := perms["tcp/80-80"]; len(p.IpRanges) != 2 || aws.ToString(p.IpRanges[1].CidrIp) != "192.168.0.0/24" {
		t.Fatalf("port 80 permission %+v", p)
	}
	if p := perms["tcp/30000-32767"]; len(p.UserIdGroupPairs) != 1 || aws.ToString(p.UserIdGroupPairs[0].GroupId) != id {
		t.Fatalf("group permission %+v", p)
	}
	if p := perms["-1/0-0"]; len(p.UserIdGroupPairs) != 1 || aws.ToString(p.UserIdGroupPairs[0].GroupId) != node {
		t.Fatalf("fixture self rule %+v", perms)
	}
	out := must[*ec2.DescribeSecurityGroupsOutput](t)(e.ec2.DescribeSecurityGroups(ctx(), &ec2.DescribeSecurityGroupsInput{
		Filters: []ec2types.Filter{filter("ip-permission.group-id", id)},
	}))
	if len(out.SecurityGroups) != 1 {
		t.Fatalf("ip-permission.group-id filter: %d", len(out.SecurityGroups))
	}

	wantCode(t, authorize(tcp(80, "10.0.0.0/16")), "InvalidPermission.Duplicate")
	wantCode(t, authorize(tcp(443, "1.2.3.0/24", "1.2.3.0/24")), "InvalidPermission.Duplicate")
	wantCode(t, authorize(ec2types.IpPermission{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(1), ToPort: aws.Int32(2),
		UserIdGroupPairs: []ec2types.UserIdGroupPair{{GroupId: aws.String("sg-0123456789abcdef0")}}}), "InvalidGroup.NotFound")
	wantCode(t, authorize(tcp(80, "not-a-cidr")), "InvalidParameterValue")

	// The node group's rule references the lb group, so it cannot go yet.
	_, err := e.ec2.DeleteSecurityGroup(ctx(), &ec2.DeleteSecurityGroupInput{GroupId: aws.String(id)})
	wantCode(t, err, "DependencyViolation")

	ok(t, revoke(tcp(80, "192.168.0.0/24"), fromGroup))
	wantCode(t, revoke(tcp(80, "192.168.0.0/24")), "InvalidPermission.NotFound")
	wantCode(t, revoke(tcp(8080, "10.0.0.0/16")), "InvalidPermission.NotFound")
	if p := describeSG(t, e, node).IpPermissions; len(p) != 2 {
		t.Fatalf("after revoke: %+v", p)
	}
	must[*ec2.DeleteSecurityGroupOutput](t)(e.ec2.DeleteSecurityGroup(ctx(), &ec2.DeleteSecurityGroupInput{GroupId: aws.String(id)}))

	// Instances using a group hold it too.
	launch(t, e, cloudsimaws.LaunchSpec{})
	_, err = e.ec2.DeleteSecurityGroup(ctx(), &ec2.DeleteSecurityGroupInput{GroupId: aws.String(node)})
	wantCode(t, err, "DependencyViolation")
}

func TestSecurityGroupAuthorizeReturnsRules(t *testing.T) {
	e := newEnv(t)
	out := must[*ec2.AuthorizeSecurityGroupIngressOutput](t)(e.ec2.AuthorizeSecurityGroupIngress(ctx(), &ec2.AuthorizeSecurityGroupIngressInput{
		GroupId: aws.String(e.fx.NodeSecurityGroupID), IpPermissions: []ec2types.IpPermission{tcp(8443, "10.0.0.0/8")},
	}))
	if !aws.ToBool(out.Return) || len(out.SecurityGroupRules) != 1 || aws.ToString(out.SecurityGroupRules[0].CidrIpv4) != "10.0.0.0/8" {
		t.Fatalf("output %+v", out)
	}
}

func TestCreateAndDeleteTags(t *testing.T) {
	e := newEnv(t)
	ids := launch(t, e, cloudsimaws.LaunchSpec{Tags: map[string]string{"keep": "1"}})
	resources := []string{ids[0], e.fx.NodeSecurityGroupID, e.fx.VPCID, e.fx.PublicSubnets[region+"a"], e.fx.RouteTableID}
	must[*ec2.CreateTagsOutput](t)(e.ec2.CreateTags(ctx(), &ec2.CreateTagsInput{
		Resources: resources,
		Tags:      []ec2types.Tag{{Key: aws.String("a"), Value: aws.String("1")}, {Key: aws.String("b"), Value: aws.String("2")}},
	}))
	for _, id := range resources {
		if got := resourceTags(e, id); got["a"] != "1" || got["b"] != "2" {
			t.Fatalf("%s tags %v", id, got)
		}
	}
	must[*ec2.DeleteTagsOutput](t)(e.ec2.DeleteTags(ctx(), &ec2.DeleteTagsInput{
		Resources: []string{ids[0]},
		Tags:      []ec2types.Tag{{Key: aws.String("a")}, {Key: aws.String("b"), Value: aws.String("wrong value")}},
	}))
	if got := resourceTags(e, ids[0]); fmt.Sprint(got) != "map[b:2 keep:1]" {
		t.Fatalf("after delete: %v", got)
	}
	// No tags at all deletes every tag.
	must[*ec2.DeleteTagsOutput](t)(e.ec2.DeleteTags(ctx(), &ec2.DeleteTagsInput{Resources: []string{ids[0]}}))
	if got := resourceTags(e, ids[0]); len(got) != 0 {
		t.Fatalf("after delete all: %v", got)
	}

	_, err := e.ec2.CreateTags(ctx(), &ec2.CreateTagsInput{Resources: []string{"i-0123456789abcdef0"}, Tags: []ec2types.Tag{{Key: aws.String("a")}}})
	wantCode(t, err, "InvalidInstanceID.NotFound")
	_, err = e.ec2.CreateTags(ctx(), &ec2.CreateTagsInput{Resources: []string{"sg-0123456789abcdef0"}, Tags: []ec2types.Tag{{Key: aws.String("a")}}})
	wantCode(t, err, "InvalidGroup.NotFound")
	_, err = e.ec2.CreateTags(ctx(), &ec2.CreateTagsInput{Resources: []string{ids[0]}, Tags: []ec2types.Tag{{Key: aws.String("aws:reserved")}}})
	wantCode(t, err, "InvalidParameterValue")
}

// resourceTags reads tags through the emulator's resource listing.
func resourceTags(e *env, id string) map[string]string {
	for _, r := range e.srv.Resources() {
		if r.ID == id {
			return r.Tags
		}
	}
	return nil
}
