package aws_test

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	clbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

// clbEnv is env with a Classic ELB client, and an ACM certificate of the
// emulator's account and region registered.
type clbEnv struct {
	*env
	clb  *elb.Client
	cert string
}

const testCert = "arn:aws:acm:eu-west-1:123456789012:certificate/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"

func newCLBEnv(t *testing.T) *clbEnv {
	t.Helper()
	e := newEnv(t)
	ok(t, e.emu.AddCertificate(testCert))
	return &clbEnv{env: e, clb: clbClient(e.srv.URL(), 1), cert: testCert}
}

// clbClient is clients' Classic ELB counterpart: the same transport,
// credentials and retry settings.
func clbClient(url string, maxAttempts int) *elb.Client {
	cfg := aws.Config{
		HTTPClient:  &http.Client{Transport: rebufferingTransport{http.DefaultTransport.(*http.Transport).Clone()}},
		Region:      region,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDCLOUDSIM", "secret", ""),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = maxAttempts
				o.RateLimiter = ratelimit.None
				o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
			})
		},
	}
	return elb.NewFromConfig(cfg, func(o *elb.Options) { o.BaseEndpoint = aws.String(url) })
}

func tcpListener(port, nodePort int32) clbtypes.Listener {
	return clbtypes.Listener{Protocol: aws.String("tcp"), LoadBalancerPort: port, InstanceProtocol: aws.String("tcp"), InstancePort: aws.Int32(nodePort)}
}

func sslListener(port, nodePort int32, cert string) clbtypes.Listener {
	return clbtypes.Listener{Protocol: aws.String("ssl"), LoadBalancerPort: port, InstanceProtocol: aws.String("tcp"), InstancePort: aws.Int32(nodePort), SSLCertificateId: aws.String(cert)}
}

// clbInput is what the upstream AWS CCM sends for a two-port Service:
// lower-case protocols, the public subnets, the cluster and Service tags.
func clbInput(e *clbEnv, name string) *elb.CreateLoadBalancerInput {
	return &elb.CreateLoadBalancerInput{
		LoadBalancerName: aws.String(name),
		Listeners:        []clbtypes.Listener{tcpListener(80, 30080), sslListener(443, 30443, e.cert)},
		Subnets:          e.publicSubnets(),
		SecurityGroups:   []string{e.fx.NodeSecurityGroupID},
		Tags: []clbtypes.Tag{
			{Key: aws.String("kubernetes.io/service-name"), Value: aws.String("default/web")},
			{Key: aws.String(e.fx.ClusterTagKey), Value: aws.String("owned")},
		},
	}
}

func createCLB(t *testing.T, e *clbEnv, name string) string {
	t.Helper()
	return aws.ToString(must[*elb.CreateLoadBalancerOutput](t)(e.clb.CreateLoadBalancer(ctx(), clbInput(e, name))).DNSName)
}

func describeCLB(t *testing.T, e *clbEnv, name string) clbtypes.LoadBalancerDescription {
	t.Helper()
	out := must[*elb.DescribeLoadBalancersOutput](t)(e.clb.DescribeLoadBalancers(ctx(), &elb.DescribeLoadBalancersInput{LoadBalancerNames: []string{name}}))
	if len(out.LoadBalancerDescriptions) != 1 {
		t.Fatalf("describe %s: %d descriptions", name, len(out.LoadBalancerDescriptions))
	}
	return out.LoadBalancerDescriptions[0]
}

// wantTyped fails unless err is (wraps) the SDK's typed error T, which is
// how callers match Classic ELB errors.
func wantTyped[T error](t *testing.T, err error) {
	t.Helper()
	var target T
	if !errors.As(err, &target) {
		t.Fatalf("want %T, got %v", target, err)
	}
}

