package aws

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/clientopts"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodes"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

const lbTestCluster = "lbtest"

// lbEnv is one emulated AWS account with the default cluster network and
// a loadBalancers wired to it through the real SDK clients.
type lbEnv struct {
	t   *testing.T
	ctx context.Context
	emu *cloudsimaws.Emulator
	srv *cloudsim.Server
	fx  cloudsimaws.Fixture
	api *clients
	lb  *loadBalancers
}

func newLBEnv(t *testing.T, tweak ...func(*Section)) *lbEnv {
	t.Helper()
	// clients.go hands the SDK a plain *http.Client, which it cannot give
	// a custom CA bundle; this machine sets one.
	t.Setenv("AWS_CA_BUNDLE", "")
	emu := cloudsimaws.NewDefault(cloudsimaws.Config{Region: "eu-west-1", ClusterID: lbTestCluster})
	srv, err := cloudsim.Start(emu)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	s := &Section{
		Region:      "eu-west-1",
		Endpoints:   Endpoints{EC2: srv.URL(), ELBv2: srv.URL()},
		Credentials: Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret"},
		// One attempt: call counts are exact and injected failures act
		// like a crash at that call.
		Options: clientopts.Options{MaxAttempts: 1},
	}
	for _, f := range tweak {
		f(s)
	}
	s.SetDefaults()
	_, ctx := ktesting.NewTestContext(t)
	api := testClients(t, ctx, s)
	lb := newLoadBalancers(api, s, lbTestCluster, newInstances(api, s, lbTestCluster, nodes.New(instanceIDFromProviderID), clock.RealClock{}), clock.RealClock{})
	return &lbEnv{t: t, ctx: ctx, emu: emu, srv: srv, fx: emu.Fixture(), api: api, lb: lb}
}

// nodes launches n instances and returns Nodes for them, as the node
// controller would have initialized them.
func (e *lbEnv) nodes(n int, sgs ...string) []*v1.Node {
	e.t.Helper()
	ids, err := e.emu.Launch(cloudsimaws.LaunchSpec{Count: n, SecurityGroupIDs: sgs, Tags: map[string]string{e.fx.ClusterTagKey: "owned"}})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []*v1.Node
	for _, id := range ids {
		info, _ := e.emu.Instance(id)
		out = append(out, &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: info.PrivateDNSName},
			Spec:       v1.NodeSpec{ProviderID: providerID(info.Zone, id)},
		})
	}
	return out
}

