package aws

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

const (
	tlsCertA = "arn:aws:acm:eu-west-1:123456789012:certificate/11111111-1111-1111-1111-111111111111"
	tlsCertB = "arn:aws:acm:eu-west-1:123456789012:certificate/22222222-2222-2222-2222-222222222222"
)

func (e *lbEnv) addCerts(arns ...string) {
	e.t.Helper()
	for _, a := range arns {
		if err := e.emu.AddCertificate(a); err != nil {
			e.t.Fatal(err)
		}
	}
}

// tgOf is the target group the listener forwards to.
func (v *lbView) tgOf(li elbv2types.Listener) elbv2types.TargetGroup {
	return v.tgs[forwardTarget(li)]
}

func checkTLSListener(t *testing.T, li elbv2types.Listener, cert, policy string) {
	t.Helper()
	if li.Protocol != elbv2types.ProtocolEnumTls || aws.ToString(li.SslPolicy) != policy ||
		len(li.Certificates) != 1 || aws.ToString(li.Certificates[0].CertificateArn) != cert {
		var certs []string
		for _, c := range li.Certificates {
			certs = append(certs, aws.ToString(c.CertificateArn))
		}
		t.Errorf("listener on %d: %s %v policy %q, want TLS [%s] policy %q", aws.ToInt32(li.Port), li.Protocol, certs, aws.ToString(li.SslPolicy), cert, policy)
	}
}

func TestNLBTLSListeners(t *testing.T) {
	e := newLBEnv(t)
	e.addCerts(tlsCertA)
	nodes := e.nodes(2)
	// ssl-ports by name selects 443 only; 80 stays plain TCP.
	https := v1.ServicePort{Name: "https", Port: 443, NodePort: 30443, Protocol: v1.ProtocolTCP}
	svc := lbService(map[string]string{string(annotationSSLCert): tlsCertA, string(annotationSSLPorts): "https"}, tcpPort(80, 30080), https)
	e.ensure(svc, nodes)
	v := e.view(svc)
	checkTLSListener(t, v.listeners[443], tlsCertA, "ELBSecurityPolicy-2016-08")
	if li := v.listeners[80]; li.Protocol != elbv2types.ProtocolEnumTcp || len(li.Certificates) != 0 || aws.ToString(li.SslPolicy) != "" {
		t.Errorf("listener on 80: %s %v %q, want plain TCP", li.Protocol, li.Certificates, aws.ToString(li.SslPolicy))
	}
	// Without backend-protocol ssl the TLS listener forwards to a TCP
	// target group, named as a plain TCP port's.
	if tg := v.tgOf(v.listeners[443]); tg.Protocol != elbv2types.ProtocolEnumTcp || aws.ToString(tg.TargetGroupName) != targetGroupName(lbTestCluster, svc, portKey{443, "TCP"}) {
		t.Errorf("port 443 target group %s %s, want the TCP one", aws.ToString(tg.TargetGroupName), tg.Protocol)
	}
	if got := v.targets[targetGroupName(lbTestCluster, svc, portKey{443, "TCP"})]; len(got) != 2 {
		t.Errorf("port 443 targets %v, want both nodes", got)
	}

	// A re-sync writes nothing, in this controller or a fresh one.
	e.srv.ResetCalls()
	e.ensure(svc, nodes)
	if m := e.mutations(); len(m) != 0 {
		t.Errorf("re-ensure made mutating calls: %v", m)
	}
	fresh := newLoadBalancers(e.api, e.lb.cfg, lbTestCluster, e.lb.in.(*instances), clock.RealClock{})
	e.srv.ResetCalls()
	if _, err := fresh.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if m := e.mutations(); len(m) != 0 {
		t.Errorf("re-ensure after restart made mutating calls: %v", m)
	}

	// Without ssl-ports every TCP port is TLS; an annotated policy is used.
	delete(svc.Annotations, string(annotationSSLPorts))
	svc.Annotations[string(annotationSSLNegotiationPolicy)] = "ELBSecurityPolicy-TLS-1-2-2017-01"
	e.srv.ResetCalls()
	e.ensure(svc, nodes)
	v2 := e.view(svc)
	checkTLSListener(t, v2.listeners[80], tlsCertA, "ELBSecurityPolicy-TLS-1-2-2017-01")
	checkTLSListener(t, v2.listeners[443], tlsCertA, "ELBSecurityPolicy-TLS-1-2-2017-01")
	if m := e.mutations(); m["elbv2:ModifyListener"] != 2 || m["elbv2:DeleteListener"] != 0 || m["elbv2:CreateListener"] != 0 {
		t.Errorf("calls %v, want two ModifyListener and no listener created or deleted", m)
	}
	for _, port := range []int32{80, 443} {
		if aws.ToString(v2.listeners[port].ListenerArn) != aws.ToString(v.listeners[port].ListenerArn) {
			t.Errorf("listener on %d was re-created", port)
		}
	}
}