func TestClassicCreateLoadBalancer(t *testing.T) {
	e := newCLBEnv(t)
	dns := createCLB(t, e, "a0123456789abcdef0123456789abcde")
	if !regexp.MustCompile(`^a0123456789abcdef0123456789abcde-[0-9]+\.eu-west-1\.elb\.amazonaws\.com$`).MatchString(dns) {
		t.Fatalf("DNS name %s", dns)
	}
	// The same name and configuration: the same load balancer.
	if again := createCLB(t, e, "a0123456789abcdef0123456789abcde"); again != dns {
		t.Fatalf("idempotent create: %s, then %s", dns, again)
	}
	in := clbInput(e, "a0123456789abcdef0123456789abcde")
	in.Listeners = in.Listeners[:1]
	_, err := e.clb.CreateLoadBalancer(ctx(), in)
	wantTyped[*clbtypes.DuplicateAccessPointNameException](t, err)
	wantCode(t, err, "DuplicateLoadBalancerName")

	internal := clbInput(e, "internal-one")
	internal.Scheme, internal.Subnets, internal.SecurityGroups = aws.String("internal"), []string{e.fx.PrivateSubnets[region+"a"]}, nil
	out := must[*elb.CreateLoadBalancerOutput](t)(e.clb.CreateLoadBalancer(ctx(), internal))
	if !strings.HasPrefix(aws.ToString(out.DNSName), "internal-internal-one-") {
		t.Fatalf("internal DNS name %s", aws.ToString(out.DNSName))
	}
	// Without security groups a load balancer gets the VPC's default group.
	if d := describeCLB(t, e, "internal-one"); !slices.Equal(d.SecurityGroups, []string{e.fx.DefaultSecurityGroupID}) ||
		aws.ToString(d.SourceSecurityGroup.GroupName) != "default" {
		t.Fatalf("security groups %v, source %+v", d.SecurityGroups, d.SourceSecurityGroup)
	}

	isolatedVPC := must[string](t)(e.emu.CreateVPC("10.9.0.0/16", nil))
	isolated := must[string](t)(e.emu.CreateSubnet(cloudsimaws.SubnetSpec{VPCID: isolatedVPC, Zone: region + "a", CIDR: "10.9.0.0/24"}))
	for _, tc := range []struct {
		name   string
		mutate func(*elb.CreateLoadBalancerInput)
		code   string
	}{
		{"name too long", func(in *elb.CreateLoadBalancerInput) { in.LoadBalancerName = aws.String(strings.Repeat("x", 33)) }, "ValidationError"},
		{"underscore", func(in *elb.CreateLoadBalancerInput) { in.LoadBalancerName = aws.String("bad_name") }, "ValidationError"},
		{"leading hyphen", func(in *elb.CreateLoadBalancerInput) { in.LoadBalancerName = aws.String("-dash") }, "ValidationError"},
		{"trailing hyphen", func(in *elb.CreateLoadBalancerInput) { in.LoadBalancerName = aws.String("dash-") }, "ValidationError"},
		{"bad scheme", func(in *elb.CreateLoadBalancerInput) { in.Scheme = aws.String("public") }, "ValidationError"},
		{"no subnets or zones", func(in *elb.CreateLoadBalancerInput) { in.Subnets = nil }, "ValidationError"},
		{"zones only, no default VPC", func(in *elb.CreateLoadBalancerInput) {
			in.Subnets, in.AvailabilityZones = nil, []string{region + "a"}
		}, "InvalidConfigurationRequest"},
		{"zones disagree with subnets", func(in *elb.CreateLoadBalancerInput) { in.AvailabilityZones = []string{region + "a"} }, "InvalidConfigurationRequest"},
		{"unknown subnet", func(in *elb.CreateLoadBalancerInput) { in.Subnets = []string{"subnet-00000000000000999"} }, "SubnetNotFound"},
		{"two subnets in one zone", func(in *elb.CreateLoadBalancerInput) {
			in.Subnets = []string{e.fx.PublicSubnets[region+"a"], e.fx.PrivateSubnets[region+"a"]}
		}, "InvalidConfigurationRequest"},
		{"subnets of two VPCs", func(in *elb.CreateLoadBalancerInput) {
			in.Subnets = []string{e.fx.PublicSubnets[region+"b"], isolated}
		}, "InvalidConfigurationRequest"},
		{"internet-facing without a gateway", func(in *elb.CreateLoadBalancerInput) { in.Subnets, in.SecurityGroups = []string{isolated}, nil }, "InvalidSubnet"},
		{"unknown security group", func(in *elb.CreateLoadBalancerInput) { in.SecurityGroups = []string{"sg-0123456789abcdef0"} }, "InvalidSecurityGroup"},
		{"no listeners", func(in *elb.CreateLoadBalancerInput) { in.Listeners = []clbtypes.Listener{} }, "ValidationError"},
		{"udp", func(in *elb.CreateLoadBalancerInput) { in.Listeners[0].Protocol = aws.String("udp") }, "UnsupportedProtocol"},
		{"http to tcp", func(in *elb.CreateLoadBalancerInput) { in.Listeners[0].Protocol = aws.String("http") }, "InvalidConfigurationRequest"},
		{"ssl without certificate", func(in *elb.CreateLoadBalancerInput) { in.Listeners[1].SSLCertificateId = nil }, "ValidationError"},
		{"tcp with certificate", func(in *elb.CreateLoadBalancerInput) { in.Listeners[0].SSLCertificateId = aws.String(e.cert) }, "InvalidConfigurationRequest"},
		{"unknown certificate", func(in *elb.CreateLoadBalancerInput) {
			in.Listeners[1].SSLCertificateId = aws.String(strings.Replace(e.cert, "0a1b", "ffff", 1))
		}, "CertificateNotFound"},
		{"port 0", func(in *elb.CreateLoadBalancerInput) { in.Listeners[0].LoadBalancerPort = 0 }, "ValidationError"},
		{"one port, two configurations", func(in *elb.CreateLoadBalancerInput) { in.Listeners[1].LoadBalancerPort = 80 }, "InvalidConfigurationRequest"},
		{"an instance port both secure and not", func(in *elb.CreateLoadBalancerInput) {
			in.Listeners[1].InstancePort, in.Listeners[1].InstanceProtocol = aws.Int32(30080), aws.String("ssl")
		}, "InvalidConfigurationRequest"},
		{"duplicate tag keys", func(in *elb.CreateLoadBalancerInput) { in.Tags = append(in.Tags, in.Tags[0]) }, "DuplicateTagKeys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := clbInput(e, "other")
			tc.mutate(in)
			_, err := e.clb.CreateLoadBalancer(ctx(), in)
			wantCode(t, err, tc.code)
		})
	}
	if lbs := e.emu.ClassicLoadBalancers(); len(lbs) != 2 {
		t.Fatalf("failed creates left load balancers: %+v", lbs)
	}
}

