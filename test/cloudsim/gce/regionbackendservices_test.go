package gce

import (
	"net/http"
	"net/netip"
	"slices"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

func (env *testEnv) backendServices(t *testing.T) *compute.RegionBackendServicesClient {
	return client(t, env, compute.NewRegionBackendServicesRESTClient)
}

func (env *testEnv) getBS(t *testing.T, name string) *computepb.BackendService {
	t.Helper()
	bs, err := env.backendServices(t).Get(t.Context(), &computepb.GetRegionBackendServiceRequest{Project: env.project, Region: env.region, BackendService: name})
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

// ilbBase makes a TCP health check "hc" and a backend service of
// protocol (default TCP) without backends, and returns the service's
// link.
func (env *testEnv) ilbBase(t *testing.T, name, protocol string) string {
	t.Helper()
	if _, ok := env.emu.RegionHealthCheck("hc"); !ok {
		op, err := env.insertRegionHC(t, &computepb.HealthCheck{Name: proto.String("hc"), Type: proto.String("TCP")})
		wait(t, op, err)
	}
	op, err := env.backendServices(t).Insert(t.Context(), &computepb.InsertRegionBackendServiceRequest{Project: env.project, Region: env.region,
		BackendServiceResource: &computepb.BackendService{Name: proto.String(name), Protocol: proto.String(protocol),
			LoadBalancingScheme: proto.String("INTERNAL"), HealthChecks: []string{"regions/us-central1/healthChecks/hc"}}})
	wait(t, op, err)
	return LinkBase + "projects/test-project/regions/us-central1/backendServices/" + name
}

func TestBackendServiceLifecycle(t *testing.T) {
	env := newTestEnv(t, Config{})
	bsc := env.backendServices(t)
	bsLink := env.ilbBase(t, "k8s2-abc", "TCP")
	bs := env.getBS(t, "k8s2-abc")
	if bs.GetKind() != "compute#backendService" || bs.GetSelfLink() != bsLink || bs.GetSessionAffinity() != "NONE" ||
		bs.GetTimeoutSec() != 30 || bs.GetConnectionDraining().GetDrainingTimeoutSec() != 0 || bs.GetFingerprint() == "" ||
		!slices.Equal(bs.GetHealthChecks(), []string{LinkBase + "projects/test-project/regions/us-central1/healthChecks/hc"}) {
		t.Errorf("backend service %v", bs)
	}
	if got, ok := env.emu.RegionBackendService("k8s2-abc"); !ok || !proto.Equal(got, bs) || len(env.emu.RegionBackendServices()) != 1 {
		t.Errorf("admin read %v", got)
	}
	// The health check is in use.
	_, err := env.regionHealthChecks(t).Delete(t.Context(), &computepb.DeleteRegionHealthCheckRequest{Project: env.project, Region: env.region, HealthCheck: "hc"})
	wantCode(t, err, http.StatusBadRequest, "resourceInUseByAnotherResource")

	// Optimistic locking: an update needs the current fingerprint.
	update := func(m *computepb.BackendService) error {
		op, err := bsc.Update(t.Context(), &computepb.UpdateRegionBackendServiceRequest{Project: env.project, Region: env.region, BackendService: "k8s2-abc", BackendServiceResource: m})
		if err != nil {
			return err
		}
		return op.Wait(t.Context())
	}
	stale := proto.Clone(bs).(*computepb.BackendService)
	stale.Fingerprint = nil
	wantCode(t, update(stale), http.StatusPreconditionFailed, "conditionNotMet")
	bs.SessionAffinity = proto.String("CLIENT_IP")
	if err := update(bs); err != nil {
		t.Fatal(err)
	}
	wantCode(t, update(bs), http.StatusPreconditionFailed, "conditionNotMet")
	bs = env.getBS(t, "k8s2-abc")
	if bs.GetSessionAffinity() != "CLIENT_IP" {
		t.Errorf("updated %v", bs)
	}
	// A patch may leave the fingerprint out.
	op, err := bsc.Patch(t.Context(), &computepb.PatchRegionBackendServiceRequest{Project: env.project, Region: env.region, BackendService: "k8s2-abc",
		BackendServiceResource: &computepb.BackendService{Description: proto.String("patched")}})
	wait(t, op, err)
	if got := env.getBS(t, "k8s2-abc"); got.GetDescription() != "patched" || got.GetFingerprint() == bs.GetFingerprint() || got.GetSessionAffinity() != "CLIENT_IP" {
		t.Errorf("patched %v", got)
	}

	for _, tc := range []struct {
		name   string
		bs     *computepb.BackendService
		status int
		reason string
	}{
		{"no health check", &computepb.BackendService{Name: proto.String("b")}, http.StatusBadRequest, "invalid"},
		{"missing global health check", &computepb.BackendService{Name: proto.String("b"), HealthChecks: []string{"global/healthChecks/hc"}}, http.StatusNotFound, "notFound"},
		{"two health checks", &computepb.BackendService{Name: proto.String("b"),
			HealthChecks: []string{"regions/us-central1/healthChecks/hc", "regions/us-central1/healthChecks/hc"}}, http.StatusBadRequest, "invalid"},
		{"external scheme", &computepb.BackendService{Name: proto.String("b"), LoadBalancingScheme: proto.String("EXTERNAL"),
			HealthChecks: []string{"regions/us-central1/healthChecks/hc"}}, http.StatusBadRequest, "invalid"},
		{"HTTP", &computepb.BackendService{Name: proto.String("b"), Protocol: proto.String("HTTP"),
			HealthChecks: []string{"regions/us-central1/healthChecks/hc"}}, http.StatusBadRequest, "invalid"},
		{"cookie affinity", &computepb.BackendService{Name: proto.String("b"), SessionAffinity: proto.String("GENERATED_COOKIE"),
			HealthChecks: []string{"regions/us-central1/healthChecks/hc"}}, http.StatusBadRequest, "invalid"},
		{"missing group", &computepb.BackendService{Name: proto.String("b"), HealthChecks: []string{"regions/us-central1/healthChecks/hc"},
			Backends: []*computepb.Backend{{Group: proto.String("zones/us-central1-a/instanceGroups/nope")}}}, http.StatusNotFound, "notFound"},
	} {
		_, err := bsc.Insert(t.Context(), &computepb.InsertRegionBackendServiceRequest{Project: env.project, Region: env.region, BackendServiceResource: tc.bs})
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if code, reason := apiCode(t, err); code != tc.status || reason != tc.reason {
			t.Errorf("%s: %d %s (%v), want %d %s", tc.name, code, reason, err, tc.status, tc.reason)
		}
	}

	op, err = bsc.Delete(t.Context(), &computepb.DeleteRegionBackendServiceRequest{Project: env.project, Region: env.region, BackendService: "k8s2-abc"})
	wait(t, op, err)
	op, err = env.regionHealthChecks(t).Delete(t.Context(), &computepb.DeleteRegionHealthCheckRequest{Project: env.project, Region: env.region, HealthCheck: "hc"})
	wait(t, op, err)
	if rs := env.srv.Resources(); len(rs) != 4 {
		t.Errorf("left behind %v", rs)
	}
}

// The internal load balancer as upstream's CCM makes it: an address
// reserved in the subnetwork, the rule made on it, the address released
// while the rule keeps the IP.
func TestForwardingRuleInternal(t *testing.T) {
	env := newTestEnv(t, Config{})
	fx := env.emu.Fixture()
	bsLink := env.ilbBase(t, "k8s2-tcp", "TCP")
	ilb := func(name, ip string, ports ...string) *computepb.ForwardingRule {
		fr := &computepb.ForwardingRule{Name: proto.String(name), LoadBalancingScheme: proto.String("INTERNAL"), IPProtocol: proto.String("TCP"),
			BackendService: proto.String(bsLink), Subnetwork: proto.String(fx.SubnetworkURL), Ports: ports}
		if ip != "" {
			fr.IPAddress = proto.String(ip)
		}
		return fr
	}
	op, err := env.insertAddress(t, &computepb.Address{Name: proto.String("ilb"), AddressType: proto.String("INTERNAL"), Subnetwork: proto.String(fx.SubnetworkURL)})
	wait(t, op, err)
	ip := env.getAddress(t, "ilb").GetAddress()
	fr := ilb("ilb", ip, "80", "443")
	fr.AllowGlobalAccess = proto.Bool(true)
	op, err = env.insertRule(t, fr)
	wait(t, op, err)
	got := env.getRule(t, "ilb")
	if got.GetIPAddress() != ip || got.GetNetwork() != fx.NetworkURL || got.GetSubnetwork() != fx.SubnetworkURL || got.GetNetworkTier() != "PREMIUM" ||
		!got.GetAllowGlobalAccess() || !slices.Equal(got.GetPorts(), []string{"80", "443"}) || got.GetBackendService() != bsLink {
		t.Errorf("internal rule %v", got)
	}
	if a := env.getAddress(t, "ilb"); a.GetStatus() != "IN_USE" || !slices.Equal(a.GetUsers(), []string{got.GetSelfLink()}) {
		t.Errorf("address %v", a)
	}
	if bs := env.getBS(t, "k8s2-tcp"); len(bs.GetUsedBy()) != 1 || bs.GetUsedBy()[0].GetReference() != got.GetSelfLink() {
		t.Errorf("usedBy %v", bs.GetUsedBy())
	}
	op, err = env.addresses(t).Delete(t.Context(), &computepb.DeleteAddressRequest{Project: env.project, Region: env.region, Address: "ilb"})
	wait(t, op, err)
	if got := env.getRule(t, "ilb").GetIPAddress(); got != ip {
		t.Errorf("IP %s after the address went, want %s", got, ip)
	}

	// The backend service is in use, and keeps the rule's protocol.
	_, err = env.backendServices(t).Delete(t.Context(), &computepb.DeleteRegionBackendServiceRequest{Project: env.project, Region: env.region, BackendService: "k8s2-tcp"})
	wantCode(t, err, http.StatusBadRequest, "resourceInUseByAnotherResource")
	_, err = env.backendServices(t).Patch(t.Context(), &computepb.PatchRegionBackendServiceRequest{Project: env.project, Region: env.region, BackendService: "k8s2-tcp",
		BackendServiceResource: &computepb.BackendService{Protocol: proto.String("UDP")}})
	wantCode(t, err, http.StatusBadRequest, "invalid")
	udp := ilb("udp", "", "53")
	udp.IPProtocol = proto.String("UDP")
	_, err = env.insertRule(t, udp)
	wantCode(t, err, http.StatusBadRequest, "invalid")

	// Without an IP, or with a free one, the rule gets it from the
	// subnetwork; an instance's IP is in use.
	op, err = env.insertRule(t, ilb("eph", "", "8080"))
	wait(t, op, err)
	if a, err := netip.ParseAddr(env.getRule(t, "eph").GetIPAddress()); err != nil || !netip.MustParsePrefix(fx.SubnetworkCIDR).Contains(a) {
		t.Errorf("ephemeral internal IP %v %v", a, err)
	}
	op, err = env.insertRule(t, ilb("chosen", "10.128.0.200", "8080"))
	wait(t, op, err)
	inst := env.launch(t, InstanceSpec{Name: "node-0"})
	op, err = env.insertRule(t, ilb("taken", inst.InternalIP, "8080"))
	if err != nil {
		t.Fatal(err)
	}
	wantCodeOnly(t, op.Wait(t.Context()), http.StatusBadRequest)
	// A rule's ephemeral internal IP is its own, unless the address it
	// has is for sharing.
	op, err = env.insertRule(t, ilb("steal", "10.128.0.200", "9090"))
	if err != nil {
		t.Fatal(err)
	}
	wantCodeOnly(t, op.Wait(t.Context()), http.StatusBadRequest)
	op, err = env.insertRule(t, &computepb.ForwardingRule{Name: proto.String("all"), LoadBalancingScheme: proto.String("INTERNAL"),
		BackendService: proto.String(bsLink), Subnetwork: proto.String(fx.SubnetworkURL), AllPorts: proto.Bool(true)})
	wait(t, op, err)
	if got := env.getRule(t, "all"); !got.GetAllPorts() || got.GetIPProtocol() != "TCP" {
		t.Errorf("all-ports rule %v", got)
	}
}

// An internal IP is shared only through an address of purpose
// SHARED_LOADBALANCER_VIP: one rule per protocol on the same ports.
func TestForwardingRuleInternalSharedVIP(t *testing.T) {
	env := newTestEnv(t, Config{})
	fx := env.emu.Fixture()
	tcp, udp := env.ilbBase(t, "bs-tcp", "TCP"), env.ilbBase(t, "bs-udp", "UDP")
	rule := func(name, protocol, bs, ip string) *computepb.ForwardingRule {
		return &computepb.ForwardingRule{Name: proto.String(name), LoadBalancingScheme: proto.String("INTERNAL"), IPProtocol: proto.String(protocol),
			BackendService: proto.String(bs), Subnetwork: proto.String(fx.SubnetworkURL), Ports: []string{"53", "80"}, IPAddress: proto.String(ip)}
	}
	for _, a := range []*computepb.Address{
		{Name: proto.String("shared"), AddressType: proto.String("INTERNAL"), Subnetwork: proto.String(fx.SubnetworkURL),
			Purpose: proto.String("SHARED_LOADBALANCER_VIP"), Address: proto.String("10.128.0.10")},
		{Name: proto.String("single"), AddressType: proto.String("INTERNAL"), Subnetwork: proto.String(fx.SubnetworkURL), Address: proto.String("10.128.0.11")},
	} {
		op, err := env.insertAddress(t, a)
		wait(t, op, err)
	}
	for _, fr := range []*computepb.ForwardingRule{rule("s-tcp", "TCP", tcp, "10.128.0.10"), rule("s-udp", "UDP", udp, "10.128.0.10"),
		rule("o-tcp", "TCP", tcp, "10.128.0.11")} {
		op, err := env.insertRule(t, fr)
		wait(t, op, err)
	}
	_, err := env.insertRule(t, rule("s-tcp2", "TCP", tcp, "10.128.0.10"))
	wantCode(t, err, http.StatusBadRequest, "invalid")
	op, err := env.insertRule(t, rule("o-udp", "UDP", udp, "10.128.0.11"))
	if err != nil {
		t.Fatal(err)
	}
	wantCodeOnly(t, op.Wait(t.Context()), http.StatusBadRequest)
	if code := op.Proto().GetError().GetErrors()[0].GetCode(); code != "IP_IN_USE_BY_ANOTHER_RESOURCE" {
		t.Errorf("error code %s", code)
	}
	if a := env.getAddress(t, "shared"); len(a.GetUsers()) != 2 {
		t.Errorf("shared address users %v", a.GetUsers())
	}
}
