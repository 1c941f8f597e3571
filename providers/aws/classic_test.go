package aws

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

// clbEnv is lbEnv with the load balancers a Cloud serves: each Service to
// the NLB or the Classic ELB code by its type, defaultType classic.
type clbEnv struct {
	*lbEnv
	typed *typedLoadBalancers
}

func newCLBEnv(t *testing.T) *clbEnv {
	t.Helper()
	e := newLBEnv(t)
	return &clbEnv{lbEnv: e, typed: newTypedLoadBalancers(e.lb, defaultTypeClassic)}
}

func (e *clbEnv) ensure(svc *v1.Service, nodes []*v1.Node) *v1.LoadBalancerStatus {
	e.t.Helper()
	st, err := e.typed.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes)
	if err != nil {
		e.t.Fatalf("EnsureLoadBalancer: %v", err)
	}
	return st
}

// deleteAll deletes the Service's load balancers, waiting out security
// groups AWS still holds, as the service controller would.
func (e *clbEnv) deleteAll(svc *v1.Service) {
	e.t.Helper()
	for range 3 {
		err := e.typed.EnsureLoadBalancerDeleted(e.ctx, "kubernetes", svc)
		var re *api.RetryError
		if errors.As(err, &re) {
			continue
		}
		if err != nil {
			e.t.Fatalf("EnsureLoadBalancerDeleted: %v", err)
		}
		return
	}
	e.t.Fatal("EnsureLoadBalancerDeleted kept asking to retry")
}

func (e *clbEnv) clb(svc *v1.Service) cloudsimaws.ClassicLoadBalancerInfo {
	e.t.Helper()
	info, ok := e.emu.ClassicLoadBalancer(classicName(svc))
	if !ok {
		e.t.Fatalf("no Classic ELB %s", classicName(svc))
	}
	return info
}

// clbSG is the Classic ELB's security group, found by upstream's name.
func (e *clbEnv) clbSG(svc *v1.Service) ec2types.SecurityGroup {
	e.t.Helper()
	out, err := e.api.ec2.DescribeSecurityGroups(e.ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{
		{Name: aws.String("group-name"), Values: []string{"k8s-elb-" + classicName(svc)}},
	}})
	if err != nil || len(out.SecurityGroups) != 1 {
		e.t.Fatalf("security group k8s-elb-%s: %v, %d found", classicName(svc), err, len(out.SecurityGroups))
	}
	return out.SecurityGroups[0]
}

func sgIngress(sg ec2types.SecurityGroup) []string {
	v := &lbView{sg: sg}
	return v.sgIngress()
}

func listenerStrings(info cloudsimaws.ClassicLoadBalancerInfo) []string {
	var out []string
	for _, l := range info.Listeners {
		s := l.Protocol + ":" + strconv.Itoa(l.LoadBalancerPort) + "->" + l.InstanceProtocol + ":" + strconv.Itoa(l.InstancePort)
		if l.SSLCertificateID != "" {
			s += " " + l.SSLCertificateID
		}
		out = append(out, s)
	}
	return out
}

func nonZero(calls map[string]int) map[string]int {
	out := map[string]int{}
	for op, n := range calls {
		if n > 0 {
			out[op] = n
		}
	}
	return out
}

