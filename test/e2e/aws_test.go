package e2e

import (
	"context"
	"fmt"
	"path/filepath"
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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/multicloud-ccm/multicloud-ccm/test/ccmproc"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

// awsEnv is one AWS emulator plus one CCM (the release build) pointed at
// it, shared by the AWS scenarios, which run in order.
type awsEnv struct {
	emu *cloudsimaws.Emulator
	srv *cloudsim.Server
	fx  cloudsimaws.Fixture
	ccm *ccmProcess
	// instances maps node name (private DNS name) to instance ID.
	instances map[string]string
}

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

const awsCluster = "e2e-aws"

func startAWS(t *testing.T) *awsEnv {
	t.Helper()
	e := &awsEnv{instances: map[string]string{}}
	e.emu = cloudsimaws.NewDefault(cloudsimaws.Config{Region: "eu-west-1", ClusterID: awsCluster})
	var err error
	if e.srv, err = cloudsim.Start(e.emu); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.srv.Close() })
	e.fx = e.emu.Fixture()
	cfg := writeFile(t, "aws-cloud-config.yaml", fmt.Sprintf(`apiVersion: multicloud-ccm.io/v1alpha1
kind: CloudConfig
provider: aws
clusterID: %s
aws:
  region: eu-west-1
  vpcID: %s
  routeTables: {ids: [%s]}
  endpoints: {ec2: %q, elbv2: %q}
  credentials: {accessKeyID: AKIAE2ETEST000000000, secretAccessKey: %s}
  requestTimeout: 5s
  maxAttempts: 3
  instanceCacheTTL: 10s
`, awsCluster, e.fx.VPCID, e.fx.RouteTableID, e.srv.URL(), e.srv.URL(), fakeSecret))
	// Leader election is covered by TestManager; here it would only add a
	// wait for TestManager's last Lease to expire.
	e.ccm = startCCM(t, "ccm-aws", release(t), cfg,
		"--leader-elect=false",
		"--cluster-cidr=10.244.0.0/16", "--configure-cloud-routes=true", "--allocate-node-cidrs=false",
		"--node-monitor-period=1s", "--route-reconciliation-period=2s")
	return e
}

// launchNode launches an instance and registers its Node like a
// --cloud-provider=external kubelet: named by private DNS name, tainted,
// no providerID.
func (e *awsEnv) launchNode(t *testing.T, zone string, podCIDR string) string {
	t.Helper()
	ids, err := e.emu.Launch(cloudsimaws.LaunchSpec{Zone: zone, InstanceType: "m5.xlarge", PublicIP: true,
		Tags: map[string]string{e.fx.ClusterTagKey: "owned"}})
	if err != nil {
		t.Fatal(err)
	}
	info, _ := e.emu.Instance(ids[0])
	e.instances[info.PrivateDNSName] = ids[0]
	node := ccmproc.KubeletNode(info.PrivateDNSName, podCIDR)
	if _, err := env.admin.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.admin.CoreV1().Nodes().Delete(context.Background(), info.PrivateDNSName, metav1.DeleteOptions{})
	})
	return info.PrivateDNSName
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
// exactly the instances of the named nodes.
func (e *awsEnv) waitTargets(t *testing.T, service string, tgs int, nodes ...string) {
	t.Helper()
	var want []string
	for _, n := range nodes {
		want = append(want, e.instances[n])
	}
	sort.Strings(want)
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

func setReady(t *testing.T, name string, status corev1.ConditionStatus) {
	t.Helper()
	ctx := context.Background()
	n, err := env.admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, LastHeartbeatTime: now, LastTransitionTime: now, Reason: "KubeletNotReady"}}
	if _, err := env.admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitService(t *testing.T, ns, name string, what string, cond func(*corev1.Service) (bool, string)) *corev1.Service {
	t.Helper()
	var svc *corev1.Service
	poll(t, 60*time.Second, what, func(ctx context.Context) (bool, string, error) {
		s, err := env.admin.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		svc = s
		ok, seen := cond(s)
		return ok, seen, nil
	})
	return svc
}

