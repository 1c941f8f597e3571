package aws_test

import (
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
)

// What a CCM's batched inventory (one listing for every Service) reads
// from the emulator, as AWS answers it.

// A target group's LoadBalancerArns, in a listing of every target group,
// name the load balancers whose listeners forward to it: empty once its
// listener is deleted, or its load balancer (which takes its listeners).
func TestTargetGroupListingShowsListeners(t *testing.T) {
	e := newEnv(t)
	lb := aws.ToString(createNLB(t, e, "lb").LoadBalancerArn)
	tgA := aws.ToString(createTG(t, e, "tg-a", 30080).TargetGroupArn)
	tgB := aws.ToString(createTG(t, e, "tg-b", 30081).TargetGroupArn)
	la := aws.ToString(createListener(t, e, lb, tgA, 80).ListenerArn)
	createListener(t, e, lb, tgB, 81)

	users := func() map[string][]string {
		t.Helper()
		out := map[string][]string{}
		p := elbv2.NewDescribeTargetGroupsPaginator(e.elb, &elbv2.DescribeTargetGroupsInput{PageSize: aws.Int32(1)})
		for p.HasMorePages() {
			for _, tg := range must[*elbv2.DescribeTargetGroupsOutput](t)(p.NextPage(ctx())).TargetGroups {
				out[aws.ToString(tg.TargetGroupArn)] = tg.LoadBalancerArns
			}
		}
		return out
	}
	if got := users(); !slices.Equal(got[tgA], []string{lb}) || !slices.Equal(got[tgB], []string{lb}) {
		t.Fatalf("attached: %v", got)
	}
	must[*elbv2.DeleteListenerOutput](t)(e.elb.DeleteListener(ctx(), &elbv2.DeleteListenerInput{ListenerArn: aws.String(la)}))
	if got := users(); len(got[tgA]) != 0 || !slices.Equal(got[tgB], []string{lb}) {
		t.Fatalf("after deleting tg-a's listener: %v", got)
	}
	must[*elbv2.DeleteLoadBalancerOutput](t)(e.elb.DeleteLoadBalancer(ctx(), &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(lb)}))
	if got := users(); len(got) != 2 || len(got[tgA])+len(got[tgB]) != 0 {
		t.Fatalf("after deleting the load balancer: %v", got)
	}
}

// DescribeTags answers for all its ARNs or none: one resource deleted
// fails the batch with its kind's not-found error.
func TestDescribeTagsBatchFailsWhole(t *testing.T) {
	e := newEnv(t)
	a := aws.ToString(createNLB(t, e, "a").LoadBalancerArn)
	b := aws.ToString(createNLB(t, e, "b").LoadBalancerArn)
	tg := aws.ToString(createTG(t, e, "tg", 30080).TargetGroupArn)
	must[*elbv2.DeleteLoadBalancerOutput](t)(e.elb.DeleteLoadBalancer(ctx(), &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(b)}))
	_, err := e.elb.DescribeTags(ctx(), &elbv2.DescribeTagsInput{ResourceArns: []string{a, b, tg}})
	wantCode(t, err, "LoadBalancerNotFound")
	must[*elbv2.DeleteTargetGroupOutput](t)(e.elb.DeleteTargetGroup(ctx(), &elbv2.DeleteTargetGroupInput{TargetGroupArn: aws.String(tg)}))
	_, err = e.elb.DescribeTags(ctx(), &elbv2.DescribeTagsInput{ResourceArns: []string{a, tg}})
	wantCode(t, err, "TargetGroupNotFound")
	out := must[*elbv2.DescribeTagsOutput](t)(e.elb.DescribeTags(ctx(), &elbv2.DescribeTagsInput{ResourceArns: []string{a}}))
	if len(out.TagDescriptions) != 1 || len(out.TagDescriptions[0].Tags) != 1 {
		t.Fatalf("tags of a: %+v", out.TagDescriptions)
	}
}

// DescribeSecurityGroups filtered by VPC and paged lists that VPC's
// groups only, each with its tags and its rules' descriptions, for pairs
// and CIDRs alike.
func TestSecurityGroupListingByVPC(t *testing.T) {
	e := newEnv(t)
	lb := createSG(t, e, "k8s-nlb-default-web-0123456789", map[string]string{"kubernetes.io/cluster/test": "owned", "kubernetes.io/service-name": "default/web"})
	for i := range 6 {
		createSG(t, e, "filler-"+string(rune('a'+i)), nil)
	}
	node := e.fx.NodeSecurityGroupID
	must[*ec2.AuthorizeSecurityGroupIngressOutput](t)(e.ec2.AuthorizeSecurityGroupIngress(ctx(), &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(node), IpPermissions: []ec2types.IpPermission{
		{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(30080), ToPort: aws.Int32(30080),
			UserIdGroupPairs: []ec2types.UserIdGroupPair{{GroupId: aws.String(lb), Description: aws.String("multicloud-ccm test: NLB of Service default/web")}}},
		{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(30081), ToPort: aws.Int32(30081),
			IpRanges: []ec2types.IpRange{{CidrIp: aws.String("192.0.2.0/24"), Description: aws.String("kubernetes.io/rule/nlb/client=a1")}}},
	}}))
	otherVPC, err := e.emu.CreateVPC("10.1.0.0/16", nil)
	ok(t, err)
	_, err = e.emu.CreateSecurityGroup(otherVPC, "elsewhere", "another VPC's", map[string]string{"kubernetes.io/cluster/test": "owned"})
	ok(t, err)

	groups := map[string]ec2types.SecurityGroup{}
	pages := 0
	p := ec2.NewDescribeSecurityGroupsPaginator(e.ec2, &ec2.DescribeSecurityGroupsInput{
		Filters: []ec2types.Filter{{Name: aws.String("vpc-id"), Values: []string{e.fx.VPCID}}}, MaxResults: aws.Int32(5),
	})
	for p.HasMorePages() {
		for _, sg := range must[*ec2.DescribeSecurityGroupsOutput](t)(p.NextPage(ctx())).SecurityGroups {
			if aws.ToString(sg.VpcId) != e.fx.VPCID {
				t.Errorf("group %s of %s listed", aws.ToString(sg.GroupName), aws.ToString(sg.VpcId))
			}
			groups[aws.ToString(sg.GroupId)] = sg
		}
		pages++
	}
	// default, node, the load balancer's and six fillers.
	if len(groups) != 9 || pages != 2 {
		t.Fatalf("%d groups in %d pages", len(groups), pages)
	}
	tags := map[string]string{}
	for _, tag := range groups[lb].Tags {
		tags[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
	}
	if tags["kubernetes.io/service-name"] != "default/web" || tags["kubernetes.io/cluster/test"] != "owned" {
		t.Errorf("tags of the load balancer's group: %v", tags)
	}
	var descs []string
	for _, perm := range groups[node].IpPermissions {
		for _, pair := range perm.UserIdGroupPairs {
			descs = append(descs, aws.ToString(pair.GroupId)+" "+aws.ToString(pair.Description))
		}
		for _, r := range perm.IpRanges {
			descs = append(descs, aws.ToString(r.CidrIp)+" "+aws.ToString(r.Description))
		}
	}
	for _, want := range []string{lb + " multicloud-ccm test: NLB of Service default/web", "192.0.2.0/24 kubernetes.io/rule/nlb/client=a1"} {
		if !slices.Contains(descs, want) {
			t.Errorf("node group rules %q lack %q", descs, want)
		}
	}
}
