package azure

import (
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	v1 "k8s.io/api/core/v1"
)

// Probes as upstream builds them: names, precedence of the annotations
// and appProtocol, defaults, the Local probe every rule shares, and the
// per-port opt-outs.
func TestProbesAsUpstream(t *testing.T) {
	s := &Section{SubnetName: "nodes"}
	rulesOf := func(t *testing.T, svc *v1.Service) (map[string]*armnetwork.LoadBalancingRule, map[string]*armnetwork.Probe) {
		t.Helper()
		sp, err := serviceSpec(s, svc)
		if err != nil {
			t.Fatal(err)
		}
		n := upstreamNames("k", svc)
		rules, probes := map[string]*armnetwork.LoadBalancingRule{}, map[string]*armnetwork.Probe{}
		desiredRules(rules, probes, "/lb", "pool", n, n.frontend, sp, sp.fams[0])
		return rules, probes
	}
	t.Run("defaults: TCP on the NodePort every 5 s, threshold 2; none for UDP", func(t *testing.T) {
		svc := lbService("def", 80, 53)
		svc.Spec.Ports[1].Protocol = v1.ProtocolUDP
		n := upstreamNames("k", svc)
		rules, probes := rulesOf(t, svc)
		p := probes[strings.ToLower(n.rule(svc.Spec.Ports[0]))]
		if p == nil || *p.Properties.Protocol != armnetwork.ProbeProtocolTCP || *p.Properties.Port != svc.Spec.Ports[0].NodePort ||
			*p.Properties.IntervalInSeconds != 5 || *p.Properties.ProbeThreshold != 2 || p.Properties.NumberOfProbes != nil {
			t.Errorf("probe %+v", p)
		}
		if len(probes) != 1 || rules[strings.ToLower(n.rule(svc.Spec.Ports[1]))].Properties.Probe != nil {
			t.Errorf("UDP port probed: %d probes", len(probes))
		}
	})
	t.Run("the port's annotation, then appProtocol, then the Service's", func(t *testing.T) {
		svc := lbService("prec", 80, 443, 8080)
		svc.Spec.Ports[1].AppProtocol = to.Ptr("https")
		svc.Annotations = map[string]string{
			string(annotationProbeProtocol):                                 "Http",
			string(annotationProbeRequestPath):                              "/ready",
			string(annotationProbeInterval):                                 "10",
			"service.beta.kubernetes.io/port_8080_health-probe_protocol":    "Tcp",
			"service.beta.kubernetes.io/port_443_health-probe_request-path": "/tls",
			"service.beta.kubernetes.io/port_443_health-probe_num-of-probe": "3",
			"service.beta.kubernetes.io/port_8080_health-probe_port":        "http-80",
		}
		svc.Spec.Ports[0].Name = "http-80"
		n := upstreamNames("k", svc)
		_, probes := rulesOf(t, svc)
		get := func(i int) *armnetwork.ProbePropertiesFormat {
			return probes[strings.ToLower(n.rule(svc.Spec.Ports[i]))].Properties
		}
		if p := get(0); *p.Protocol != armnetwork.ProbeProtocolHTTP || *p.RequestPath != "/ready" || *p.IntervalInSeconds != 10 {
			t.Errorf("port 80: %+v", p)
		}
		if p := get(1); *p.Protocol != armnetwork.ProbeProtocolHTTPS || *p.RequestPath != "/tls" || *p.ProbeThreshold != 3 {
			t.Errorf("port 443: %+v", p)
		}
		if p := get(2); *p.Protocol != armnetwork.ProbeProtocolTCP || p.RequestPath != nil || *p.Port != svc.Spec.Ports[0].NodePort {
			t.Errorf("port 8080 (TCP, probing port http-80's NodePort): %+v", p)
		}
	})
	t.Run("Local: one HTTP probe of the health check node port for every rule", func(t *testing.T) {
		svc := lbService("local", 80, 53)
		svc.Spec.Ports[1].Protocol = v1.ProtocolUDP
		svc.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
		svc.Spec.HealthCheckNodePort = 32100
		n := upstreamNames("k", svc)
		rules, probes := rulesOf(t, svc)
		name := n.base + "-TCP-32100"
		p := probes[strings.ToLower(name)]
		if len(probes) != 1 || p == nil || *p.Properties.Protocol != armnetwork.ProbeProtocolHTTP || *p.Properties.RequestPath != "/healthz" || *p.Properties.Port != 32100 {
			t.Fatalf("probes %v", probes)
		}
		for _, r := range rules {
			if r.Properties.Probe == nil || !strings.HasSuffix(*r.Properties.Probe.ID, "/probes/"+name) {
				t.Errorf("rule %s does not use the Local probe", *r.Name)
			}
		}
	})
	t.Run("per-port opt-outs", func(t *testing.T) {
		svc := lbService("opt", 80, 10256)
		svc.Annotations = map[string]string{
			"service.beta.kubernetes.io/port_80_no_probe_rule": "True",
			"service.beta.kubernetes.io/port_10256_no_lb_rule": "true",
		}
		rules, probes := rulesOf(t, svc)
		if len(rules) != 1 || len(probes) != 0 {
			t.Errorf("%d rules and %d probes, want the port 80 rule alone", len(rules), len(probes))
		}
	})
	t.Run("bad values name their annotation", func(t *testing.T) {
		for key, v := range map[string]string{
			string(annotationProbeInterval):                                "4",
			"service.beta.kubernetes.io/port_80_health-probe_num-of-probe": "x",
			"service.beta.kubernetes.io/port_80_health-probe_port":         "nope",
		} {
			svc := lbService("bad", 80)
			svc.Annotations = map[string]string{key: v}
			if _, err := serviceSpec(s, svc); err == nil || !strings.Contains(err.Error(), key) {
				t.Errorf("%s=%s: %v, want an error naming it", key, v, err)
			}
		}
		svc := lbService("long", 80)
		svc.Annotations = map[string]string{string(annotationProbeInterval): "60", string(annotationProbeNumOfProbe): "2"}
		if _, err := serviceSpec(s, svc); err == nil {
			t.Error("interval x probes of 120 s accepted")
		}
	})
}
