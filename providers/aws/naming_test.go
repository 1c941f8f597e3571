package aws

import (
	"regexp"
	"strings"
	"testing"

	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var elbNameRE = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$`)

func svcNamed(ns, name string) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)}}
}

func TestLoadBalancerName(t *testing.T) {
	long := strings.Repeat("a", 63)
	for _, tc := range []struct{ cluster, ns, name string }{
		{"prod", "default", "web"},
		{"prod", long, long},
		{"prod", "-x-", "--"},
		{"internal", "internal", "internal"},
		{strings.Repeat("c", 200), "kube-system", "ingress-nginx-controller"},
	} {
		svc := svcNamed(tc.ns, tc.name)
		got := loadBalancerName(tc.cluster, svc)
		if len(got) > maxELBNameLength || !elbNameRE.MatchString(got) || strings.HasPrefix(got, "internal-") {
			t.Errorf("loadBalancerName(%q, %s/%s) = %q: not a valid NLB name", tc.cluster, tc.ns, tc.name, got)
		}
		// Deterministic, and independent of the UID.
		again := svcNamed(tc.ns, tc.name)
		again.UID = "other"
		if loadBalancerName(tc.cluster, again) != got {
			t.Errorf("name depends on the UID")
		}
		for _, k := range []portKey{{65535, elbv2types.ProtocolEnumTcpUdp}, {80, elbv2types.ProtocolEnumTcp}, {53, elbv2types.ProtocolEnumUdp}} {
			tg := targetGroupName(tc.cluster, svc, k)
			if len(tg) > maxELBNameLength || !elbNameRE.MatchString(tg) {
				t.Errorf("targetGroupName = %q: not a valid target group name", tg)
			}
		}
	}
	a := loadBalancerName("c1", svcNamed("ns", "svc"))
	if a != loadBalancerName("c1", svcNamed("ns", "svc")) {
		t.Error("not deterministic")
	}
	for _, other := range []string{loadBalancerName("c2", svcNamed("ns", "svc")), loadBalancerName("c1", svcNamed("ns", "svc2")), loadBalancerName("c1", svcNamed("ns2", "svc"))} {
		if other == a {
			t.Errorf("collision: %s", a)
		}
	}
	if got := targetGroupName("c", svcNamed("n", "s"), portKey{53, elbv2types.ProtocolEnumTcpUdp}); !strings.HasSuffix(got, "-53-tcpudp") {
		t.Errorf("target group name %q should end in its port and protocol", got)
	}
}