func nodeIDs(nodes []*v1.Node) []string {
	var out []string
	for _, n := range nodes {
		id, _ := instanceIDFromProviderID(n.Spec.ProviderID)
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

func tcpPort(port, nodePort int32) v1.ServicePort {
	return v1.ServicePort{Name: fmt.Sprintf("tcp-%d", port), Port: port, NodePort: nodePort, Protocol: v1.ProtocolTCP}
}

func udpPort(port, nodePort int32) v1.ServicePort {
	return v1.ServicePort{Name: fmt.Sprintf("udp-%d", port), Port: port, NodePort: nodePort, Protocol: v1.ProtocolUDP}
}

func (e *lbEnv) ensure(svc *v1.Service, nodes []*v1.Node) *v1.LoadBalancerStatus {
	e.t.Helper()
	st, err := e.lb.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes)
	if err != nil {
		e.t.Fatalf("EnsureLoadBalancer: %v", err)
	}
	return st
}

// mutations counts the mutating calls since the last reset, by operation.
func (e *lbEnv) mutations() map[string]int {
	out := map[string]int{}
	for op, n := range e.srv.Calls() {
		if e.emu.Mutating(op) && n > 0 {
			out[op] = n
		}
	}
	return out
}

func (e *lbEnv) callSummary() string {
	calls := e.srv.Calls()
	ops := make([]string, 0, len(calls))
	total := 0
	for op, n := range calls {
		ops = append(ops, fmt.Sprintf("%s=%d", op, n))
		total += n
	}
	sort.Strings(ops)
	return fmt.Sprintf("%d calls: %s", total, strings.Join(ops, " "))
}

// tagged lists the emulator's resources tagged for the Service, by kind.
func (e *lbEnv) tagged(svc *v1.Service) map[string][]cloudsim.Resource {
	out := map[string][]cloudsim.Resource{}
	for _, r := range e.srv.Resources() {
		if r.Tags[serviceNameTagKey] == serviceKey(svc) {
			out[r.Kind] = append(out[r.Kind], r)
		}
	}
	return out
}

// lbView is the Service's NLB as the ELBv2 API reports it.
type lbView struct {
	lb        elbv2types.LoadBalancer
	listeners map[int32]elbv2types.Listener
	tgs       map[string]elbv2types.TargetGroup // by ARN
	targets   map[string][]string               // TG name -> "id:port", sorted
	sg        ec2types.SecurityGroup
}

func (e *lbEnv) view(svc *v1.Service) *lbView {
	e.t.Helper()
	ctx := e.ctx
	name := loadBalancerName(lbTestCluster, svc)
	out, err := e.api.elbv2.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{Names: []string{name}})
	if err != nil || len(out.LoadBalancers) != 1 {
		e.t.Fatalf("describe %s: %v", name, err)
	}
	v := &lbView{lb: out.LoadBalancers[0], listeners: map[int32]elbv2types.Listener{}, tgs: map[string]elbv2types.TargetGroup{}, targets: map[string][]string{}}
	ls, err := e.api.elbv2.DescribeListeners(ctx, &elbv2.DescribeListenersInput{LoadBalancerArn: v.lb.LoadBalancerArn})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, l := range ls.Listeners {
		v.listeners[aws.ToInt32(l.Port)] = l
	}
	tgs, err := e.api.elbv2.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{LoadBalancerArn: v.lb.LoadBalancerArn})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, tg := range tgs.TargetGroups {
		v.tgs[aws.ToString(tg.TargetGroupArn)] = tg
		th, err := e.api.elbv2.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: tg.TargetGroupArn})
		if err != nil {
			e.t.Fatal(err)
		}
		var ts []string
		for _, d := range th.TargetHealthDescriptions {
			ts = append(ts, fmt.Sprintf("%s:%d", aws.ToString(d.Target.Id), aws.ToInt32(d.Target.Port)))
		}
		sort.Strings(ts)
		v.targets[aws.ToString(tg.TargetGroupName)] = ts
	}
	if len(v.lb.SecurityGroups) != 1 {
		e.t.Fatalf("load balancer has security groups %v, want exactly its own", v.lb.SecurityGroups)
	}
	sgs, err := e.api.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: v.lb.SecurityGroups})
	if err != nil {
		e.t.Fatal(err)
	}
	v.sg = sgs.SecurityGroups[0]
	return v
}

// listenerRules is the view's load balancer security group ingress as
// "proto/port<-cidr" strings.
func (v *lbView) sgIngress() []string {
	var out []string
	for r := range cidrRules(v.sg.IpPermissions) {
		out = append(out, fmt.Sprintf("%s/%d<-%s", r.proto, r.from, r.cidr))
	}
	sort.Strings(out)
	return out
}

// nodeRules lists, per security group, the ingress rules whose source is
// src, as "proto/port" strings.
func (e *lbEnv) nodeRules(src string) map[string][]string {
	e.t.Helper()
	out, err := e.api.ec2.DescribeSecurityGroups(e.ctx, &ec2.DescribeSecurityGroupsInput{})
	if err != nil {
		e.t.Fatal(err)
	}
	rules := map[string][]string{}
	for _, sg := range out.SecurityGroups {
		for _, p := range sg.IpPermissions {
			for _, pair := range p.UserIdGroupPairs {
				if aws.ToString(pair.GroupId) == src {
					rules[aws.ToString(sg.GroupId)] = append(rules[aws.ToString(sg.GroupId)], fmt.Sprintf("%s/%d", aws.ToString(p.IpProtocol), aws.ToInt32(p.FromPort)))
				}
			}
		}
	}
	for k := range rules {
		sort.Strings(rules[k])
	}
	return rules
}

func targetsOf(ids []string, port int32) []string {
	var out []string
	for _, id := range ids {
		out = append(out, fmt.Sprintf("%s:%d", id, port))
	}
	sort.Strings(out)
	return out
}