func sortedStrings(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

func TestClassicCreateAndResync(t *testing.T) {
	e := newCLBEnv(t)
	nodes := e.nodes(3)
	svc := lbService(nil, tcpPort(80, 30080), tcpPort(443, 30443))
	before := e.srv.Resources()

	e.srv.ResetCalls()
	st := e.ensure(svc, nodes)
	t.Logf("create: %s", e.callSummary())

	if name := e.typed.GetLoadBalancerName(e.ctx, "kubernetes", svc); name != "auidweb" {
		t.Errorf("name %q, want upstream's a+UID", name)
	}
	info := e.clb(svc)
	if len(st.Ingress) != 1 || st.Ingress[0].Hostname != info.DNSName || info.DNSName == "" {
		t.Errorf("status %+v, want the Classic ELB's DNS name %s", st, info.DNSName)
	}
	if info.Scheme != "internet-facing" {
		t.Errorf("scheme %s", info.Scheme)
	}
	if got, want := sortedStrings(info.Subnets), lbSortedValues(e.fx.PublicSubnets); !reflect.DeepEqual(got, want) {
		t.Errorf("subnets %v, want the public ones %v", got, want)
	}
	if got, want := listenerStrings(info), []string{"TCP:80->TCP:30080", "TCP:443->TCP:30443"}; !reflect.DeepEqual(got, want) {
		t.Errorf("listeners %v, want %v", got, want)
	}
	want := cloudsimaws.ClassicHealthCheck{Target: "TCP:30080", Interval: 10, Timeout: 5, UnhealthyThreshold: 6, HealthyThreshold: 2}
	if info.HealthCheck != want {
		t.Errorf("health check %+v, want upstream's %+v", info.HealthCheck, want)
	}
	if got := sortedStrings(info.Instances); !reflect.DeepEqual(got, nodeIDs(nodes)) {
		t.Errorf("instances %v, want %v", got, nodeIDs(nodes))
	}
	if info.Tags[clusterTagKey(lbTestCluster)] != "owned" || info.Tags[serviceNameTagKey] != "default/web" {
		t.Errorf("tags %v", info.Tags)
	}
	sg := e.clbSG(svc)
	if len(info.SecurityGroupIDs) != 1 || info.SecurityGroupIDs[0] != aws.ToString(sg.GroupId) {
		t.Errorf("security groups %v, want its own %s", info.SecurityGroupIDs, aws.ToString(sg.GroupId))
	}
	if d := aws.ToString(sg.Description); d != "Security group for Kubernetes ELB auidweb (default/web)" {
		t.Errorf("security group description %q", d)
	}
	if got, want := sgIngress(sg), []string{"icmp/3<-0.0.0.0/0", "tcp/443<-0.0.0.0/0", "tcp/80<-0.0.0.0/0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("security group ingress %v, want %v", got, want)
	}
	if got, want := e.nodeRules(aws.ToString(sg.GroupId)), map[string][]string{e.fx.NodeSecurityGroupID: {"tcp/30080", "tcp/30443"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("node rules %v, want %v", got, want)
	}
	if _, exists, err := e.typed.GetLoadBalancer(e.ctx, "kubernetes", svc); err != nil || !exists {
		t.Errorf("GetLoadBalancer = %v, %v", exists, err)
	}

	// A re-sync with nothing changed makes no write.
	e.srv.ResetCalls()
	e.ensure(svc, nodes)
	t.Logf("re-sync: %s", e.callSummary())
	if m := e.mutations(); len(m) != 0 {
		t.Errorf("re-sync made writes: %v", m)
	}
	// The Classic ELB, its tags and attributes and its security group;
	// the NLB side was found gone by the first sync.
	wantCalls := map[string]int{"elb:DescribeLoadBalancers": 1, "elb:DescribeTags": 1, "elb:DescribeLoadBalancerAttributes": 1,
		"ec2:DescribeSecurityGroups": 1}
	if got := nonZero(e.srv.Calls()); !reflect.DeepEqual(got, wantCalls) {
		t.Errorf("re-sync calls %v, want %v", got, wantCalls)
	}

	e.deleteAll(svc)
	if _, exists, err := e.typed.GetLoadBalancer(e.ctx, "kubernetes", svc); err != nil || exists {
		t.Errorf("after delete GetLoadBalancer = %v, %v", exists, err)
	}
	if added, removed := cloudsim.DiffResources(before, e.srv.Resources()); len(added)+len(removed) != 0 {
		t.Errorf("inventory after delete differs: added %v, removed %v", added, removed)
	}
}

func TestClassicPortChangeAndNodes(t *testing.T) {
	e := newCLBEnv(t)
	nodes := e.nodes(3)
	svc := lbService(nil, tcpPort(80, 30080))
	e.ensure(svc, nodes)

	svc.Spec.Ports = []v1.ServicePort{tcpPort(8080, 30081)}
	e.srv.ResetCalls()
	e.ensure(svc, nodes)
	t.Logf("port change: %s", e.callSummary())
	info := e.clb(svc)
	if got, want := listenerStrings(info), []string{"TCP:8080->TCP:30081"}; !reflect.DeepEqual(got, want) {
		t.Errorf("listeners %v, want %v", got, want)
	}
	if info.HealthCheck.Target != "TCP:30081" {
		t.Errorf("health check target %s", info.HealthCheck.Target)
	}
	sg := e.clbSG(svc)
	if got, want := sgIngress(sg), []string{"icmp/3<-0.0.0.0/0", "tcp/8080<-0.0.0.0/0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("security group ingress %v, want %v", got, want)
	}
	if got, want := e.nodeRules(aws.ToString(sg.GroupId)), map[string][]string{e.fx.NodeSecurityGroupID: {"tcp/30081"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("node rules %v, want %v", got, want)
	}

	// A node joins: one registration, and nothing else written.
	more := append(slices.Clone(nodes), e.nodes(1)...)
	e.srv.ResetCalls()
	if err := e.typed.UpdateLoadBalancer(e.ctx, "kubernetes", svc, more); err != nil {
		t.Fatal(err)
	}
	t.Logf("join: %s", e.callSummary())
	// The load balancer and its tags, the new instance; node rules are
	// known from the last sync.
	if got, want := nonZero(e.srv.Calls()), map[string]int{"elb:DescribeLoadBalancers": 1, "elb:DescribeTags": 1, "ec2:DescribeInstances": 1,
		"elb:RegisterInstancesWithLoadBalancer": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("join calls %v, want %v", got, want)
	}
	if m := e.mutations(); !reflect.DeepEqual(m, map[string]int{"elb:RegisterInstancesWithLoadBalancer": 1}) {
		t.Errorf("join wrote %v", m)
	}
	if got := sortedStrings(e.clb(svc).Instances); !reflect.DeepEqual(got, nodeIDs(more)) {
		t.Errorf("instances %v, want %v", got, nodeIDs(more))
	}
	// Two leave: one deregistration.
	e.srv.ResetCalls()
	if err := e.typed.UpdateLoadBalancer(e.ctx, "kubernetes", svc, more[2:]); err != nil {
		t.Fatal(err)
	}
	if m := e.mutations(); !reflect.DeepEqual(m, map[string]int{"elb:DeregisterInstancesFromLoadBalancer": 1}) {
		t.Errorf("leave wrote %v", m)
	}
	if got := sortedStrings(e.clb(svc).Instances); !reflect.DeepEqual(got, nodeIDs(more[2:])) {
		t.Errorf("instances %v, want %v", got, nodeIDs(more[2:]))
	}
	// Unchanged: no write.
	e.srv.ResetCalls()
	if err := e.typed.UpdateLoadBalancer(e.ctx, "kubernetes", svc, more[2:]); err != nil {
		t.Fatal(err)
	}
	if m := e.mutations(); len(m) != 0 {
		t.Errorf("unchanged update wrote %v", m)
	}
}

func TestClassicTLSAndPolicies(t *testing.T) {
	e := newCLBEnv(t)
	nodes := e.nodes(2)
	cert := "arn:aws:acm:eu-west-1:123456789012:certificate/12345678-1234-1234-1234-123456789012"
	if err := e.emu.AddCertificate(cert); err != nil {
		t.Fatal(err)
	}
	svc := lbService(map[string]string{
		string(annotationSSLCert):              cert,
		string(annotationSSLPorts):             "443",
		string(annotationBackendProtocol):      "http",
		string(annotationSSLNegotiationPolicy): "ELBSecurityPolicy-TLS-1-2-2017-01",
		string(annotationProxyProtocol):        "*",
	}, tcpPort(80, 30080), tcpPort(443, 30443))
	e.ensure(svc, nodes)
	info := e.clb(svc)
	if got, want := listenerStrings(info), []string{"HTTP:80->HTTP:30080", "HTTPS:443->HTTP:30443 " + cert}; !reflect.DeepEqual(got, want) {
		t.Errorf("listeners %v, want %v", got, want)
	}
	policy := "k8s-SSLNegotiationPolicy-ELBSecurityPolicy-TLS-1-2-2017-01"
	for _, l := range info.Listeners {
		if l.LoadBalancerPort == 443 && !slices.Equal(l.PolicyNames, []string{policy}) {
			t.Errorf("listener 443 policies %v, want [%s]", l.PolicyNames, policy)
		}
	}
	wantBackend := map[int][]string{30080: {"k8s-proxyprotocol-enabled"}, 30443: {"k8s-proxyprotocol-enabled"}}
	if !reflect.DeepEqual(info.BackendPolicies, wantBackend) {
		t.Errorf("backend policies %v, want %v", info.BackendPolicies, wantBackend)
	}
	e.srv.ResetCalls()
	e.ensure(svc, nodes)
	if m := e.mutations(); len(m) != 0 {
		t.Errorf("re-sync made writes: %v", m)
	}

	// PROXY protocol off: the backend policies go.
	delete(svc.Annotations, string(annotationProxyProtocol))
	e.ensure(svc, nodes)
	if bp := e.clb(svc).BackendPolicies; len(bp) != 0 {
		t.Errorf("backend policies left: %v", bp)
	}

	// An unknown certificate is an error naming the annotation and the
	// certificate.
	unknown := "arn:aws:acm:eu-west-1:123456789012:certificate/00000000-0000-0000-0000-000000000000"
	svc2 := lbService(map[string]string{string(annotationSSLCert): unknown})
	svc2.Name, svc2.UID = "other", "uid-other"
	_, err := e.typed.EnsureLoadBalancer(e.ctx, "kubernetes", svc2, nodes)
	if err == nil || !strings.Contains(err.Error(), string(annotationSSLCert)) || !strings.Contains(err.Error(), unknown) || !isAPIError(err, "CertificateNotFound") {
		t.Errorf("unknown certificate: %v", err)
	}
	// On an existing load balancer too.
	svc.Annotations[string(annotationSSLCert)] = unknown
	_, err = e.typed.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes)
	if err == nil || !strings.Contains(err.Error(), string(annotationSSLCert)) || !isAPIError(err, "CertificateNotFound") {
		t.Errorf("unknown certificate on an existing load balancer: %v", err)
	}
	// ...and the listener keeps serving the old certificate.
	if got, want := listenerStrings(e.clb(svc)), []string{"HTTP:80->HTTP:30080", "HTTPS:443->HTTP:30443 " + cert}; !reflect.DeepEqual(got, want) {
		t.Errorf("listeners after a failed certificate change %v, want %v", got, want)
	}
	// A known one is swapped in place.
	other := "arn:aws:iam::123456789012:server-certificate/web"
	if err := e.emu.AddCertificate(other); err != nil {
		t.Fatal(err)
	}
	svc.Annotations[string(annotationSSLCert)] = other
	e.srv.ResetCalls()
	e.ensure(svc, nodes)
	if m := e.mutations(); !reflect.DeepEqual(m, map[string]int{"elb:SetLoadBalancerListenerSSLCertificate": 1}) {
		t.Errorf("certificate change wrote %v", m)
	}
	if got, want := listenerStrings(e.clb(svc)), []string{"HTTP:80->HTTP:30080", "HTTPS:443->HTTP:30443 " + other}; !reflect.DeepEqual(got, want) {
		t.Errorf("listeners %v, want %v", got, want)
	}
}

func TestClassicAttributesAndHealthCheck(t *testing.T) {
	e := newCLBEnv(t)
	nodes := e.nodes(1)
	svc := lbService(map[string]string{
		string(annotationCrossZone):         "true",
		string(annotationIdleTimeout):       "120",
		string(annotationDrainingEnabled):   "true",
		string(annotationDrainingTimeout):   "30",
		string(annotationAccessLogEnabled):  "true",
		string(annotationAccessLogBucket):   "logs",
		string(annotationAccessLogPrefix):   "web",
		string(annotationAccessLogInterval): "5",
	})
	svc.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	svc.Spec.HealthCheckNodePort = 32000
	e.ensure(svc, nodes)
	info := e.clb(svc)
	a := info.Attributes
	if !a.CrossZone || a.IdleTimeout != 120 || !a.ConnectionDraining || a.ConnectionDrainingTimeout != 30 ||
		!a.AccessLog || a.AccessLogBucket != "logs" || a.AccessLogPrefix != "web" || a.AccessLogInterval != 5 {
		t.Errorf("attributes %+v", a)
	}
	if info.HealthCheck.Target != "HTTP:32000/healthz" {
		t.Errorf("health check target %s, want HTTP on the health check node port", info.HealthCheck.Target)
	}
	if got, want := e.nodeRules(info.SecurityGroupIDs[0]), map[string][]string{e.fx.NodeSecurityGroupID: {"tcp/30080", "tcp/32000"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("node rules %v, want %v", got, want)
	}
	e.srv.ResetCalls()
	e.ensure(svc, nodes)
	if m := e.mutations(); len(m) != 0 {
		t.Errorf("re-sync made writes: %v", m)
	}
	// Annotations override upstream's health check numbers.
	svc.Annotations[string(annotationHCInterval)] = "30"
	svc.Annotations[string(annotationHCHealthyThreshold)] = "3"
	e.srv.ResetCalls()
	e.ensure(svc, nodes)
	if m := e.mutations(); !reflect.DeepEqual(m, map[string]int{"elb:ConfigureHealthCheck": 1}) {
		t.Errorf("health check change wrote %v", m)
	}
	if hc := e.clb(svc).HealthCheck; hc.Interval != 30 || hc.HealthyThreshold != 3 || hc.UnhealthyThreshold != 6 {
		t.Errorf("health check %+v", hc)
	}
	// Bad values are rejected before any call.
	for _, bad := range []map[string]string{
		{string(annotationIdleTimeout): "forever"},
		{string(annotationProxyProtocol): "true"},
		{string(annotationBackendProtocol): "grpc"},
		{string(annotationAccessLogEnabled): "true"},
		{string(annotationSSLPorts): "8443"},
	} {
		s := lbService(bad)
		s.Name, s.UID = "bad", "uid-bad"
		e.srv.ResetCalls()
		_, err := e.typed.EnsureLoadBalancer(e.ctx, "kubernetes", s, nodes)
		var key string
		for k := range bad {
			key = k
		}
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%v: %v, want an error naming %s", bad, err, key)
		}
		if len(e.srv.Calls()) != 0 {
			t.Errorf("%v: calls made: %s", bad, e.callSummary())
		}
	}
}

func TestClassicTypeChange(t *testing.T) {
	e := newCLBEnv(t)
	nodes := e.nodes(2)
	svc := lbService(map[string]string{string(annotationLBType): "nlb"})
	before := e.srv.Resources()

	kinds := func() map[string]int {
		out := map[string]int{}
		for kind, rs := range e.tagged(svc) {
			out[kind] = len(rs)
		}
		return out
	}
	e.ensure(svc, nodes)
	if k := kinds(); k[cloudsimaws.KindLoadBalancer] != 1 || k[cloudsimaws.KindClassicLoadBalancer] != 0 {
		t.Fatalf("NLB service: %v", k)
	}
	// NLB -> Classic: the NLB, its target groups and security group go.
	delete(svc.Annotations, string(annotationLBType))
	st, err := e.typed.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes)
	for range 3 {
		var re *api.RetryError
		if !errors.As(err, &re) {
			break
		}
		st, err = e.typed.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes)
	}
	if err != nil {
		t.Fatal(err)
	}
	if st.Ingress[0].Hostname != e.clb(svc).DNSName {
		t.Errorf("status %v, want the Classic ELB's", st)
	}
	if k := kinds(); !reflect.DeepEqual(k, map[string]int{cloudsimaws.KindClassicLoadBalancer: 1, cloudsimaws.KindSecurityGroup: 1}) {
		t.Errorf("after NLB -> Classic: %v", k)
	}
	// Classic -> NLB: the Classic ELB and its security group go.
	svc.Annotations = map[string]string{string(annotationLBType): "nlb"}
	e.ensure(svc, nodes)
	if k := kinds(); k[cloudsimaws.KindClassicLoadBalancer] != 0 || k[cloudsimaws.KindLoadBalancer] != 1 || k[cloudsimaws.KindSecurityGroup] != 1 {
		t.Errorf("after Classic -> NLB: %v", k)
	}
	if len(e.emu.ClassicLoadBalancers()) != 0 {
		t.Errorf("Classic ELBs left: %v", e.emu.ClassicLoadBalancers())
	}
	// Classic -> the AWS Load Balancer Controller: nothing of ours stays.
	delete(svc.Annotations, string(annotationLBType))
	e.ensure(svc, nodes)
	svc.Annotations = map[string]string{string(annotationLBType): "external"}
	if _, err := e.typed.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes); err != cloudprovider.ImplementedElsewhere {
		t.Errorf("hand-over: %v, want ImplementedElsewhere unwrapped", err)
	}
	if k := kinds(); len(k) != 0 {
		t.Errorf("after hand-over: %v", k)
	}
	e.deleteAll(svc)
	if added, removed := cloudsim.DiffResources(before, e.srv.Resources()); len(added)+len(removed) != 0 {
		t.Errorf("inventory differs: added %v, removed %v", added, removed)
	}
}

