package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
	confaws "github.com/multicloud-ccm/multicloud-ccm/test/conformance/aws"
)

var (
	releaseBinaryOnce sync.Once
	releaseBinary     string
	releaseBinaryErr  error
)

// release builds the default binary (every backend, no test backend).
func release(t *testing.T) string {
	t.Helper()
	releaseBinaryOnce.Do(func() {
		releaseBinary = filepath.Join(env.tmp, "multicloud-ccm")
		releaseBinaryErr = goBuild(releaseBinary, "")
	})
	if releaseBinaryErr != nil {
		t.Fatal(releaseBinaryErr)
	}
	return releaseBinary
}

// awsEnv is the AWS emulator (through its conformance adapter) plus one
// manager pointed at it. What every cloud must do is TestConformance's;
// TestAWS checks only what is AWS's own: the exact NLB, listeners and
// target groups, security-group rules, the internal scheme and subnets,
// the Local health check, source/dest check on route targets.
type awsEnv struct {
	*suiteCloud
	emu *cloudsimaws.Emulator
	srv *cloudsim.Server
	fx  cloudsimaws.Fixture
}

func startAWS(t *testing.T) *awsEnv {
	t.Helper()
	s := startSuiteCloud(t, env.cluster, confaws.Adapter{}, "aws-only")
	c, ok := s.cloud.(*confaws.Cloud)
	if !ok {
		t.Fatalf("the aws adapter returned %T", s.cloud)
	}
	return &awsEnv{suiteCloud: s, emu: c.Emulator(), srv: c.Server(), fx: c.Fixture()}
}

// resources returns the emulator's resources of a kind, optionally only
// those tagged for a Service.
func (e *awsEnv) resources(kind, service string) []cloudsim.Resource {
	var out []cloudsim.Resource
	for _, r := range e.emu.Resources() {
		if r.Kind == kind && (service == "" || r.Tags["kubernetes.io/service-name"] == service) {
			out = append(out, r)
		}
	}
	return out
}

// targetsOf lists the instance IDs registered in a Service's target groups.
func (e *awsEnv) targetsOf(service string) map[string][]string {
	tgs := map[string]bool{}
	for _, tg := range e.resources(cloudsimaws.KindTargetGroup, service) {
		tgs[tg.ID] = true
	}
	out := map[string][]string{}
	for _, r := range e.emu.Resources() {
		if r.Kind == cloudsimaws.KindTarget && tgs[r.Parent] {
			out[r.Parent] = append(out[r.Parent], r.Name)
		}
	}
	for k := range out {
		sort.Strings(out[k])
	}
	return out
}

// waitTargets waits until the Service has tgs target groups and each holds
// exactly the given instances.
func (e *awsEnv) waitTargets(t *testing.T, service string, tgs int, ids ...string) {
	t.Helper()
	want := slices.Sorted(slices.Values(ids))
	poll(t, 60*time.Second, fmt.Sprintf("%d target groups with targets %v", tgs, want), func(context.Context) (bool, string, error) {
		targets := e.targetsOf(service)
		ok := len(targets) == tgs
		for _, ids := range targets {
			ok = ok && strings.Join(ids, ",") == strings.Join(want, ",")
		}
		return ok, fmt.Sprint(targets), nil
	})
}

func (e *awsEnv) listenerPorts(service string) []string {
	lbs := map[string]bool{}
	for _, lb := range e.resources(cloudsimaws.KindLoadBalancer, service) {
		lbs[lb.ID] = true
	}
	var out []string
	for _, r := range e.emu.Resources() {
		if r.Kind == cloudsimaws.KindListener && lbs[r.Parent] {
			out = append(out, r.Name)
		}
	}
	sort.Strings(out)
	return out
}