func TestAWS(t *testing.T) {
	e := startAWS(t)
	ctx := context.Background()
	zones := e.emu.Zones()
	n1 := e.launchNode(t, zones[0], "10.244.1.0/24")
	n2 := e.launchNode(t, zones[1], "10.244.2.0/24")

	t.Run("nodes are initialized from EC2", func(t *testing.T) {
		for _, name := range []string{n1, n2} {
			poll(t, 60*time.Second, "node "+name+" initialized", func(ctx context.Context) (bool, string, error) {
				n, err := env.admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, "", err
				}
				return ccmproc.Initialized(n) && len(n.Status.Addresses) >= 4,
					fmt.Sprintf("providerID=%q taints=%v addresses=%v", n.Spec.ProviderID, n.Spec.Taints, n.Status.Addresses), nil
			})
			n, _ := env.admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			info, _ := e.emu.Instance(e.instances[name])
			if want := "aws:///" + info.Zone + "/" + info.ID; n.Spec.ProviderID != want {
				t.Errorf("providerID = %q, want %q", n.Spec.ProviderID, want)
			}
			for k, v := range map[string]string{
				corev1.LabelInstanceTypeStable: "m5.xlarge",
				corev1.LabelTopologyZone:       info.Zone,
				corev1.LabelTopologyRegion:     "eu-west-1",
			} {
				if n.Labels[k] != v {
					t.Errorf("%s label %s = %q, want %q", name, k, n.Labels[k], v)
				}
			}
			if n.Labels["topology.k8s.aws/zone-id"] == "" {
				t.Errorf("%s has no topology.k8s.aws/zone-id label: %v", name, n.Labels)
			}
			addrs := map[corev1.NodeAddressType]string{}
			for _, a := range n.Status.Addresses {
				addrs[a.Type] = a.Address
			}
			if addrs[corev1.NodeInternalIP] != info.PrivateIP || addrs[corev1.NodeExternalIP] != info.PublicIP ||
				addrs[corev1.NodeInternalDNS] != info.PrivateDNSName || addrs[corev1.NodeHostName] != info.PrivateDNSName {
				t.Errorf("%s addresses = %v, instance %+v", name, n.Status.Addresses, info)
			}
		}
	})

	t.Run("routes follow pod CIDRs", func(t *testing.T) {
		poll(t, 60*time.Second, "a route per node", func(context.Context) (bool, string, error) {
			got := e.podRoutes()
			return len(got) == 2 && strings.Contains(strings.Join(got, ","), "10.244.1.0/24 via "+e.instances[n1]) &&
				strings.Contains(strings.Join(got, ","), "10.244.2.0/24 via "+e.instances[n2]), strings.Join(got, ","), nil
		})
		// Route targets must forward pod traffic: source/dest check off.
		out, err := e.ec2(t).DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{e.instances[n1], e.instances[n2]}})
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
		got := waitService(t, ns, svcName, "NLB hostname in status", func(s *corev1.Service) (bool, string) {
			ing := s.Status.LoadBalancer.Ingress
			return len(ing) == 1 && strings.HasSuffix(ing[0].Hostname, ".elb.eu-west-1.amazonaws.com"), fmt.Sprint(ing)
		})
		lbs := e.resources(cloudsimaws.KindLoadBalancer, svcKey)
		if len(lbs) != 1 || lbs[0].Tags["kubernetes.io/cluster/"+awsCluster] != "owned" {
			t.Fatalf("load balancers for %s: %+v", svcKey, lbs)
		}
		if ports := e.listenerPorts(svcKey); strings.Join(ports, ",") != "TCP:443,TCP:80" {
			t.Errorf("listeners = %v", ports)
		}
		e.waitTargets(t, svcKey, 2, n1, n2)
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

	t.Run("targets follow nodes joining and leaving", func(t *testing.T) {
		n3 := e.launchNode(t, zones[2], "10.244.3.0/24")
		e.waitTargets(t, svcKey, 2, n1, n2, n3)
		if err := env.admin.CoreV1().Nodes().Delete(ctx, n3, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		e.waitTargets(t, svcKey, 2, n1, n2)
		poll(t, 60*time.Second, "route of the removed node deleted", func(context.Context) (bool, string, error) {
			got := strings.Join(e.podRoutes(), ",")
			return !strings.Contains(got, "10.244.3.0/24"), got, nil
		})
	})

	t.Run("listeners and target groups follow port changes", func(t *testing.T) {
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
		got := waitService(t, ns, "internal", "internal NLB hostname", func(s *corev1.Service) (bool, string) {
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

	t.Run("a bad annotation becomes an event on that service only", func(t *testing.T) {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: ns, Annotations: map[string]string{
				"service.beta.kubernetes.io/aws-load-balancer-internal": "maybe"}},
			Spec: corev1.ServiceSpec{
				Type:  corev1.ServiceTypeLoadBalancer,
				Ports: []corev1.ServicePort{{Name: "tcp", Port: 9100, Protocol: corev1.ProtocolTCP}},
			},
		}
		if _, err := env.admin.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		poll(t, 60*time.Second, "a warning event naming the annotation", func(ctx context.Context) (bool, string, error) {
			evs, err := env.admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=bad"})
			if err != nil {
				return false, "", err
			}
			for _, ev := range evs.Items {
				if ev.Type == corev1.EventTypeWarning && strings.Contains(ev.Message, "aws-load-balancer-internal") {
					return true, "", nil
				}
			}
			return false, fmt.Sprint(len(evs.Items), " events"), nil
		})
		if got := e.resources(cloudsimaws.KindLoadBalancer, ns+"/bad"); len(got) != 0 {
			t.Errorf("created resources for a service with a bad annotation: %+v", got)
		}
		if err := env.admin.CoreV1().Services(ns).Delete(ctx, "bad", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("deleting services leaves nothing behind in the cloud", func(t *testing.T) {
		for _, name := range []string{svcName, "internal"} {
			if err := env.admin.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range []string{svcName, "internal", "bad"} {
			poll(t, 90*time.Second, "service "+name+" gone", func(ctx context.Context) (bool, string, error) {
				_, err := env.admin.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
				return apierrors.IsNotFound(err), fmt.Sprint(err), nil
			})
		}
		poll(t, 60*time.Second, "no resource tagged for a service", func(context.Context) (bool, string, error) {
			var left []string
			for _, r := range e.emu.Resources() {
				if r.Tags["kubernetes.io/service-name"] != "" || r.Kind == cloudsimaws.KindListener || r.Kind == cloudsimaws.KindTarget ||
					r.Kind == cloudsimaws.KindLoadBalancer || r.Kind == cloudsimaws.KindTargetGroup {
					left = append(left, r.Kind+" "+r.Name)
				}
			}
			// The fixture's node group has one ingress rule (from itself);
			// every rule the CCM added for a load balancer must be gone.
			if rules := e.rulesOf(e.fx.NodeSecurityGroupID); strings.Count(rules, "ingress") != 1 {
				left = append(left, "node SG rules: "+rules)
			}
			return len(left) == 0, strings.Join(left, "; "), nil
		})
	})

	t.Run("throttling never deletes a node", func(t *testing.T) {
		if err := e.srv.SetFault(cloudsim.FaultSpec{Op: "ec2:DescribeInstances", RatePerSecond: 0.001, Burst: 1, ThrottleNext: 1000000}); err != nil {
			t.Fatal(err)
		}
		setReady(t, n1, corev1.ConditionFalse)
		// Several lifecycle periods (1s) and cache lifetimes (10s).
		time.Sleep(15 * time.Second)
		if _, err := env.admin.CoreV1().Nodes().Get(ctx, n1, metav1.GetOptions{}); err != nil {
			t.Fatalf("node %s is gone while EC2 was throttling: %v", n1, err)
		}
		// The lifecycle controller did ask, and got an error, not "gone".
		if want := "error checking if node " + n1 + " exists"; !strings.Contains(e.ccm.log.String(), want) {
			t.Fatalf("the lifecycle controller never saw the throttling (no %q in the CCM log)", want)
		}
		e.srv.ClearFaults()
	})

	t.Run("a stopped instance gets the shutdown taint", func(t *testing.T) {
		if err := e.emu.Stop(e.instances[n1]); err != nil {
			t.Fatal(err)
		}
		setReady(t, n1, corev1.ConditionFalse)
		poll(t, 60*time.Second, "shutdown taint", func(ctx context.Context) (bool, string, error) {
			n, err := env.admin.CoreV1().Nodes().Get(ctx, n1, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			return ccmproc.HasTaint(n, cloudproviderapi.TaintNodeShutdown), fmt.Sprint(n.Spec.Taints), nil
		})
	})

	t.Run("a terminated instance's NotReady node is deleted", func(t *testing.T) {
		if err := e.emu.Terminate(e.instances[n2]); err != nil {
			t.Fatal(err)
		}
		setReady(t, n2, corev1.ConditionFalse)
		poll(t, 60*time.Second, "node deleted", func(ctx context.Context) (bool, string, error) {
			_, err := env.admin.CoreV1().Nodes().Get(ctx, n2, metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err), nil
		})
	})

	if e.ccm.exited() {
		t.Fatalf("the CCM exited: %v", e.ccm.Err())
	}
	if strings.Contains(e.ccm.log.String(), fakeSecret) {
		t.Fatalf("the CCM logged the AWS secret key")
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

func (e *awsEnv) podRoutes() []string {
	var out []string
	for _, r := range e.resources(cloudsimaws.KindRoute, "") {
		if strings.HasPrefix(r.Name, "10.244.") {
			out = append(out, r.Name)
		}
	}
	sort.Strings(out)
	return out
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