// shape is what the Service's Classic ELB looks like, for comparing runs.
func (e *clbEnv) shape(svc *v1.Service) string {
	e.t.Helper()
	info := e.clb(svc)
	sg := e.clbSG(svc)
	var b strings.Builder
	fmt.Fprintf(&b, "listeners %v\nhealth %+v\ninstances %v\nattributes %+v\nbackend %v\ntags %v\n",
		listenerStrings(info), info.HealthCheck, sortedStrings(info.Instances), info.Attributes, info.BackendPolicies, info.Tags)
	fmt.Fprintf(&b, "sgs %d ingress %v\nnode rules %v\n", len(info.SecurityGroupIDs), sgIngress(sg), e.nodeRules(aws.ToString(sg.GroupId))[e.fx.NodeSecurityGroupID])
	return b.String()
}

// TestClassicCrashConverges fails each mutating call of a create and of a
// delete in turn (as a crash there would cut the sync short): the next
// run converges to the same load balancer, and deleting leaves nothing.
func TestClassicCrashConverges(t *testing.T) {
	svc := func() *v1.Service {
		return lbService(map[string]string{string(annotationProxyProtocol): "*", string(annotationCrossZone): "true"}, tcpPort(80, 30080), tcpPort(443, 30443))
	}
	retrying := func(f func() error) error {
		var err error
		for range 3 {
			var re *api.RetryError
			if err = f(); !errors.As(err, &re) {
				return err
			}
		}
		return err
	}
	for _, phase := range []string{"create", "delete"} {
		t.Run(phase, func(t *testing.T) {
			ref := newCLBEnv(t)
			nodes := ref.nodes(2)
			if phase == "delete" {
				ref.ensure(svc(), nodes)
			}
			ref.srv.ResetCalls()
			run := func(e *clbEnv, nodes []*v1.Node) error {
				if phase == "create" {
					_, err := e.typed.EnsureLoadBalancer(e.ctx, "kubernetes", svc(), nodes)
					return err
				}
				return e.typed.EnsureLoadBalancerDeleted(e.ctx, "kubernetes", svc())
			}
			if err := retrying(func() error { return run(ref, nodes) }); err != nil {
				t.Fatal(err)
			}
			points := ref.srv.CallCount(cloudsim.MutatingOps)
			want := ""
			if phase == "create" {
				want = ref.shape(svc())
			}
			for k := 1; k <= points; k++ {
				e := newCLBEnv(t)
				nodes := e.nodes(2)
				before := e.srv.Resources()
				if phase == "delete" {
					e.ensure(svc(), nodes)
				}
				if err := e.srv.SetFault(cloudsim.FaultSpec{Op: cloudsim.MutatingOps, FailEvery: k}); err != nil {
					t.Fatal(err)
				}
				if err := run(e, nodes); err == nil {
					t.Fatalf("mutating call %d failed, yet the run succeeded", k)
				}
				e.srv.ClearFaults()
				if err := retrying(func() error { return run(e, nodes) }); err != nil {
					t.Fatalf("re-run after a failure at mutating call %d: %v", k, err)
				}
				if phase == "create" {
					if got := e.shape(svc()); got != want {
						t.Errorf("after a failure at mutating call %d:\n%s\nwant\n%s", k, got, want)
					}
				}
				e.deleteAll(svc())
				if added, removed := cloudsim.DiffResources(before, e.srv.Resources()); len(added)+len(removed) != 0 {
					t.Errorf("failure at mutating call %d: added %v, removed %v", k, added, removed)
				}
			}
			t.Logf("%s: converged after a failure at each of %d mutating calls", phase, points)
		})
	}
}

