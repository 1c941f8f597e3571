package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// The upstream AWS CCM's Service annotations this test sets, spelled out
// rather than imported: a Service written for upstream carries these exact
// strings, so a rename in providers/aws must fail here.
const (
	annLBType          = "service.beta.kubernetes.io/aws-load-balancer-type"
	annInternal        = "service.beta.kubernetes.io/aws-load-balancer-internal"
	annSSLCert         = "service.beta.kubernetes.io/aws-load-balancer-ssl-cert"
	annSSLPorts        = "service.beta.kubernetes.io/aws-load-balancer-ssl-ports"
	annSSLPolicy       = "service.beta.kubernetes.io/aws-load-balancer-ssl-negotiation-policy"
	annBackendProtocol = "service.beta.kubernetes.io/aws-load-balancer-backend-protocol"
	annProxyProtocol   = "service.beta.kubernetes.io/aws-load-balancer-proxy-protocol"
	annEIPAllocations  = "service.beta.kubernetes.io/aws-load-balancer-eip-allocations"
	annExtraTags       = "service.beta.kubernetes.io/aws-load-balancer-additional-resource-tags"
	annHCProtocol      = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-protocol"
	annHCPath          = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-path"
	annHCInterval      = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-interval"
	annHCTimeout       = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-timeout"
	annHCHealthy       = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-healthy-threshold"
	annHCUnhealthy     = "service.beta.kubernetes.io/aws-load-balancer-healthcheck-unhealthy-threshold"
	annIdleTimeout     = "service.beta.kubernetes.io/aws-load-balancer-connection-idle-timeout"
	annCrossZone       = "service.beta.kubernetes.io/aws-load-balancer-cross-zone-load-balancing-enabled"
	annDraining        = "service.beta.kubernetes.io/aws-load-balancer-connection-draining-enabled"
	annDrainingTimeout = "service.beta.kubernetes.io/aws-load-balancer-connection-draining-timeout"
	annSecurityGroups  = "service.beta.kubernetes.io/aws-load-balancer-security-groups"
	annExtraSGs        = "service.beta.kubernetes.io/aws-load-balancer-extra-security-groups"

	// typeClassic is any type but nlb, external and nlb-ip: upstream
	// makes a Classic ELB for it, and so does ours whatever defaultType
	// says (startAWS leaves it at nlb).
	typeClassic = "classic"
	// dropInAccount is the emulator's default account: only certificates
	// of the load balancer's own account (and, for ACM, region) are usable.
	dropInAccount = "123456789012"
)

