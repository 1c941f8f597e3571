package aws_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	clbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
)

func listenerSummary(d clbtypes.LoadBalancerDescription) []string {
	var out []string
	for _, ld := range d.ListenerDescriptions {
		l := ld.Listener
		out = append(out, fmt.Sprintf("%s:%d>%s:%d", aws.ToString(l.Protocol), l.LoadBalancerPort, aws.ToString(l.InstanceProtocol), aws.ToInt32(l.InstancePort)))
	}
	return out
}

func TestClassicListeners(t *testing.T) {
	e := newCLBEnv(t)
	createCLB(t, e, "web")
	name := aws.String("web")
	create := func(ls ...clbtypes.Listener) error {
		_, err := e.clb.CreateLoadBalancerListeners(ctx(), &elb.CreateLoadBalancerListenersInput{LoadBalancerName: name, Listeners: ls})
		return err
	}

	// HTTPS without an instance protocol terminates TLS and speaks HTTP.
	https := clbtypes.Listener{Protocol: aws.String("HTTPS"), LoadBalancerPort: 8443, InstancePort: aws.Int32(30090), SSLCertificateId: aws.String(e.cert)}
	ok(t, create(https, tcpListener(8080, 30081)))
	ok(t, create(https)) // the same listener again is fine
	if got, want := listenerSummary(describeCLB(t, e, "web")), []string{"TCP:80>TCP:30080", "SSL:443>TCP:30443", "TCP:8080>TCP:30081", "HTTPS:8443>HTTP:30090"}; !slices.Equal(got, want) {
		t.Fatalf("listeners %v, want %v", got, want)
	}

	changed := tcpListener(8080, 30099)
	err := create(changed)
	wantTyped[*clbtypes.DuplicateListenerException](t, err)
	wantCode(t, err, "DuplicateListener")
	// A back end port speaks TLS for every listener or for none.
	wantCode(t, create(clbtypes.Listener{Protocol: aws.String("SSL"), LoadBalancerPort: 9443, InstanceProtocol: aws.String("SSL"), InstancePort: aws.Int32(30081), SSLCertificateId: aws.String(e.cert)}), "InvalidConfigurationRequest")
	wantCode(t, create(clbtypes.Listener{Protocol: aws.String("HTTP"), LoadBalancerPort: 9080, InstanceProtocol: aws.String("SSL"), InstancePort: aws.Int32(30082)}), "InvalidConfigurationRequest")
	wantCode(t, create(sslListener(9443, 30083, "arn:aws:iam::123456789012:server-certificate/missing")), "CertificateNotFound")
	_, err = e.clb.CreateLoadBalancerListeners(ctx(), &elb.CreateLoadBalancerListenersInput{LoadBalancerName: aws.String("missing"), Listeners: []clbtypes.Listener{tcpListener(1, 2)}})
	wantTyped[*clbtypes.AccessPointNotFoundException](t, err)

	// Replacing the certificate of a TLS listener.
	other := "arn:aws:iam::123456789012:server-certificate/k8s/web"
	ok(t, e.emu.AddCertificate(other))
	setCert := func(port int32, cert string) error {
		_, err := e.clb.SetLoadBalancerListenerSSLCertificate(ctx(), &elb.SetLoadBalancerListenerSSLCertificateInput{
			LoadBalancerName: name, LoadBalancerPort: port, SSLCertificateId: aws.String(cert),
		})
		return err
	}
	ok(t, setCert(443, other))
	wantTyped[*clbtypes.ListenerNotFoundException](t, setCert(444, other))
	wantTyped[*clbtypes.UnsupportedProtocolException](t, setCert(80, other))
	wantTyped[*clbtypes.CertificateNotFoundException](t, setCert(443, other+"-old"))
	d := describeCLB(t, e, "web")
	if got := aws.ToString(d.ListenerDescriptions[1].Listener.SSLCertificateId); got != other {
		t.Fatalf("certificate %s after the failed change", got)
	}

	// Deleting listeners; ports without one are ignored.
	must[*elb.DeleteLoadBalancerListenersOutput](t)(e.clb.DeleteLoadBalancerListeners(ctx(), &elb.DeleteLoadBalancerListenersInput{
		LoadBalancerName: name, LoadBalancerPorts: []int32{8080, 8443, 1234},
	}))
	if got, want := listenerSummary(describeCLB(t, e, "web")), []string{"TCP:80>TCP:30080", "SSL:443>TCP:30443"}; !slices.Equal(got, want) {
		t.Fatalf("after delete %v", got)
	}
	// The freed port takes another configuration now.
	ok(t, create(changed))
}

