package aws

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
)

func lbService(ann map[string]string, ports ...v1.ServicePort) *v1.Service {
	svc := svcNamed("default", "web")
	svc.Annotations = ann
	svc.Spec.Type = v1.ServiceTypeLoadBalancer
	if len(ports) == 0 {
		ports = []v1.ServicePort{{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}
	}
	svc.Spec.Ports = ports
	return svc
}

func TestLoadBalancerType(t *testing.T) {
	for _, tc := range []struct {
		value       string
		defaultType string
		want        lbKind
	}{
		{"", defaultTypeNLB, kindNLB}, {"", defaultTypeClassic, kindClassic},
		{"nlb", defaultTypeClassic, kindNLB}, {"nlb", defaultTypeNLB, kindNLB},
		{"external", defaultTypeClassic, kindElsewhere}, {"nlb-ip", defaultTypeNLB, kindElsewhere},
		// Upstream's rule: anything else is a Classic ELB.
		{"elb", defaultTypeNLB, kindClassic}, {"clb", defaultTypeNLB, kindClassic}, {"NLB", defaultTypeNLB, kindClassic},
	} {
		svc := lbService(map[string]string{string(annotationLBType): tc.value})
		if tc.value == "" {
			svc = lbService(nil)
		}
		if got := serviceLBKind(svc, tc.defaultType); got != tc.want {
			t.Errorf("%q with defaultType %s: %s, want %s", tc.value, tc.defaultType, got, tc.want)
		}
		err := ensureSupported(svc)
		switch {
		case tc.want == kindElsewhere && err != cloudprovider.ImplementedElsewhere: // must be unwrapped
			t.Errorf("%q: got %v, want ImplementedElsewhere unwrapped", tc.value, err)
		case tc.want != kindElsewhere && err != nil:
			t.Errorf("%q: %v", tc.value, err)
		}
	}
}

func TestParseLBOptions(t *testing.T) {
	tcp := func(port, nodePort int32) v1.ServicePort {
		return v1.ServicePort{Port: port, NodePort: nodePort, Protocol: v1.ProtocolTCP}
	}
	udp := func(port, nodePort int32) v1.ServicePort {
		return v1.ServicePort{Port: port, NodePort: nodePort, Protocol: v1.ProtocolUDP}
	}
	for _, tc := range []struct {
		name    string
		ann     map[string]string
		ranges  []string
		ports   []v1.ServicePort
		wantErr string // substring naming the culprit
		check   func(t *testing.T, o *lbOptions)
	}{
		{name: "defaults", check: func(t *testing.T, o *lbOptions) {
			if o.internal || len(o.subnets) != 0 || len(o.sourceRanges) != 1 || o.sourceRanges[0].String() != "0.0.0.0/0" {
				t.Errorf("got %+v", o)
			}
		}},
		{name: "internal true", ann: map[string]string{string(annotationInternal): "true"}, check: func(t *testing.T, o *lbOptions) {
			if !o.internal {
				t.Error("want internal")
			}
		}},
		{name: "internal cidr", ann: map[string]string{string(annotationInternal): "0.0.0.0/0"}, check: func(t *testing.T, o *lbOptions) {
			if !o.internal {
				t.Error("want internal")
			}
		}},
		{name: "internal false", ann: map[string]string{string(annotationInternal): "false"}, check: func(t *testing.T, o *lbOptions) {
			if o.internal {
				t.Error("want internet-facing")
			}
		}},
		{name: "internal: any value but false, as upstream", ann: map[string]string{string(annotationInternal): "False"}, check: func(t *testing.T, o *lbOptions) {
			if !o.internal {
				t.Error("\"False\" is not \"false\": internal upstream, internal here")
			}
		}},
		{name: "internal: empty is internet-facing", ann: map[string]string{string(annotationInternal): ""}, check: func(t *testing.T, o *lbOptions) {
			if o.internal {
				t.Error("an empty value made the load balancer internal")
			}
		}},
		{name: "subnets", ann: map[string]string{string(annotationSubnets): "subnet-0123456789abcdef0, my-subnet"}, check: func(t *testing.T, o *lbOptions) {
			if len(o.subnets) != 2 || o.subnets[1] != "my-subnet" {
				t.Errorf("subnets %v", o.subnets)
			}
		}},
		{name: "subnets empty entry", ann: map[string]string{string(annotationSubnets): "subnet-01234567,,x"}, wantErr: string(annotationSubnets)},
		{name: "subnets bad id", ann: map[string]string{string(annotationSubnets): "subnet-xyz"}, wantErr: string(annotationSubnets)},
		{name: "subnets bad name", ann: map[string]string{string(annotationSubnets): "a,b,c!"}, wantErr: string(annotationSubnets)},
		{name: "subnets name of 256 characters", ann: map[string]string{string(annotationSubnets): strings.Repeat("é", 256)}, check: func(t *testing.T, o *lbOptions) {
			if len(o.subnets) != 1 {
				t.Errorf("subnets %v", o.subnets)
			}
		}},
		{name: "subnets name too long", ann: map[string]string{string(annotationSubnets): strings.Repeat("é", 257)}, wantErr: string(annotationSubnets)},
		{name: "source ranges spec", ranges: []string{"10.0.0.0/8", "192.168.1.1/24", "2001:db8::/32"}, check: func(t *testing.T, o *lbOptions) {
			if len(o.sourceRanges) != 3 || o.sourceRanges[1].String() != "192.168.1.0/24" {
				t.Errorf("ranges %v", o.sourceRanges)
			}
		}},
		{name: "source ranges annotation", ann: map[string]string{string(annotationSourceRanges): "10.0.0.0/8, 172.16.0.0/12"}, check: func(t *testing.T, o *lbOptions) {
			if len(o.sourceRanges) != 2 {
				t.Errorf("ranges %v", o.sourceRanges)
			}
		}},
		{name: "source ranges bad annotation", ann: map[string]string{string(annotationSourceRanges): "10.0.0.0/8,nope"}, wantErr: string(annotationSourceRanges)},
		{name: "source ranges bad spec", ranges: []string{"300.0.0.0/8"}, wantErr: "LoadBalancerSourceRanges"},
		{name: "tcp and udp same port", ports: []v1.ServicePort{tcp(53, 30053), udp(53, 30053), tcp(80, 30080)}, check: func(t *testing.T, o *lbOptions) {
			if len(o.ports) != 2 || o.ports[0].protocol() != "TCP_UDP" || o.ports[1].protocol() != "TCP" {
				t.Errorf("ports %+v", o.ports)
			}
		}},
		{name: "sctp", ports: []v1.ServicePort{{Port: 1, NodePort: 30001, Protocol: v1.ProtocolSCTP}}, wantErr: "SCTP"},
		{name: "no node port", ports: []v1.ServicePort{tcp(80, 0)}, wantErr: "nodePort"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := lbService(tc.ann, tc.ports...)
			svc.Spec.LoadBalancerSourceRanges = tc.ranges
			o, err := parseLBOptions(svc)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, o)
		})
	}
}

