package aws

import (
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cloud-provider/api"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/providers/compose"
	"github.com/multicloud-ccm/multicloud-ccm/providers/inventory"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

// invEnv is a Cloud's load balancers (defaultType classic) and its
// inventory on one emulated account with two nodes.
type invEnv struct {
	*clbEnv
	inv   *lbInventory
	nodes []*v1.Node
}

func newInvEnv(t *testing.T) *invEnv {
	t.Helper()
	e := newCLBEnv(t)
	return &invEnv{clbEnv: e, inv: newInventory(e.lb), nodes: e.nodes(2)}
}

// nlbService is an NLB Service named name.
func nlbService(name string, ann map[string]string, ports ...v1.ServicePort) *v1.Service {
	a := map[string]string{string(annotationLBType): lbTypeNLB}
	maps.Copy(a, ann)
	svc := lbService(a, ports...)
	svc.Name, svc.UID = name, testUID("n", name)
	return svc
}

// classicService is a Classic ELB Service (the env's default type).
func classicService(name string, ports ...v1.ServicePort) *v1.Service {
	svc := lbService(nil, ports...)
	svc.Name, svc.UID = name, testUID("c", name)
	return svc
}

// testUID is a UID of the real shape, distinct per kind and name.
func testUID(kind, name string) types.UID {
	h := fnv.New64a()
	h.Write([]byte(kind + "/" + name))
	x := fmt.Sprintf("%016x%016x", h.Sum64(), h.Sum64()^0x5bd1e995)
	return types.UID(x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32])
}

func key(svc *v1.Service) types.NamespacedName {
	return types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
}

func (e *invEnv) owned() []inventory.Owned {
	e.t.Helper()
	out, err := e.inv.Owned(e.ctx)
	if err != nil {
		e.t.Fatalf("Owned: %v", err)
	}
	return out
}

// repair is what drift repair does: Forget, then ensure.
func (e *invEnv) repair(svc *v1.Service) {
	e.t.Helper()
	e.inv.Forget(key(svc))
	e.ensure(svc, e.nodes)
}

func of(items []inventory.Owned, svc *v1.Service) []inventory.Owned {
	var out []inventory.Owned
	for _, o := range items {
		if o.Service == key(svc) {
			out = append(out, o)
		}
	}
	return out
}

