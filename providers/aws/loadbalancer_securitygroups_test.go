package aws

import (
	"net/netip"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestSGRuleConversions(t *testing.T) {
	svc := lbService(nil, tcpPort(53, 30053), udpPort(53, 30053), tcpPort(80, 30080))
	svc.Spec.LoadBalancerSourceRanges = []string{"10.1.2.3/8", "2001:db8::1/32"}
	svc.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	svc.Spec.HealthCheckNodePort = 32000
	opts, err := parseLBOptions(svc)
	if err != nil {
		t.Fatal(err)
	}
	want := listenerRules(opts)
	if len(want) != 6 {
		t.Errorf("listener rules %v, want 3 port/protocols x 2 ranges", want)
	}
	var list []sgRule
	for r := range want {
		list = append(list, r)
	}
	// What we authorize reads back as the same rules, IPv6 included, so
	// a re-sync finds nothing to change.
	if got := cidrRules(permissions(list, "d")); !reflect.DeepEqual(got, want) {
		t.Errorf("round trip: %v, want %v", got, want)
	}
	if !want[sgRule{proto: "udp", from: 53, to: 53, cidr: netip.MustParsePrefix("2001:db8::/32").String()}] {
		t.Errorf("missing the masked IPv6 rule: %v", want)
	}

	node := nodePortRules(opts, "sg-lb")
	wantNode := map[sgRule]bool{
		{proto: "tcp", from: 30053, to: 30053, group: "sg-lb"}: true,
		{proto: "udp", from: 30053, to: 30053, group: "sg-lb"}: true,
		{proto: "tcp", from: 30080, to: 30080, group: "sg-lb"}: true,
		{proto: "tcp", from: 32000, to: 32000, group: "sg-lb"}: true,
	}
	if !reflect.DeepEqual(node, wantNode) {
		t.Errorf("node rules %v", node)
	}
	var nl []sgRule
	for r := range node {
		nl = append(nl, r)
	}
	perms := permissions(nl, "ours")
	if got := groupRules(perms, "sg-lb", "ours"); !reflect.DeepEqual(got, wantNode) {
		t.Errorf("group rules round trip %v", got)
	}
	if got := groupRules(perms, "sg-lb", "someone else's"); len(got) != 0 {
		t.Errorf("rules with another description are not ours: %v", got)
	}
}