func TestClassicDescribeLoadBalancers(t *testing.T) {
	e := newCLBEnv(t)
	start := time.Now().Add(-time.Second)
	dns := createCLB(t, e, "web")
	d := describeCLB(t, e, "web")

	if aws.ToString(d.DNSName) != dns || aws.ToString(d.CanonicalHostedZoneName) != dns ||
		aws.ToString(d.CanonicalHostedZoneNameID) != "Z32O12XQLNTSW2" || aws.ToString(d.Scheme) != "internet-facing" ||
		aws.ToString(d.VPCId) != e.fx.VPCID || d.CreatedTime == nil || d.CreatedTime.Before(start) {
		t.Fatalf("description %+v", d)
	}
	if want := []string{region + "a", region + "b", region + "c"}; !slices.Equal(d.AvailabilityZones, want) || !slices.Equal(d.Subnets, e.publicSubnets()) {
		t.Fatalf("zones %v subnets %v", d.AvailabilityZones, d.Subnets)
	}
	if !slices.Equal(d.SecurityGroups, []string{e.fx.NodeSecurityGroupID}) || aws.ToString(d.SourceSecurityGroup.OwnerAlias) != "123456789012" ||
		aws.ToString(d.SourceSecurityGroup.GroupName) != "test-node" {
		t.Fatalf("security groups %v source %+v", d.SecurityGroups, d.SourceSecurityGroup)
	}
	// Protocols come back upper case, as the upstream CCM's case-insensitive
	// comparison expects; the plain listener has no certificate element.
	var listeners []string
	for _, ld := range d.ListenerDescriptions {
		l := ld.Listener
		listeners = append(listeners, fmt.Sprintf("%s:%d>%s:%d cert=%v policies=%v", aws.ToString(l.Protocol), l.LoadBalancerPort,
			aws.ToString(l.InstanceProtocol), aws.ToInt32(l.InstancePort), l.SSLCertificateId != nil, ld.PolicyNames))
	}
	if want := []string{
		"TCP:80>TCP:30080 cert=false policies=[]",
		"SSL:443>TCP:30443 cert=true policies=[ELBSecurityPolicy-2016-08]",
	}; !slices.Equal(listeners, want) {
		t.Fatalf("listeners %q", listeners)
	}
	if aws.ToString(d.ListenerDescriptions[1].Listener.SSLCertificateId) != e.cert {
		t.Fatalf("certificate %s", aws.ToString(d.ListenerDescriptions[1].Listener.SSLCertificateId))
	}
	// An SSL listener made without a policy gets AWS's default one.
	if !slices.Equal(d.Policies.OtherPolicies, []string{"ELBSecurityPolicy-2016-08"}) ||
		len(d.Policies.AppCookieStickinessPolicies)+len(d.Policies.LBCookieStickinessPolicies)+len(d.BackendServerDescriptions)+len(d.Instances) != 0 {
		t.Fatalf("policies %+v backends %+v instances %+v", d.Policies, d.BackendServerDescriptions, d.Instances)
	}
	hc := d.HealthCheck
	if aws.ToString(hc.Target) != "TCP:30080" || aws.ToInt32(hc.Interval) != 30 || aws.ToInt32(hc.Timeout) != 5 ||
		aws.ToInt32(hc.UnhealthyThreshold) != 2 || aws.ToInt32(hc.HealthyThreshold) != 10 {
		t.Fatalf("default health check %+v", hc)
	}

	// Paging: 7 load balancers in pages of 3.
	names := []string{"web"}
	for i := range 6 {
		names = append(names, fmt.Sprintf("lb-%d", i))
		createCLB(t, e, names[len(names)-1])
	}
	var got []string
	pages := 0
	p := elb.NewDescribeLoadBalancersPaginator(e.clb, &elb.DescribeLoadBalancersInput{PageSize: aws.Int32(3)})
	for p.HasMorePages() {
		out := must[*elb.DescribeLoadBalancersOutput](t)(p.NextPage(ctx()))
		pages++
		for _, d := range out.LoadBalancerDescriptions {
			got = append(got, aws.ToString(d.LoadBalancerName))
		}
	}
	if pages != 3 || !slices.Equal(got, names) {
		t.Fatalf("%d pages: %v", pages, got)
	}
	out := must[*elb.DescribeLoadBalancersOutput](t)(e.clb.DescribeLoadBalancers(ctx(), &elb.DescribeLoadBalancersInput{LoadBalancerNames: []string{"lb-4", "lb-1"}}))
	if len(out.LoadBalancerDescriptions) != 2 || out.NextMarker != nil {
		t.Fatalf("by name: %d, next %v", len(out.LoadBalancerDescriptions), out.NextMarker)
	}

	_, err := e.clb.DescribeLoadBalancers(ctx(), &elb.DescribeLoadBalancersInput{LoadBalancerNames: []string{"lb-1", "missing"}})
	wantTyped[*clbtypes.AccessPointNotFoundException](t, err)
	wantCode(t, err, "LoadBalancerNotFound")
	for _, size := range []int32{0, 401} {
		_, err = e.clb.DescribeLoadBalancers(ctx(), &elb.DescribeLoadBalancersInput{PageSize: aws.Int32(size)})
		wantCode(t, err, "ValidationError")
	}
	// A marker of another listing is refused.
	_, err = e.clb.DescribeLoadBalancers(ctx(), &elb.DescribeLoadBalancersInput{Marker: aws.String("bm90LW91cnM")})
	wantCode(t, err, "ValidationError")
	createNLB(t, e.env, "nlb-a")
	createNLB(t, e.env, "nlb-b")
	nlbPage := must[*elbv2.DescribeLoadBalancersOutput](t)(e.elb.DescribeLoadBalancers(ctx(), &elbv2.DescribeLoadBalancersInput{PageSize: aws.Int32(1)}))
	_, err = e.clb.DescribeLoadBalancers(ctx(), &elb.DescribeLoadBalancersInput{Marker: nlbPage.NextMarker})
	wantCode(t, err, "ValidationError")
}