func TestClassicHealthCheck(t *testing.T) {
	e := newCLBEnv(t)
	createCLB(t, e, "web")
	configure := func(hc clbtypes.HealthCheck) (*elb.ConfigureHealthCheckOutput, error) {
		return e.clb.ConfigureHealthCheck(ctx(), &elb.ConfigureHealthCheckInput{LoadBalancerName: aws.String("web"), HealthCheck: &hc})
	}
	hc := func(target string, interval, timeout, unhealthy, healthy int32) clbtypes.HealthCheck {
		return clbtypes.HealthCheck{Target: aws.String(target), Interval: aws.Int32(interval), Timeout: aws.Int32(timeout),
			UnhealthyThreshold: aws.Int32(unhealthy), HealthyThreshold: aws.Int32(healthy)}
	}

	// What the upstream CCM configures for externalTrafficPolicy: Local.
	out := must[*elb.ConfigureHealthCheckOutput](t)(configure(hc("http:10256/healthz", 10, 5, 6, 2)))
	if aws.ToString(out.HealthCheck.Target) != "HTTP:10256/healthz" || aws.ToInt32(out.HealthCheck.Interval) != 10 {
		t.Fatalf("configured %+v", out.HealthCheck)
	}
	got := describeCLB(t, e, "web").HealthCheck
	if aws.ToString(got.Target) != "HTTP:10256/healthz" || aws.ToInt32(got.Timeout) != 5 || aws.ToInt32(got.UnhealthyThreshold) != 6 || aws.ToInt32(got.HealthyThreshold) != 2 {
		t.Fatalf("described %+v", got)
	}

	for _, tc := range []struct {
		name string
		hc   clbtypes.HealthCheck
	}{
		{"interval below 5", hc("TCP:30080", 4, 2, 2, 2)},
		{"interval above 300", hc("TCP:30080", 301, 5, 2, 2)},
		{"timeout below 2", hc("TCP:30080", 30, 1, 2, 2)},
		{"timeout above 60", hc("TCP:30080", 300, 61, 2, 2)},
		{"timeout equal to interval", hc("TCP:30080", 10, 10, 2, 2)},
		{"unhealthy threshold 1", hc("TCP:30080", 30, 5, 1, 2)},
		{"healthy threshold 11", hc("TCP:30080", 30, 5, 2, 11)},
		{"udp", hc("UDP:30080", 30, 5, 2, 2)},
		{"no port", hc("TCP", 30, 5, 2, 2)},
		{"port 0", hc("TCP:0", 30, 5, 2, 2)},
		{"http without a path", hc("HTTP:10256", 30, 5, 2, 2)},
		{"tcp with a path", hc("TCP:30080/healthz", 30, 5, 2, 2)},
		{"path too long", hc("HTTP:80/"+strings.Repeat("p", 1024), 30, 5, 2, 2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := configure(tc.hc)
			wantCode(t, err, "ValidationError")
		})
	}
	if got := describeCLB(t, e, "web").HealthCheck; aws.ToString(got.Target) != "HTTP:10256/healthz" {
		t.Fatalf("a refused change applied: %+v", got)
	}
	_, err := e.clb.ConfigureHealthCheck(ctx(), &elb.ConfigureHealthCheckInput{LoadBalancerName: aws.String("missing"), HealthCheck: &clbtypes.HealthCheck{
		Target: aws.String("TCP:1"), Interval: aws.Int32(30), Timeout: aws.Int32(5), UnhealthyThreshold: aws.Int32(2), HealthyThreshold: aws.Int32(2),
	}})
	wantTyped[*clbtypes.AccessPointNotFoundException](t, err)
	// Members the SDK refuses to leave out, sent by hand.
	if code := rawCode(t, e.env, "Action=ConfigureHealthCheck&Version=2012-06-01&LoadBalancerName=web&HealthCheck.Target=TCP%3A1&HealthCheck.Interval=30"); code != "ValidationError" {
		t.Fatalf("missing thresholds: %q", code)
	}
}
