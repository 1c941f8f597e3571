package gce

import (
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

func (env *testEnv) forwardingRules(t *testing.T) *compute.ForwardingRulesClient {
	return client(t, env, compute.NewForwardingRulesRESTClient)
}

func (env *testEnv) insertRule(t *testing.T, fr *computepb.ForwardingRule) (*compute.Operation, error) {
	t.Helper()
	return env.forwardingRules(t).Insert(t.Context(), &computepb.InsertForwardingRuleRequest{Project: env.project, Region: env.region, ForwardingRuleResource: fr})
}

func (env *testEnv) getRule(t *testing.T, name string) *computepb.ForwardingRule {
	t.Helper()
	fr, err := env.forwardingRules(t).Get(t.Context(), &computepb.GetForwardingRuleRequest{Project: env.project, Region: env.region, ForwardingRule: name})
	if err != nil {
		t.Fatal(err)
	}
	return fr
}

func (env *testEnv) deleteRule(t *testing.T, name string) {
	t.Helper()
	op, err := env.forwardingRules(t).Delete(t.Context(), &computepb.DeleteForwardingRuleRequest{Project: env.project, Region: env.region, ForwardingRule: name})
	wait(t, op, err)
}

// insertPool makes an empty target pool and returns its link.
func (env *testEnv) insertPool(t *testing.T, name string) string {
	t.Helper()
	op, err := env.targetPools(t).Insert(t.Context(), &computepb.InsertTargetPoolRequest{Project: env.project, Region: env.region,
		TargetPoolResource: &computepb.TargetPool{Name: proto.String(name)}})
	wait(t, op, err)
	return LinkBase + "projects/test-project/regions/us-central1/targetPools/" + name
}

// The external load balancer as upstream's CCM makes and keeps it: a
// rule on an ephemeral IP, promoted to a static address while the load
// balancer is changed, the address released again while the rule keeps
// the IP.
func TestForwardingRuleExternal(t *testing.T) {
	env := newTestEnv(t, Config{})
	fx := env.emu.Fixture()
	pool := env.insertPool(t, "a1b2")
	op, err := env.insertRule(t, &computepb.ForwardingRule{Name: proto.String("a1b2"), Description: proto.String(`{"kubernetes.io/service-name":"default/web"}`),
		IPProtocol: proto.String("TCP"), PortRange: proto.String("80"), Target: proto.String("regions/us-central1/targetPools/a1b2")})
	wait(t, op, err)
	fr := env.getRule(t, "a1b2")
	if got, ok := env.emu.ForwardingRule("a1b2"); !ok || !proto.Equal(got, fr) {
		t.Errorf("admin read %v", got)
	}
	if got, ok := env.emu.TargetPool("a1b2"); !ok || got.GetSelfLink() != pool {
		t.Errorf("admin read %v", got)
	}
	ip, err := netip.ParseAddr(fr.GetIPAddress())
	if err != nil || !netip.MustParsePrefix(fx.ExternalCIDR).Contains(ip) || fr.GetPortRange() != "80-80" || fr.GetTarget() != pool ||
		fr.GetLoadBalancingScheme() != "EXTERNAL" || fr.GetNetworkTier() != "PREMIUM" || fr.GetKind() != "compute#forwardingRule" ||
		fr.GetRegion() != LinkBase+"projects/test-project/regions/us-central1" || fr.GetFingerprint() == "" || fr.Network != nil {
		t.Errorf("forwarding rule %v", fr)
	}
	// The pool is in use.
	_, err = env.targetPools(t).Delete(t.Context(), &computepb.DeleteTargetPoolRequest{Project: env.project, Region: env.region, TargetPool: "a1b2"})
	wantCode(t, err, http.StatusBadRequest, "resourceInUseByAnotherResource")
	if !strings.Contains(err.Error(), "The target_pool resource 'projects/test-project/regions/us-central1/targetPools/a1b2' is already being used by 'projects/test-project/regions/us-central1/forwardingRules/a1b2'") {
		t.Errorf("in-use message: %v", err)
	}

	// Promote the ephemeral IP, then release the address: the rule keeps it.
	op, err = env.insertAddress(t, &computepb.Address{Name: proto.String("a1b2"), Address: fr.IPAddress})
	wait(t, op, err)
	a := env.getAddress(t, "a1b2")
	if a.GetStatus() != "IN_USE" || !slices.Equal(a.GetUsers(), []string{fr.GetSelfLink()}) {
		t.Errorf("promoted address %v", a)
	}
	op, err = env.addresses(t).Delete(t.Context(), &computepb.DeleteAddressRequest{Project: env.project, Region: env.region, Address: "a1b2"})
	wait(t, op, err)
	if got := env.getRule(t, "a1b2").GetIPAddress(); got != ip.String() {
		t.Errorf("rule IP %s after its address went, want %s", got, ip)
	}

	// setTarget moves the rule to another pool, freeing the first.
	pool2 := env.insertPool(t, "pool-2")
	op, err = env.forwardingRules(t).SetTarget(t.Context(), &computepb.SetTargetForwardingRuleRequest{Project: env.project, Region: env.region, ForwardingRule: "a1b2",
		TargetReferenceResource: &computepb.TargetReference{Target: proto.String(pool2)}})
	wait(t, op, err)
	if op.Proto().GetOperationType() != "setTarget" || env.getRule(t, "a1b2").GetTarget() != pool2 {
		t.Errorf("after setTarget: %v", env.getRule(t, "a1b2"))
	}
	op, err = env.targetPools(t).Delete(t.Context(), &computepb.DeleteTargetPoolRequest{Project: env.project, Region: env.region, TargetPool: "a1b2"})
	wait(t, op, err)

	pair, err := env.forwardingRules(t).AggregatedList(t.Context(), &computepb.AggregatedListForwardingRulesRequest{Project: env.project}).Next()
	if err != nil || pair.Key != "regions/us-central1" || len(pair.Value.GetForwardingRules()) != 1 {
		t.Errorf("aggregated %v %v", pair, err)
	}
	// Deleted, the rule releases its IP: it can be reserved again.
	env.deleteRule(t, "a1b2")
	op, err = env.insertAddress(t, &computepb.Address{Name: proto.String("again"), Address: proto.String(ip.String())})
	wait(t, op, err)
	if a := env.getAddress(t, "again"); a.GetStatus() != "RESERVED" {
		t.Errorf("address of a deleted rule's IP %v", a)
	}
}

// Rules share a reserved IP when their protocols or ports differ (one
// rule per protocol, as a Service with TCP and UDP ports needs), and
// conflict as on GCE when they overlap.
func TestForwardingRuleSharedIP(t *testing.T) {
	env := newTestEnv(t, Config{})
	pool := env.insertPool(t, "pool")
	op, err := env.insertAddress(t, &computepb.Address{Name: proto.String("vip")})
	wait(t, op, err)
	vip := env.getAddress(t, "vip").GetAddress()
	rule := func(name, protocol, ports, ip string) *computepb.ForwardingRule {
		return &computepb.ForwardingRule{Name: proto.String(name), IPProtocol: proto.String(protocol), PortRange: proto.String(ports),
			IPAddress: proto.String(ip), Target: proto.String(pool)}
	}
	for _, fr := range []*computepb.ForwardingRule{
		rule("tcp-80", "TCP", "80", vip),
		rule("udp-80", "UDP", "80-80", vip),
		rule("tcp-443", "TCP", "443", "regions/us-central1/addresses/vip"),
	} {
		op, err := env.insertRule(t, fr)
		wait(t, op, err)
	}
	if got := env.getRule(t, "tcp-443").GetIPAddress(); got != vip {
		t.Errorf("IP by address URL kept as %q, want %s", got, vip)
	}
	_, err = env.insertRule(t, rule("tcp-overlap", "TCP", "1-100", vip))
	wantCode(t, err, http.StatusBadRequest, "invalid")
	if !strings.Contains(err.Error(), "Specified IP address is in-use and would result in a conflict.") {
		t.Errorf("conflict message: %v", err)
	}
	a := env.getAddress(t, "vip")
	if a.GetStatus() != "IN_USE" || len(a.GetUsers()) != 3 {
		t.Errorf("shared address %v", a)
	}

	// An ephemeral IP is its rule's alone.
	op, err = env.insertRule(t, &computepb.ForwardingRule{Name: proto.String("eph"), Target: proto.String(pool)})
	wait(t, op, err)
	eph := env.getRule(t, "eph").GetIPAddress()
	op, err = env.insertRule(t, rule("steal", "UDP", "53", eph))
	if err != nil {
		t.Fatal(err)
	}
	wantCodeOnly(t, op.Wait(t.Context()), http.StatusBadRequest)
	if code := op.Proto().GetError().GetErrors()[0].GetCode(); code != "IP_IN_USE_BY_ANOTHER_RESOURCE" {
		t.Errorf("error code %s", code)
	}
	// An external IP no address reserves, and a tier the address has not.
	_, err = env.insertRule(t, rule("free", "TCP", "80", "35.192.100.100"))
	wantCode(t, err, http.StatusBadRequest, "invalid")
	std := rule("std", "TCP", "8080", vip)
	std.NetworkTier = proto.String("STANDARD")
	_, err = env.insertRule(t, std)
	wantCode(t, err, http.StatusBadRequest, "invalid")

	// The address goes; the rules keep the IP until the last is deleted.
	op, err = env.addresses(t).Delete(t.Context(), &computepb.DeleteAddressRequest{Project: env.project, Region: env.region, Address: "vip"})
	wait(t, op, err)
	for _, name := range []string{"tcp-80", "udp-80"} {
		env.deleteRule(t, name)
		op, err = env.insertAddress(t, &computepb.Address{Name: proto.String("grab"), Address: proto.String(vip)})
		if err != nil {
			t.Fatal(err)
		}
		// A rule still holds it: reserving it promotes it back.
		if err := op.Wait(t.Context()); err != nil {
			t.Fatalf("promoting %s after %s went: %v", vip, name, err)
		}
		op, err = env.addresses(t).Delete(t.Context(), &computepb.DeleteAddressRequest{Project: env.project, Region: env.region, Address: "grab"})
		wait(t, op, err)
	}
	env.deleteRule(t, "tcp-443")
	env.deleteRule(t, "eph")
	if rs := env.srv.Resources(); len(rs) != 5 {
		t.Errorf("left behind %v", rs)
	}
	if len(env.emu.ForwardingRules()) != 0 || len(env.emu.TargetPools()) != 1 {
		t.Errorf("admin reads: rules %v, pools %v", env.emu.ForwardingRules(), env.emu.TargetPools())
	}
}

func TestForwardingRuleValidation(t *testing.T) {
	env := newTestEnv(t, Config{})
	fx := env.emu.Fixture()
	pool := env.insertPool(t, "pool")
	ext := func(f func(*computepb.ForwardingRule)) *computepb.ForwardingRule {
		fr := &computepb.ForwardingRule{Name: proto.String("r"), Target: proto.String(pool)}
		f(fr)
		return fr
	}
	in := func(f func(*computepb.ForwardingRule)) *computepb.ForwardingRule {
		fr := &computepb.ForwardingRule{Name: proto.String("r"), LoadBalancingScheme: proto.String("INTERNAL"),
			Subnetwork: proto.String(fx.SubnetworkURL), Ports: []string{"80"},
			BackendService: proto.String("regions/us-central1/backendServices/bs")}
		f(fr)
		return fr
	}
	for _, tc := range []struct {
		name   string
		fr     *computepb.ForwardingRule
		status int
		reason string
	}{
		{"no target", ext(func(fr *computepb.ForwardingRule) { fr.Target = nil }), http.StatusBadRequest, "required"},
		{"missing pool", ext(func(fr *computepb.ForwardingRule) { fr.Target = proto.String("regions/us-central1/targetPools/nope") }), http.StatusNotFound, "notFound"},
		{"target not a pool", ext(func(fr *computepb.ForwardingRule) { fr.Target = proto.String(fx.NetworkURL) }), http.StatusBadRequest, "invalid"},
		{"ports on a pool rule", ext(func(fr *computepb.ForwardingRule) { fr.Ports = []string{"80"} }), http.StatusBadRequest, "invalid"},
		{"allPorts on a pool rule", ext(func(fr *computepb.ForwardingRule) { fr.AllPorts = proto.Bool(true) }), http.StatusBadRequest, "invalid"},
		{"bad port range", ext(func(fr *computepb.ForwardingRule) { fr.PortRange = proto.String("90-80") }), http.StatusBadRequest, "invalid"},
		{"ports on ICMP", ext(func(fr *computepb.ForwardingRule) {
			fr.IPProtocol, fr.PortRange = proto.String("ICMP"), proto.String("80")
		}), http.StatusBadRequest, "invalid"},
		{"bad protocol", ext(func(fr *computepb.ForwardingRule) { fr.IPProtocol = proto.String("HTTP") }), http.StatusBadRequest, "invalid"},
		{"global access outside", ext(func(fr *computepb.ForwardingRule) { fr.AllowGlobalAccess = proto.Bool(true) }), http.StatusBadRequest, "invalid"},
		{"managed scheme", ext(func(fr *computepb.ForwardingRule) { fr.LoadBalancingScheme = proto.String("EXTERNAL_MANAGED") }), http.StatusBadRequest, "invalid"},
		{"bad IP", ext(func(fr *computepb.ForwardingRule) { fr.IPAddress = proto.String("35.192.1") }), http.StatusBadRequest, "invalid"},
		{"missing address", ext(func(fr *computepb.ForwardingRule) { fr.IPAddress = proto.String("regions/us-central1/addresses/nope") }), http.StatusNotFound, "notFound"},
		{"internal IP outside", ext(func(fr *computepb.ForwardingRule) { fr.IPAddress = proto.String("10.128.0.20") }), http.StatusBadRequest, "invalid"},
		{"internal without subnetwork", in(func(fr *computepb.ForwardingRule) { fr.Subnetwork = nil }), http.StatusBadRequest, "required"},
		{"internal with portRange", in(func(fr *computepb.ForwardingRule) { fr.Ports, fr.PortRange = nil, proto.String("80") }), http.StatusBadRequest, "invalid"},
		{"internal without ports", in(func(fr *computepb.ForwardingRule) { fr.Ports = nil }), http.StatusBadRequest, "required"},
		{"six ports", in(func(fr *computepb.ForwardingRule) { fr.Ports = []string{"1", "2", "3", "4", "5", "6"} }), http.StatusBadRequest, "invalid"},
		{"a port twice", in(func(fr *computepb.ForwardingRule) { fr.Ports = []string{"80", "80"} }), http.StatusBadRequest, "invalid"},
		{"internal with target", in(func(fr *computepb.ForwardingRule) { fr.Target = proto.String(pool) }), http.StatusBadRequest, "invalid"},
		{"internal STANDARD", in(func(fr *computepb.ForwardingRule) { fr.NetworkTier = proto.String("STANDARD") }), http.StatusBadRequest, "invalid"},
		{"internal, other network", in(func(fr *computepb.ForwardingRule) { fr.Network = proto.String("global/networks/default") }), http.StatusNotFound, "notFound"},
		{"missing backend service", in(func(*computepb.ForwardingRule) {}), http.StatusNotFound, "notFound"},
	} {
		_, err := env.insertRule(t, tc.fr)
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if code, reason := apiCode(t, err); code != tc.status || reason != tc.reason {
			t.Errorf("%s: %d %s (%v), want %d %s", tc.name, code, reason, err, tc.status, tc.reason)
		}
	}
	if n := len(env.srv.Resources()); n != 5 {
		t.Errorf("%d resources after refused inserts", n)
	}
}