func TestClassicDeleteLoadBalancerLeavesNothing(t *testing.T) {
	e := newCLBEnv(t)
	before := e.srv.Resources()
	ids := launch(t, e.env, cloudsimaws.LaunchSpec{Count: 2})
	lbSG := createSG(t, e.env, "k8s-elb-web", nil)
	in := clbInput(e, "web")
	in.SecurityGroups = []string{lbSG}
	must[*elb.CreateLoadBalancerOutput](t)(e.clb.CreateLoadBalancer(ctx(), in))
	must[*elb.RegisterInstancesWithLoadBalancerOutput](t)(e.clb.RegisterInstancesWithLoadBalancer(ctx(), &elb.RegisterInstancesWithLoadBalancerInput{
		LoadBalancerName: aws.String("web"), Instances: clbInstances(ids...),
	}))
	proxyPolicy(t, e, "web")

	byKind := map[string][]cloudsim.Resource{}
	for _, r := range e.srv.Resources() {
		byKind[r.Kind] = append(byKind[r.Kind], r)
	}
	lbs := byKind[cloudsimaws.KindClassicLoadBalancer]
	if len(lbs) != 1 || lbs[0].ID != "web" || lbs[0].Parent != e.fx.VPCID || lbs[0].Tags["kubernetes.io/service-name"] != "default/web" ||
		lbs[0].Tags[e.fx.ClusterTagKey] != "owned" {
		t.Fatalf("load balancers %+v", lbs)
	}
	var children []string
	for _, kind := range []string{cloudsimaws.KindClassicListener, cloudsimaws.KindClassicPolicy, cloudsimaws.KindClassicInstance} {
		for _, r := range byKind[kind] {
			if r.Parent != "web" {
				t.Errorf("%s %s has parent %s", kind, r.ID, r.Parent)
			}
			children = append(children, r.ID)
		}
	}
	if want := []string{"web:443", "web:80", "web:ELBSecurityPolicy-2016-08", "web:k8s-proxyprotocol-enabled", "web:" + ids[0], "web:" + ids[1]}; !slices.Equal(children, want) {
		t.Fatalf("children %v, want %v", children, want)
	}

	// The load balancer holds its security group until it is deleted.
	_, err := e.ec2.DeleteSecurityGroup(ctx(), &ec2.DeleteSecurityGroupInput{GroupId: aws.String(lbSG)})
	wantCode(t, err, "DependencyViolation")

	e.srv.ResetCalls()
	must[*elb.DeleteLoadBalancerOutput](t)(e.clb.DeleteLoadBalancer(ctx(), &elb.DeleteLoadBalancerInput{LoadBalancerName: aws.String("web")}))
	// Deleting it again succeeds, as on AWS.
	must[*elb.DeleteLoadBalancerOutput](t)(e.clb.DeleteLoadBalancer(ctx(), &elb.DeleteLoadBalancerInput{LoadBalancerName: aws.String("web")}))
	if n := e.srv.CallCount("elb:DeleteLoadBalancer"); n != 2 {
		t.Fatalf("%d elb:DeleteLoadBalancer calls", n)
	}
	if n := e.srv.CallCount("elbv2:DeleteLoadBalancer"); n != 0 {
		t.Fatalf("Classic ELB calls counted as ELBv2: %d", n)
	}
	_, err = e.clb.DescribeLoadBalancers(ctx(), &elb.DescribeLoadBalancersInput{LoadBalancerNames: []string{"web"}})
	wantCode(t, err, "LoadBalancerNotFound")
	must[*ec2.DeleteSecurityGroupOutput](t)(e.ec2.DeleteSecurityGroup(ctx(), &ec2.DeleteSecurityGroupInput{GroupId: aws.String(lbSG)}))
	for _, id := range ids {
		ok(t, e.emu.Terminate(id))
	}
	ok(t, e.emu.Remove(ids...))

	added, removed := cloudsim.DiffResources(before, e.srv.Resources())
	if len(added) != 0 || len(removed) != 0 {
		t.Fatalf("left behind %+v, removed %+v", added, removed)
	}
}