func TestNLBTLSCertificateSwap(t *testing.T) {
	e := newLBEnv(t)
	e.addCerts(tlsCertA, tlsCertB)
	nodes := e.nodes(1)
	svc := lbService(map[string]string{string(annotationSSLCert): tlsCertA}, tcpPort(443, 30443))
	e.ensure(svc, nodes)
	before := e.view(svc)
	checkTLSListener(t, before.listeners[443], tlsCertA, "ELBSecurityPolicy-2016-08")

	svc.Annotations[string(annotationSSLCert)] = tlsCertB
	e.srv.ResetCalls()
	e.ensure(svc, nodes)
	t.Logf("certificate swap: %s", e.callSummary())
	after := e.view(svc)
	checkTLSListener(t, after.listeners[443], tlsCertB, "ELBSecurityPolicy-2016-08")
	if aws.ToString(after.listeners[443].ListenerArn) != aws.ToString(before.listeners[443].ListenerArn) {
		t.Errorf("the listener was re-created instead of modified")
	}
	want := map[string]int{"elbv2:ModifyListener": 1}
	if m := e.mutations(); len(m) != len(want) || m["elbv2:ModifyListener"] != 1 {
		t.Errorf("mutating calls %v, want %v", m, want)
	}

	// Removing the certificate makes the listener plain TCP, in place.
	delete(svc.Annotations, string(annotationSSLCert))
	e.srv.ResetCalls()
	e.ensure(svc, nodes)
	plain := e.view(svc)
	if li := plain.listeners[443]; li.Protocol != elbv2types.ProtocolEnumTcp || aws.ToString(li.ListenerArn) != aws.ToString(before.listeners[443].ListenerArn) {
		t.Errorf("listener %s %s, want the same one, TCP", aws.ToString(li.ListenerArn), li.Protocol)
	}
	if m := e.mutations(); m["elbv2:DeleteListener"] != 0 || m["elbv2:ModifyListener"] != 1 {
		t.Errorf("mutating calls %v, want one ModifyListener", m)
	}
	e.srv.ResetCalls()
	e.ensure(svc, nodes)
	if m := e.mutations(); len(m) != 0 {
		t.Errorf("re-ensure made mutating calls: %v", m)
	}
}

func TestNLBTLSBackendProtocolSSL(t *testing.T) {
	e := newLBEnv(t)
	e.addCerts(tlsCertA)
	nodes := e.nodes(2)
	// A plain TCP NLB first, then TLS with TLS to the backends.
	svc := lbService(map[string]string{}, tcpPort(443, 30443))
	e.ensure(svc, nodes)
	before := e.view(svc)

	svc.Annotations[string(annotationSSLCert)] = tlsCertA
	svc.Annotations[string(annotationBackendProtocol)] = "ssl"
	e.srv.ResetCalls()
	e.ensure(svc, nodes)
	t.Logf("backend protocol ssl: %s", e.callSummary())
	v := e.view(svc)
	checkTLSListener(t, v.listeners[443], tlsCertA, "ELBSecurityPolicy-2016-08")
	if aws.ToString(v.listeners[443].ListenerArn) != aws.ToString(before.listeners[443].ListenerArn) {
		t.Errorf("the listener was re-created instead of modified")
	}
	tlsName := targetGroupName(lbTestCluster, svc, portKey{443, "TLS"})
	if tg := v.tgOf(v.listeners[443]); tg.Protocol != elbv2types.ProtocolEnumTls || aws.ToString(tg.TargetGroupName) != tlsName {
		t.Errorf("target group %s %s, want %s TLS", aws.ToString(tg.TargetGroupName), tg.Protocol, tlsName)
	}
	if len(v.tgs) != 1 {
		t.Errorf("%d target groups, want the TCP one replaced", len(v.tgs))
	}
	if got := v.targets[tlsName]; len(got) != 2 {
		t.Errorf("TLS target group targets %v, want both nodes", got)
	}
	if m := e.mutations(); m["elbv2:DeleteListener"] != 0 || m["elbv2:DeleteTargetGroup"] != 1 || m["elbv2:CreateTargetGroup"] != 1 {
		t.Errorf("mutating calls %v, want a target group replaced and no listener deleted", m)
	}
	e.srv.ResetCalls()
	e.ensure(svc, nodes)
	if m := e.mutations(); len(m) != 0 {
		t.Errorf("re-ensure made mutating calls: %v", m)
	}

	// Upstream makes TLS target groups for "ssl" only.
	o, err := parseLBOptions(lbService(map[string]string{string(annotationSSLCert): tlsCertA, string(annotationBackendProtocol): "https"}, tcpPort(443, 30443)))
	if err != nil || o.ports[0].protocol() != elbv2types.ProtocolEnumTcp || o.ports[0].listenerProtocol() != elbv2types.ProtocolEnumTls {
		t.Errorf("backend protocol https: %+v, %v; want a TLS listener to a TCP target group", o, err)
	}
}

