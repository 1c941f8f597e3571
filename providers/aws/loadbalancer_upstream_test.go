package aws

import (
	"net/netip"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Upstream's rule descriptions and NLB name are how an adopted NLB's
// parts are found (aws.go:70-80, cloudprovider.DefaultLoadBalancerName).
func TestUpstreamNLBNamesGolden(t *testing.T) {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "fd82b78a-3ae4-4c03-9b04-2597d6921b2f"}}
	if got, want := upstreamNLBName(svc), "afd82b78a3ae44c039b042597d6921b2"; got != want {
		t.Errorf("upstreamNLBName = %q, want %q", got, want)
	}
	u := upstreamRules{lbName: "afd82b78a3ae44c039b042597d6921b2"}
	if got, want := u.clientDesc(), "kubernetes.io/rule/nlb/client=afd82b78a3ae44c039b042597d6921b2"; got != want {
		t.Errorf("clientDesc = %q, want %q", got, want)
	}
	if got, want := u.healthDesc(), "kubernetes.io/rule/nlb/health=afd82b78a3ae44c039b042597d6921b2"; got != want {
		t.Errorf("healthDesc = %q, want %q", got, want)
	}
	if upstreamNLBMTURule != "kubernetes.io/rule/nlb/mtu" {
		t.Errorf("MTU rule description %q", upstreamNLBMTURule)
	}
}

func TestTakeOverTargetGroups(t *testing.T) {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "u1"},
		Spec: v1.ServiceSpec{Ports: []v1.ServicePort{{Port: 80, NodePort: 30080}, {Port: 443, NodePort: 30443}}}}
	st := &lbState{tgs: map[string]elbv2types.TargetGroup{
		"k8s-default-web-0123456789": {Port: aws.Int32(30080), Protocol: elbv2types.ProtocolEnumTcp, TargetGroupArn: aws.String("a")},
		"k8s-default-web-9876543210": {Port: aws.Int32(31000), Protocol: elbv2types.ProtocolEnumTcp, TargetGroupArn: aws.String("b")},
	}}
	takeOverTargetGroups("c", svc, st)
	ours := targetGroupName("c", svc, portKey{port: 80, proto: elbv2types.ProtocolEnumTcp})
	if tg, ok := st.tgs[ours]; !ok || aws.ToString(tg.TargetGroupArn) != "a" {
		t.Errorf("upstream's port 80 target group not taken over as %s: %v", ours, st.tgs)
	}
	if _, ok := st.tgs["k8s-default-web-9876543210"]; !ok {
		t.Errorf("a target group of no current node port must keep its name (stale): %v", st.tgs)
	}
	if len(st.tgs) != 2 {
		t.Errorf("target groups %v", st.tgs)
	}
}

// Upstream's rule set (aws_loadbalancer.go:1036-1041): the health rule is
// left out when open TCP client rules on the same ports cover it.
func TestNewUpstreamRules(t *testing.T) {
	open := []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}
	tcp := []listenerSpec{{port: 80, nodePort: 30080, tcp: true}}
	u := newUpstreamRules("lb", &lbOptions{sourceRanges: open, ports: tcp}, []string{"10.0.0.0/24"})
	if len(u.client) != 1 || len(u.health) != 0 {
		t.Errorf("open TCP: client %v health %v, want one client rule and no health rule", u.client, u.health)
	}
	narrow := []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
	u = newUpstreamRules("lb", &lbOptions{sourceRanges: narrow, ports: tcp}, []string{"10.0.0.0/24", "10.0.1.0/24"})
	if !u.client[sgRule{proto: "tcp", from: 30080, to: 30080, cidr: "192.0.2.0/24"}] || len(u.health) != 2 {
		t.Errorf("source range: client %v health %v", u.client, u.health)
	}
	local := &lbOptions{sourceRanges: open, ports: tcp, healthCheck: healthCheckSpec{nodePort: 32000}}
	u = newUpstreamRules("lb", local, []string{"10.0.0.0/24"})
	if !u.health[sgRule{proto: "tcp", from: 32000, to: 32000, cidr: "10.0.0.0/24"}] || len(u.health) != 1 {
		t.Errorf("health check node port: health %v", u.health)
	}
}

func TestDescribedCIDRRules(t *testing.T) {
	perms := []ec2types.IpPermission{{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(30080), ToPort: aws.Int32(30080), IpRanges: []ec2types.IpRange{
		{CidrIp: aws.String("0.0.0.0/0"), Description: aws.String("kubernetes.io/rule/nlb/client=a1")},
		{CidrIp: aws.String("10.0.0.0/16"), Description: aws.String("someone else")},
	}}}
	if got := describedCIDRRules(perms, "kubernetes.io/rule/nlb/client=a1", false); len(got) != 1 {
		t.Errorf("exact: %v", got)
	}
	if got := describedCIDRRules(perms, "kubernetes.io/rule/nlb/client=", true); len(got) != 1 {
		t.Errorf("prefix: %v", got)
	}
}
