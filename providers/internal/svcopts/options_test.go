package svcopts

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const testAnn Annotation = "example.com/flag"

func svcWith(ann map[string]string) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Annotations: ann},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer}}
}

func TestBool(t *testing.T) {
	for _, tc := range []struct {
		ann       map[string]string
		val, set  bool
		wantError bool
	}{
		{nil, false, false, false},
		{map[string]string{string(testAnn): "true"}, true, true, false},
		{map[string]string{string(testAnn): " FALSE "}, false, true, false},
		{map[string]string{string(testAnn): "maybe"}, false, true, true},
	} {
		v, set, err := testAnn.Bool(svcWith(tc.ann))
		if v != tc.val || set != tc.set || (err != nil) != tc.wantError {
			t.Errorf("Bool(%v) = %v, %v, %v", tc.ann, v, set, err)
		}
		if err != nil && (!strings.Contains(err.Error(), string(testAnn)) || !strings.Contains(err.Error(), `"true" or "false"`)) {
			t.Errorf("error %q does not name the annotation and a valid value", err)
		}
	}
}

func TestList(t *testing.T) {
	got, set, err := testAnn.List(svcWith(map[string]string{string(testAnn): " a, b ,c"}))
	if err != nil || !set || fmt.Sprint(got) != "[a b c]" {
		t.Fatalf("List = %v %v %v", got, set, err)
	}
	for _, bad := range []string{"a,,b", "a,a", ""} {
		if _, _, err := testAnn.List(svcWith(map[string]string{string(testAnn): bad})); err == nil || !strings.Contains(err.Error(), string(testAnn)) {
			t.Errorf("List(%q) err = %v, want one naming the annotation", bad, err)
		}
	}
}

func TestSourceRanges(t *testing.T) {
	for _, tc := range []struct {
		spec    []string
		ann     string
		want    string
		wantErr string
	}{
		{want: "[0.0.0.0/0]"},
		{spec: []string{"192.168.1.1/24", "10.0.0.0/8", "10.0.0.0/8", "2001:db8::/32"}, ann: "1.2.3.0/24", want: "[10.0.0.0/8 192.168.1.0/24 2001:db8::/32]"},
		{ann: "10.0.0.0/8, 172.16.0.0/12", want: "[10.0.0.0/8 172.16.0.0/12]"},
		{ann: "10.0.0.0/8,nope", wantErr: v1.AnnotationLoadBalancerSourceRangesKey},
		{spec: []string{"300.0.0.0/8"}, wantErr: "LoadBalancerSourceRanges"},
	} {
		s := svcWith(nil)
		s.Spec.LoadBalancerSourceRanges = tc.spec
		if tc.ann != "" {
			s.Annotations = map[string]string{v1.AnnotationLoadBalancerSourceRangesKey: tc.ann}
		}
		got, err := SourceRanges(s)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "For example") {
				t.Errorf("SourceRanges(%v, %q) err = %v, want one naming %s with an example", tc.spec, tc.ann, err, tc.wantErr)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != tc.want {
			t.Errorf("SourceRanges(%v, %q) = %v, %v; want %s", tc.spec, tc.ann, got, err, tc.want)
		}
	}
}

func TestHealthCheck(t *testing.T) {
	s := svcWith(nil)
	if path, port, local := HealthCheck(s); path != "" || port != 0 || local {
		t.Errorf("Cluster policy: %q %d %v", path, port, local)
	}
	s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	s.Spec.HealthCheckNodePort = 32000
	if path, port, local := HealthCheck(s); path != "/healthz" || port != 32000 || !local {
		t.Errorf("Local policy: %q %d %v", path, port, local)
	}
}

func TestPorts(t *testing.T) {
	s := svcWith(nil)
	if _, err := Ports(s, "an NLB", v1.ProtocolTCP); err == nil {
		t.Error("no ports accepted")
	}
	s.Spec.Ports = []v1.ServicePort{{Port: 80, NodePort: 30080}, {Port: 53, NodePort: 30053, Protocol: v1.ProtocolUDP}}
	got, err := Ports(s, "an NLB", v1.ProtocolTCP, v1.ProtocolUDP)
	if err != nil || got[0].Protocol != v1.ProtocolTCP {
		t.Fatalf("Ports = %v, %v", got, err)
	}
	if _, err := Ports(s, "an NLB", v1.ProtocolTCP); err == nil || !strings.Contains(err.Error(), "supports TCP only") {
		t.Errorf("UDP accepted by a TCP-only backend: %v", err)
	}
	s.Spec.Ports = []v1.ServicePort{{Port: 80}}
	if _, err := Ports(s, "an NLB", v1.ProtocolTCP); err == nil || !strings.Contains(err.Error(), "nodePort") {
		t.Errorf("port without nodePort accepted: %v", err)
	}
}
