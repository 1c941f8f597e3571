package aws

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/cloud-provider/api"

	"github.com/multicloud-ccm/multicloud-ccm/providers/inventory"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// nodeGroupCIDRRules are the node security group's CIDR rules, as
// "<proto> <from>-<to> <cidr> <description>", sorted.
func (e *invEnv) nodeGroupCIDRRules() []string {
	e.t.Helper()
	out, err := e.api.ec2.DescribeSecurityGroups(e.ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{e.fx.NodeSecurityGroupID}})
	if err != nil {
		e.t.Fatal(err)
	}
	var rules []string
	for _, p := range out.SecurityGroups[0].IpPermissions {
		for _, r := range p.IpRanges {
			rules = append(rules, fmt.Sprintf("%s %d-%d %s %s", aws.ToString(p.IpProtocol), aws.ToInt32(p.FromPort), aws.ToInt32(p.ToPort), aws.ToString(r.CidrIp), aws.ToString(r.Description)))
		}
	}
	slices.Sort(rules)
	return rules
}

// TestUpstreamNLBsDeletedAtOnce: adopted NLBs (no security group) share
// the node group's MTU rule. Deleted by as many workers at once, with
// revocations slow enough that every worker's first read comes before
// the others' writes, they leave no rule behind: the MTU rule is decided
// under the group's lock from a read after the other writes. Before, each
// worker saw the others' client rules and kept it (issue 32).
func TestUpstreamNLBsDeletedAtOnce(t *testing.T) {
	e := newInvEnv(t)
	var svcs []*v1.Service
	for i := range 4 {
		svc := nlbService(fmt.Sprintf("up-%d", i), nil, tcpPort(80, 30080+int32(i)))
		e.makeUpstreamNLB(svc, fmt.Sprintf("k8s-default-up%d-012345678%d", i, i))
		e.ensure(svc, e.nodes)
		svcs = append(svcs, svc)
	}
	before := e.nodeGroupCIDRRules()
	if !slices.Contains(before, "icmp 3-4 0.0.0.0/0 "+upstreamNLBMTURule) {
		t.Fatalf("no MTU rule after adoption: %v", before)
	}
	if err := e.srv.SetFault(cloudsim.FaultSpec{Op: "ec2:RevokeSecurityGroupIngress", Latency: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, svc := range svcs {
		wg.Go(func() {
			for range 3 {
				err := e.typed.EnsureLoadBalancerDeleted(e.ctx, "kubernetes", svc)
				var re *api.RetryError
				if errors.As(err, &re) {
					continue
				}
				if err != nil {
					t.Errorf("EnsureLoadBalancerDeleted(%s): %v", svc.Name, err)
				}
				return
			}
		})
	}
	wg.Wait()
	if left := e.nodeGroupCIDRRules(); len(left) != 0 {
		t.Errorf("rules left in the node group: %v", left)
	}
	if left := e.owned(); len(left) != 0 {
		t.Errorf("parts left: %+v", left)
	}
}

// TestUnneededMTURuleIsAnOrphan: an MTU rule no client rule needs (left
// by an older version, or by hand) is listed as an unneeded shared part
// and goes as an orphan; while an adopted NLB's client rule needs it, it
// is not listed, and deleting a stale listing of it keeps it.
func TestUnneededMTURuleIsAnOrphan(t *testing.T) {
	e := newInvEnv(t)
	authorize := func() {
		t.Helper()
		if _, err := e.api.ec2.AuthorizeSecurityGroupIngress(e.ctx, &ec2.AuthorizeSecurityGroupIngressInput{
			GroupId: aws.String(e.fx.NodeSecurityGroupID), IpPermissions: permissions([]sgRule{{proto: "icmp", from: 3, to: 4, cidr: "0.0.0.0/0"}}, upstreamNLBMTURule),
		}); err != nil {
			t.Fatal(err)
		}
	}
	authorize()
	var unneeded []string
	var stale []inventory.Owned
	for _, o := range e.owned() {
		if o.Unneeded {
			unneeded = append(unneeded, o.ID)
			stale = append(stale, o)
		}
	}
	want := e.fx.NodeSecurityGroupID + " icmp 3 4 0.0.0.0/0"
	if !slices.Equal(unneeded, []string{want}) {
		t.Fatalf("unneeded parts %v, want [%s]", unneeded, want)
	}

	// An NLB adopted since needs it: the stale listing deletes nothing.
	svc := nlbService("up", nil, tcpPort(80, 30080))
	e.makeUpstreamNLB(svc, "k8s-default-up-0123456789")
	e.ensure(svc, e.nodes)
	for _, o := range e.owned() {
		if o.Unneeded {
			t.Errorf("listed as unneeded while an NLB needs it: %+v", o)
		}
	}
	if err := e.inv.DeleteOrphan(e.ctx, stale[0]); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(e.nodeGroupCIDRRules(), "icmp 3-4 0.0.0.0/0 "+upstreamNLBMTURule) {
		t.Error("a stale listing deleted the MTU rule an adopted NLB needs")
	}

	// Once the NLB is gone, so is the rule; made again by hand, it is an
	// orphan again and goes.
	e.deleteAll(svc)
	authorize()
	for _, o := range e.owned() {
		if err := e.inv.DeleteOrphan(e.ctx, o); err != nil {
			t.Errorf("DeleteOrphan(%s): %v", o.ID, err)
		}
	}
	if left := e.nodeGroupCIDRRules(); len(left) != 0 {
		t.Errorf("rules left in the node group: %v", left)
	}
}

// TestAdoptedNLBKeepsItsTags: adopting an NLB the upstream CCM made, and
// syncing it again, writes no tag on it (the switch writes only what
// serving needs: its target groups are found by its listeners, so no
// record of them is kept), and a port change that makes a target group
// records it first, as for every NLB of ours.
func TestAdoptedNLBKeepsItsTags(t *testing.T) {
	e := newInvEnv(t)
	svc := nlbService("up", nil, tcpPort(80, 30080))
	e.makeUpstreamNLB(svc, "k8s-default-up-0123456789")
	tagsOf := func() map[string]string {
		t.Helper()
		st, err := e.lb.load(e.ctx, svc, true)
		if err != nil || st.lb == nil {
			t.Fatalf("load: %v", err)
		}
		return st.lbTags
	}
	before := tagsOf()
	e.srv.ResetCalls()
	e.ensure(svc, e.nodes)
	e.ensure(svc, e.nodes)
	if n := e.srv.CallCount("elbv2:AddTags"); n != 0 {
		t.Errorf("adoption wrote tags %d times", n)
	}
	if got := tagsOf(); !maps.Equal(got, before) {
		t.Errorf("tags after adoption %v, were %v", got, before)
	}
	svc.Spec.Ports = []v1.ServicePort{tcpPort(8080, 30081)}
	e.ensure(svc, e.nodes)
	if rec := parseRecord(tagsOf()); len(rec) != 1 {
		t.Errorf("after a port change the record is %v, want the new target group", rec)
	}
	e.deleteAll(svc)
}
