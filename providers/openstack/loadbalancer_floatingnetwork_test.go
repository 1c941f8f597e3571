package openstack

import (
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	v1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	osemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

// startLBEnv builds the cloud as the manager does, through New, on an
// emulator that prepare has shaped, with a section that names no
// floating network (after edit). It returns the calls New made.
func startLBEnv(t *testing.T, cfg osemu.Config, prepare func(*osemu.Emulator), edit func(*Section)) (*lbEnv, map[string]int, error) {
	t.Helper()
	env := newTestEnv(t, cfg, func(s *Section) {
		s.LoadBalancer.FloatingNetworkID = ""
		s.LoadBalancer.WaitActiveTimeout = 5 * time.Second
		if edit != nil {
			edit(s)
		}
	})
	if prepare != nil {
		prepare(env.emu)
	}
	env.srv.ResetCalls()
	c, err := New(t.Context(), &config.CloudConfig{ClusterID: "kubernetes", Section: env.s})
	calls := env.srv.Calls()
	if err != nil {
		return nil, calls, err
	}
	env.cloud = c
	e := &lbEnv{testEnv: env, t: t, lb: c.lb}
	e.lb.firstPoll = 10 * time.Millisecond
	e.nodes = e.addNodes(t, 2)
	env.srv.ResetCalls()
	return e, calls, nil
}

// addExternalNetwork makes another external network and keeps its ID.
func addExternalNetwork(name, cidr string, id *string) func(*osemu.Emulator) {
	return func(emu *osemu.Emulator) {
		n, err := emu.CreateNetwork(osemu.NetworkSpec{Name: name, External: true, CIDR: cidr})
		if err != nil {
			panic(err)
		}
		*id = n.ID
	}
}

func internal(svc *v1.Service, v string) { svc.Annotations[string(annotationInternal)] = v }

// TestFloatingNetworkDetectedOnce: with no floating network configured,
// the project's only external network is found at start with one
// listing, and every external Service gets its floating IP from it with
// no further listing.
func TestFloatingNetworkDetectedOnce(t *testing.T) {
	e, startCalls, err := startLBEnv(t, osemu.Config{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if startCalls["neutron:ListNetworks"] != 1 || startCalls["neutron:ListSubnets"] != 0 {
		t.Errorf("calls at start %v, want one ListNetworks", startCalls)
	}
	for _, name := range []string{"web", "api"} {
		svc := service(name, 80)
		st, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes)
		if err != nil {
			t.Fatal(err)
		}
		var fip osemu.FloatingIPInfo
		for _, f := range e.emu.FloatingIPs() {
			if f.Address == st.Ingress[0].IP {
				fip = f
			}
		}
		if fip.NetworkID != e.fx.ExternalNetworkID {
			t.Errorf("%s: address %v from network %q, want the external network %s", name, st.Ingress, fip.NetworkID, e.fx.ExternalNetworkID)
		}
	}
	if n := e.srv.CallCount("neutron:ListNetworks"); n != 0 {
		t.Errorf("ListNetworks during syncs: %d", n)
	}
}

// TestSeveralFloatingNetworks: with two external networks, an external
// Service without a floating network is refused before any cloud call,
// with an error naming both; internal Services and Services that name
// their network are served.
func TestSeveralFloatingNetworks(t *testing.T) {
	var other string
	e, startCalls, err := startLBEnv(t, osemu.Config{}, addExternalNetwork("public-b", "198.51.100.0/24", &other), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The subnets decide between several (IPv4 only): one more listing.
	if startCalls["neutron:ListNetworks"] != 1 || startCalls["neutron:ListSubnets"] != 1 {
		t.Errorf("calls at start %v, want one ListNetworks and one ListSubnets", startCalls)
	}
	_, err = e.lb.EnsureLoadBalancer(t.Context(), "", service("web", 80), e.nodes)
	for _, want := range []string{"several external networks", "public (" + e.fx.ExternalNetworkID + ")", "public-b (" + other + ")", "loadBalancer.floatingNetworkID", string(annotationFloatingNetworkID)} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	if n := len(e.srv.Calls()); n != 0 {
		t.Errorf("calls for a refused Service: %v", e.srv.Calls())
	}

	priv := service("private", 80)
	internal(priv, "true")
	if st, err := e.lb.EnsureLoadBalancer(t.Context(), "", priv, e.nodes); err != nil || st.Ingress[0].IP != e.lbOf(t, priv).VIPAddress {
		t.Errorf("internal Service: %+v, %v", st, err)
	}
	named := service("named", 80)
	named.Annotations[string(annotationFloatingNetworkID)] = e.fx.ExternalNetworkID
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", named, e.nodes); err != nil {
		t.Errorf("Service naming its network: %v", err)
	}
	if fips := e.emu.FloatingIPs(); len(fips) != 1 || fips[0].NetworkID != e.fx.ExternalNetworkID {
		t.Errorf("floating IPs %+v, want one on %s", fips, e.fx.ExternalNetworkID)
	}
}

// TestNoFloatingNetwork: a cloud without an external network starts (a
// cluster of internal Services needs none) and serves internal
// Services; an external one gets an error saying there is none.
func TestNoFloatingNetwork(t *testing.T) {
	e, _, err := startLBEnv(t, osemu.Config{NoExternalNetwork: true}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	priv := service("private", 80)
	internal(priv, "true")
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", priv, e.nodes); err != nil {
		t.Errorf("internal Service: %v", err)
	}
	_, err = e.lb.EnsureLoadBalancer(t.Context(), "", service("web", 80), e.nodes)
	if err == nil || !strings.Contains(err.Error(), "no external (router:external) network") {
		t.Errorf("external Service: %v, want an error saying there is no external network", err)
	}
}

// TestFloatingNetworkLookupFailsStart: a Neutron that cannot list
// networks stops the start with the reason.
func TestFloatingNetworkLookupFailsStart(t *testing.T) {
	_, _, err := startLBEnv(t, osemu.Config{}, nil, func(s *Section) { s.MaxAttempts = 1 })
	if err != nil {
		t.Fatalf("healthy start: %v", err)
	}
	env := newTestEnv(t, osemu.Config{}, func(s *Section) { s.LoadBalancer.FloatingNetworkID = ""; s.MaxAttempts = 1 })
	env.setFault(t, cloudsim.FaultSpec{Op: "neutron:ListNetworks", FailNext: 10})
	_, err = New(t.Context(), &config.CloudConfig{ClusterID: "kubernetes", Section: env.s})
	if err == nil || !strings.Contains(err.Error(), "floatingNetworkID is not set") {
		t.Errorf("New: %v, want an error naming floatingNetworkID", err)
	}
}

// TestInternalLB: with internalLB every Service is internal, even one
// annotated "false" (as upstream), and no floating network is looked
// up.
func TestInternalLB(t *testing.T) {
	e, startCalls, err := startLBEnv(t, osemu.Config{}, nil, func(s *Section) { s.LoadBalancer.InternalLB = true })
	if err != nil {
		t.Fatal(err)
	}
	if n := startCalls["neutron:ListNetworks"]; n != 0 {
		t.Errorf("ListNetworks at start: %d", n)
	}
	plain, public := service("plain", 80), service("public", 80)
	internal(public, "false")
	for _, svc := range []*v1.Service{plain, public} {
		st, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes)
		if err != nil {
			t.Fatalf("%s: %v", svc.Name, err)
		}
		if st.Ingress[0].IP != e.lbOf(t, svc).VIPAddress {
			t.Errorf("%s: status %+v, want the VIP", svc.Name, st)
		}
	}
	if fips := e.emu.FloatingIPs(); len(fips) != 0 {
		t.Errorf("floating IPs %+v", fips)
	}
	// A malformed annotation is still refused.
	bad := service("bad", 80)
	internal(bad, "yes")
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", bad, e.nodes); err == nil {
		t.Error("no error for a malformed annotation")
	}
}

// TestFloatingCandidate is upstream's test of an external network:
// an IPv4 subnet, or one the project cannot see.
func TestFloatingCandidate(t *testing.T) {
	visible := []subnets.Subnet{
		{ID: "v4", IPVersion: 4}, {ID: "v6", IPVersion: 6}, {ID: "v6b", IPVersion: 6},
	}
	for _, tt := range []struct {
		subnets []string
		want    bool
	}{
		{[]string{"v4"}, true},
		{[]string{"v6", "v4"}, true},
		{[]string{"v6", "v6b"}, false},
		{[]string{"v6", "hidden"}, true},
		{nil, false},
	} {
		if got := floatingCandidate(neutronNetwork{ID: "n", Subnets: tt.subnets}, visible); got != tt.want {
			t.Errorf("subnets %v: %v, want %v", tt.subnets, got, tt.want)
		}
	}
}