// TestAWSDropIn shows a Service written for the upstream AWS CCM getting,
// from ours, the load balancer those annotations describe: TLS listeners
// on NLBs and Classic ELBs, PROXY protocol, pinned Elastic IPs, extra tags,
// tuned health checks and Classic ELB attributes, and subnets discovered
// by upstream's tags. Each subtest reads the result back with the real
// SDK, as a user would, and deletes its Service; the emulator's inventory
// must end as it began.
func TestAWSDropIn(t *testing.T) {
	e := startAWS(t)
	zones := e.cloud.Zones()
	i1 := e.launchNode(t, zones[0], "dropin-1", "10.244.21.0/24")
	i2 := e.launchNode(t, zones[1], "dropin-2", "10.244.22.0/24")
	for _, i := range []conformance.Instance{i1, i2} {
		env.waitInitialized(t, i.NodeName)
	}
	// Pod routes are the one thing the manager keeps changing on its
	// own; once they settle, anything else added is a Service's.
	poll(t, converge, "a pod route per node", func(context.Context) (bool, string, error) {
		got := e.cloud.PodRoutes()
		return got["10.244.21.0/24"] == i1.ID && got["10.244.22.0/24"] == i2.ID, fmt.Sprint(got), nil
	})
	before := e.cloud.Inventory()

	t.Run("a TLS NLB", func(t *testing.T) {
		ctx := context.Background()
		cert := "arn:aws:acm:eu-west-1:" + dropInAccount + ":certificate/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
		e.addCertificate(t, cert)
		key, _ := e.provision(t, dropInService("tls-nlb", map[string]string{
			annLBType: "nlb", annSSLCert: cert, annSSLPorts: "443",
		}, 80, 443), i1, i2)

		lb := e.nlbOf(t, key)
		api := e.elbv2(t)
		out, err := api.DescribeListeners(ctx, &elbv2.DescribeListenersInput{LoadBalancerArn: lb.LoadBalancerArn})
		if err != nil {
			t.Fatal(err)
		}
		byPort := map[int32]elbv2types.Listener{}
		for _, l := range out.Listeners {
			byPort[aws.ToInt32(l.Port)] = l
		}
		if len(byPort) != 2 {
			t.Fatalf("listeners: %s", nlbListeners(out.Listeners))
		}
		// Only the ssl-ports listener terminates TLS, with the certificate
		// and AWS's default policy, which ours sets explicitly.
		tls := byPort[443]
		if tls.Protocol != elbv2types.ProtocolEnumTls || len(tls.Certificates) != 1 ||
			aws.ToString(tls.Certificates[0].CertificateArn) != cert || aws.ToString(tls.SslPolicy) != "ELBSecurityPolicy-2016-08" {
			t.Errorf("listener 443 = %s, want TLS with %s and ELBSecurityPolicy-2016-08", nlbListeners([]elbv2types.Listener{tls}), cert)
		}
		if plain := byPort[80]; plain.Protocol != elbv2types.ProtocolEnumTcp || len(plain.Certificates) != 0 || aws.ToString(plain.SslPolicy) != "" {
			t.Errorf("listener 80 = %s, want plain TCP", nlbListeners([]elbv2types.Listener{plain}))
		}
		// Without backend-protocol ssl the decrypted traffic goes on as
		// TCP, as upstream's.
		tgs, err := api.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{LoadBalancerArn: lb.LoadBalancerArn})
		if err != nil {
			t.Fatal(err)
		}
		for _, tg := range tgs.TargetGroups {
			if tg.Protocol != elbv2types.ProtocolEnumTcp {
				t.Errorf("target group %s (port %d) speaks %s to the nodes, want TCP", aws.ToString(tg.TargetGroupName), aws.ToInt32(tg.Port), tg.Protocol)
			}
		}
		env.deleteServiceAndWait(t, key)
	})

	t.Run("a TLS Classic ELB", func(t *testing.T) {
		ctx := context.Background()
		cert := "arn:aws:iam::" + dropInAccount + ":server-certificate/dropin-web"
		e.addCertificate(t, cert)
		const policy = "ELBSecurityPolicy-TLS-1-2-2017-01"
		key, svc := e.provision(t, dropInService("tls-clb", map[string]string{
			annLBType: typeClassic, annSSLCert: cert, annSSLPorts: "443",
			annBackendProtocol: "http", annSSLPolicy: policy,
		}, 80, 443), i1, i2)

		lb := e.clbOf(t, key)
		// Upstream's mapping for backend protocol http: HTTPS to HTTP with
		// the certificate on the ssl-ports, HTTP to HTTP elsewhere.
		want := map[int32]string{
			443: fmt.Sprintf("HTTPS:443 -> HTTP:%d cert %s policies [k8s-SSLNegotiationPolicy-%s]", nodePort(svc, 443), cert, policy),
			80:  fmt.Sprintf("HTTP:80 -> HTTP:%d cert  policies []", nodePort(svc, 80)),
		}
		got := map[int32]string{}
		for _, d := range lb.ListenerDescriptions {
			l := d.Listener
			got[l.LoadBalancerPort] = fmt.Sprintf("%s:%d -> %s:%d cert %s policies %v", strings.ToUpper(aws.ToString(l.Protocol)), l.LoadBalancerPort,
				strings.ToUpper(aws.ToString(l.InstanceProtocol)), aws.ToInt32(l.InstancePort), aws.ToString(l.SSLCertificateId), d.PolicyNames)
		}
		if !maps.Equal(got, want) {
			t.Errorf("listeners:\n got %v\nwant %v", got, want)
		}
		// The negotiation policy is upstream's, named as upstream names it
		// and referring to the predefined policy asked for.
		pols, err := e.elb(t).DescribeLoadBalancerPolicies(ctx, &elb.DescribeLoadBalancerPoliciesInput{
			LoadBalancerName: lb.LoadBalancerName, PolicyNames: []string{"k8s-SSLNegotiationPolicy-" + policy},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(pols.PolicyDescriptions) != 1 || aws.ToString(pols.PolicyDescriptions[0].PolicyTypeName) != "SSLNegotiationPolicyType" ||
			!slices.Contains(policyAttributes(pols.PolicyDescriptions[0]), "Reference-Security-Policy="+policy) {
			t.Errorf("SSL negotiation policy: %s", describePolicies(pols.PolicyDescriptions))
		}
		env.deleteServiceAndWait(t, key)
	})

	t.Run("PROXY protocol on a Classic ELB", func(t *testing.T) {
		ctx := context.Background()
		key, svc := e.provision(t, dropInService("proxy-clb", map[string]string{
			annLBType: typeClassic, annProxyProtocol: "*",
		}, 80, 8443), i1, i2)

		lb := e.clbOf(t, key)
		const name = "k8s-proxyprotocol-enabled"
		pols, err := e.elb(t).DescribeLoadBalancerPolicies(ctx, &elb.DescribeLoadBalancerPoliciesInput{
			LoadBalancerName: lb.LoadBalancerName, PolicyNames: []string{name},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(pols.PolicyDescriptions) != 1 || aws.ToString(pols.PolicyDescriptions[0].PolicyTypeName) != "ProxyProtocolPolicyType" ||
			!slices.Equal(policyAttributes(pols.PolicyDescriptions[0]), []string{"ProxyProtocol=true"}) {
			t.Errorf("PROXY protocol policy: %s", describePolicies(pols.PolicyDescriptions))
		}
		// "*" is every backend port: the NodePort behind each listener.
		want := map[int32]string{nodePort(svc, 80): "[" + name + "]", nodePort(svc, 8443): "[" + name + "]"}
		got := map[int32]string{}
		for _, b := range lb.BackendServerDescriptions {
			got[aws.ToInt32(b.InstancePort)] = fmt.Sprint(b.PolicyNames)
		}
		if !maps.Equal(got, want) {
			t.Errorf("backend policies by instance port = %v, want %v", got, want)
		}
		env.deleteServiceAndWait(t, key)
	})

	t.Run("an NLB pinned to Elastic IPs", func(t *testing.T) {
		// One Elastic IP per subnet the NLB is placed in, which discovery
		// makes one public subnet per zone, paired in zone order.
		pubZones := slices.Sorted(maps.Keys(e.fx.PublicSubnets))
		var allocs []string
		for _, z := range pubZones {
			id, _, err := e.emu.AllocateAddress(map[string]string{"Name": "dropin-" + z})
			if err != nil {
				t.Fatal(err)
			}
			allocs = append(allocs, id)
		}
		// They are the user's, allocated before the Service and released
		// by the user after it: here, once the subtest is over.
		t.Cleanup(func() {
			for _, id := range allocs {
				if err := e.emu.ReleaseAddress(id); err != nil {
					t.Errorf("release %s: %v", id, err)
				}
			}
		})
		key, _ := e.provision(t, dropInService("eip-nlb", map[string]string{
			annLBType: "nlb", annEIPAllocations: strings.Join(allocs, ","),
		}, 80), i1, i2)

		lb := e.nlbOf(t, key)
		want, got := map[string]string{}, map[string]string{}
		for i, z := range pubZones {
			want[e.fx.PublicSubnets[z]] = allocs[i]
		}
		for _, az := range lb.AvailabilityZones {
			var ids []string
			for _, a := range az.LoadBalancerAddresses {
				ids = append(ids, aws.ToString(a.AllocationId))
			}
			got[aws.ToString(az.SubnetId)] = strings.Join(ids, ",")
		}
		if !maps.Equal(got, want) {
			t.Errorf("allocation by subnet = %v, want %v", got, want)
		}

		env.deleteServiceAndWait(t, key)
		// Deleting the NLB frees the addresses; it must not release them.
		left := map[string]string{}
		for _, a := range e.emu.Addresses() {
			left[a.AllocationID] = a.LoadBalancerARN
		}
		for _, id := range allocs {
			if arn, ok := left[id]; !ok {
				t.Errorf("Elastic IP %s was released with the Service; it is the user's", id)
			} else if arn != "" {
				t.Errorf("Elastic IP %s is still held by %s", id, arn)
			}
		}
	})

	t.Run("additional tags and health check tuning on an NLB", func(t *testing.T) {
		ctx := context.Background()
		key, _ := e.provision(t, dropInService("tuned-nlb", map[string]string{
			annLBType: "nlb", annExtraTags: "team=web,env=prod",
			annHCInterval: "10", annHCTimeout: "5", annHCHealthy: "2", annHCUnhealthy: "2",
			annHCProtocol: "HTTP", annHCPath: "/ready",
		}, 80, 443), i1, i2)

		lb := e.nlbOf(t, key)
		api := e.elbv2(t)
		tgs, err := api.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{LoadBalancerArn: lb.LoadBalancerArn})
		if err != nil {
			t.Fatal(err)
		}
		if len(tgs.TargetGroups) != 2 {
			t.Fatalf("%d target groups, want one per port", len(tgs.TargetGroups))
		}
		arns := []string{aws.ToString(lb.LoadBalancerArn)}
		for _, tg := range tgs.TargetGroups {
			arns = append(arns, aws.ToString(tg.TargetGroupArn))
			got := fmt.Sprintf("%s %s:%s every %ds, timeout %ds, healthy %d, unhealthy %d", tg.HealthCheckProtocol,
				aws.ToString(tg.HealthCheckPort), aws.ToString(tg.HealthCheckPath), aws.ToInt32(tg.HealthCheckIntervalSeconds),
				aws.ToInt32(tg.HealthCheckTimeoutSeconds), aws.ToInt32(tg.HealthyThresholdCount), aws.ToInt32(tg.UnhealthyThresholdCount))
			if want := "HTTP traffic-port:/ready every 10s, timeout 5s, healthy 2, unhealthy 2"; got != want {
				t.Errorf("health check of %s = %q, want %q", aws.ToString(tg.TargetGroupName), got, want)
			}
		}
		tags, err := api.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: arns})
		if err != nil {
			t.Fatal(err)
		}
		if len(tags.TagDescriptions) != len(arns) {
			t.Fatalf("tags of %d resources, want %d", len(tags.TagDescriptions), len(arns))
		}
		for _, d := range tags.TagDescriptions {
			have := map[string]string{}
			for _, tg := range d.Tags {
				have[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
			}
			checkExtraTags(t, aws.ToString(d.ResourceArn), have, key, e.fx.ClusterTagKey)
		}
		// The NLB's own security group is the third thing upstream tags.
		sgs := e.resources(cloudsimaws.KindSecurityGroup, key.String())
		if len(sgs) != 1 {
			t.Fatalf("security groups of %s: %+v", key, sgs)
		}
		checkExtraTags(t, sgs[0].ID, sgs[0].Tags, key, e.fx.ClusterTagKey)
		env.deleteServiceAndWait(t, key)
	})

	t.Run("health check and attributes of a Classic ELB", func(t *testing.T) {
		ctx := context.Background()
		key, svc := e.provision(t, dropInService("tuned-clb", map[string]string{
			annLBType: typeClassic, annExtraTags: "team=web,env=prod",
			annHCInterval: "15", annHCTimeout: "4", annHCHealthy: "3", annHCUnhealthy: "4",
			annHCProtocol: "HTTP", annHCPath: "/ready",
			annIdleTimeout: "120", annCrossZone: "true", annDraining: "true", annDrainingTimeout: "30",
		}, 80), i1, i2)

		lb := e.clbOf(t, key)
		hc := lb.HealthCheck
		if hc == nil {
			t.Fatal("no health check")
		}
		got := fmt.Sprintf("%s every %ds, timeout %ds, healthy %d, unhealthy %d", aws.ToString(hc.Target), aws.ToInt32(hc.Interval),
			aws.ToInt32(hc.Timeout), aws.ToInt32(hc.HealthyThreshold), aws.ToInt32(hc.UnhealthyThreshold))
		if want := fmt.Sprintf("HTTP:%d/ready every 15s, timeout 4s, healthy 3, unhealthy 4", nodePort(svc, 80)); got != want {
			t.Errorf("health check = %q, want %q", got, want)
		}
		api := e.elb(t)
		attrs, err := api.DescribeLoadBalancerAttributes(ctx, &elb.DescribeLoadBalancerAttributesInput{LoadBalancerName: lb.LoadBalancerName})
		if err != nil {
			t.Fatal(err)
		}
		a := attrs.LoadBalancerAttributes
		if a == nil || a.CrossZoneLoadBalancing == nil || a.ConnectionSettings == nil || a.ConnectionDraining == nil {
			t.Fatalf("attributes: %+v", a)
		}
		got = fmt.Sprintf("cross-zone %t, idle %ds, draining %t for %ds", a.CrossZoneLoadBalancing.Enabled,
			aws.ToInt32(a.ConnectionSettings.IdleTimeout), a.ConnectionDraining.Enabled, aws.ToInt32(a.ConnectionDraining.Timeout))
		if want := "cross-zone true, idle 120s, draining true for 30s"; got != want {
			t.Errorf("attributes = %q, want %q", got, want)
		}
		tags, err := api.DescribeTags(ctx, &elb.DescribeTagsInput{LoadBalancerNames: []string{aws.ToString(lb.LoadBalancerName)}})
		if err != nil {
			t.Fatal(err)
		}
		if len(tags.TagDescriptions) != 1 {
			t.Fatalf("tags: %+v", tags.TagDescriptions)
		}
		have := map[string]string{}
		for _, tg := range tags.TagDescriptions[0].Tags {
			have[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
		}
		checkExtraTags(t, aws.ToString(lb.LoadBalancerName), have, key, e.fx.ClusterTagKey)
		env.deleteServiceAndWait(t, key)
	})

	t.Run("the user's security groups", func(t *testing.T) {
		ctx := context.Background()
		// Groups the user made; they are the user's to delete.
		user, err := e.emu.CreateSecurityGroup(e.fx.VPCID, "dropin-user", "the user's load balancer group", nil)
		if err != nil {
			t.Fatal(err)
		}
		extra, err := e.emu.CreateSecurityGroup(e.fx.VPCID, "dropin-extra", "the user's extra group", nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			for _, id := range []string{user, extra} {
				if _, err := e.ec2(t).DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(id)}); err != nil {
					t.Errorf("delete the user's group %s: %v", id, err)
				}
			}
		})
		key, svc := e.provision(t, dropInService("user-sgs", map[string]string{
			annLBType: typeClassic, annSecurityGroups: user, annExtraSGs: extra,
		}, 80), i1, i2)
		// Exactly the user's groups: no k8s-elb- group of ours.
		if got := e.clbOf(t, key).SecurityGroups; !slices.Equal(got, []string{user, extra}) {
			t.Errorf("Classic ELB security groups %v, want the user's %v", got, []string{user, extra})
		}
		if owned := e.resources(cloudsimaws.KindSecurityGroup, key.String()); len(owned) != 0 {
			t.Errorf("a security group was made although the user's replace it: %v", owned)
		}
		// The nodes admit the first of them on the NodePort; the user's
		// groups themselves are left as they were.
		rule := fmt.Sprintf("ingress peer: %s, TCP, from port: %d, to port: %d, ALLOW", user, nodePort(svc, 80), nodePort(svc, 80))
		if rules := e.rulesOf(e.fx.NodeSecurityGroupID); !strings.Contains(rules, rule) {
			t.Errorf("node security group lacks %q:\n%s", rule, rules)
		}
		for _, id := range []string{user, extra} {
			if rules := e.rulesOf(id); strings.Contains(rules, "ingress") {
				t.Errorf("the user's group %s was changed:\n%s", id, rules)
			}
		}
		env.deleteServiceAndWait(t, key)
		if rules := e.rulesOf(e.fx.NodeSecurityGroupID); strings.Contains(rules, "peer: "+user) {
			t.Errorf("a node rule admitting the user's group is left:\n%s", rules)
		}
	})

	t.Run("subnets discovered as upstream", func(t *testing.T) {
		// The fixture has, per zone, a public subnet (routed to the
		// internet gateway, tagged kubernetes.io/role/elb) and a private
		// one (kubernetes.io/role/internal-elb), all tagged for this
		// cluster. Upstream's discovery picks exactly one per zone of the
		// right kind; no subnet annotation is set.
		sorted := func(m map[string]string) []string { return slices.Sorted(maps.Values(m)) }
		public, private := sorted(e.fx.PublicSubnets), sorted(e.fx.PrivateSubnets)
		for _, c := range []struct {
			name     string
			ann      map[string]string
			internal bool
		}{
			{"subnets-nlb", map[string]string{annLBType: "nlb"}, false},
			{"subnets-nlb-internal", map[string]string{annLBType: "nlb", annInternal: "true"}, true},
			{"subnets-clb", map[string]string{annLBType: typeClassic}, false},
			{"subnets-clb-internal", map[string]string{annLBType: typeClassic, annInternal: "true"}, true},
		} {
			key, _ := e.provision(t, dropInService(c.name, c.ann, 80), i1, i2)
			scheme, want := "internet-facing", public
			if c.internal {
				scheme, want = "internal", private
			}
			var gotScheme string
			var got []string
			if c.ann[annLBType] == "nlb" {
				lb := e.nlbOf(t, key)
				gotScheme = string(lb.Scheme)
				for _, az := range lb.AvailabilityZones {
					got = append(got, aws.ToString(az.SubnetId))
				}
			} else {
				lb := e.clbOf(t, key)
				gotScheme, got = aws.ToString(lb.Scheme), lb.Subnets
			}
			got = slices.Sorted(slices.Values(got))
			if gotScheme != scheme || !slices.Equal(got, want) {
				t.Errorf("%s: %s in %v, want %s in %v", key, gotScheme, got, scheme, want)
			}
			env.deleteServiceAndWait(t, key)
		}
	})

	if e.ccm.exited() {
		t.Fatalf("the manager exited: %v", e.ccm.Err())
	}
	// Every subtest deleted its Service and released its addresses.
	waitInventory(t, e.cloud, before, "the inventory back to before the Services")
}

