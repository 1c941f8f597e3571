package aws

import (
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/ttlcache"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

func TestEnsureLoadBalancerCreates(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(3)
	svc := lbService(nil, tcpPort(80, 30080), tcpPort(53, 30053), udpPort(53, 30053))

	e.srv.ResetCalls()
	st := e.ensure(svc, nodes)
	t.Logf("create: %s", e.callSummary())

	v := e.view(svc)
	if len(st.Ingress) != 1 || st.Ingress[0].Hostname == "" || st.Ingress[0].Hostname != aws.ToString(v.lb.DNSName) {
		t.Errorf("status %+v, want the NLB's DNS name %s", st, aws.ToString(v.lb.DNSName))
	}
	if v.lb.Type != elbv2types.LoadBalancerTypeEnumNetwork || v.lb.Scheme != elbv2types.LoadBalancerSchemeEnumInternetFacing {
		t.Errorf("type %s scheme %s", v.lb.Type, v.lb.Scheme)
	}
	var subnets []string
	for _, az := range v.lb.AvailabilityZones {
		subnets = append(subnets, aws.ToString(az.SubnetId))
	}
	if want := lbSortedValues(e.fx.PublicSubnets); !reflect.DeepEqual(lbSorted(subnets), want) {
		t.Errorf("subnets %v, want the public ones %v", subnets, want)
	}
	// One listener per port; TCP and UDP on 53 share a TCP_UDP listener.
	if len(v.listeners) != 2 || v.listeners[80].Protocol != "TCP" || v.listeners[53].Protocol != "TCP_UDP" {
		t.Errorf("listeners %+v", v.listeners)
	}
	ids := nodeIDs(nodes)
	for port, li := range v.listeners {
		tg := v.tgs[forwardTarget(li)]
		if tg.TargetGroupName == nil {
			t.Fatalf("listener %d forwards to %s, not one of the NLB's target groups", port, forwardTarget(li))
		}
		nodePort := int32(30080)
		if port == 53 {
			nodePort = 30053
		}
		if tg.TargetType != elbv2types.TargetTypeEnumInstance || aws.ToInt32(tg.Port) != nodePort || tg.Protocol != li.Protocol {
			t.Errorf("target group %s: type %s port %d protocol %s", aws.ToString(tg.TargetGroupName), tg.TargetType, aws.ToInt32(tg.Port), tg.Protocol)
		}
		if tg.HealthCheckProtocol != "TCP" || aws.ToString(tg.HealthCheckPort) != healthCheckTraffic {
			t.Errorf("health check %s %s", tg.HealthCheckProtocol, aws.ToString(tg.HealthCheckPort))
		}
		if got := v.targets[aws.ToString(tg.TargetGroupName)]; !reflect.DeepEqual(got, targetsOf(ids, nodePort)) {
			t.Errorf("targets of %d: %v, want %v", port, got, targetsOf(ids, nodePort))
		}
	}
	if got, want := v.sgIngress(), []string{"tcp/53<-0.0.0.0/0", "tcp/80<-0.0.0.0/0", "udp/53<-0.0.0.0/0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("load balancer SG ingress %v, want %v", got, want)
	}
	lbSG := aws.ToString(v.sg.GroupId)
	if got, want := e.nodeRules(lbSG), map[string][]string{e.fx.NodeSecurityGroupID: {"tcp/30053", "tcp/30080", "udp/30053"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("node rules %v, want %v", got, want)
	}
	tagged := e.tagged(svc)
	if len(tagged[cloudsimaws.KindLoadBalancer]) != 1 || len(tagged[cloudsimaws.KindTargetGroup]) != 2 || len(tagged[cloudsimaws.KindSecurityGroup]) != 1 {
		t.Errorf("tagged resources: %d LB, %d TG, %d SG", len(tagged[cloudsimaws.KindLoadBalancer]), len(tagged[cloudsimaws.KindTargetGroup]), len(tagged[cloudsimaws.KindSecurityGroup]))
	}
	for _, rs := range tagged {
		for _, r := range rs {
			if r.Tags[clusterTagKey(lbTestCluster)] != "owned" {
				t.Errorf("%s %s lacks the cluster tag", r.Kind, r.ID)
			}
		}
	}

	// GetLoadBalancer agrees.
	got, exists, err := e.lb.GetLoadBalancer(e.ctx, "kubernetes", svc)
	if err != nil || !exists || got.Ingress[0].Hostname != st.Ingress[0].Hostname {
		t.Errorf("GetLoadBalancer = %+v, %v, %v", got, exists, err)
	}

	// Re-ensuring an unchanged Service with unchanged nodes changes nothing.
	e.srv.ResetCalls()
	e.ensure(svc, nodes)
	t.Logf("no-op re-ensure: %s", e.callSummary())
	if m := e.mutations(); len(m) != 0 {
		t.Errorf("re-ensure made mutating calls: %v", m)
	}
	if n := e.srv.CallCount("elbv2:DescribeTargetHealth"); n != 0 {
		t.Errorf("re-ensure with the same nodes read target health %d times", n)
	}
	// A fresh controller (no caches) reads more but still changes nothing.
	fresh := newLoadBalancers(e.api, e.lb.cfg, lbTestCluster, e.lb.in.(*instances), clock.RealClock{})
	e.srv.ResetCalls()
	if _, err := fresh.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	t.Logf("no-op re-ensure after restart: %s", e.callSummary())
	if m := e.mutations(); len(m) != 0 {
		t.Errorf("re-ensure after restart made mutating calls: %v", m)
	}
}

func TestNodeSetChanges(t *testing.T) {
	// Instances are re-read on every sync, so the stop below is seen.
	e := newLBEnv(t, func(s *Section) { s.InstanceCacheTTL = time.Nanosecond })
	nodes := e.nodes(3)
	svc := lbService(nil, tcpPort(80, 30080), tcpPort(443, 30443))
	e.ensure(svc, nodes)

	added := e.nodes(1)
	next := append(slices.Clone(nodes[1:]), added...)
	e.srv.ResetCalls()
	if err := e.lb.UpdateLoadBalancer(e.ctx, "kubernetes", svc, next); err != nil {
		t.Fatal(err)
	}
	t.Logf("node added+removed (update): %s", e.callSummary())
	if got, want := e.mutations(), map[string]int{"elbv2:RegisterTargets": 2, "elbv2:DeregisterTargets": 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("mutations %v, want %v", got, want)
	}
	v := e.view(svc)
	for name, ts := range v.targets {
		port := int32(30080)
		if strings.Contains(name, "-443-") {
			port = 30443
		}
		if want := targetsOf(nodeIDs(next), port); !reflect.DeepEqual(ts, want) {
			t.Errorf("%s targets %v, want %v", name, ts, want)
		}
	}

	// Only a node added: only RegisterTargets.
	more := append(slices.Clone(next), e.nodes(1)...)
	e.srv.ResetCalls()
	e.ensure(svc, more)
	t.Logf("node added (ensure): %s", e.callSummary())
	if got, want := e.mutations(), map[string]int{"elbv2:RegisterTargets": 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("mutations %v, want %v", got, want)
	}

	// A node whose instance is stopped stays registered: EC2 can't
	// register it, and dropping it would strand it after a restart.
	if err := e.emu.Stop(nodeIDs(more[:1])...); err != nil {
		t.Fatal(err)
	}
	e.lb.targets = ttlcache.New[string](targetCacheTTL, e.lb.clock) // force a read
	e.srv.ResetCalls()
	if err := e.lb.UpdateLoadBalancer(e.ctx, "kubernetes", svc, more); err != nil {
		t.Fatal(err)
	}
	if m := e.mutations(); len(m) != 0 {
		t.Errorf("a stopped node caused mutations %v", m)
	}
}

func TestNodeSecurityGroupSetChanges(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(2)
	svc := lbService(nil, tcpPort(80, 30080))
	e.ensure(svc, nodes)
	lbSG := aws.ToString(e.view(svc).sg.GroupId)

	// A node group with its own cluster-tagged SG next to an untagged one.
	other, err := e.emu.CreateSecurityGroup(e.fx.VPCID, "other-nodes", "other node group", map[string]string{e.fx.ClusterTagKey: "owned"})
	if err != nil {
		t.Fatal(err)
	}
	extra, err := e.emu.CreateSecurityGroup(e.fx.VPCID, "extra", "unrelated", nil)
	if err != nil {
		t.Fatal(err)
	}
	group2 := e.nodes(1, extra, other)
	e.srv.ResetCalls()
	if err := e.lb.UpdateLoadBalancer(e.ctx, "kubernetes", svc, append(slices.Clone(nodes), group2...)); err != nil {
		t.Fatal(err)
	}
	t.Logf("node with a new SG added (update): %s", e.callSummary())
	want := map[string][]string{e.fx.NodeSecurityGroupID: {"tcp/30080"}, other: {"tcp/30080"}}
	if got := e.nodeRules(lbSG); !reflect.DeepEqual(got, want) {
		t.Errorf("node rules %v, want %v", got, want)
	}
	// A rule someone else added from our SG is never revoked.
	if err := e.lb.changeNodeRules(e.ctx, extra, []sgRule{{proto: "tcp", from: 9999, to: 9999, group: lbSG}}, nil, "someone else's"); err != nil {
		t.Fatal(err)
	}
	if err := e.lb.UpdateLoadBalancer(e.ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	want = map[string][]string{e.fx.NodeSecurityGroupID: {"tcp/30080"}, extra: {"tcp/9999"}}
	if got := e.nodeRules(lbSG); !reflect.DeepEqual(got, want) {
		t.Errorf("after the node left, node rules %v, want %v", got, want)
	}
}

func TestPortsChange(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(2)
	svc := lbService(nil, tcpPort(80, 30080), tcpPort(53, 30053))
	e.ensure(svc, nodes)
	before := e.view(svc)
	lbSG := aws.ToString(before.sg.GroupId)

	// 80 goes, 443 comes, 53 gains UDP (TCP -> TCP_UDP, a new target group).
	svc.Spec.Ports = []v1.ServicePort{tcpPort(443, 30443), tcpPort(53, 30053), udpPort(53, 30053)}
	e.srv.ResetCalls()
	e.ensure(svc, nodes)
	t.Logf("ports changed: %s", e.callSummary())
	v := e.view(svc)
	if len(v.listeners) != 2 || v.listeners[443].Protocol != "TCP" || v.listeners[53].Protocol != "TCP_UDP" {
		t.Errorf("listeners %+v", v.listeners)
	}
	if aws.ToString(v.listeners[53].ListenerArn) != aws.ToString(before.listeners[53].ListenerArn) {
		t.Errorf("the port 53 listener was re-created instead of modified")
	}
	var names []string
	for _, tg := range v.tgs {
		names = append(names, aws.ToString(tg.TargetGroupName))
	}
	sort.Strings(names)
	wantNames := []string{
		targetGroupName(lbTestCluster, svc, portKey{443, "TCP"}),
		targetGroupName(lbTestCluster, svc, portKey{53, "TCP_UDP"}),
	}
	sort.Strings(wantNames)
	if !reflect.DeepEqual(names, wantNames) {
		t.Errorf("target groups %v, want %v", names, wantNames)
	}
	if tgs := e.tagged(svc)[cloudsimaws.KindTargetGroup]; len(tgs) != 2 {
		t.Errorf("%d target groups tagged for the service, want 2 (old ones deleted)", len(tgs))
	}
	if got, want := v.sgIngress(), []string{"tcp/443<-0.0.0.0/0", "tcp/53<-0.0.0.0/0", "udp/53<-0.0.0.0/0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("SG ingress %v, want %v", got, want)
	}
	if got, want := e.nodeRules(lbSG), map[string][]string{e.fx.NodeSecurityGroupID: {"tcp/30053", "tcp/30443", "udp/30053"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("node rules %v, want %v", got, want)
	}
	if rec := parseRecord(e.tagged(svc)[cloudsimaws.KindLoadBalancer][0].Tags); !equalSets(rec, map[string]bool{"443-tcp": true, "53-tcpudp": true}) {
		t.Errorf("target group record %v", rec)
	}

	// A changed NodePort re-targets without re-creating the target group.
	svc.Spec.Ports = []v1.ServicePort{tcpPort(443, 31443), tcpPort(53, 30053), udpPort(53, 30053)}
	e.srv.ResetCalls()
	e.ensure(svc, nodes)
	if got, want := e.mutations(), map[string]int{
		"elbv2:RegisterTargets": 1, "elbv2:DeregisterTargets": 1,
		"ec2:AuthorizeSecurityGroupIngress": 1, "ec2:RevokeSecurityGroupIngress": 1,
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("node port change mutations %v, want %v", got, want)
	}
	name443 := targetGroupName(lbTestCluster, svc, portKey{443, "TCP"})
	if got := e.view(svc).targets[name443]; !reflect.DeepEqual(got, targetsOf(nodeIDs(nodes), 31443)) {
		t.Errorf("443 targets %v", got)
	}
}

func TestInternalAndSubnets(t *testing.T) {
	zones := func(m map[string]string) []string { return lbSortedValues(m) }
	lbSubnets := func(v *lbView) []string {
		var out []string
		for _, az := range v.lb.AvailabilityZones {
			out = append(out, aws.ToString(az.SubnetId))
		}
		return lbSorted(out)
	}
	t.Run("internal discovers private subnets", func(t *testing.T) {
		e := newLBEnv(t)
		for _, v := range []string{"true", "0.0.0.0/0"} {
			svc := lbService(map[string]string{string(annotationInternal): v})
			svc.Name = "internal-" + strings.ReplaceAll(strings.ReplaceAll(v, ".", ""), "/", "")
			e.ensure(svc, e.nodes(1))
			got := e.view(svc)
			if got.lb.Scheme != elbv2types.LoadBalancerSchemeEnumInternal {
				t.Errorf("%q: scheme %s", v, got.lb.Scheme)
			}
			if !reflect.DeepEqual(lbSubnets(got), zones(e.fx.PrivateSubnets)) {
				t.Errorf("%q: subnets %v, want %v", v, lbSubnets(got), zones(e.fx.PrivateSubnets))
			}
		}
	})
	t.Run("discovery prefers cluster-tagged, one per zone", func(t *testing.T) {
		e := newLBEnv(t)
		zone := e.emu.Zones()[0]
		// Untagged for any cluster, smaller CIDR -> larger ID order is
		// irrelevant: the cluster-tagged one must win its zone.
		if _, err := e.emu.CreateSubnet(cloudsimaws.SubnetSpec{VPCID: e.fx.VPCID, Zone: zone, CIDR: "10.0.255.0/28", Tags: map[string]string{roleELBTagKey: "1"}}); err != nil {
			t.Fatal(err)
		}
		// Tagged for another cluster only: never used.
		foreign, err := e.emu.CreateSubnet(cloudsimaws.SubnetSpec{VPCID: e.fx.VPCID, Zone: zone, CIDR: "10.0.255.16/28", Tags: map[string]string{roleELBTagKey: "1", clusterTagPrefix + "other": "owned"}})
		if err != nil {
			t.Fatal(err)
		}
		svc := lbService(nil)
		e.ensure(svc, e.nodes(1))
		got := lbSubnets(e.view(svc))
		if !reflect.DeepEqual(got, zones(e.fx.PublicSubnets)) || slices.Contains(got, foreign) {
			t.Errorf("subnets %v, want %v", got, zones(e.fx.PublicSubnets))
		}
	})
	t.Run("annotation by name and ID wins", func(t *testing.T) {
		e := newLBEnv(t, func(s *Section) { s.Subnets.Public = []string{"subnet-00000000"} })
		z := e.emu.Zones()
		want := []string{e.fx.PrivateSubnets[z[0]], e.fx.PublicSubnets[z[1]]}
		svc := lbService(map[string]string{string(annotationSubnets): lbTestCluster + "-private-" + z[0] + ", " + e.fx.PublicSubnets[z[1]]})
		e.ensure(svc, e.nodes(1))
		if got := lbSubnets(e.view(svc)); !reflect.DeepEqual(got, lbSorted(want)) {
			t.Errorf("subnets %v, want %v", got, want)
		}
	})
	t.Run("config subnets", func(t *testing.T) {
		var want []string
		e := newLBEnv(t, func(s *Section) {})
		want = []string{e.fx.PublicSubnets[e.emu.Zones()[2]]}
		e.lb.cfg.Subnets.Public = want
		svc := lbService(nil)
		e.ensure(svc, e.nodes(1))
		if got := lbSubnets(e.view(svc)); !reflect.DeepEqual(got, want) {
			t.Errorf("subnets %v, want %v", got, want)
		}
	})
	t.Run("scheme change re-creates the NLB", func(t *testing.T) {
		e := newLBEnv(t)
		nodes := e.nodes(2)
		svc := lbService(nil, tcpPort(80, 30080))
		e.ensure(svc, nodes)
		old := e.view(svc)
		svc.Annotations = map[string]string{string(annotationInternal): "true"}
		st := e.ensure(svc, nodes)
		v := e.view(svc)
		if v.lb.Scheme != elbv2types.LoadBalancerSchemeEnumInternal || aws.ToString(v.lb.LoadBalancerArn) == aws.ToString(old.lb.LoadBalancerArn) {
			t.Errorf("scheme %s, arn unchanged: %v", v.lb.Scheme, aws.ToString(v.lb.LoadBalancerArn) == aws.ToString(old.lb.LoadBalancerArn))
		}
		if st.Ingress[0].Hostname != aws.ToString(v.lb.DNSName) {
			t.Errorf("status %v", st)
		}
		if aws.ToString(v.sg.GroupId) != aws.ToString(old.sg.GroupId) {
			t.Errorf("security group replaced")
		}
		tagged := e.tagged(svc)
		if len(tagged[cloudsimaws.KindLoadBalancer]) != 1 || len(tagged[cloudsimaws.KindTargetGroup]) != 1 {
			t.Errorf("after re-creation: %d LBs, %d TGs", len(tagged[cloudsimaws.KindLoadBalancer]), len(tagged[cloudsimaws.KindTargetGroup]))
		}
		if got := v.targets[targetGroupName(lbTestCluster, svc, portKey{80, "TCP"})]; len(got) != 2 {
			t.Errorf("targets %v", got)
		}
	})
}

func TestSourceRanges(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(1)
	svc := lbService(nil, tcpPort(80, 30080), udpPort(5000, 30500))
	// IPv4 only: the emulator drops Ipv6Ranges (TestSGRuleConversions
	// covers IPv6).
	svc.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8", "172.16.0.0/12"}
	e.ensure(svc, nodes)
	if got, want := e.view(svc).sgIngress(), []string{
		"tcp/80<-10.0.0.0/8", "tcp/80<-172.16.0.0/12", "udp/5000<-10.0.0.0/8", "udp/5000<-172.16.0.0/12",
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("ingress %v, want %v", got, want)
	}

	// The annotation applies when the field is empty; only the diff moves.
	svc.Spec.LoadBalancerSourceRanges = nil
	svc.Annotations = map[string]string{string(annotationSourceRanges): "10.0.0.0/8,192.168.0.0/16"}
	e.srv.ResetCalls()
	e.ensure(svc, nodes)
	if got, want := e.mutations(), map[string]int{"ec2:AuthorizeSecurityGroupIngress": 1, "ec2:RevokeSecurityGroupIngress": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("mutations %v, want %v", got, want)
	}
	if got, want := e.view(svc).sgIngress(), []string{
		"tcp/80<-10.0.0.0/8", "tcp/80<-192.168.0.0/16", "udp/5000<-10.0.0.0/8", "udp/5000<-192.168.0.0/16",
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("ingress %v, want %v", got, want)
	}
}

func TestExternalTrafficPolicyLocal(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(2)
	svc := lbService(nil, tcpPort(80, 30080))
	svc.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	svc.Spec.HealthCheckNodePort = 32100
	e.ensure(svc, nodes)
	v := e.view(svc)
	for _, tg := range v.tgs {
		if tg.HealthCheckProtocol != "HTTP" || aws.ToString(tg.HealthCheckPort) != "32100" || aws.ToString(tg.HealthCheckPath) != "/healthz" {
			t.Errorf("health check %s %s %s", tg.HealthCheckProtocol, aws.ToString(tg.HealthCheckPort), aws.ToString(tg.HealthCheckPath))
		}
	}
	lbSG := aws.ToString(v.sg.GroupId)
	if got, want := e.nodeRules(lbSG), map[string][]string{e.fx.NodeSecurityGroupID: {"tcp/30080", "tcp/32100"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("node rules %v, want %v", got, want)
	}

	// Back to Cluster: the health check is modified in place.
	svc.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyCluster
	svc.Spec.HealthCheckNodePort = 0
	e.srv.ResetCalls()
	e.ensure(svc, nodes)
	if got, want := e.mutations(), map[string]int{"elbv2:ModifyTargetGroup": 1, "ec2:RevokeSecurityGroupIngress": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("mutations %v, want %v", got, want)
	}
	for _, tg := range e.view(svc).tgs {
		if tg.HealthCheckProtocol != "TCP" || aws.ToString(tg.HealthCheckPort) != healthCheckTraffic {
			t.Errorf("health check %s %s", tg.HealthCheckProtocol, aws.ToString(tg.HealthCheckPort))
		}
	}
}

func TestImplementedElsewhere(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(1)
	for _, typ := range []string{"external", "nlb-ip"} {
		svc := lbService(map[string]string{string(annotationLBType): typ})
		e.srv.ResetCalls()
		if _, err := e.lb.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes); err != cloudprovider.ImplementedElsewhere {
			t.Errorf("%s: EnsureLoadBalancer = %v, want ImplementedElsewhere unwrapped", typ, err)
		}
		if err := e.lb.UpdateLoadBalancer(e.ctx, "kubernetes", svc, nodes); err != cloudprovider.ImplementedElsewhere {
			t.Errorf("%s: UpdateLoadBalancer = %v, want ImplementedElsewhere unwrapped", typ, err)
		}
		// The service controller aborts cleanup on any GetLoadBalancer
		// error, so "not ours" is "does not exist" here.
		if st, exists, err := e.lb.GetLoadBalancer(e.ctx, "kubernetes", svc); st != nil || exists || err != nil {
			t.Errorf("%s: GetLoadBalancer = %v, %v, %v", typ, st, exists, err)
		}
		if err := e.lb.EnsureLoadBalancerDeleted(e.ctx, "kubernetes", svc); err != nil {
			t.Errorf("%s: EnsureLoadBalancerDeleted = %v", typ, err)
		}
		// Looking for leftovers of ours costs reads, never a change.
		if m := e.mutations(); len(m) != 0 {
			t.Errorf("%s: mutating calls for a service we never served: %v", typ, m)
		}
	}
}

// TestHandOverToLoadBalancerController: a Service that had our NLB and is
// switched to the AWS Load Balancer Controller loses our NLB and all that
// came with it, so nothing leaks; ImplementedElsewhere still hands it over.
func TestHandOverToLoadBalancerController(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(2)
	svc := lbService(nil)
	e.ensure(svc, nodes)
	if len(e.tagged(svc)) == 0 {
		t.Fatal("nothing created for the service")
	}
	lbSG := aws.ToString(e.view(svc).sg.GroupId)
	if len(e.nodeRules(lbSG)) == 0 {
		t.Fatal("no node security group rules for the load balancer")
	}
	svc.Annotations = map[string]string{string(annotationLBType): "external"}
	if _, err := e.lb.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes); err != cloudprovider.ImplementedElsewhere {
		t.Fatalf("EnsureLoadBalancer = %v, want ImplementedElsewhere unwrapped", err)
	}
	if left := e.tagged(svc); len(left) != 0 {
		t.Fatalf("resources left after the hand-over: %v", left)
	}
	if rules := e.nodeRules(lbSG); len(rules) != 0 {
		t.Fatalf("node security group rules left: %v", rules)
	}
}

func TestBadAnnotationsCreateNothing(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(1)
	before := e.srv.Resources()
	for _, tc := range []struct {
		ann    map[string]string
		ranges []string
		want   string
	}{
		{ann: map[string]string{string(annotationSubnets): "subnet-1,"}, want: string(annotationSubnets)},
		{ann: map[string]string{string(annotationSubnets): "no-such-subnet"}, want: string(annotationSubnets)},
		{ann: map[string]string{string(annotationSubnets): "subnet-0123456789abcdef0"}, want: string(annotationSubnets)},
		{ann: map[string]string{string(annotationSubnets): lbTestCluster + "-public-" + e.emu.Zones()[0] + "," + lbTestCluster + "-private-" + e.emu.Zones()[0]}, want: string(annotationSubnets)},
		{ann: map[string]string{string(annotationSourceRanges): "10.0.0.0/8,everywhere"}, want: string(annotationSourceRanges)},
		{ranges: []string{"10.0.0.0/33"}, want: "LoadBalancerSourceRanges"},
	} {
		svc := lbService(tc.ann)
		svc.Spec.LoadBalancerSourceRanges = tc.ranges
		e.srv.ResetCalls()
		_, err := e.lb.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: error %v, want one naming %s", tc.ann, tc.ranges, err, tc.want)
		}
		if m := e.mutations(); len(m) != 0 {
			t.Errorf("%v: mutating calls %v", tc.ann, m)
		}
		// Deleting such a Service must still work (its finalizer is set).
		if _, _, err := e.lb.GetLoadBalancer(e.ctx, "kubernetes", svc); err != nil {
			t.Errorf("%v: GetLoadBalancer: %v", tc.ann, err)
		}
		if err := e.lb.EnsureLoadBalancerDeleted(e.ctx, "kubernetes", svc); err != nil {
			t.Errorf("%v: EnsureLoadBalancerDeleted: %v", tc.ann, err)
		}
	}
	if added, removed := cloudsim.DiffResources(before, e.srv.Resources()); len(added)+len(removed) != 0 {
		t.Errorf("resources changed: +%v -%v", added, removed)
	}
}

func TestDeleteRemovesEverything(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(3)
	before := e.srv.Resources()
	svc := lbService(nil, tcpPort(80, 30080), udpPort(53, 30053))
	svc.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	svc.Spec.HealthCheckNodePort = 32000
	e.ensure(svc, nodes)
	other := lbService(nil, tcpPort(80, 31080))
	other.Name = "other"
	e.ensure(other, nodes)
	otherBefore := e.view(other)

	e.srv.ResetCalls()
	if err := e.lb.EnsureLoadBalancerDeleted(e.ctx, "kubernetes", svc); err != nil {
		t.Fatal(err)
	}
	t.Logf("delete: %s", e.callSummary())
	if tagged := e.tagged(svc); len(tagged) != 0 {
		t.Errorf("left behind: %v", tagged)
	}
	if _, exists, err := e.lb.GetLoadBalancer(e.ctx, "kubernetes", svc); exists || err != nil {
		t.Errorf("GetLoadBalancer after delete: %v %v", exists, err)
	}
	// The other Service is untouched.
	otherAfter := e.view(other)
	if !reflect.DeepEqual(otherAfter.targets, otherBefore.targets) || len(e.nodeRules(aws.ToString(otherAfter.sg.GroupId))[e.fx.NodeSecurityGroupID]) != 1 {
		t.Errorf("other service's NLB changed")
	}
	if err := e.lb.EnsureLoadBalancerDeleted(e.ctx, "kubernetes", other); err != nil {
		t.Fatal(err)
	}
	if added, removed := cloudsim.DiffResources(before, e.srv.Resources()); len(added)+len(removed) != 0 {
		t.Errorf("after deleting both: +%v -%v", added, removed)
	}

	// Idempotent: a second delete finds nothing and changes nothing.
	e.srv.ResetCalls()
	if err := e.lb.EnsureLoadBalancerDeleted(e.ctx, "kubernetes", svc); err != nil {
		t.Fatal(err)
	}
	t.Logf("delete again: %s", e.callSummary())
	if m := e.mutations(); len(m) != 0 {
		t.Errorf("second delete made mutating calls %v", m)
	}
}

func TestForeignResourcesAreRefused(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(1)
	svc := lbService(nil)
	name := loadBalancerName(lbTestCluster, svc)
	subnets := lbSortedValues(e.fx.PublicSubnets)
	foreign, err := e.api.elbv2.CreateLoadBalancer(e.ctx, &elbv2.CreateLoadBalancerInput{Name: aws.String(name), Type: "network", Subnets: subnets,
		Tags: []elbv2types.Tag{{Key: aws.String("owner"), Value: aws.String("someone else")}}})
	if err != nil {
		t.Fatal(err)
	}
	before := e.srv.Resources()
	e.srv.ResetCalls()
	_, err = e.lb.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes)
	if err == nil || !strings.Contains(err.Error(), "not tagged") {
		t.Errorf("EnsureLoadBalancer over a foreign NLB: %v", err)
	}
	if err := e.lb.UpdateLoadBalancer(e.ctx, "kubernetes", svc, nodes); err == nil {
		t.Error("UpdateLoadBalancer over a foreign NLB succeeded")
	}
	if _, exists, err := e.lb.GetLoadBalancer(e.ctx, "kubernetes", svc); exists || err != nil {
		t.Errorf("GetLoadBalancer of a foreign NLB: %v, %v", exists, err)
	}
	if err := e.lb.EnsureLoadBalancerDeleted(e.ctx, "kubernetes", svc); err != nil {
		t.Errorf("EnsureLoadBalancerDeleted: %v", err)
	}
	if m := e.mutations(); len(m) != 0 {
		t.Errorf("mutating calls %v", m)
	}
	if added, removed := cloudsim.DiffResources(before, e.srv.Resources()); len(added)+len(removed) != 0 {
		t.Errorf("resources changed: +%v -%v", added, removed)
	}
	_ = foreign

	// Likewise a foreign security group with our name.
	svc2 := lbService(nil)
	svc2.Name = "web2"
	if _, err := e.emu.CreateSecurityGroup(e.fx.VPCID, securityGroupName(lbTestCluster, svc2), "not ours", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.lb.EnsureLoadBalancer(e.ctx, "kubernetes", svc2, nodes); err == nil || !strings.Contains(err.Error(), "not tagged") {
		t.Errorf("EnsureLoadBalancer with a foreign SG: %v", err)
	}
	if err := e.lb.EnsureLoadBalancerDeleted(e.ctx, "kubernetes", svc2); err != nil {
		t.Errorf("EnsureLoadBalancerDeleted: %v", err)
	}
	if len(e.tagged(svc2)) != 0 {
		t.Errorf("created %v", e.tagged(svc2))
	}
}

func lbSorted(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

func lbSortedValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// TestServicesShareNodeWork: a second Service on the same Nodes (listed
// in another order, as the informer does) reuses what the first worked
// out: the backend set, and which node groups take the rules, so its new
// security group's rules go in without reading the node groups, which
// with a rule per Service grow large.
func TestServicesShareNodeWork(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(4)
	first := lbService(nil, tcpPort(80, 30080))
	e.srv.ResetCalls()
	e.ensure(first, nodes)
	firstReads := e.srv.CallCount("ec2:DescribeSecurityGroups")

	second := lbService(nil, tcpPort(443, 30443))
	second.Name, second.UID = "other", "uid-other"
	reversed := slices.Clone(nodes)
	slices.Reverse(reversed)
	e.srv.ResetCalls()
	e.ensure(second, reversed)
	t.Logf("second Service: %s", e.callSummary())
	if n := e.srv.CallCount("ec2:DescribeSecurityGroups"); n != firstReads-1 {
		t.Errorf("second Service read security groups %d times, want %d (its own lookup, not the node groups)", n, firstReads-1)
	}
	v := e.view(second)
	lbSG := aws.ToString(v.sg.GroupId)
	if got, want := e.nodeRules(lbSG), map[string][]string{e.fx.NodeSecurityGroupID: {"tcp/30443"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("node rules %v, want %v", got, want)
	}
	for _, tg := range v.tgs {
		if got, want := v.targets[aws.ToString(tg.TargetGroupName)], targetsOf(nodeIDs(nodes), 30443); !reflect.DeepEqual(got, want) {
			t.Errorf("targets %v, want %v", got, want)
		}
	}
}