func TestLoadBalancerDefaultTypeConfig(t *testing.T) {
	s := &Section{Region: "eu-west-1"}
	s.SetDefaults()
	if s.LoadBalancer.DefaultType != defaultTypeNLB {
		t.Errorf("default %q, want nlb", s.LoadBalancer.DefaultType)
	}
	for _, v := range []string{defaultTypeNLB, defaultTypeClassic} {
		s.LoadBalancer.DefaultType = v
		if errs := s.Validate(field.NewPath("aws")); len(errs) != 0 {
			t.Errorf("%s: %v", v, errs)
		}
	}
	s.LoadBalancer.DefaultType = "alb"
	errs := s.Validate(field.NewPath("aws"))
	if len(errs) != 1 || errs[0].Field != "aws.loadBalancer.defaultType" || !strings.Contains(errs[0].Error(), `"classic"`) {
		t.Errorf("alb: %v, want one error at aws.loadBalancer.defaultType listing the values", errs)
	}
	s.LoadBalancer.DefaultType = defaultTypeNLB
	s.Endpoints.ELB = "elb.example.com"
	if errs := s.Validate(field.NewPath("aws")); len(errs) != 1 || errs[0].Field != "aws.endpoints.elb" {
		t.Errorf("bad elb endpoint: %v", errs)
	}
}