// TestHealthCheckFor pins upstream's NLB health check defaults
// (kubernetes/cloud-provider-aws pkg/providers/v1/aws.go:2175-2258) and
// the healthcheck-* annotations.
func TestHealthCheckFor(t *testing.T) {
	local := func(s *v1.Service) {
		s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
		s.Spec.HealthCheckNodePort = 32000
	}
	for _, tc := range []struct {
		name    string
		ann     map[string]string
		edit    func(*v1.Service)
		want    healthCheckSpec
		wantErr string
	}{
		{name: "cluster policy", want: healthCheckSpec{protocol: "TCP", port: "traffic-port", interval: 30, timeout: 10, healthyThreshold: 3, unhealthyThld: 3}},
		{name: "local policy", edit: local, want: healthCheckSpec{protocol: "HTTP", port: "32000", path: "/healthz", interval: 10, timeout: 10, healthyThreshold: 2, unhealthyThld: 2, nodePort: 32000}},
		{name: "annotated", ann: map[string]string{
			string(annotationHCProtocol): "http", string(annotationHCPort): "10256", string(annotationHCPath): "/livez",
			string(annotationHCInterval): "20", string(annotationHCTimeout): "5", string(annotationHCHealthyThreshold): "4", string(annotationHCUnhealthyThreshold): "6"},
			want: healthCheckSpec{protocol: "HTTP", port: "10256", path: "/livez", interval: 20, timeout: 5, healthyThreshold: 4, unhealthyThld: 6, nodePort: 10256}},
		{name: "HTTP without a path probes /", ann: map[string]string{string(annotationHCProtocol): "HTTPS"},
			want: healthCheckSpec{protocol: "HTTPS", port: "traffic-port", path: "/", interval: 30, timeout: 10, healthyThreshold: 3, unhealthyThld: 3}},
		{name: "TCP drops Local's path", edit: local, ann: map[string]string{string(annotationHCProtocol): "TCP"},
			want: healthCheckSpec{protocol: "TCP", port: "32000", interval: 10, timeout: 10, healthyThreshold: 2, unhealthyThld: 2, nodePort: 32000}},
		{name: "bad protocol", ann: map[string]string{string(annotationHCProtocol): "UDP"}, wantErr: string(annotationHCProtocol)},
		{name: "bad port", ann: map[string]string{string(annotationHCPort): "70000"}, wantErr: string(annotationHCPort)},
		{name: "interval out of range", ann: map[string]string{string(annotationHCInterval): "3"}, wantErr: string(annotationHCInterval)},
		{name: "timeout above interval", ann: map[string]string{string(annotationHCInterval): "10", string(annotationHCTimeout): "20"}, wantErr: "must not exceed its interval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := lbService(tc.ann)
			if tc.edit != nil {
				tc.edit(svc)
			}
			got, err := healthCheckFor(svc)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("err %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
