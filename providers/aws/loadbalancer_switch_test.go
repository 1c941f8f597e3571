package aws

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/clientopts"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodes"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
	confaws "github.com/multicloud-ccm/multicloud-ccm/test/conformance/aws"
)

// switchCluster is the cluster ID of the switch tests: upstream's
// KubernetesClusterID, which import-config makes ours.
const switchCluster = "kubernetes"

// switchEnv is the backend on the conformance adapter's emulator, with a
// config as import-config writes it (defaultType classic, upstreamShape)
// and the adapter's two instances as Nodes.
func switchEnv(t *testing.T) (*clbEnv, *confaws.Cloud, []conformance.Instance, []*v1.Node) {
	t.Helper()
	t.Setenv("AWS_CA_BUNDLE", "")
	cl, insts := conformance.StartWithNodes(t, confaws.Adapter{}, conformance.Options{ClusterID: switchCluster, Switched: true})
	c := cl.(*confaws.Cloud)
	url := c.Server().URL()
	s := &Section{
		Region:       c.Region(),
		VPCID:        c.Fixture().VPCID,
		Endpoints:    Endpoints{EC2: url, ELBv2: url, ELB: url},
		Credentials:  Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret"},
		LoadBalancer: LoadBalancerConfig{DefaultType: defaultTypeClassic, UpstreamShape: true},
		Options:      clientopts.Options{MaxAttempts: 1},
	}
	s.SetDefaults()
	_, ctx := ktesting.NewTestContext(t)
	api := testClients(t, ctx, s)
	lb := newLoadBalancers(api, s, switchCluster, newInstances(api, s, switchCluster, nodes.New(instanceIDFromProviderID), clock.RealClock{}), clock.RealClock{})
	e := &lbEnv{t: t, ctx: ctx, emu: c.Emulator(), srv: c.Server(), fx: c.Fixture(), api: api, lb: lb}
	var ns []*v1.Node
	for _, in := range insts {
		ns = append(ns, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: in.NodeName}, Spec: v1.NodeSpec{ProviderID: providerID(in.Zone, in.ID)}})
	}
	return &clbEnv{lbEnv: e, typed: newTypedLoadBalancers(lb, defaultTypeClassic)}, c, insts, ns
}

// madeParts describes what srv holds beyond before: each resource's kind,
// name and tags, with cloud-chosen IDs (ARNs, group IDs) replaced by the
// name of what they point at, sorted.
func madeParts(srv *cloudsim.Server, before []cloudsim.Resource) []string {
	old := map[string]bool{}
	for _, r := range before {
		old[r.Kind+" "+r.ID] = true
	}
	names := map[string]string{}
	all := srv.Resources()
	for _, r := range all {
		if r.Name != "" {
			names[r.ID] = r.Name
		}
	}
	var out []string
	for _, r := range all {
		if old[r.Kind+" "+r.ID] {
			continue
		}
		var tags []string
		for _, k := range slices.Sorted(maps.Keys(r.Tags)) {
			tags = append(tags, k+"="+r.Tags[k])
		}
		name := r.Name
		for id, n := range names {
			name = strings.ReplaceAll(name, id, n)
		}
		parent := names[r.Parent]
		if parent == "" {
			parent = r.Parent
		}
		out = append(out, fmt.Sprintf("%s %s <%s> [%s]", r.Kind, name, parent, strings.Join(tags, " ")))
	}
	slices.Sort(out)
	return out
}

func switchService(name, uid string, ann map[string]string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(uid), Annotations: ann},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, SessionAffinity: v1.ServiceAffinityNone, Ports: ports},
	}
}

