package aws

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	v1 "k8s.io/api/core/v1"
)

// TestTargetGroupAttributes: PROXY protocol v2, client IP preservation and
// the deregistration delay from the annotation reach every target group;
// a sync that finds them set writes nothing; bad values are errors naming
// the annotation, before any call.
func TestTargetGroupAttributes(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(1)
	svc := lbService(map[string]string{string(annotationTGAttributes): "proxy_protocol_v2.enabled=true, deregistration_delay.timeout_seconds=30"},
		tcpPort(80, 30080), tcpPort(443, 30443))
	e.ensure(svc, nodes)
	for _, tg := range e.view(svc).tgs {
		out, err := e.api.elbv2.DescribeTargetGroupAttributes(e.ctx, &elbv2.DescribeTargetGroupAttributesInput{TargetGroupArn: tg.TargetGroupArn})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, a := range out.Attributes {
			got[aws.ToString(a.Key)] = aws.ToString(a.Value)
		}
		if got[attrProxyProtocolV2] != "true" || got[attrDeregDelay] != "30" || got[attrPreserveClientIP] != "true" {
			t.Errorf("target group %s attributes %v", aws.ToString(tg.TargetGroupName), got)
		}
	}
	e.srv.ResetCalls()
	e.ensure(svc, nodes)
	if n := e.srv.CallCount("elbv2:ModifyTargetGroupAttributes"); n != 0 {
		t.Errorf("%d attribute writes on a sync that changes nothing", n)
	}
	for _, bad := range []string{"proxy_protocol_v2.enabled=yes", "stickiness.enabled=true", "deregistration_delay.timeout_seconds=4000", "proxy_protocol_v2.enabled=true,proxy_protocol_v2.enabled=false"} {
		s := lbService(map[string]string{string(annotationTGAttributes): bad})
		s.Name = "bad"
		if _, err := parseLBOptions(s); err == nil || !strings.Contains(err.Error(), string(annotationTGAttributes)) {
			t.Errorf("%q: err %v, want one naming the annotation", bad, err)
		}
	}
	udp := lbService(map[string]string{string(annotationTGAttributes): "preserve_client_ip.enabled=false"}, udpPort(53, 30053))
	if _, err := parseLBOptions(udp); err == nil || !strings.Contains(err.Error(), "UDP") {
		t.Errorf("client IP preservation off for UDP: err %v", err)
	}
}

// TestTargetNodeLabels: only Nodes with every label of the annotation are
// targets, as upstream; a bare key matches any value; a Node gaining the
// label joins at the next update; a malformed key is an error naming the
// annotation, before any call.
func TestTargetNodeLabels(t *testing.T) {
	e := newLBEnv(t)
	lb := newTypedLoadBalancers(e.lb, defaultTypeNLB)
	nodes := e.nodes(3)
	nodes[0].Labels = map[string]string{"role": "edge", "zone-tier": "a"}
	nodes[1].Labels = map[string]string{"role": "edge"}
	svc := lbService(map[string]string{string(annotationTargetNodeLabels): "role=edge, zone-tier"}, tcpPort(80, 30080))
	if _, err := lb.EnsureLoadBalancer(e.ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	targets := func() []string {
		for _, ts := range e.view(svc).targets {
			return ts
		}
		return nil
	}
	if got := targets(); len(got) != 1 || !strings.HasPrefix(got[0], instanceOf(t, nodes[0])) {
		t.Errorf("targets %v, want only %s", got, nodes[0].Name)
	}
	nodes[1].Labels["zone-tier"] = "b"
	if err := lb.UpdateLoadBalancer(e.ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if got := targets(); len(got) != 2 {
		t.Errorf("targets %v after a node gained the label, want 2", got)
	}
	bad := lbService(map[string]string{string(annotationTargetNodeLabels): "role=edge,bad key"})
	bad.Name = "bad"
	e.srv.ResetCalls()
	if _, err := lb.EnsureLoadBalancer(e.ctx, "kubernetes", bad, nodes); err == nil || !strings.Contains(err.Error(), string(annotationTargetNodeLabels)) {
		t.Errorf("malformed label: err %v", err)
	}
	if n := len(e.srv.Calls()); n != 0 {
		t.Errorf("%d calls for a malformed annotation", n)
	}
}

// instanceOf is the EC2 instance ID behind a test Node.
func instanceOf(t *testing.T, n *v1.Node) string {
	t.Helper()
	id, err := instanceIDFromProviderID(n.Spec.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	return string(id)
}