func TestAWS(t *testing.T) {
	e := startAWS(t)
	ctx := context.Background()
	zones := e.cloud.Zones()
	i1 := e.launchNode(t, zones[0], "aws-1", "10.244.1.0/24")
	i2 := e.launchNode(t, zones[1], "aws-2", "10.244.2.0/24")
	for _, i := range []conformance.Instance{i1, i2} {
		n := env.waitInitialized(t, i.NodeName)
		if n.Labels["topology.k8s.aws/zone-id"] == "" {
			t.Errorf("%s has no topology.k8s.aws/zone-id label: %v", i.NodeName, n.Labels)
		}
	}

	t.Run("route targets have their source/dest check off", func(t *testing.T) {
		poll(t, 60*time.Second, "a route per node", func(context.Context) (bool, string, error) {
			got := e.cloud.PodRoutes()
			return got["10.244.1.0/24"] == i1.ID && got["10.244.2.0/24"] == i2.ID, fmt.Sprint(got), nil
		})
		// Route targets must forward pod traffic.
		out, err := e.ec2(t).DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{i1.ID, i2.ID}})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range out.Reservations {
			for _, i := range r.Instances {
				if aws.ToBool(i.SourceDestCheck) {
					t.Errorf("instance %s is a route target but keeps its source/dest check", aws.ToString(i.InstanceId))
				}
			}
		}
	})

	const ns = "default"
	svcName := "web"
	svcKey := ns + "/" + svcName
	t.Run("a LoadBalancer service gets an NLB matching it", func(t *testing.T) {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: svcName, Namespace: ns},
			Spec: corev1.ServiceSpec{
				Type:     corev1.ServiceTypeLoadBalancer,
				Selector: map[string]string{"app": "web"},
				Ports: []corev1.ServicePort{
					{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP},
					{Name: "https", Port: 443, TargetPort: intstr.FromInt32(8443), Protocol: corev1.ProtocolTCP},
				},
				LoadBalancerSourceRanges: []string{"203.0.113.0/24"},
			},
		}
		if _, err := env.admin.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := env.waitService(t, types.NamespacedName{Namespace: ns, Name: svcName}, "NLB hostname in status", func(s *corev1.Service) (bool, string) {
			ing := s.Status.LoadBalancer.Ingress
			return len(ing) == 1 && strings.HasSuffix(ing[0].Hostname, ".elb.eu-west-1.amazonaws.com"), fmt.Sprint(ing)
		})
		lbs := e.resources(cloudsimaws.KindLoadBalancer, svcKey)
		if len(lbs) != 1 || lbs[0].Tags[e.fx.ClusterTagKey] != "owned" {
			t.Fatalf("load balancers for %s: %+v", svcKey, lbs)
		}
		if ports := e.listenerPorts(svcKey); strings.Join(ports, ",") != "TCP:443,TCP:80" {
			t.Errorf("listeners = %v", ports)
		}
		e.waitTargets(t, svcKey, 2, i1.ID, i2.ID)
		sgs := e.resources(cloudsimaws.KindSecurityGroup, svcKey)
		if len(sgs) != 1 {
			t.Fatalf("security groups for %s: %+v", svcKey, sgs)
		}
		// The LB's own group admits exactly the source ranges on the
		// listener ports...
		var ingress []string
		for _, line := range strings.Split(strings.TrimSpace(e.rulesOf(sgs[0].ID)), "\n") {
			if strings.HasPrefix(line, "ingress ") {
				ingress = append(ingress, line)
			}
		}
		sort.Strings(ingress)
		want := []string{
			"ingress peer: 203.0.113.0/24, TCP, from port: 443, to port: 443, ALLOW",
			"ingress peer: 203.0.113.0/24, TCP, from port: 80, to port: 80, ALLOW",
		}
		if strings.Join(ingress, "\n") != strings.Join(want, "\n") {
			t.Errorf("LB security group ingress = %q, want %q", ingress, want)
		}
		// ...and the nodes admit that group on each NodePort.
		nodeRules := e.rulesOf(e.fx.NodeSecurityGroupID)
		for _, p := range got.Spec.Ports {
			rule := fmt.Sprintf("ingress peer: %s, TCP, from port: %d, to port: %d, ALLOW", sgs[0].ID, p.NodePort, p.NodePort)
			if !strings.Contains(nodeRules, rule) {
				t.Errorf("node security group lacks %q:\n%s", rule, nodeRules)
			}
		}
	})

	t.Run("a port change leaves one listener and one target group", func(t *testing.T) {
		s, err := env.admin.CoreV1().Services(ns).Get(ctx, svcName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}
		if _, err := env.admin.CoreV1().Services(ns).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		poll(t, 60*time.Second, "one listener on 8080 and one target group", func(context.Context) (bool, string, error) {
			ports := e.listenerPorts(svcKey)
			tgs := e.resources(cloudsimaws.KindTargetGroup, svcKey)
			return strings.Join(ports, ",") == "TCP:8080" && len(tgs) == 1, fmt.Sprintf("listeners=%v tgs=%d", ports, len(tgs)), nil
		})
	})

	t.Run("internal annotation and externalTrafficPolicy Local", func(t *testing.T) {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "internal", Namespace: ns, Annotations: map[string]string{
				"service.beta.kubernetes.io/aws-load-balancer-internal": "true"}},
			Spec: corev1.ServiceSpec{
				Type:                  corev1.ServiceTypeLoadBalancer,
				ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
				Selector:              map[string]string{"app": "internal"},
				Ports:                 []corev1.ServicePort{{Name: "tcp", Port: 9000, Protocol: corev1.ProtocolTCP}},
			},
		}
		if _, err := env.admin.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := env.waitService(t, types.NamespacedName{Namespace: ns, Name: "internal"}, "internal NLB hostname", func(s *corev1.Service) (bool, string) {
			ing := s.Status.LoadBalancer.Ingress
			return len(ing) == 1 && ing[0].Hostname != "", fmt.Sprint(ing)
		})
		// Read it back the way a user would, with the real SDK.
		api := e.elbv2(t)
		lbs, err := api.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{})
		if err != nil {
			t.Fatal(err)
		}
		var lb *elbv2types.LoadBalancer
		for i := range lbs.LoadBalancers {
			if aws.ToString(lbs.LoadBalancers[i].DNSName) == got.Status.LoadBalancer.Ingress[0].Hostname {
				lb = &lbs.LoadBalancers[i]
			}
		}
		if lb == nil {
			t.Fatalf("no load balancer with DNS name %s", got.Status.LoadBalancer.Ingress[0].Hostname)
		}
		if lb.Scheme != elbv2types.LoadBalancerSchemeEnumInternal {
			t.Errorf("scheme = %q, want internal", lb.Scheme)
		}
		for _, az := range lb.AvailabilityZones {
			if !containsValue(e.fx.PrivateSubnets, aws.ToString(az.SubnetId)) {
				t.Errorf("internal NLB in non-internal subnet %s", aws.ToString(az.SubnetId))
			}
		}
		tgs, err := api.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{LoadBalancerArn: lb.LoadBalancerArn})
		if err != nil {
			t.Fatal(err)
		}
		if len(tgs.TargetGroups) != 1 {
			t.Fatalf("target groups: %d", len(tgs.TargetGroups))
		}
		tg := tgs.TargetGroups[0]
		if tg.HealthCheckProtocol != elbv2types.ProtocolEnumHttp || aws.ToString(tg.HealthCheckPath) != "/healthz" ||
			aws.ToString(tg.HealthCheckPort) != fmt.Sprint(got.Spec.HealthCheckNodePort) {
			t.Errorf("health check for Local policy: %s %s:%s (healthCheckNodePort %d)", tg.HealthCheckProtocol,
				aws.ToString(tg.HealthCheckPort), aws.ToString(tg.HealthCheckPath), got.Spec.HealthCheckNodePort)
		}
	})

	t.Run("deleting services removes the node security group rules", func(t *testing.T) {
		for _, name := range []string{svcName, "internal"} {
			env.deleteServiceAndWait(t, types.NamespacedName{Namespace: ns, Name: name})
		}
		// The fixture's node group has one ingress rule (from itself);
		// every rule the manager added for a load balancer must be gone.
		poll(t, 60*time.Second, "node security group back to its one rule", func(context.Context) (bool, string, error) {
			rules := e.rulesOf(e.fx.NodeSecurityGroupID)
			return strings.Count(rules, "ingress") == 1, rules, nil
		})
	})

	if e.ccm.exited() {
		t.Fatalf("the manager exited: %v", e.ccm.Err())
	}
	for _, secret := range e.cfg.Secrets {
		if strings.Contains(e.ccm.log.String(), secret) {
			t.Fatalf("the manager logged the AWS secret key")
		}
	}
}

// elbv2 returns a real SDK client for the emulator.
func (e *awsEnv) elbv2(t *testing.T) *elbv2.Client {
	t.Helper()
	return elbv2.New(elbv2.Options{
		Region:       "eu-west-1",
		BaseEndpoint: aws.String(e.srv.URL()),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIAE2ETEST000000000", "test", ""),
	})
}

// ec2 returns a real SDK client for the emulator.
func (e *awsEnv) ec2(t *testing.T) *ec2.Client {
	t.Helper()
	return ec2.New(ec2.Options{
		Region:       "eu-west-1",
		BaseEndpoint: aws.String(e.srv.URL()),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIAE2ETEST000000000", "test", ""),
	})
}

// rulesOf renders a security group's rules, one per line.
func (e *awsEnv) rulesOf(sgID string) string {
	var b strings.Builder
	for _, r := range e.emu.Resources() {
		if r.Kind == cloudsimaws.KindSecurityGroupRule && r.Parent == sgID {
			b.WriteString(r.Name + "\n")
		}
	}
	return b.String()
}

func containsValue(m map[string]string, v string) bool {
	for _, x := range m {
		if x == v {
			return true
		}
	}
	return false
}
