package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
	confgce "github.com/multicloud-ccm/multicloud-ccm/test/conformance/gce"
)

// TestGCE checks, through the release binary, what is GCE's own (what
// every cloud must do is TestConformance's): /metrics carries the Compute
// calls; an internal Service gets the cluster's instance groups, a
// backend service and an internal forwarding rule, which all go with it;
// a target pool is not leaked when its forwarding rule is already gone
// (upstream leaked it); a user's reserved address is used and never
// released.
func TestGCE(t *testing.T) {
	s := startSuiteCloud(t, confgce.Adapter{}, "gce-only")
	c, ok := s.cloud.(*confgce.Cloud)
	if !ok {
		t.Fatalf("the gce adapter returned %T", s.cloud)
	}
	emu, fx := c.Emulator(), c.Fixture()
	zones := s.cloud.Zones()
	i1 := s.launchNode(t, zones[0], "gce-1", "")
	i2 := s.launchNode(t, zones[1], "gce-2", "")
	for _, i := range []conformance.Instance{i1, i2} {
		waitInitialized(t, i.NodeName)
	}
	// Another client of the Compute API (an operator's gcloud); the
	// emulator serves calls without credentials.
	ctx := context.Background()
	opts := []option.ClientOption{option.WithEndpoint(c.Server().URL()), option.WithoutAuthentication()}
	rules, err := compute.NewForwardingRulesRESTClient(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	addresses, err := compute.NewAddressesRESTClient(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	// The backend names a Service's parts as upstream does.
	baseOf := cloudprovider.DefaultLoadBalancerName

	t.Run("/metrics has the Compute calls and the token fetches", func(t *testing.T) {
		code, body, err := s.ccm.get("/metrics", true)
		if err != nil || code != 200 {
			t.Fatalf("GET /metrics: %d %v", code, err)
		}
		for _, want := range []string{
			`multicloud_ccm_cloud_api_requests_total{code="200",operation="instances.list",provider="gce",service="compute"}`,
			`multicloud_ccm_cloud_api_requests_total{code="200",operation="token",provider="gce",service="oauth2"}`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
		for _, line := range strings.Split(body, "\n") {
			if !strings.HasPrefix(line, "multicloud_ccm_") {
				continue
			}
			if strings.Contains(line, "projects/") || strings.Contains(line, i1.ID) || strings.Contains(line, fx.Project) {
				t.Errorf("a series carries a resource path or name: %s", line)
			}
			for _, secret := range s.cfg.Secrets {
				if strings.Contains(line, secret) {
					t.Errorf("a series carries the key: %s", line)
				}
			}
		}
	})

	t.Run("an internal Service gets groups, a backend service and an internal rule", func(t *testing.T) {
		svc := lbService("gce-internal", 80, 443)
		svc.Annotations = map[string]string{"networking.gke.io/load-balancer-type": "Internal"}
		k := createService(t, svc)
		got := waitService(t, k, "an address", hasAddress)
		s.waitLB(t, k, []int32{80, 443}, i1, i2)
		base := baseOf(got)
		fr, ok := emu.ForwardingRule(base)
		if !ok || fr.GetLoadBalancingScheme() != "INTERNAL" || fr.GetIPAddress() != got.Status.LoadBalancer.Ingress[0].IP ||
			!strings.HasSuffix(fr.GetSubnetwork(), "/subnetworks/"+fx.SubnetworkName) || fmt.Sprint(fr.GetPorts()) != "[443 80]" {
			t.Errorf("forwarding rule %v", fr)
		}
		if bs, ok := emu.RegionBackendService(base); !ok || len(bs.GetBackends()) != 2 {
			t.Errorf("backend service %v", bs)
		}
		if n := len(emu.InstanceGroups()); n != 2 {
			t.Errorf("%d instance groups, want one in each of the 2 zones with nodes", n)
		}
		deleteServiceAndWait(t, k)
		if len(emu.RegionBackendServices()) != 0 || len(emu.InstanceGroups()) != 0 || len(emu.RegionHealthChecks()) != 0 {
			t.Errorf("left behind: %v %v %v", emu.RegionBackendServices(), emu.InstanceGroups(), emu.RegionHealthChecks())
		}
		if _, ok := emu.Address(base); ok {
			t.Error("the internal address outlived its Service")
		}
	})

	t.Run("the target pool is not leaked when the forwarding rule is already gone", func(t *testing.T) {
		k := createService(t, lbService("gce-rule-gone", 80))
		got := waitService(t, k, "an address", hasAddress)
		s.waitLB(t, k, []int32{80}, i1, i2)
		base := baseOf(got)
		op, err := rules.Delete(ctx, &computepb.DeleteForwardingRuleRequest{Project: fx.Project, Region: fx.Region, ForwardingRule: base})
		if err == nil {
			err = op.Wait(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		deleteServiceAndWait(t, k)
		if _, ok := emu.TargetPool(base); ok {
			t.Error("the target pool was leaked")
		}
		if _, ok := emu.Address(base); ok {
			t.Error("the address was leaked")
		}
		if _, ok := emu.Firewall("k8s-fw-" + base); ok {
			t.Error("the firewall rule was leaked")
		}
	})

	t.Run("a user's reserved address is used and never released", func(t *testing.T) {
		op, err := addresses.Insert(ctx, &computepb.InsertAddressRequest{Project: fx.Project, Region: fx.Region,
			AddressResource: &computepb.Address{Name: proto.String("team-ip"), Description: proto.String("team a")}})
		if err == nil {
			err = op.Wait(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		a, ok := emu.Address("team-ip")
		if !ok {
			t.Fatal("no team-ip")
		}
		svc := lbService("gce-user-ip", 80)
		svc.Spec.LoadBalancerIP = a.GetAddress()
		k := createService(t, svc)
		waitService(t, k, "the user's address", func(s *corev1.Service) (bool, string) {
			ing := s.Status.LoadBalancer.Ingress
			return len(ing) == 1 && ing[0].IP == a.GetAddress(), fmt.Sprint(ing)
		})
		s.waitLB(t, k, []int32{80}, i1, i2)
		deleteServiceAndWait(t, k)
		if a, ok := emu.Address("team-ip"); !ok || a.GetDescription() != "team a" {
			t.Errorf("the user's address was released or changed: %v", a)
		}
	})
}
