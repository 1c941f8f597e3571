package aws

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"k8s.io/cloud-provider/api"
)

func TestParseUserGroups(t *testing.T) {
	for _, tc := range []struct {
		ann     map[string]string
		want    userGroups
		wantErr string
	}{
		{ann: nil},
		{ann: map[string]string{string(annotationSecurityGroups): " "}},
		{ann: map[string]string{string(annotationSecurityGroups): "sg-0123456789abcdef0, sg-01234567", string(annotationExtraSecurityGroups): "sg-89abcdef"},
			want: userGroups{replace: []string{"sg-0123456789abcdef0", "sg-01234567"}, extra: []string{"sg-89abcdef"}}},
		{ann: map[string]string{string(annotationExtraSecurityGroups): "sg-zz"}, wantErr: string(annotationExtraSecurityGroups)},
		{ann: map[string]string{string(annotationSecurityGroups): "sg-01234567,,sg-89abcdef"}, wantErr: "empty entry"},
	} {
		got, err := parseUserGroups(lbService(tc.ann))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: error %v, want one naming %q", tc.ann, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got.replace, tc.want.replace) || !slices.Equal(got.extra, tc.want.extra) {
			t.Errorf("%v: %+v %v, want %+v", tc.ann, got, err, tc.want)
		}
	}
	g := userGroups{replace: []string{"sg-a"}, extra: []string{"sg-b", "sg-a"}}
	if got := g.groups("sg-own"); !slices.Equal(got, []string{"sg-a", "sg-b"}) {
		t.Errorf("groups = %v", got)
	}
	if got := (userGroups{extra: []string{"sg-b"}}).groups("sg-own"); !slices.Equal(got, []string{"sg-own", "sg-b"}) {
		t.Errorf("groups with ours = %v", got)
	}
}

// userGroup makes a security group as a user would, in the cluster VPC.
func (e *lbEnv) userGroup(name string) string {
	e.t.Helper()
	id, err := e.emu.CreateSecurityGroup(e.fx.VPCID, name, "the user's", nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

func (e *lbEnv) groupByName(name string) *ec2types.SecurityGroup {
	e.t.Helper()
	sg, err := e.lb.findSecurityGroupNamed(e.ctx, name, e.fx.VPCID)
	if err != nil {
		e.t.Fatal(err)
	}
	return sg
}

func (e *lbEnv) ingressCount(id string) int {
	e.t.Helper()
	out, err := e.api.ec2.DescribeSecurityGroups(e.ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{id}})
	if err != nil {
		e.t.Fatal(err)
	}
	return len(out.SecurityGroups[0].IpPermissions)
}

// retrying calls f until it stops asking for a retry, as the service
// controller would, while AWS releases a detached group.
func retrying(t *testing.T, f func() error) {
	t.Helper()
	for range 5 {
		err := f()
		var re *api.RetryError
		if errors.As(err, &re) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatal("kept asking to retry")
}

// The user's groups on an NLB: they replace ours (none is made, one made
// before goes), extra ones are added, the nodes admit the first of the
// user's, the user's groups are never changed, and deleting the Service
// leaves them with no rule of ours.
func TestNLBUserSecurityGroups(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(2, e.fx.NodeSecurityGroupID)
	user, extra := e.userGroup("user-lb"), e.userGroup("user-extra")
	svc := lbService(map[string]string{string(annotationSecurityGroups): user, string(annotationExtraSecurityGroups): extra})
	e.ensure(svc, nodes)
	lbOf := func() []string {
		out, err := e.api.elbv2.DescribeLoadBalancers(e.ctx, &elbv2.DescribeLoadBalancersInput{Names: []string{loadBalancerName(lbTestCluster, svc)}})
		if err != nil {
			t.Fatal(err)
		}
		return out.LoadBalancers[0].SecurityGroups
	}
	if got := lbOf(); !slices.Equal(got, []string{user, extra}) {
		t.Errorf("NLB security groups %v, want the user's %v", got, []string{user, extra})
	}
	if sg := e.groupByName(securityGroupName(lbTestCluster, svc)); sg != nil {
		t.Errorf("our own group %s was made although the user's replace it", aws.ToString(sg.GroupId))
	}
	if got := e.nodeRules(user)[e.fx.NodeSecurityGroupID]; !slices.Equal(got, []string{"tcp/30080"}) {
		t.Errorf("node rules from the user's group: %v", got)
	}
	if n := e.ingressCount(user); n != 0 {
		t.Errorf("the user's group got %d ingress rules; it is never changed", n)
	}

	// Without the replacing annotation: our group, next to the extra one;
	// the nodes admit ours and no longer the user's.
	delete(svc.Annotations, string(annotationSecurityGroups))
	e.ensure(svc, nodes)
	own := e.groupByName(securityGroupName(lbTestCluster, svc))
	if own == nil {
		t.Fatal("no own group after the user's groups were dropped")
	}
	if got := lbOf(); !slices.Equal(got, []string{aws.ToString(own.GroupId), extra}) {
		t.Errorf("NLB security groups %v, want ours and the extra one", got)
	}
	if got := e.nodeRules(user); len(got) != 0 {
		t.Errorf("node rules from the user's group left: %v", got)
	}
	if got := e.nodeRules(aws.ToString(own.GroupId))[e.fx.NodeSecurityGroupID]; !slices.Equal(got, []string{"tcp/30080"}) {
		t.Errorf("node rules from our group: %v", got)
	}

	// Back to the user's: ours goes.
	svc.Annotations[string(annotationSecurityGroups)] = user
	retrying(t, func() error { _, err := e.lb.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes); return err })
	if sg := e.groupByName(securityGroupName(lbTestCluster, svc)); sg != nil {
		t.Errorf("our group %s is left after the user's replaced it", aws.ToString(sg.GroupId))
	}

	retrying(t, func() error { return e.lb.EnsureLoadBalancerDeleted(e.ctx, "kubernetes", svc) })
	for _, id := range []string{user, extra} {
		if got := e.nodeRules(id); len(got) != 0 {
			t.Errorf("rules from %s left after deletion: %v", id, got)
		}
		if n := e.ingressCount(id); n != 0 {
			t.Errorf("group %s changed", id)
		}
	}
	if left := e.tagged(svc); len(left) != 0 {
		t.Errorf("left after deletion: %v", left)
	}
}

// A group that does not exist is an error naming the annotations, before
// anything is made.
func TestUserSecurityGroupMissing(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(1, e.fx.NodeSecurityGroupID)
	svc := lbService(map[string]string{string(annotationExtraSecurityGroups): "sg-0123456789abcdef0"})
	_, err := e.lb.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes)
	if err == nil || !strings.Contains(err.Error(), string(annotationExtraSecurityGroups)) {
		t.Fatalf("EnsureLoadBalancer: %v, want an error naming the annotation", err)
	}
	if left := e.tagged(svc); len(left) != 0 {
		t.Errorf("made despite the error: %v", left)
	}
}