// TestClassicAdoptsUpstreams: a Classic ELB the upstream CCM made (same
// name and tags; a security group tagged with the cluster tag only; an
// all-protocols node rule without description) is found and kept, its
// DNS name unchanged, and deleting it leaves nothing behind.
func TestClassicAdoptsUpstreams(t *testing.T) {
	e := newCLBEnv(t)
	nodes := e.nodes(2)
	svc := lbService(nil, tcpPort(80, 30080))
	before := e.srv.Resources()
	name := classicName(svc)
	sgOut, err := e.api.ec2.CreateSecurityGroup(e.ctx, &ec2.CreateSecurityGroupInput{
		GroupName: aws.String("k8s-elb-" + name), Description: aws.String("Security group for Kubernetes ELB " + name + " (default/web)"),
		VpcId: aws.String(e.fx.VPCID),
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeSecurityGroup,
			Tags: []ec2types.Tag{{Key: aws.String(clusterTagKey(lbTestCluster)), Value: aws.String("owned")}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	sgID := aws.ToString(sgOut.GroupId)
	if _, err := e.api.ec2.AuthorizeSecurityGroupIngress(e.ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(e.fx.NodeSecurityGroupID),
		IpPermissions: []ec2types.IpPermission{{IpProtocol: aws.String("-1"), UserIdGroupPairs: []ec2types.UserIdGroupPair{{GroupId: aws.String(sgID)}}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.api.elb.CreateLoadBalancer(e.ctx, &elb.CreateLoadBalancerInput{
		LoadBalancerName: aws.String(name),
		Listeners:        []elbtypes.Listener{{Protocol: aws.String("tcp"), LoadBalancerPort: 80, InstanceProtocol: aws.String("tcp"), InstancePort: aws.Int32(30080)}},
		Subnets:          lbSortedValues(e.fx.PublicSubnets), SecurityGroups: []string{sgID},
		Tags: []elbtypes.Tag{{Key: aws.String(clusterTagKey(lbTestCluster)), Value: aws.String("owned")}, {Key: aws.String(serviceNameTagKey), Value: aws.String("default/web")}},
	}); err != nil {
		t.Fatal(err)
	}
	dns := e.clb(svc).DNSName

	st := e.ensure(svc, nodes)
	if st.Ingress[0].Hostname != dns || len(e.emu.ClassicLoadBalancers()) != 1 {
		t.Errorf("status %v, want the existing %s", st, dns)
	}
	if got := e.clb(svc).SecurityGroupIDs; !slices.Equal(got, []string{sgID}) {
		t.Errorf("security groups %v, want upstream's %s", got, sgID)
	}
	if got := sortedStrings(e.clb(svc).Instances); !reflect.DeepEqual(got, nodeIDs(nodes)) {
		t.Errorf("instances %v", got)
	}
	e.deleteAll(svc)
	if added, removed := cloudsim.DiffResources(before, e.srv.Resources()); len(added)+len(removed) != 0 {
		t.Errorf("inventory differs: added %v, removed %v", added, removed)
	}
}

// TestClassicSchemeChange: the internal annotation places the Classic ELB
// in the private subnets; a Classic ELB's scheme is fixed, so dropping the
// annotation re-creates it internet-facing, keeping its security group.
func TestClassicSchemeChange(t *testing.T) {
	e := newCLBEnv(t)
	nodes := e.nodes(2)
	svc := lbService(map[string]string{string(annotationInternal): "true"})
	e.ensure(svc, nodes)
	info := e.clb(svc)
	if info.Scheme != "internal" || !reflect.DeepEqual(sortedStrings(info.Subnets), lbSortedValues(e.fx.PrivateSubnets)) {
		t.Errorf("scheme %s subnets %v, want internal in %v", info.Scheme, info.Subnets, lbSortedValues(e.fx.PrivateSubnets))
	}
	sg := aws.ToString(e.clbSG(svc).GroupId)
	delete(svc.Annotations, string(annotationInternal))
	st := e.ensure(svc, nodes)
	info = e.clb(svc)
	if info.Scheme != "internet-facing" || st.Ingress[0].Hostname != info.DNSName || !slices.Equal(info.SecurityGroupIDs, []string{sg}) {
		t.Errorf("after the change: scheme %s, security groups %v (want [%s]), status %v", info.Scheme, info.SecurityGroupIDs, sg, st)
	}
	if got := sortedStrings(info.Instances); !reflect.DeepEqual(got, nodeIDs(nodes)) {
		t.Errorf("instances %v", got)
	}
}

// An existing Classic ELB follows its subnets, as upstream's: a zone
// dropped is detached, one added attached, and a subnet replacing another
// in its zone swapped.
func TestClassicSubnetChanges(t *testing.T) {
	e := newCLBEnv(t)
	nodes := e.nodes(1, e.fx.NodeSecurityGroupID)
	svc := lbService(nil)
	e.ensure(svc, nodes)
	zones := slices.Sorted(maps.Keys(e.fx.PublicSubnets))
	var all []string
	for _, z := range zones {
		all = append(all, e.fx.PublicSubnets[z])
	}
	if got := e.clb(svc).Subnets; !sameGroups(got, all) {
		t.Fatalf("subnets %v, want the public ones %v", got, all)
	}
	dns := e.clb(svc).DNSName
	for _, step := range []struct {
		name string
		want []string
	}{
		{"a zone dropped", all[:2]},
		{"a zone added back", all},
		{"a zone's subnet replaced", append([]string{e.fx.PrivateSubnets[zones[0]]}, all[1:]...)},
	} {
		svc.Annotations = map[string]string{string(annotationSubnets): strings.Join(step.want, ",")}
		e.ensure(svc, nodes)
		info := e.clb(svc)
		if !sameGroups(info.Subnets, step.want) {
			t.Errorf("%s: subnets %v, want %v", step.name, info.Subnets, step.want)
		}
		if info.DNSName != dns {
			t.Errorf("%s: DNS name changed", step.name)
		}
	}
	e.deleteAll(svc)
}