func TestNLBTLSUnknownCertificate(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(1)
	unknown := "arn:aws:acm:eu-west-1:123456789012:certificate/00000000-0000-0000-0000-000000000000"
	svc := lbService(map[string]string{string(annotationSSLCert): unknown}, tcpPort(443, 30443))
	_, err := e.lb.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes)
	if err == nil || !strings.Contains(err.Error(), string(annotationSSLCert)) || !strings.Contains(err.Error(), unknown) {
		t.Fatalf("EnsureLoadBalancer = %v, want an error naming %s and %s", err, annotationSSLCert, unknown)
	}

	// An unknown policy names its annotation.
	e.addCerts(tlsCertA)
	svc.Annotations = map[string]string{string(annotationSSLCert): tlsCertA, string(annotationSSLNegotiationPolicy): "ELBSecurityPolicy-Nope"}
	_, err = e.lb.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes)
	if err == nil || !strings.Contains(err.Error(), string(annotationSSLNegotiationPolicy)) || !strings.Contains(err.Error(), "ELBSecurityPolicy-Nope") {
		t.Fatalf("EnsureLoadBalancer = %v, want an error naming %s", err, annotationSSLNegotiationPolicy)
	}

	// Once fixed, the listener is made.
	delete(svc.Annotations, string(annotationSSLNegotiationPolicy))
	e.ensure(svc, nodes)
	checkTLSListener(t, e.view(svc).listeners[443], tlsCertA, "ELBSecurityPolicy-2016-08")
}

func TestNLBTLSOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ann     map[string]string
		ports   []v1.ServicePort
		wantErr string
		tls     map[int32]bool
	}{
		{name: "every TCP port by default, UDP passed over as upstream", ann: map[string]string{string(annotationSSLCert): tlsCertA},
			ports: []v1.ServicePort{tcpPort(443, 30443), udpPort(53, 30053)}, tls: map[int32]bool{443: true}},
		{name: "by number", ann: map[string]string{string(annotationSSLCert): tlsCertA, string(annotationSSLPorts): "8443"},
			ports: []v1.ServicePort{tcpPort(443, 30443), tcpPort(8443, 30843)}, tls: map[int32]bool{8443: true}},
		{name: "star is every port", ann: map[string]string{string(annotationSSLCert): tlsCertA, string(annotationSSLPorts): "*"},
			ports: []v1.ServicePort{tcpPort(443, 30443), tcpPort(8443, 30843)}, tls: map[int32]bool{443: true, 8443: true}},
		{name: "ssl-ports without a certificate does nothing", ann: map[string]string{string(annotationSSLPorts): "nope"},
			ports: []v1.ServicePort{tcpPort(443, 30443)}, tls: map[int32]bool{}},
		{name: "a UDP port listed", ann: map[string]string{string(annotationSSLCert): tlsCertA, string(annotationSSLPorts): "53"},
			ports: []v1.ServicePort{tcpPort(443, 30443), udpPort(53, 30053)}, wantErr: string(annotationSSLPorts)},
		{name: "a TCP_UDP listener selected", ann: map[string]string{string(annotationSSLCert): tlsCertA},
			ports: []v1.ServicePort{tcpPort(53, 30053), udpPort(53, 30053)}, wantErr: string(annotationSSLPorts)},
		{name: "an unknown port", ann: map[string]string{string(annotationSSLCert): tlsCertA, string(annotationSSLPorts): "444"},
			ports: []v1.ServicePort{tcpPort(443, 30443)}, wantErr: string(annotationSSLPorts)},
		{name: "a bad backend protocol", ann: map[string]string{string(annotationBackendProtocol): "grpc"},
			ports: []v1.ServicePort{tcpPort(443, 30443)}, wantErr: string(annotationBackendProtocol)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseLBOptions(lbService(tc.ann, tc.ports...))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range o.ports {
				if got := p.listenerProtocol() == elbv2types.ProtocolEnumTls; got != tc.tls[p.port] {
					t.Errorf("port %d: listener %s, TLS want %v", p.port, p.listenerProtocol(), tc.tls[p.port])
				}
			}
		})
	}
}