func ofKind(items []inventory.Owned, kind string) []inventory.Owned {
	var out []inventory.Owned
	for _, o := range items {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

// fingerprint is the parts without their IDs, which a re-created part
// changes: what drift repair compares.
func fingerprint(items []inventory.Owned) []string {
	out := make([]string, len(items))
	for i, o := range items {
		out[i] = fmt.Sprintf("%d %s %s %q kept=%v: %s", o.Order, o.Kind, o.Service, o.Name, o.Kept, o.Detail)
	}
	sort.Strings(out)
	return out
}

func diff(a, b []string) (gone, added []string) {
	for _, s := range a {
		if !slices.Contains(b, s) {
			gone = append(gone, s)
		}
	}
	for _, s := range b {
		if !slices.Contains(a, s) {
			added = append(added, s)
		}
	}
	return gone, added
}

// resourceCounts counts the emulator's resources by kind: a repair that
// makes something twice shows here.
func (e *invEnv) resourceCounts() map[string]int {
	out := map[string]int{}
	for _, r := range e.srv.Resources() {
		out[r.Kind]++
	}
	return out
}

// resourceSet is every resource of the emulator by kind and ID.
func (e *invEnv) resourceSet() []string {
	var out []string
	for _, r := range e.srv.Resources() {
		out = append(out, r.Kind+" "+r.ID)
	}
	sort.Strings(out)
	return out
}

func logParts(t *testing.T, items []inventory.Owned) {
	t.Helper()
	for _, o := range items {
		t.Logf("  %d %-22s %-16s %-40s kept=%-5v %s", o.Order, o.Kind, o.Service, o.Name, o.Kept, o.Detail)
	}
}

// TestInventoryListsEachPart: an NLB Service and a Classic ELB Service,
// made by EnsureLoadBalancer, are listed part by part with their Service
// and what their ensure set; each tagged resource the emulator holds for
// them is among the parts.
func TestInventoryListsEachPart(t *testing.T) {
	e := newInvEnv(t)
	web := nlbService("web", nil, tcpPort(80, 30080), udpPort(53, 30053))
	legacy := classicService("legacy", tcpPort(80, 30081))
	e.ensure(web, e.nodes)
	e.ensure(legacy, e.nodes)
	items := e.owned()
	logParts(t, items)

	node := e.fx.NodeSecurityGroupID
	lbName, sgName := loadBalancerName(lbTestCluster, web), securityGroupName(lbTestCluster, web)
	tg := func(p int32, proto elbv2types.ProtocolEnum) string {
		return targetGroupName(lbTestCluster, web, portKey{port: p, proto: proto})
	}
	want := []string{
		fmt.Sprintf("0 listener default/web %q kept=false: port 53 -> %s", lbName+":53", tg(53, "UDP")),
		fmt.Sprintf("0 listener default/web %q kept=false: port 80 -> %s", lbName+":80", tg(80, "TCP")),
		fmt.Sprintf("1 network load balancer default/web %q kept=false: internet-facing; security groups %s", lbName, sgName),
		fmt.Sprintf("2 target group default/web %q kept=false: TCP:30080; health TCP traffic-port every 30s timeout 10s healthy 3 unhealthy 3; listener of %s", tg(80, "TCP"), lbName),
		fmt.Sprintf("2 target group default/web %q kept=false: UDP:30053; health TCP traffic-port every 30s timeout 10s healthy 3 unhealthy 3; listener of %s", tg(53, "UDP"), lbName),
		fmt.Sprintf("3 security group rule default/web %q kept=false: tcp 30080 from %s into %s", lbTestCluster+"-node", sgName, node),
		fmt.Sprintf("3 security group rule default/web %q kept=false: udp 30053 from %s into %s", lbTestCluster+"-node", sgName, node),
		fmt.Sprintf("4 security group default/web %q kept=false: ingress tcp 80 from 0.0.0.0/0, udp 53 from 0.0.0.0/0", sgName),
	}
	slices.Sort(want)
	if got := fingerprint(of(items, web)); !slices.Equal(got, want) {
		gone, added := diff(want, got)
		t.Errorf("NLB parts: missing %q\nunexpected %q", gone, added)
	}

	clbName, clbSG := classicName(legacy), clbSecurityGroupName(legacy)
	subnets := slices.Sorted(maps.Values(e.fx.PublicSubnets))
	want = []string{
		fmt.Sprintf("1 classic load balancer default/legacy %q kept=false: internet-facing; listeners TCP:80->TCP:30081; health TCP:30081 every 10s timeout 5s healthy 2 unhealthy 6; instances %s; security groups %s; subnets %s",
			clbName, strings.Join(nodeIDs(e.nodes), ","), clbSG, strings.Join(subnets, ",")),
		fmt.Sprintf("3 security group rule default/legacy %q kept=false: tcp 30081 from %s into %s", lbTestCluster+"-node", clbSG, node),
		fmt.Sprintf("4 security group default/legacy %q kept=false: ingress icmp 3-4 from 0.0.0.0/0, tcp 80 from 0.0.0.0/0", clbSG),
	}
	slices.Sort(want)
	if got := fingerprint(of(items, legacy)); !slices.Equal(got, want) {
		gone, added := diff(want, got)
		t.Errorf("Classic ELB parts: missing %q\nunexpected %q", gone, added)
	}
	if n := len(of(items, web)) + len(of(items, legacy)); n != len(items) {
		t.Errorf("%d parts belong to neither Service", len(items)-n)
	}

	// Every resource tagged for either Service is a part, by its ID.
	ids := map[string]bool{}
	for _, o := range items {
		ids[o.ID] = true
	}
	for _, svc := range []*v1.Service{web, legacy} {
		for kind, rs := range e.tagged(svc) {
			for _, r := range rs {
				if kind != cloudsimaws.KindListener && !ids[r.ID] {
					t.Errorf("%s %s (%s) of %s is not listed", kind, r.ID, r.Name, svc.Name)
				}
			}
		}
	}
	// A listener's ID names its load balancer and target group.
	for _, o := range ofKind(items, partListener) {
		lb, tgARN, _ := strings.Cut(o.ID, listenerIDSep)
		if !ids[lb] || !ids[tgARN] {
			t.Errorf("listener %s: ID %q does not name listed parts", o.Name, o.ID)
		}
	}
}

// TestInventoryOwnsOnlyThisCluster: another cluster's load balancers in
// the same account and VPC (same Service names, node rules in the same
// node group), and resources carrying our names without our tags, are
// not listed.
func TestInventoryOwnsOnlyThisCluster(t *testing.T) {
	e := newInvEnv(t)
	web := nlbService("web", nil, tcpPort(80, 30080))
	legacy := classicService("legacy", tcpPort(80, 30081))
	e.ensure(web, e.nodes)
	e.ensure(legacy, e.nodes)
	before := fingerprint(e.owned())

	// The other cluster's subnets are configured: the fixture's are tagged for ours.
	sec := *e.lb.cfg
	sec.Subnets.Public = slices.Sorted(maps.Values(e.fx.PublicSubnets))
	other := newTypedLoadBalancers(newLoadBalancers(e.api, &sec, "othercluster", e.lb.in.(*instances), clock.RealClock{}), defaultTypeClassic)
	otherLegacy := classicService("legacy2", tcpPort(80, 30082))
	for _, svc := range []*v1.Service{nlbService("web", nil, tcpPort(80, 30083)), otherLegacy} {
		if _, err := other.EnsureLoadBalancer(e.ctx, "kubernetes", svc, e.nodes); err != nil {
			t.Fatal(err)
		}
	}
	// Our names, no tags: nothing the backend would touch.
	stray := nlbService("stray", nil)
	if _, err := e.api.elbv2.CreateLoadBalancer(e.ctx, &elbv2.CreateLoadBalancerInput{
		Name: aws.String(loadBalancerName(lbTestCluster, stray)), Type: elbv2types.LoadBalancerTypeEnumNetwork,
		Subnets: slices.Collect(maps.Values(e.fx.PublicSubnets)),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.api.elbv2.CreateTargetGroup(e.ctx, &elbv2.CreateTargetGroupInput{
		Name: aws.String(targetGroupName(lbTestCluster, stray, portKey{80, "TCP"})), Protocol: "TCP", Port: aws.Int32(30099), VpcId: aws.String(e.fx.VPCID),
	}); err != nil {
		t.Fatal(err)
	}
	// Our Service's hash in a target group tagged for another cluster.
	if _, err := e.api.elbv2.CreateTargetGroup(e.ctx, &elbv2.CreateTargetGroupInput{
		Name: aws.String(targetGroupName(lbTestCluster, web, portKey{81, "TCP"})), Protocol: "TCP", Port: aws.Int32(30098), VpcId: aws.String(e.fx.VPCID),
		Tags: []elbv2types.Tag{{Key: aws.String(clusterTagKey("othercluster")), Value: aws.String(clusterTagOwned)}, {Key: aws.String(serviceNameTagKey), Value: aws.String("default/web")}},
	}); err != nil {
		t.Fatal(err)
	}

	items := e.owned()
	if after := fingerprint(items); !slices.Equal(after, before) {
		gone, added := diff(before, after)
		t.Errorf("another cluster's resources changed the listing: missing %q\nunexpected %q", gone, added)
	}
	ids := map[string]bool{}
	for _, o := range items {
		ids[o.ID] = true
	}
	for _, r := range e.srv.Resources() {
		if r.Tags[clusterTagKey("othercluster")] != "" && ids[r.ID] {
			t.Errorf("%s %s of the other cluster is listed", r.Kind, r.ID)
		}
	}
	if ids[classicName(otherLegacy)] {
		t.Errorf("the other cluster's Classic ELB is listed")
	}

	// Our tags on an NLB named otherwise (an older version's, a tool's)
	// are our mark: it is listed for the Service they name, and goes as
	// an orphan.
	leftover, err := e.api.elbv2.CreateLoadBalancer(e.ctx, &elbv2.CreateLoadBalancerInput{
		Name: aws.String("k8s-leftover"), Type: elbv2types.LoadBalancerTypeEnumNetwork, Subnets: slices.Collect(maps.Values(e.fx.PublicSubnets)),
		Tags: []elbv2types.Tag{{Key: aws.String(clusterTagKey(lbTestCluster)), Value: aws.String(clusterTagOwned)}, {Key: aws.String(serviceNameTagKey), Value: aws.String("default/gone")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	gone := ofKind(of(e.owned(), nlbService("gone", nil)), partNLB)
	if len(gone) != 1 || gone[0].ID != aws.ToString(leftover.LoadBalancers[0].LoadBalancerArn) {
		t.Fatalf("the leftover NLB: %+v", gone)
	}
	if err := e.inv.DeleteOrphan(e.ctx, gone[0]); err != nil {
		t.Fatal(err)
	}
	if after := fingerprint(e.owned()); !slices.Equal(after, before) {
		gone, added := diff(before, after)
		t.Errorf("after deleting the leftover: missing %q\nunexpected %q", gone, added)
	}
}

// TestInventoryKeepsUserResources: the security groups and Elastic IPs a
// Service names by annotation are listed as Kept, and DeleteOrphan
// refuses them.
func TestInventoryKeepsUserResources(t *testing.T) {
	e := newInvEnv(t)
	extra := e.userGroup("users-extra")
	replace := e.userGroup("users-own")
	var allocs []string
	for range e.fx.PublicSubnets {
		id, _, err := e.emu.AllocateAddress(map[string]string{"owner": "user"})
		if err != nil {
			t.Fatal(err)
		}
		allocs = append(allocs, id)
	}
	web := nlbService("web", map[string]string{
		string(annotationExtraSecurityGroups): extra,
		string(annotationEIPAllocations):      strings.Join(allocs, ","),
	}, tcpPort(80, 30080))
	api := nlbService("api", map[string]string{string(annotationSecurityGroups): replace}, tcpPort(443, 30443))
	e.ensure(web, e.nodes)
	e.ensure(api, e.nodes)
	items := e.owned()
	logParts(t, items)

	kept := map[string]inventory.Owned{}
	for _, o := range items {
		if o.Kept {
			kept[o.ID] = o
			if o.Order != orderKept {
				t.Errorf("kept %s %s has order %d", o.Kind, o.ID, o.Order)
			}
		}
	}
	for _, id := range append([]string{extra}, allocs...) {
		if o, ok := kept[id]; !ok || o.Service != key(web) {
			t.Errorf("%s: kept part %+v, want one of default/web", id, o)
		}
	}
	if o, ok := kept[replace]; !ok || o.Service != key(api) || o.Kind != partSecurityGroup {
		t.Errorf("%s: kept part %+v, want default/api's security group", replace, o)
	}
	if len(kept) != 2+len(allocs) {
		t.Errorf("%d kept parts, want %d", len(kept), 2+len(allocs))
	}
	nlb := ofKind(of(items, web), partNLB)
	if want := "internet-facing; security groups " + securityGroupName(lbTestCluster, web) + "," + extra; len(nlb) != 1 || nlb[0].Detail != want {
		t.Errorf("NLB %+v, want detail %q", nlb, want)
	}
	// The node rules admitting the user's group are the Service's.
	if rules := ofKind(of(items, api), partRule); len(rules) != 1 || !strings.Contains(rules[0].Detail, "tcp 30443 from "+replace) {
		t.Errorf("rules of api: %+v", rules)
	}
	for _, o := range kept {
		if err := e.inv.DeleteOrphan(e.ctx, o); err == nil {
			t.Errorf("DeleteOrphan(%s %s) of a kept part succeeded", o.Kind, o.ID)
		}
	}
	if e.groupByName("users-extra") == nil || len(e.emu.Addresses()) != len(allocs) {
		t.Error("a kept part was deleted")
	}
}

// TestInventoryDriftNLB: an NLB's listener, node rule, listener rule or
// the whole load balancer deleted out of band changes the listing, and
// Forget + ensure (drift repair) restores exactly what was there, making
// nothing twice. A deregistered target is not seen by the listing, but a
// repair registers it again.
func TestInventoryDriftNLB(t *testing.T) {
	e := newInvEnv(t)
	web := nlbService("web", nil, tcpPort(80, 30080), tcpPort(443, 30443))
	e.ensure(web, e.nodes)
	base := fingerprint(of(e.owned(), web))
	counts := e.resourceCounts()
	lbName := loadBalancerName(lbTestCluster, web)

	check := func(what string, changed func(gone, added []string)) {
		t.Helper()
		now := fingerprint(of(e.owned(), web))
		gone, added := diff(base, now)
		t.Logf("%s: listing lost %q, gained %q", what, gone, added)
		changed(gone, added)
		e.repair(web)
		if after := fingerprint(of(e.owned(), web)); !slices.Equal(after, base) {
			gone, added := diff(base, after)
			t.Errorf("%s: after Forget + ensure, missing %q, unexpected %q", what, gone, added)
		}
		if got := e.resourceCounts(); !maps.Equal(got, counts) {
			t.Errorf("%s: after Forget + ensure the emulator holds %v, before %v", what, got, counts)
		}
	}
	seen := func(gone, added []string) {
		t.Helper()
		if len(gone)+len(added) == 0 {
			t.Error("the listing did not change")
		}
	}

	// A listener.
	v := e.view(web)
	if _, err := e.api.elbv2.DeleteListener(e.ctx, &elbv2.DeleteListenerInput{ListenerArn: v.listeners[443].ListenerArn}); err != nil {
		t.Fatal(err)
	}
	check("listener 443 deleted", func(gone, added []string) {
		seen(gone, added)
		if len(added) != 1 || !strings.Contains(added[0], "no listener") {
			t.Errorf("want the target group of 443 listed without a listener, gained %q", added)
		}
	})

	// A node rule: an ensure without Forget trusts the node rules it
	// confirmed a moment ago.
	v = e.view(web)
	lbSG := aws.ToString(v.sg.GroupId)
	if _, err := e.api.ec2.RevokeSecurityGroupIngress(e.ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(e.fx.NodeSecurityGroupID), IpPermissions: []ec2types.IpPermission{
		{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(30080), ToPort: aws.Int32(30080), UserIdGroupPairs: []ec2types.UserIdGroupPair{{GroupId: aws.String(lbSG)}}},
	}}); err != nil {
		t.Fatal(err)
	}
	e.ensure(web, e.nodes)
	t.Logf("node rules after an ensure without Forget: %v", e.nodeRules(lbSG))
	check("node rule revoked", func(gone, added []string) {
		if len(gone) != 1 || !strings.Contains(gone[0], "tcp 30080 from") || len(added) != 0 {
			t.Errorf("want the node rule gone, lost %q gained %q", gone, added)
		}
	})

	// A rule of the load balancer's own group.
	if _, err := e.api.ec2.RevokeSecurityGroupIngress(e.ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(lbSG), IpPermissions: []ec2types.IpPermission{
		{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(80), ToPort: aws.Int32(80), IpRanges: []ec2types.IpRange{{CidrIp: aws.String("0.0.0.0/0")}}},
	}}); err != nil {
		t.Fatal(err)
	}
	check("listener rule revoked", seen)

	// The whole load balancer: a new one, with a new address.
	oldARN := aws.ToString(v.lb.LoadBalancerArn)
	if _, err := e.api.elbv2.DeleteLoadBalancer(e.ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(oldARN)}); err != nil {
		t.Fatal(err)
	}
	check("load balancer deleted", func(gone, added []string) {
		if len(gone) != 5 || len(added) != 2 {
			t.Errorf("want the NLB and its two listeners gone and both target groups listener-less, lost %q gained %q", gone, added)
		}
	})
	if nlb := ofKind(of(e.owned(), web), partNLB); len(nlb) != 1 || nlb[0].ID == oldARN || nlb[0].Name != lbName {
		t.Errorf("re-created NLB %+v", nlb)
	}

	// A target deregistered by hand: not in the listing (DescribeTargetHealth
	// is per target group), but repaired once drift repair re-ensures.
	v = e.view(web)
	tg := v.listeners[80].DefaultActions[0].TargetGroupArn
	victim := nodeIDs(e.nodes)[0]
	if _, err := e.api.elbv2.DeregisterTargets(e.ctx, &elbv2.DeregisterTargetsInput{TargetGroupArn: tg, Targets: []elbv2types.TargetDescription{{Id: aws.String(victim), Port: aws.Int32(30080)}}}); err != nil {
		t.Fatal(err)
	}
	if now := fingerprint(of(e.owned(), web)); !slices.Equal(now, base) {
		t.Errorf("a deregistered target changed the listing; the comment on lbInventory says it cannot")
	}
	e.repair(web)
	if got, want := e.view(web).targets[targetGroupName(lbTestCluster, web, portKey{80, "TCP"})], targetsOf(nodeIDs(e.nodes), 30080); !slices.Equal(got, want) {
		t.Errorf("targets after Forget + ensure %v, want %v", got, want)
	}
}

// TestInventoryDriftClassic: the same for a Classic ELB, whose listeners
// and instances are in its description.
func TestInventoryDriftClassic(t *testing.T) {
	e := newInvEnv(t)
	legacy := classicService("legacy", tcpPort(80, 30081), tcpPort(443, 30444))
	e.ensure(legacy, e.nodes)
	base := fingerprint(of(e.owned(), legacy))
	counts := e.resourceCounts()
	name := aws.String(classicName(legacy))

	check := func(what string) {
		t.Helper()
		now := fingerprint(of(e.owned(), legacy))
		gone, added := diff(base, now)
		t.Logf("%s: listing lost %q, gained %q", what, gone, added)
		if len(gone)+len(added) == 0 {
			t.Errorf("%s: the listing did not change", what)
		}
		e.repair(legacy)
		if after := fingerprint(of(e.owned(), legacy)); !slices.Equal(after, base) {
			gone, added := diff(base, after)
			t.Errorf("%s: after Forget + ensure, missing %q, unexpected %q", what, gone, added)
		}
		if got := e.resourceCounts(); !maps.Equal(got, counts) {
			t.Errorf("%s: after Forget + ensure the emulator holds %v, before %v", what, got, counts)
		}
	}

	if _, err := e.api.elb.DeleteLoadBalancerListeners(e.ctx, &elb.DeleteLoadBalancerListenersInput{LoadBalancerName: name, LoadBalancerPorts: []int32{443}}); err != nil {
		t.Fatal(err)
	}
	check("listener 443 deleted")
	if _, err := e.api.elb.DeregisterInstancesFromLoadBalancer(e.ctx, &elb.DeregisterInstancesFromLoadBalancerInput{LoadBalancerName: name, Instances: clbInstances(nodeIDs(e.nodes)[:1])}); err != nil {
		t.Fatal(err)
	}
	check("instance deregistered")
	sg := aws.ToString(e.clbSG(legacy).GroupId)
	if _, err := e.api.ec2.RevokeSecurityGroupIngress(e.ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(e.fx.NodeSecurityGroupID), IpPermissions: []ec2types.IpPermission{
		{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(30444), ToPort: aws.Int32(30444), UserIdGroupPairs: []ec2types.UserIdGroupPair{{GroupId: aws.String(sg)}}},
	}}); err != nil {
		t.Fatal(err)
	}
	check("node rule revoked")
	if _, err := e.api.elb.DeleteLoadBalancer(e.ctx, &elb.DeleteLoadBalancerInput{LoadBalancerName: name}); err != nil {
		t.Fatal(err)
	}
	check("load balancer deleted")
}

// TestInventoryNodeRulesFollowNodes: the rules letting an NLB and a
// Classic ELB reach their nodes' groups are marked FollowsNodes, and
// nothing else is; an UpdateLoadBalancer after the last node of a group
// left removes that group's rules and no other part, which is what drift
// repair excuses after an update-only sync.
func TestInventoryNodeRulesFollowNodes(t *testing.T) {
	e := newInvEnv(t)
	other, err := e.emu.CreateSecurityGroup(e.fx.VPCID, "other-nodes", "other node group", map[string]string{e.fx.ClusterTagKey: "owned"})
	if err != nil {
		t.Fatal(err)
	}
	all := append(slices.Clone(e.nodes), e.lbEnv.nodes(1, other)...)
	web := nlbService("web", nil, tcpPort(80, 30080))
	legacy := classicService("legacy", tcpPort(80, 30081))
	e.ensure(web, all)
	e.ensure(legacy, all)
	before := e.owned()
	logParts(t, before)
	into := map[string]int{}
	for _, o := range before {
		if o.FollowsNodes != (o.Kind == partRule) {
			t.Errorf("%s %s (%s): FollowsNodes %v", o.Kind, o.ID, o.Service, o.FollowsNodes)
		}
		if o.Kind == partRule {
			holder, _, _ := parseRuleID(o.ID)
			into[holder]++
		}
	}
	if into[other] != 2 || into[e.fx.NodeSecurityGroupID] != 2 {
		t.Fatalf("node rules by group %v, want 2 in each", into)
	}

	// The other group's node leaves.
	for _, svc := range []*v1.Service{web, legacy} {
		if err := e.typed.UpdateLoadBalancer(e.ctx, "kubernetes", svc, e.nodes); err != nil {
			t.Fatal(err)
		}
	}
	after := e.owned()
	now := map[string]bool{}
	for _, o := range after {
		now[o.Kind+" "+o.ID] = true
	}
	for _, o := range before {
		if now[o.Kind+" "+o.ID] {
			continue
		}
		if holder, _, _ := parseRuleID(o.ID); !o.FollowsNodes || holder != other {
			t.Errorf("the update removed %s %s (%s), which does not follow the nodes", o.Kind, o.ID, o.Detail)
		}
	}
	if n := len(before) - len(after); n != 2 {
		t.Errorf("the update removed %d parts, want the 2 rules into %s", n, other)
	}
}

// TestInventoryDeleteOrphans: DeleteOrphan of every part in Order, with
// the Services gone, leaves the emulator as it was before them (the
// user's group and Elastic IPs stay); a second pass finds everything
// gone and succeeds.
func TestInventoryDeleteOrphans(t *testing.T) {
	e := newInvEnv(t)
	extra := e.userGroup("users-extra")
	var allocs []string
	for range e.fx.PublicSubnets {
		id, _, err := e.emu.AllocateAddress(nil)
		if err != nil {
			t.Fatal(err)
		}
		allocs = append(allocs, id)
	}
	before := e.resourceSet()

	for _, svc := range []*v1.Service{
		nlbService("web", map[string]string{string(annotationExtraSecurityGroups): extra, string(annotationEIPAllocations): strings.Join(allocs, ",")}, tcpPort(80, 30080), udpPort(53, 30053)),
		nlbService("api", nil, tcpPort(443, 30443)),
		classicService("legacy", tcpPort(80, 30081)),
	} {
		e.ensure(svc, e.nodes)
	}
	items := e.owned()
	// Whatever a Service made is found again by the listing, and the
	// deletion order keeps AWS's dependencies.
	deleteAll := func() {
		t.Helper()
		slices.SortStableFunc(items, func(a, b inventory.Owned) int { return a.Order - b.Order })
		for _, o := range items {
			if o.Kept {
				continue
			}
			err := e.inv.DeleteOrphan(e.ctx, o)
			var re *api.RetryError
			if errors.As(err, &re) {
				err = e.inv.DeleteOrphan(e.ctx, o)
			}
			if err != nil {
				t.Errorf("DeleteOrphan(%s %s): %v", o.Kind, o.ID, err)
			}
		}
	}
	deleteAll()
	if after := e.resourceSet(); !slices.Equal(after, before) {
		gone, added := diff(before, after)
		t.Errorf("after deleting the orphans: missing %q, left %q", gone, added)
	}
	if left := e.owned(); len(left) != 0 {
		t.Errorf("Owned after deletion:")
		logParts(t, left)
	}
	// The second pass: a part already gone is found gone by at most one
	// write, its delete answered not-found (cheaper than a read first),
	// with no error and nothing else changed.
	for _, o := range items {
		if o.Kept {
			continue
		}
		e.srv.ResetCalls()
		if err := e.inv.DeleteOrphan(e.ctx, o); err != nil {
			t.Errorf("second pass, DeleteOrphan(%s %s): %v", o.Kind, o.ID, err)
		}
		writes := 0
		for _, n := range e.mutations() {
			writes += n
		}
		if writes > 1 {
			t.Errorf("second pass, DeleteOrphan(%s %s) of a part already gone: %v, want at most one write", o.Kind, o.ID, e.mutations())
		}
	}
	if after := e.resourceSet(); !slices.Equal(after, before) {
		gone, added := diff(before, after)
		t.Errorf("after the second pass: missing %q, left %q", gone, added)
	}
}

// TestInventoryCallsDoNotGrowWithServices: Owned's calls are its
// listings' pages and tag batches, the same for 1 and for 20 Services of
// each kind; nothing is read per load balancer.
func TestInventoryCallsDoNotGrowWithServices(t *testing.T) {
	calls := map[int]map[string]int{}
	for _, n := range []int{1, 20} {
		e := newInvEnv(t)
		for i := range n {
			e.ensure(nlbService(fmt.Sprintf("web%d", i), nil, tcpPort(80, int32(30000+i))), e.nodes)
			e.ensure(classicService(fmt.Sprintf("legacy%d", i), tcpPort(80, int32(31000+i))), e.nodes)
		}
		e.srv.ResetCalls()
		items := e.owned()
		calls[n] = maps.Clone(e.srv.Calls())
		maps.DeleteFunc(calls[n], func(_ string, c int) bool { return c == 0 })
		t.Logf("%d Services of each kind: %d parts, %s", n, len(items), e.callSummary())
		if got := len(ofKind(items, partNLB)) + len(ofKind(items, partClassic)); got != 2*n {
			t.Errorf("%d load balancers listed, want %d", got, 2*n)
		}
	}
	if !maps.Equal(calls[1], calls[20]) {
		t.Errorf("calls for 1 Service %v, for 20 %v", calls[1], calls[20])
	}
	want := map[string]int{
		"elbv2:DescribeLoadBalancers": 1, "elbv2:DescribeTags": 1, "elbv2:DescribeTargetGroups": 1,
		"elb:DescribeLoadBalancers": 1, "elb:DescribeTags": 1, "ec2:DescribeSecurityGroups": 1,
	}
	if !maps.Equal(calls[20], want) {
		t.Errorf("calls %v, want %v", calls[20], want)
	}
}

// TestInventoryPages: with pages of one load balancer and five groups,
// the listing is the same.
func TestInventoryPages(t *testing.T) {
	e := newInvEnv(t)
	for i := range 3 {
		e.ensure(nlbService(fmt.Sprintf("web%d", i), nil, tcpPort(80, int32(30000+i))), e.nodes)
		e.ensure(classicService(fmt.Sprintf("legacy%d", i), tcpPort(80, int32(31000+i))), e.nodes)
	}
	whole := fingerprint(e.owned())
	e.inv.elbPageSize, e.inv.ec2PageSize = 1, 5
	e.srv.ResetCalls()
	if paged := fingerprint(e.owned()); !slices.Equal(paged, whole) {
		gone, added := diff(whole, paged)
		t.Errorf("paged listing: missing %q, unexpected %q", gone, added)
	}
	t.Logf("paged: %s", e.callSummary())
	if n := e.srv.CallCount("elbv2:DescribeLoadBalancers"); n != 3 {
		t.Errorf("%d pages of NLBs, want 3", n)
	}
	if n := e.srv.CallCount("elb:DescribeLoadBalancers"); n != 3 {
		t.Errorf("%d pages of Classic ELBs, want 3", n)
	}
}

// TestInventoryTagsOfDeletedResources: a load balancer deleted between
// the listing and the tag read fails its batch; the others are still read.
func TestInventoryTagsOfDeletedResources(t *testing.T) {
	e := newInvEnv(t)
	a, b := nlbService("a", nil), nlbService("b", nil)
	ca, cb := classicService("ca"), classicService("cb")
	for _, svc := range []*v1.Service{a, b, ca, cb} {
		e.ensure(svc, e.nodes)
	}
	arnA, arnB := aws.ToString(e.view(a).lb.LoadBalancerArn), aws.ToString(e.view(b).lb.LoadBalancerArn)
	if _, err := e.api.elbv2.DeleteLoadBalancer(e.ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(arnB)}); err != nil {
		t.Fatal(err)
	}
	tags, err := e.inv.elbv2Tags(e.ctx, []string{arnA, arnB})
	if err != nil || tags[arnA][serviceNameTagKey] != "default/a" || tags[arnB] != nil {
		t.Errorf("elbv2Tags = %v, %v", tags, err)
	}
	if _, err := e.api.elb.DeleteLoadBalancer(e.ctx, &elb.DeleteLoadBalancerInput{LoadBalancerName: aws.String(classicName(cb))}); err != nil {
		t.Fatal(err)
	}
	ctags, err := e.inv.classicTags(e.ctx, []string{classicName(ca), classicName(cb)})
	if err != nil || ctags[classicName(ca)][serviceNameTagKey] != "default/ca" || ctags[classicName(cb)] != nil {
		t.Errorf("classicTags = %v, %v", ctags, err)
	}
}

// TestInventoryAdoptedUpstreamNLB: an NLB the upstream CCM made (its
// name, no security group) is listed with its upstream-named target
// group and the CIDR node rules naming it, which go before it.
func TestInventoryAdoptedUpstreamNLB(t *testing.T) {
	e := newInvEnv(t)
	svc := nlbService("old", nil, tcpPort(80, 30080))
	svc.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"}
	name, tgName := upstreamNLBName(svc), "k8s-default-old-0123456789"
	e.makeUpstreamNLB(svc, tgName)
	e.ensure(svc, e.nodes)

	items := of(e.owned(), svc)
	logParts(t, items)
	byKind := map[string][]inventory.Owned{}
	for _, o := range items {
		byKind[o.Kind] = append(byKind[o.Kind], o)
	}
	if n := byKind[partNLB]; len(n) != 1 || n[0].Name != name || n[0].Detail != "internet-facing; security groups none" {
		t.Errorf("NLB %+v", n)
	}
	if l := byKind[partListener]; len(l) != 1 || l[0].Detail != "port ? -> "+tgName {
		t.Errorf("listener %+v", l)
	}
	if g := byKind[partTargetGroup]; len(g) != 1 || g[0].Name != tgName {
		t.Errorf("target group %+v", g)
	}
	rules := byKind[partRule]
	if len(rules) == 0 {
		t.Fatal("no node rules listed")
	}
	for _, r := range rules {
		if r.Order != orderFirst || !strings.Contains(r.Detail, "from 192.0.2.0/24") && !strings.Contains(r.Detail, "from 10.0.") {
			t.Errorf("rule %+v", r)
		}
	}
	// Deleting it all as orphans leaves no rule of it, nor the MTU rule.
	for _, o := range items {
		if err := e.inv.DeleteOrphan(e.ctx, o); err != nil {
			t.Errorf("DeleteOrphan(%s %s): %v", o.Kind, o.ID, err)
		}
	}
	node, err := e.api.ec2.DescribeSecurityGroups(e.ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{e.fx.NodeSecurityGroupID}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range node.SecurityGroups[0].IpPermissions {
		if len(p.IpRanges) > 0 {
			t.Errorf("node group rule left: %s %d %v", aws.ToString(p.IpProtocol), aws.ToInt32(p.FromPort), p.IpRanges)
		}
	}
	if left := of(e.owned(), svc); len(left) != 0 {
		t.Errorf("left after deletion: %+v", left)
	}
}

// makeUpstreamNLB makes the NLB the upstream CCM makes for svc (its name
// and tags, no security group, one target group named tgName for the
// first port), and gives svc the address upstream wrote, so the next
// ensure adopts it.
func (e *invEnv) makeUpstreamNLB(svc *v1.Service, tgName string) {
	e.t.Helper()
	tags := []elbv2types.Tag{{Key: aws.String(clusterTagKey(lbTestCluster)), Value: aws.String(clusterTagOwned)}, {Key: aws.String(serviceNameTagKey), Value: aws.String(key(svc).String())}}
	lb, err := e.api.elbv2.CreateLoadBalancer(e.ctx, &elbv2.CreateLoadBalancerInput{
		Name: aws.String(upstreamNLBName(svc)), Type: elbv2types.LoadBalancerTypeEnumNetwork, Subnets: slices.Collect(maps.Values(e.fx.PublicSubnets)), Tags: tags,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	p := svc.Spec.Ports[0]
	tg, err := e.api.elbv2.CreateTargetGroup(e.ctx, &elbv2.CreateTargetGroupInput{
		Name: aws.String(tgName), Protocol: elbv2types.ProtocolEnum(p.Protocol), Port: aws.Int32(p.NodePort), VpcId: aws.String(e.fx.VPCID), Tags: tags,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.api.elbv2.CreateListener(e.ctx, &elbv2.CreateListenerInput{
		LoadBalancerArn: lb.LoadBalancers[0].LoadBalancerArn, Port: aws.Int32(p.Port), Protocol: elbv2types.ProtocolEnum(p.Protocol),
		DefaultActions: []elbv2types.Action{{Type: elbv2types.ActionTypeEnumForward, TargetGroupArn: tg.TargetGroups[0].TargetGroupArn}},
	}); err != nil {
		e.t.Fatal(err)
	}
	svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{Hostname: aws.ToString(lb.LoadBalancers[0].DNSName)}}
}

// The Cloud's parts carry the inventory.
func TestCloudOffersInventory(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "") // see newTestEnv
	s := &Section{Region: testRegion, Credentials: Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "x"}}
	s.SetDefaults()
	c, err := New(t.Context(), &config.CloudConfig{ClusterID: testCluster, Section: s})
	if err != nil {
		t.Fatal(err)
	}
	if inv, ok := c.Parts().Inventory.(*lbInventory); !ok || inv.l != c.lb {
		t.Fatalf("Parts().Inventory = %#v", c.Parts().Inventory)
	}
	if compose.New(c.Parts()).Parts().Inventory == nil {
		t.Error("the assembled cloud lost the inventory")
	}
}