// The same on a Classic ELB: exactly the user's groups, upstream's
// k8s-elb- group not made, the nodes admitting the first user group.
func TestClassicUserSecurityGroups(t *testing.T) {
	e := newCLBEnv(t)
	nodes := e.nodes(2, e.fx.NodeSecurityGroupID)
	user, extra := e.userGroup("user-lb"), e.userGroup("user-extra")
	svc := lbService(map[string]string{string(annotationSecurityGroups): user})
	e.ensure(svc, nodes)
	if got := e.clb(svc).SecurityGroupIDs; !slices.Equal(got, []string{user}) {
		t.Errorf("Classic ELB groups %v, want the user's", got)
	}
	if sg := e.groupByName(clbSecurityGroupName(svc)); sg != nil {
		t.Errorf("upstream's k8s-elb- group was made although the user's replace it")
	}
	if got := e.nodeRules(user)[e.fx.NodeSecurityGroupID]; !slices.Equal(got, []string{"tcp/30080"}) {
		t.Errorf("node rules from the user's group: %v", got)
	}

	// Ours plus an extra one.
	svc.Annotations = map[string]string{string(annotationExtraSecurityGroups): extra}
	e.ensure(svc, nodes)
	own := e.groupByName(clbSecurityGroupName(svc))
	if own == nil {
		t.Fatal("no k8s-elb- group without the user's")
	}
	if got := e.clb(svc).SecurityGroupIDs; !sameGroups(got, []string{aws.ToString(own.GroupId), extra}) {
		t.Errorf("Classic ELB groups %v, want ours and the extra one", got)
	}
	if got := e.nodeRules(user); len(got) != 0 {
		t.Errorf("node rules from the user's group left: %v", got)
	}
	// A node set change keeps the rules on ours, not on the extra group.
	more := append(nodes, e.nodes(1, e.fx.NodeSecurityGroupID)...)
	if err := e.typed.UpdateLoadBalancer(e.ctx, "kubernetes", svc, more); err != nil {
		t.Fatal(err)
	}
	if got := e.nodeRules(extra); len(got) != 0 {
		t.Errorf("node rules from the extra group: %v", got)
	}
	e.deleteAll(svc)
	if got := e.nodeRules(extra); len(got) != 0 {
		t.Errorf("rules from %s left after deletion: %v", extra, got)
	}
	if left := e.tagged(svc); len(left) != 0 {
		t.Errorf("left after deletion: %v", left)
	}
}
