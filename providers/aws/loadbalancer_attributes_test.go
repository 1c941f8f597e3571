package aws

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
)

func (e *lbEnv) nlbAttributes(arn *string) map[string]string {
	e.t.Helper()
	out, err := e.api.elbv2.DescribeLoadBalancerAttributes(e.ctx, &elbv2.DescribeLoadBalancerAttributesInput{LoadBalancerArn: arn})
	if err != nil {
		e.t.Fatal(err)
	}
	m := map[string]string{}
	for _, a := range out.Attributes {
		m[aws.ToString(a.Key)] = aws.ToString(a.Value)
	}
	return m
}

// Cross-zone and access logs on an NLB, as upstream's: set from the
// annotations, back to AWS's defaults when they go, and no call at all
// for a Service that never had them.
func TestNLBAttributes(t *testing.T) {
	e := newLBEnv(t)
	nodes := e.nodes(1, e.fx.NodeSecurityGroupID)

	plain := lbService(nil)
	plain.Name, plain.UID = "plain", "uid-plain"
	e.srv.ResetCalls()
	e.ensure(plain, nodes)
	e.ensure(plain, nodes)
	if n := e.srv.Calls()["elbv2:DescribeLoadBalancerAttributes"] + e.srv.Calls()["elbv2:ModifyLoadBalancerAttributes"]; n != 0 {
		t.Errorf("%d attribute calls for a Service without the annotations", n)
	}

	svc := lbService(map[string]string{
		string(annotationCrossZone): "true", string(annotationAccessLogEnabled): "true",
		string(annotationAccessLogBucket): "logs", string(annotationAccessLogPrefix): "web",
	})
	e.ensure(svc, nodes)
	v := e.view(svc)
	got := e.nlbAttributes(v.lb.LoadBalancerArn)
	for k, want := range map[string]string{nlbAttrCrossZone: "true", nlbAttrAccessLogs: "true", nlbAttrAccessBucket: "logs", nlbAttrAccessPrefix: "web"} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	svc.Annotations = nil
	e.srv.ResetCalls()
	e.ensure(svc, nodes)
	if n := e.srv.Calls()["elbv2:DescribeLoadBalancerAttributes"]; n != 1 {
		t.Errorf("%d attribute reads after the annotations went, want 1 (the NLB is marked)", n)
	}
	got = e.nlbAttributes(v.lb.LoadBalancerArn)
	for k, want := range map[string]string{nlbAttrCrossZone: "false", nlbAttrAccessLogs: "false", nlbAttrAccessBucket: "", nlbAttrAccessPrefix: ""} {
		if got[k] != want {
			t.Errorf("after the annotations went: %s = %q, want %q", k, got[k], want)
		}
	}
	// Back to defaults, the mark goes, and with it the reads.
	e.srv.ResetCalls()
	e.ensure(svc, nodes)
	if n := e.srv.Calls()["elbv2:DescribeLoadBalancerAttributes"]; n != 0 {
		t.Errorf("%d attribute reads once the defaults are back", n)
	}

	bad := lbService(map[string]string{string(annotationAccessLogEnabled): "true"})
	bad.Name, bad.UID = "bad", "uid-bad"
	if _, err := e.lb.EnsureLoadBalancer(e.ctx, "kubernetes", bad, nodes); err == nil || !strings.Contains(err.Error(), string(annotationAccessLogBucket)) {
		t.Errorf("access logs without a bucket: %v, want an error naming %s", err, annotationAccessLogBucket)
	}
}