// nodeGroupRules are the node security group's rules, as "<proto>
// <from>-<to> <source> <description>" with a source group named, sorted.
func nodeGroupRules(e *lbEnv) []string {
	e.t.Helper()
	out, err := e.api.ec2.DescribeSecurityGroups(e.ctx, &ec2.DescribeSecurityGroupsInput{})
	if err != nil {
		e.t.Fatal(err)
	}
	names := map[string]string{}
	for _, sg := range out.SecurityGroups {
		names[aws.ToString(sg.GroupId)] = aws.ToString(sg.GroupName)
	}
	var rules []string
	for _, sg := range out.SecurityGroups {
		if aws.ToString(sg.GroupId) != e.fx.NodeSecurityGroupID {
			continue
		}
		for _, p := range sg.IpPermissions {
			span := fmt.Sprintf("%s %d-%d", aws.ToString(p.IpProtocol), aws.ToInt32(p.FromPort), aws.ToInt32(p.ToPort))
			for _, r := range p.IpRanges {
				rules = append(rules, fmt.Sprintf("%s %s %q", span, aws.ToString(r.CidrIp), aws.ToString(r.Description)))
			}
			for _, g := range p.UserIdGroupPairs {
				rules = append(rules, fmt.Sprintf("%s %s %q", span, names[aws.ToString(g.GroupId)], aws.ToString(g.Description)))
			}
		}
	}
	slices.Sort(rules)
	return rules
}

// groupDescriptions are the load balancers' own security groups as
// "<name>: <description>", sorted.
func groupDescriptions(e *lbEnv) []string {
	e.t.Helper()
	out, err := e.api.ec2.DescribeSecurityGroups(e.ctx, &ec2.DescribeSecurityGroupsInput{})
	if err != nil {
		e.t.Fatal(err)
	}
	var groups []string
	for _, sg := range out.SecurityGroups {
		if name := aws.ToString(sg.GroupName); strings.HasPrefix(name, "k8s-") {
			groups = append(groups, name+": "+aws.ToString(sg.Description))
		}
	}
	slices.Sort(groups)
	return groups
}