func TestClassicFaultsAndCallCounts(t *testing.T) {
	e := newCLBEnv(t)
	createCLB(t, e, "web")
	describeCLB(t, e, "web")
	describeCLB(t, e, "web")
	if got := e.srv.Calls(); got["elb:CreateLoadBalancer"] != 1 || got["elb:DescribeLoadBalancers"] != 2 || got["elbv2:DescribeLoadBalancers"] != 0 {
		t.Fatalf("calls %v", got)
	}

	// Classic ELB throttles with ELBv2's 400 Throttling, which the SDK retries.
	retrying := clbClient(e.srv.URL(), 3)
	e.srv.ResetCalls()
	setFault(t, e.env, cloudsim.FaultSpec{Op: "elb:DescribeLoadBalancers", ThrottleNext: 2})
	must[*elb.DescribeLoadBalancersOutput](t)(retrying.DescribeLoadBalancers(ctx(), &elb.DescribeLoadBalancersInput{}))
	if n := e.srv.CallCount("elb:DescribeLoadBalancers"); n != 3 {
		t.Fatalf("%d calls, want 3", n)
	}
	setFault(t, e.env, cloudsim.FaultSpec{Op: "elb:*", ThrottleNext: 1})
	_, err := e.clb.DescribeLoadBalancers(ctx(), &elb.DescribeLoadBalancersInput{})
	wantCode(t, err, "Throttling")
	if httpStatus(err) != http.StatusBadRequest {
		t.Fatalf("throttling status %d", httpStatus(err))
	}
	setFault(t, e.env, cloudsim.FaultSpec{Op: "elb:CreateLoadBalancerListeners", FailNext: 1})
	_, err = e.clb.CreateLoadBalancerListeners(ctx(), &elb.CreateLoadBalancerListenersInput{
		LoadBalancerName: aws.String("web"), Listeners: []clbtypes.Listener{tcpListener(8080, 30081)},
	})
	wantCode(t, err, "ServiceUnavailable")
	if httpStatus(err) != http.StatusServiceUnavailable {
		t.Fatalf("server error status %d", httpStatus(err))
	}
	if code := rawCode(t, e.env, "Action=EnableAvailabilityZonesForLoadBalancer&Version=2012-06-01&LoadBalancerName=web"); code != "InvalidAction" {
		t.Fatalf("unsupported action: %q", code)
	}
}
