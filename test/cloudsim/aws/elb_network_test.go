package aws_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	clbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
)

func TestClassicSecurityGroupsAndSubnets(t *testing.T) {
	e := newCLBEnv(t)
	createCLB(t, e, "web")
	name := aws.String("web")

	// The upstream CCM's own group replaces the node group.
	lbSG := createSG(t, e.env, "k8s-elb-web", nil)
	out := must[*elb.ApplySecurityGroupsToLoadBalancerOutput](t)(e.clb.ApplySecurityGroupsToLoadBalancer(ctx(), &elb.ApplySecurityGroupsToLoadBalancerInput{
		LoadBalancerName: name, SecurityGroups: []string{lbSG},
	}))
	if !slices.Equal(out.SecurityGroups, []string{lbSG}) {
		t.Fatalf("applied %v", out.SecurityGroups)
	}
	if d := describeCLB(t, e, "web"); !slices.Equal(d.SecurityGroups, []string{lbSG}) || aws.ToString(d.SourceSecurityGroup.GroupName) != "k8s-elb-web" {
		t.Fatalf("security groups %v, source %+v", d.SecurityGroups, d.SourceSecurityGroup)
	}
	_, err := e.clb.ApplySecurityGroupsToLoadBalancer(ctx(), &elb.ApplySecurityGroupsToLoadBalancerInput{LoadBalancerName: name, SecurityGroups: []string{"sg-0123456789abcdef0"}})
	wantTyped[*clbtypes.InvalidSecurityGroupException](t, err)
	_, err = e.clb.ApplySecurityGroupsToLoadBalancer(ctx(), &elb.ApplySecurityGroupsToLoadBalancerInput{LoadBalancerName: name, SecurityGroups: []string{}})
	wantCode(t, err, "ValidationError")

	attach := func(ids ...string) ([]string, error) {
		out, err := e.clb.AttachLoadBalancerToSubnets(ctx(), &elb.AttachLoadBalancerToSubnetsInput{LoadBalancerName: name, Subnets: ids})
		if err != nil {
			return nil, err
		}
		return out.Subnets, nil
	}
	detach := func(ids ...string) ([]string, error) {
		out, err := e.clb.DetachLoadBalancerFromSubnets(ctx(), &elb.DetachLoadBalancerFromSubnetsInput{LoadBalancerName: name, Subnets: ids})
		if err != nil {
			return nil, err
		}
		return out.Subnets, nil
	}
	pub := e.fx.PublicSubnets
	left := must[[]string](t)(detach(pub[region+"a"], pub[region+"b"]))
	if !slices.Equal(left, []string{pub[region+"c"]}) {
		t.Fatalf("after detach %v", left)
	}
	_, err = detach(pub[region+"c"])
	wantTyped[*clbtypes.InvalidConfigurationRequestException](t, err)
	_, err = attach(e.fx.PrivateSubnets[region+"c"]) // a second subnet in zone c
	wantCode(t, err, "InvalidConfigurationRequest")
	_, err = attach("subnet-00000000000000999")
	wantTyped[*clbtypes.SubnetNotFoundException](t, err)
	all := must[[]string](t)(attach(pub[region+"b"], pub[region+"a"], pub[region+"c"]))
	if !slices.Equal(all, e.publicSubnets()) {
		t.Fatalf("after attach %v", all)
	}
	if d := describeCLB(t, e, "web"); !slices.Equal(d.AvailabilityZones, []string{region + "a", region + "b", region + "c"}) {
		t.Fatalf("zones %v", d.AvailabilityZones)
	}
}

func TestClassicTags(t *testing.T) {
	e := newCLBEnv(t)
	createCLB(t, e, "web")
	createCLB(t, e, "api")
	tag := func(k, v string) clbtypes.Tag { return clbtypes.Tag{Key: aws.String(k), Value: aws.String(v)} }

	must[*elb.AddTagsOutput](t)(e.clb.AddTags(ctx(), &elb.AddTagsInput{LoadBalancerNames: []string{"web"}, Tags: []clbtypes.Tag{tag("team", "a"), tag("tmp", "x")}}))
	must[*elb.AddTagsOutput](t)(e.clb.AddTags(ctx(), &elb.AddTagsInput{LoadBalancerNames: []string{"web"}, Tags: []clbtypes.Tag{tag("team", "b")}}))
	must[*elb.RemoveTagsOutput](t)(e.clb.RemoveTags(ctx(), &elb.RemoveTagsInput{LoadBalancerNames: []string{"web"}, Tags: []clbtypes.TagKeyOnly{{Key: aws.String("tmp")}}}))
	out := must[*elb.DescribeTagsOutput](t)(e.clb.DescribeTags(ctx(), &elb.DescribeTagsInput{LoadBalancerNames: []string{"web", "api"}}))
	var got []string
	for _, d := range out.TagDescriptions {
		for _, tg := range d.Tags {
			got = append(got, fmt.Sprintf("%s:%s=%s", aws.ToString(d.LoadBalancerName), aws.ToString(tg.Key), aws.ToString(tg.Value)))
		}
	}
	want := []string{
		"web:kubernetes.io/cluster/test=owned", "web:kubernetes.io/service-name=default/web", "web:team=b",
		"api:kubernetes.io/cluster/test=owned", "api:kubernetes.io/service-name=default/web",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("tags %v", got)
	}
	// Tags reach the inventory the leak checks read.
	for _, r := range e.srv.Resources() {
		if r.ID == "web" && r.Tags["team"] != "b" {
			t.Fatalf("inventory tags %v", r.Tags)
		}
	}

	_, err := e.clb.AddTags(ctx(), &elb.AddTagsInput{LoadBalancerNames: []string{"web"}, Tags: []clbtypes.Tag{tag("k", "1"), tag("k", "2")}})
	wantTyped[*clbtypes.DuplicateTagKeysException](t, err)
	var many []clbtypes.Tag
	for i := range 48 { // the load balancer has 3 already: 51 > 50
		many = append(many, tag(fmt.Sprintf("k%d", i), "v"))
	}
	_, err = e.clb.AddTags(ctx(), &elb.AddTagsInput{LoadBalancerNames: []string{"web"}, Tags: many})
	wantTyped[*clbtypes.TooManyTagsException](t, err)
	must[*elb.AddTagsOutput](t)(e.clb.AddTags(ctx(), &elb.AddTagsInput{LoadBalancerNames: []string{"web"}, Tags: many[:47]}))
	_, err = e.clb.AddTags(ctx(), &elb.AddTagsInput{LoadBalancerNames: []string{"missing"}, Tags: []clbtypes.Tag{tag("a", "b")}})
	wantTyped[*clbtypes.AccessPointNotFoundException](t, err)
	_, err = e.clb.AddTags(ctx(), &elb.AddTagsInput{LoadBalancerNames: []string{"web", "api"}, Tags: []clbtypes.Tag{tag("a", "b")}})
	wantCode(t, err, "ValidationError")
	_, err = e.clb.DescribeTags(ctx(), &elb.DescribeTagsInput{LoadBalancerNames: slices.Repeat([]string{"web"}, 21)})
	wantCode(t, err, "ValidationError")
	_, err = e.clb.DescribeTags(ctx(), &elb.DescribeTagsInput{LoadBalancerNames: []string{"web", "missing"}})
	wantCode(t, err, "LoadBalancerNotFound")
	in := clbInput(e, "tagged")
	in.Tags = append(in.Tags, append(many, tag("one-too-many", "v"))...) // 2 + 48 + 1
	_, err = e.clb.CreateLoadBalancer(ctx(), in)
	wantCode(t, err, "TooManyTags")
}