// TestSwitchedAsUpstream: on a config as import-config writes it
// (loadBalancer.upstreamShape), what the backend makes for a Service is
// what the upstream AWS CCM makes for it (the conformance adapter's
// MakeUpstreamLoadBalancer, on an emulator of its own): the same names,
// tags, node rules and their descriptions, so upstream started again
// finds and serves it. The golden lists pin upstream's names: the NLB
// cloudprovider.DefaultLoadBalancerName (aws.go:2848-2851), target
// groups k8s-<ns8>-<name8>-<sha1[:10]> (aws_loadbalancer.go:689-705), no
// security group; a Classic ELB's group k8s-elb-<name> (aws.go:2008-2010)
// tagged with the cluster only (aws.go:1595) and admitted on the nodes
// by one all-traffic rule (aws.go:3062-3080).
func TestSwitchedAsUpstream(t *testing.T) {
	nlb := map[string]string{string(annotationLBType): lbTypeNLB}
	for _, tc := range []struct {
		name   string
		svc    func() *v1.Service
		golden []string
	}{
		{"nlb", func() *v1.Service {
			return switchService("web", "1234abcd-0000-1111-2222-333344445555", nlb, tcpPort(80, 30080))
		}, []string{"a1234abcd00001111222233334444555", "k8s-default-web-9b14d3a18f"}},
		{"nlb two ports", func() *v1.Service {
			return switchService("a-long-service-name", "2234abcd-0000-1111-2222-333344445555", nlb, tcpPort(80, 30080), tcpPort(443, 30443))
		}, []string{"a2234abcd00001111222233334444555", "k8s-default-alongser-c1cefd1794", "k8s-default-alongser-d8c1d5dc84"}},
		{"classic", func() *v1.Service {
			return switchService("shop", "3234abcd-0000-1111-2222-333344445555", nil, tcpPort(80, 30080), tcpPort(443, 30443))
		}, []string{"a3234abcd00001111222233334444555", "k8s-elb-a3234abcd00001111222233334444555"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ours, oursCloud, _, ns := switchEnv(t)
			before := oursCloud.Server().Resources()
			ours.ensure(tc.svc(), ns)
			got := madeParts(oursCloud.Server(), before)

			upEnv, up, insts, _ := switchEnv(t)
			before = up.Server().Resources()
			if _, err := up.MakeUpstreamLoadBalancer(tc.svc(), switchCluster, insts); err != nil {
				t.Fatal(err)
			}
			want := madeParts(up.Server(), before)
			if !slices.Equal(got, want) {
				t.Errorf("made\n%s\nupstream made\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if g, w := nodeGroupRules(ours.lbEnv), nodeGroupRules(upEnv.lbEnv); !slices.Equal(g, w) {
				t.Errorf("node rules\n%s\nupstream's\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
			}
			if g, w := groupDescriptions(ours.lbEnv), groupDescriptions(upEnv.lbEnv); !slices.Equal(g, w) {
				t.Errorf("security groups %q, upstream's %q", g, w)
			}
			var names []string
			for _, r := range oursCloud.Server().Resources() {
				if r.Kind == cloudsimaws.KindLoadBalancer || r.Kind == cloudsimaws.KindClassicLoadBalancer || r.Kind == cloudsimaws.KindTargetGroup ||
					(r.Kind == cloudsimaws.KindSecurityGroup && strings.HasPrefix(r.Name, "k8s-")) {
					names = append(names, r.Name)
				}
			}
			slices.Sort(names)
			if !slices.Equal(names, tc.golden) {
				t.Errorf("names %q, golden %q", names, tc.golden)
			}
			if len(got) == 0 {
				t.Error("nothing made")
			}
		})
	}
}

// lbTagsOf are the tags of the ELBv2 load balancer named name.
func lbTagsOf(t *testing.T, srv *cloudsim.Server, name string) map[string]string {
	t.Helper()
	for _, r := range srv.Resources() {
		if r.Kind == cloudsimaws.KindLoadBalancer && r.Name == name {
			return r.Tags
		}
	}
	t.Fatalf("no load balancer %s", name)
	return nil
}

// TestSwitchedLifecycle: on a switched config an NLB made before the
// config asked for upstream's shape (our name, our security group) is
// still found and served, and deleted with everything of it; a Classic
// ELB made before gets upstream's node rule instead of ours; a new NLB is
// made in upstream's shape, follows a port change (a target group under
// upstream's name, the record gone again afterwards, so the load balancer
// keeps exactly upstream's tags) and a node change, and leaves nothing
// behind.
func TestSwitchedLifecycle(t *testing.T) {
	e, c, _, ns := switchEnv(t)
	baseline := madeParts(c.Server(), nil)
	nlb := map[string]string{string(annotationLBType): lbTypeNLB}

	// Made by ours before upstreamShape was set.
	plainCfg := *e.lb.cfg
	plainCfg.LoadBalancer.UpstreamShape = false
	plain := newLoadBalancers(e.api, &plainCfg, switchCluster, e.lb.in.(*instances), clock.RealClock{})
	old := switchService("old", "4234abcd-0000-1111-2222-333344445555", nlb, tcpPort(80, 30081))
	st, err := newTypedLoadBalancers(plain, defaultTypeClassic).EnsureLoadBalancer(e.ctx, "kubernetes", old, ns)
	if err != nil {
		t.Fatal(err)
	}
	old.Status.LoadBalancer = *st
	oldName := loadBalancerName(switchCluster, old)
	c.Server().ResetCalls()
	if got := e.ensure(old, ns); got.Ingress[0].Hostname != st.Ingress[0].Hostname {
		t.Errorf("address %v, was %v", got, st)
	}
	if n := c.Server().CallCount("elbv2:CreateLoadBalancer"); n != 0 {
		t.Errorf("%d load balancers made for a Service that has one", n)
	}
	if name := e.typed.GetLoadBalancerName(e.ctx, "kubernetes", old); name != upstreamNLBName(old) {
		t.Errorf("GetLoadBalancerName %s", name)
	}

	// New: upstream's shape, and what an ensure costs.
	svc := switchService("web", "5234abcd-0000-1111-2222-333344445555", nlb, tcpPort(80, 30080))
	c.Server().ResetCalls()
	svc.Status.LoadBalancer = *e.ensure(svc, ns)
	t.Logf("calls to make it: %v", c.Server().Calls())
	name := upstreamNLBName(svc)
	want := map[string]string{clusterTagKey(switchCluster): clusterTagOwned, serviceNameTagKey: "default/web"}
	if got := lbTagsOf(t, c.Server(), name); !maps.Equal(got, want) {
		t.Errorf("tags %v, want upstream's %v", got, want)
	}
	c.Server().ResetCalls()
	e.ensure(svc, ns)
	t.Logf("calls of an ensure with nothing to do: %v", c.Server().Calls())
	if m := e.mutations(); len(m) != 0 {
		t.Errorf("an ensure with nothing to do wrote %v", m)
	}

	svc.Spec.Ports = append(svc.Spec.Ports, tcpPort(443, 30443))
	e.ensure(svc, ns)
	if got := lbTagsOf(t, c.Server(), name); !maps.Equal(got, want) {
		t.Errorf("tags after a port change %v, want upstream's %v", got, want)
	}
	var tgs []string
	for _, r := range c.Server().Resources() {
		if r.Kind == cloudsimaws.KindTargetGroup && r.Tags[serviceNameTagKey] == "default/web" {
			tgs = append(tgs, r.Name)
		}
	}
	slices.Sort(tgs)
	opts, err := parseLBOptions(svc)
	if err != nil {
		t.Fatal(err)
	}
	naming := upstreamTGNaming(switchCluster, svc, opts.healthCheck)
	wantTGs := []string{naming.name(opts.ports[0]), naming.name(opts.ports[1])}
	slices.Sort(wantTGs)
	if !slices.Equal(tgs, wantTGs) {
		t.Errorf("target groups %v, want %v", tgs, wantTGs)
	}
	if err := e.typed.UpdateLoadBalancer(e.ctx, "kubernetes", svc, ns[:1]); err != nil {
		t.Fatal(err)
	}
	id, _ := instanceIDFromProviderID(ns[0].Spec.ProviderID)
	var targets []string
	for _, r := range c.Server().Resources() {
		if r.Kind == cloudsimaws.KindTarget && slices.Contains(tgs, names(c.Server())[r.Parent]) {
			targets = append(targets, r.Name)
		}
	}
	if len(targets) != 2 || targets[0] != id || targets[1] != id {
		t.Errorf("targets after the node change %v, want %s in each target group", targets, id)
	}

	// A Classic ELB made before: upstream's node rule replaces ours.
	shop := switchService("shop", "6234abcd-0000-1111-2222-333344445555", nil, tcpPort(80, 30082))
	if _, err := newTypedLoadBalancers(plain, defaultTypeClassic).EnsureLoadBalancer(e.ctx, "kubernetes", shop, ns); err != nil {
		t.Fatal(err)
	}
	elbGroup := clbSecurityGroupName(shop)
	ruleOf := func() []string {
		var out []string
		for _, r := range nodeGroupRules(e.lbEnv) {
			if strings.Contains(r, elbGroup) {
				out = append(out, r)
			}
		}
		return out
	}
	if got := ruleOf(); len(got) != 1 || !strings.HasPrefix(got[0], "tcp 30082-30082") {
		t.Fatalf("node rules of the Classic ELB made before: %q", got)
	}
	e.ensure(shop, ns)
	if got, want := ruleOf(), []string{"-1 0-0 " + elbGroup + ` ""`}; !slices.Equal(got, want) {
		t.Errorf("node rules of the Classic ELB %q, want upstream's %q", got, want)
	}

	for _, s := range []*v1.Service{old, svc, shop} {
		now := metav1.Now()
		s.DeletionTimestamp = &now
		e.deleteAll(s)
	}
	if left := madeParts(c.Server(), nil); !slices.Equal(left, baseline) {
		t.Errorf("left\n%s\nbefore\n%s", strings.Join(left, "\n"), strings.Join(baseline, "\n"))
	}
	_ = oldName
}

// names are the server's resource names by ID.
func names(srv *cloudsim.Server) map[string]string {
	out := map[string]string{}
	for _, r := range srv.Resources() {
		out[r.ID] = r.Name
	}
	return out
}

// TestSwitchedAdoptsUpstream: on a switched config the load balancers the
// upstream CCM made (the adapter's) are taken over with no write, follow a
// port change in upstream's shape (a target group under upstream's name,
// the load balancer's tags upstream's again afterwards) and leave nothing
// when deleted.
func TestSwitchedAdoptsUpstream(t *testing.T) {
	e, c, insts, ns := switchEnv(t)
	baseline := madeParts(c.Server(), nil)
	nlb := switchService("web", "7234abcd-0000-1111-2222-333344445555", map[string]string{string(annotationLBType): lbTypeNLB}, tcpPort(80, 30080))
	clb := switchService("shop", "8234abcd-0000-1111-2222-333344445555", nil, tcpPort(80, 30081))
	for _, svc := range []*v1.Service{nlb, clb} {
		up, err := c.MakeUpstreamLoadBalancer(svc, switchCluster, insts)
		if err != nil {
			t.Fatal(err)
		}
		svc.Status.LoadBalancer = up.Status
	}
	made := madeParts(c.Server(), nil)
	c.Server().ResetCalls()
	for _, svc := range []*v1.Service{nlb, clb} {
		if st := e.ensure(svc, ns); st.Ingress[0].Hostname != svc.Status.LoadBalancer.Ingress[0].Hostname {
			t.Errorf("%s: address %v, upstream's %v", svc.Name, st.Ingress, svc.Status.LoadBalancer.Ingress)
		}
	}
	if m := e.mutations(); len(m) != 0 {
		t.Errorf("adoption wrote %v", m)
	}
	if now := madeParts(c.Server(), nil); !slices.Equal(now, made) {
		t.Errorf("after adoption\n%s\nupstream made\n%s", strings.Join(now, "\n"), strings.Join(made, "\n"))
	}
	nlb.Spec.Ports = append(nlb.Spec.Ports, tcpPort(443, 30443))
	e.ensure(nlb, ns)
	want := map[string]string{clusterTagKey(switchCluster): clusterTagOwned, serviceNameTagKey: "default/web"}
	if got := lbTagsOf(t, c.Server(), upstreamNLBName(nlb)); !maps.Equal(got, want) {
		t.Errorf("tags after a port change %v, want upstream's %v", got, want)
	}
	opts, err := parseLBOptions(nlb)
	if err != nil {
		t.Fatal(err)
	}
	naming := upstreamTGNaming(switchCluster, nlb, opts.healthCheck)
	var tgs []string
	for _, r := range c.Server().Resources() {
		if r.Kind == cloudsimaws.KindTargetGroup {
			tgs = append(tgs, r.Name)
		}
	}
	slices.Sort(tgs)
	if wantTGs := slices.Sorted(slices.Values([]string{naming.name(opts.ports[0]), naming.name(opts.ports[1])})); !slices.Equal(tgs, wantTGs) {
		t.Errorf("target groups %v, want upstream's %v", tgs, wantTGs)
	}
	for _, svc := range []*v1.Service{nlb, clb} {
		now := metav1.Now()
		svc.DeletionTimestamp = &now
		e.deleteAll(svc)
	}
	if left := madeParts(c.Server(), nil); !slices.Equal(left, baseline) {
		t.Errorf("left\n%s\nbefore\n%s", strings.Join(left, "\n"), strings.Join(baseline, "\n"))
	}
}

// switchedShape summarises everything of the Service's on a switched
// config: the names of what is tagged for it, the load balancer's tags,
// each target group's targets and the node group's rules.
func (e *lbEnv) switchedShape(svc *v1.Service) string {
	tagged := e.tagged(svc)
	var parts []string
	for _, kind := range []string{cloudsimaws.KindLoadBalancer, cloudsimaws.KindTargetGroup, cloudsimaws.KindListener, cloudsimaws.KindSecurityGroup} {
		var names []string
		for _, r := range tagged[kind] {
			names = append(names, r.Name)
			if kind == cloudsimaws.KindLoadBalancer {
				parts = append(parts, fmt.Sprintf("tags %v", r.Tags))
			}
		}
		slices.Sort(names)
		parts = append(parts, fmt.Sprintf("%s=%v", kind, names))
	}
	byID := names(e.srv)
	for _, r := range e.srv.Resources() {
		if r.Kind == cloudsimaws.KindTarget {
			parts = append(parts, byID[r.Parent]+"->"+r.Name)
		}
	}
	// The shared MTU rule too: after a crash between the client rules'
	// authorization and its own, the next ensure finds it out of step.
	parts = append(parts, nodeGroupRules(e)...)
	slices.Sort(parts)
	return strings.Join(parts, "\n")
}

// TestSwitchedCrashAnywhereConverges is TestCrashAnywhereConverges on a
// switched config: create, a port and health check change (every target
// group replaced under upstream's new names) and delete, crashed before
// each mutating call in turn and run again by a restarted controller,
// end as an uninterrupted run does (the record gone from the load
// balancer's tags), and deleting leaves nothing.
func TestSwitchedCrashAnywhereConverges(t *testing.T) {
	upstreamShape := func(s *Section) { s.LoadBalancer.UpstreamShape = true }
	nlb := map[string]string{string(annotationLBType): lbTypeNLB}
	svc1 := func() *v1.Service {
		return lbService(nlb, tcpPort(80, 30080), tcpPort(53, 30053), udpPort(53, 30053))
	}
	svc2 := func() *v1.Service {
		s := lbService(nlb, tcpPort(80, 30080), tcpPort(443, 30443))
		s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
		s.Spec.HealthCheckNodePort = 32000
		return s
	}
	for _, ph := range crashPhases(svc1, svc2) {
		t.Run(ph.name, func(t *testing.T) {
			crashAtEachPoint(t, ph, func() *lbEnv { return newLBEnv(t, upstreamShape) },
				func(e *lbEnv) string { return e.switchedShape(svc1()) },
				func(want string) {
					if ph.name != "delete" && !strings.Contains(want, "load-balancer=["+upstreamNLBName(svc1())+"]") {
						t.Fatalf("not upstream's name:\n%s", want)
					}
				})
		})
	}
}

// TestSwitchedInventory: the inventory lists what an upstream-shaped NLB
// and Classic ELB are made of as the Service's, and an ensure after drift
// repair's Forget neither writes nor changes that listing.
func TestSwitchedInventory(t *testing.T) {
	e, _, _, ns := switchEnv(t)
	inv := newInventory(e.lb)
	svcs := []*v1.Service{
		switchService("web", "9234abcd-0000-1111-2222-333344445555", map[string]string{string(annotationLBType): lbTypeNLB}, tcpPort(80, 30080)),
		switchService("shop", "a234abcd-0000-1111-2222-333344445555", nil, tcpPort(80, 30081)),
	}
	for _, svc := range svcs {
		e.ensure(svc, ns)
	}
	list := func() []string {
		owned, err := inv.Owned(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, o := range owned {
			out = append(out, fmt.Sprintf("%s %s %s %s", o.Service, o.Kind, o.Name, o.Detail))
		}
		slices.Sort(out)
		return out
	}
	before := list()
	kinds := map[string]map[string]bool{}
	for _, line := range before {
		f := strings.SplitN(line, " ", 2)
		if kinds[f[0]] == nil {
			kinds[f[0]] = map[string]bool{}
		}
		// "security group rule" before "security group", which it starts with.
		for _, k := range []string{partNLB, partTargetGroup, partListener, partClassic, partRule, partSecurityGroup} {
			if strings.HasPrefix(f[1], k+" ") {
				kinds[f[0]][k] = true
				break
			}
		}
	}
	if k := kinds["default/web"]; !k[partNLB] || !k[partTargetGroup] || !k[partListener] || !k[partRule] || k[partSecurityGroup] {
		t.Errorf("the NLB's parts: %v\n%s", k, strings.Join(before, "\n"))
	}
	if k := kinds["default/shop"]; !k[partClassic] || !k[partSecurityGroup] || !k[partRule] {
		t.Errorf("the Classic ELB's parts: %v\n%s", k, strings.Join(before, "\n"))
	}
	e.srv.ResetCalls()
	for _, svc := range svcs {
		inv.Forget(key(svc))
		e.ensure(svc, ns)
	}
	if m := e.mutations(); len(m) != 0 {
		t.Errorf("ensure after Forget wrote %v", m)
	}
	if after := list(); !slices.Equal(after, before) {
		t.Errorf("listing changed\n%s\nwas\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
	}
}
