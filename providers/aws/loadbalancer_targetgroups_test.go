package aws

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
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