// dropInService is a LoadBalancer Service on the given ports carrying the
// annotations a user wrote for the upstream AWS CCM.
func dropInService(name string, annotations map[string]string, ports ...int32) *corev1.Service {
	svc := lbService("dropin-"+name, ports...)
	svc.Annotations = annotations
	return svc
}

// provision creates svc and waits until it has an address and exactly one
// load balancer on its ports with backends insts. An upstream annotation
// the backend ignores warns with UnsupportedAnnotation, and one it refuses
// fails the sync with "is not supported here"; either means the Service
// is no drop-in, so either fails the test.
func (e *awsEnv) provision(t *testing.T, svc *corev1.Service, insts ...conformance.Instance) (types.NamespacedName, *corev1.Service) {
	t.Helper()
	key := env.createService(t, svc)
	var got *corev1.Service
	poll(t, converge, key.String()+": an address", func(ctx context.Context) (bool, string, error) {
		s, err := env.getService(ctx, key)
		if err != nil {
			return false, "", err
		}
		got = s
		if ok, _ := hasAddress(s); ok {
			return true, "", nil
		}
		// Not yet: the warnings say why, if anything went wrong.
		ws, err := env.warnings(ctx, key)
		return false, fmt.Sprintf("ingress %v; warnings %q", s.Status.LoadBalancer.Ingress, ws), err
	})
	var ports []int32
	for _, p := range svc.Spec.Ports {
		ports = append(ports, p.Port)
	}
	slices.Sort(ports)
	e.waitLB(t, key, ports, insts...)
	ws, err := env.warnings(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if strings.HasPrefix(w, "UnsupportedAnnotation:") || strings.Contains(w, "is not supported here") {
			t.Errorf("%s: upstream annotation not served: %s", key, w)
		}
	}
	return key, got
}

// nlbOf reads the Service's one NLB back through ELBv2.
func (e *awsEnv) nlbOf(t *testing.T, key types.NamespacedName) elbv2types.LoadBalancer {
	t.Helper()
	rs := e.resources(cloudsimaws.KindLoadBalancer, key.String())
	if len(rs) != 1 {
		t.Fatalf("NLBs of %s: %+v", key, rs)
	}
	out, err := e.elbv2(t).DescribeLoadBalancers(context.Background(), &elbv2.DescribeLoadBalancersInput{LoadBalancerArns: []string{rs[0].ID}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.LoadBalancers) != 1 {
		t.Fatalf("DescribeLoadBalancers %s: %d load balancers", rs[0].ID, len(out.LoadBalancers))
	}
	return out.LoadBalancers[0]
}

// clbOf reads the Service's one Classic ELB back through Elastic Load
// Balancing.
func (e *awsEnv) clbOf(t *testing.T, key types.NamespacedName) elbtypes.LoadBalancerDescription {
	t.Helper()
	rs := e.resources(cloudsimaws.KindClassicLoadBalancer, key.String())
	if len(rs) != 1 {
		t.Fatalf("Classic ELBs of %s: %+v", key, rs)
	}
	out, err := e.elb(t).DescribeLoadBalancers(context.Background(), &elb.DescribeLoadBalancersInput{LoadBalancerNames: []string{rs[0].ID}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.LoadBalancerDescriptions) != 1 {
		t.Fatalf("DescribeLoadBalancers %s: %d load balancers", rs[0].ID, len(out.LoadBalancerDescriptions))
	}
	return out.LoadBalancerDescriptions[0]
}

// elb returns a real Elastic Load Balancing (Classic) SDK client for the
// emulator.
func (e *awsEnv) elb(t *testing.T) *elb.Client {
	t.Helper()
	return elb.New(elb.Options{
		Region:       "eu-west-1",
		BaseEndpoint: aws.String(e.srv.URL()),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIAE2ETEST000000000", "test", ""),
	})
}

// addCertificate registers a certificate, as issuing it in ACM or
// uploading it to IAM would, and forgets it after the subtest.
func (e *awsEnv) addCertificate(t *testing.T, arn string) {
	t.Helper()
	if err := e.emu.AddCertificate(arn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.emu.RemoveCertificate(arn) })
}

// nodePort is the NodePort the API server gave the Service's port.
func nodePort(svc *corev1.Service, port int32) int32 {
	for _, p := range svc.Spec.Ports {
		if p.Port == port {
			return p.NodePort
		}
	}
	return 0
}

// checkExtraTags checks that a resource made for the Service carries the
// user's team=web and env=prod next to the ownership tags.
func checkExtraTags(t *testing.T, what string, tags map[string]string, key types.NamespacedName, clusterTag string) {
	t.Helper()
	if tags["team"] != "web" || tags["env"] != "prod" || tags[clusterTag] != "owned" || tags["kubernetes.io/service-name"] != key.String() {
		t.Errorf("tags of %s = %v, want team=web, env=prod and the ownership tags", what, tags)
	}
}

func nlbListeners(ls []elbv2types.Listener) string {
	var out []string
	for _, l := range ls {
		var certs []string
		for _, c := range l.Certificates {
			certs = append(certs, aws.ToString(c.CertificateArn))
		}
		out = append(out, fmt.Sprintf("%s:%d certs %v policy %q", l.Protocol, aws.ToInt32(l.Port), certs, aws.ToString(l.SslPolicy)))
	}
	return strings.Join(out, "; ")
}

// policyAttributes renders a policy's attributes as name=value.
func policyAttributes(d elbtypes.PolicyDescription) []string {
	var out []string
	for _, a := range d.PolicyAttributeDescriptions {
		out = append(out, aws.ToString(a.AttributeName)+"="+aws.ToString(a.AttributeValue))
	}
	return out
}

func describePolicies(ds []elbtypes.PolicyDescription) string {
	var out []string
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%s (%s) %v", aws.ToString(d.PolicyName), aws.ToString(d.PolicyTypeName), policyAttributes(d)))
	}
	return fmt.Sprint(out)
}
