package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/multicloud-ccm/multicloud-ccm/test/ccmproc"
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
//
// Its cluster is one switched in place from the upstream GCE CCM
// (issue 20): the ConfigMap kube-system/ingress-uid with upstream's
// cluster ID, upstreamClusterName in the config and a pod route upstream
// made are there before the manager starts. It shows that
//   - the cluster's shared health checks and their firewall rules are
//     named after the ingress-uid ID, and go with the last Service;
//   - an external Service's address is reserved only while its
//     forwarding rule is made, the rule keeping the IP, also across a
//     port change, unless keepAddresses (the last subtest, with the
//     manager restarted) keeps it for the Service's life;
//   - an externalTrafficPolicy Local Service's health check firewall rule
//     is upstream's k8s-<base>-http-hc and goes with the Service;
//   - an internal Service uses the shared GLOBAL health check with
//     upstream's -hc firewall rule, both gone after it;
//   - upstream's finalizers (l4-netlb-v1, l4-ilb-v1) are removed with the
//     load balancer, so the Service does not stay Terminating;
//   - upstream's pod route ("<upstreamClusterName[:26]>-<node UID>") is
//     kept for its Node, not made twice, and deleted with the Node;
//   - an upstream annotation read differently here (global access
//     "True") is refused with a Warning and nothing is made.
func TestGCE(t *testing.T) {
	s := startSuiteCloud(t, env.cluster, confgce.Adapter{}, "gce-only")
	c, ok := s.cloud.(*confgce.Cloud)
	if !ok {
		t.Fatalf("the gce adapter returned %T", s.cloud)
	}
	emu, fx := c.Emulator(), c.Fixture()
	zones := s.cloud.Zones()
	// Another client of the Compute API (an operator's gcloud, or the
	// upstream CCM before the switch); the emulator serves calls without
	// credentials.
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
	routes, err := compute.NewRoutesRESTClient(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}

	// The upstream CCM's turn: this manager is not running while the
	// switched cluster's state is put in place, as in the adoption
	// scenario (the only other place the suite creates ingress-uid).
	s.ccm.stop()
	cms := c.UpstreamConfigMaps()
	for _, cm := range cms {
		if _, err := env.admin.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = env.admin.CoreV1().ConfigMaps(cm.Namespace).Delete(context.Background(), cm.Name, metav1.DeleteOptions{})
		})
	}
	// sharedHC is the cluster's shared node health check, named after
	// upstream's cluster ID.
	sharedHC := "k8s-" + cms[0].Data["uid"] + "-node"
	// A Node with the pod route upstream made for it, named after its
	// --cluster-name (longer than the 26 characters it keeps) and the
	// Node's UID. The Node is kept out of load balancers, so the other
	// subtests' backends are i1 and i2.
	const upstreamCluster, routedCIDR = "switched-from-upstream-gce-cluster", "10.244.50.0/24"
	routed := s.launch(t, zones[0], "gce-routed")
	rn := ccmproc.KubeletNode(routed.NodeName, routedCIDR)
	rn.Labels[corev1.LabelNodeExcludeBalancers] = "true"
	env.createNode(t, rn)
	node, err := env.getNode(ctx, routed.NodeName)
	if err != nil {
		t.Fatal(err)
	}
	upstreamRoute := upstreamCluster[:26] + "-" + string(node.UID)
	op, err := routes.Insert(ctx, &computepb.InsertRouteRequest{Project: fx.Project, RouteResource: &computepb.Route{
		Name: proto.String(upstreamRoute), Description: proto.String("k8s-node-route"), Network: proto.String(fx.NetworkURL),
		DestRange: proto.String(routedCIDR), Priority: proto.Uint32(1000),
		NextHopInstance: proto.String("projects/" + fx.Project + "/zones/" + routed.Zone + "/instances/" + routed.ID),
	}})
	if err == nil {
		err = op.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	s.cfg.Section += "  upstreamClusterName: " + upstreamCluster + "\n"
	s.ccm = s.startCCM(t, "gce-switched")

	i1 := s.launchNode(t, zones[0], "gce-1", "")
	i2 := s.launchNode(t, zones[1], "gce-2", "")
	for _, i := range []conformance.Instance{i1, i2} {
		env.waitInitialized(t, i.NodeName)
	}
	// The backend names a Service's parts as upstream does.
	baseOf := cloudprovider.DefaultLoadBalancerName
	internal := map[string]string{"networking.gke.io/load-balancer-type": "Internal"}
	// legacyChecks are the legacy HTTP health checks (the only kind a
	// target pool takes), which have no typed read.
	legacyChecks := func() []string {
		var out []string
		for _, r := range s.cloud.Inventory() {
			if r.Kind == "compute#httpHealthCheck" {
				out = append(out, r.Name)
			}
		}
		return out
	}

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

	t.Run("an internal Service gets groups, a backend service on the global health check and an internal rule", func(t *testing.T) {
		svc := lbService("gce-internal", 80, 443)
		svc.Annotations = internal
		k := env.createService(t, svc)
		got := env.waitService(t, k, "an address", hasAddress)
		s.waitLB(t, k, []int32{80, 443}, i1, i2)
		base := baseOf(got)
		fr, ok := emu.ForwardingRule(base)
		if !ok || fr.GetLoadBalancingScheme() != "INTERNAL" || fr.GetIPAddress() != got.Status.LoadBalancer.Ingress[0].IP ||
			!strings.HasSuffix(fr.GetSubnetwork(), "/subnetworks/"+fx.SubnetworkName) || fmt.Sprint(fr.GetPorts()) != "[443 80]" {
			t.Errorf("forwarding rule %v", fr)
		}
		bs, ok := emu.RegionBackendService(base)
		if !ok || len(bs.GetBackends()) != 2 || len(bs.GetHealthChecks()) != 1 || !strings.HasSuffix(bs.GetHealthChecks()[0], "/global/healthChecks/"+sharedHC) {
			t.Errorf("backend service %v, want 2 groups and the global health check %s", bs, sharedHC)
		}
		if n := len(emu.InstanceGroups()); n != 2 {
			t.Errorf("%d instance groups, want one in each of the 2 zones with nodes", n)
		}
		// Upstream's: the global check and its "-hc" rule (not the
		// external "-http-hc"), named after the ingress-uid ID.
		if hc, ok := emu.HealthCheck(sharedHC); !ok || hc.GetHttpHealthCheck().GetPort() != 10256 {
			t.Errorf("global health check %s: %v", sharedHC, hc)
		}
		if fw, ok := emu.Firewall(sharedHC + "-hc"); !ok || len(fw.GetAllowed()) != 1 || !slices.Equal(fw.GetAllowed()[0].GetPorts(), []string{"10256"}) {
			t.Errorf("health check firewall rule %s-hc: %v", sharedHC, fw)
		}
		if rhc := emu.RegionHealthChecks(); len(rhc) != 0 {
			t.Errorf("regional health checks: %v", rhc)
		}
		env.deleteServiceAndWait(t, k)
		if len(emu.RegionBackendServices()) != 0 || len(emu.InstanceGroups()) != 0 || len(emu.RegionHealthChecks()) != 0 || len(emu.HealthChecks()) != 0 {
			t.Errorf("left behind: %v %v %v %v", emu.RegionBackendServices(), emu.InstanceGroups(), emu.RegionHealthChecks(), emu.HealthChecks())
		}
		if _, ok := emu.Firewall(sharedHC + "-hc"); ok {
			t.Errorf("the health check firewall rule %s-hc outlived the last internal Service", sharedHC)
		}
		if _, ok := emu.Address(base); ok {
			t.Error("the internal address outlived its Service")
		}
	})

	t.Run("the target pool is not leaked when the forwarding rule is already gone", func(t *testing.T) {
		k := env.createService(t, lbService("gce-rule-gone", 80))
		got := env.waitService(t, k, "an address", hasAddress)
		s.waitLB(t, k, []int32{80}, i1, i2)
		base := baseOf(got)
		op, err := rules.Delete(ctx, &computepb.DeleteForwardingRuleRequest{Project: fx.Project, Region: fx.Region, ForwardingRule: base})
		if err == nil {
			err = op.Wait(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		env.deleteServiceAndWait(t, k)
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
		k := env.createService(t, svc)
		env.waitService(t, k, "the user's address", func(s *corev1.Service) (bool, string) {
			ing := s.Status.LoadBalancer.Ingress
			return len(ing) == 1 && ing[0].IP == a.GetAddress(), fmt.Sprint(ing)
		})
		s.waitLB(t, k, []int32{80}, i1, i2)
		env.deleteServiceAndWait(t, k)
		if a, ok := emu.Address("team-ip"); !ok || a.GetDescription() != "team a" {
			t.Errorf("the user's address was released or changed: %v", a)
		}
	})

	t.Run("the shared health check and its firewall rule are named after kube-system/ingress-uid", func(t *testing.T) {
		k := env.createService(t, lbService("gce-shared-id", 80))
		got := env.waitService(t, k, "an address", hasAddress)
		s.waitLB(t, k, []int32{80}, i1, i2)
		pool, ok := emu.TargetPool(baseOf(got))
		if !ok || len(pool.GetHealthChecks()) != 1 || !strings.HasSuffix(pool.GetHealthChecks()[0], "/httpHealthChecks/"+sharedHC) {
			t.Errorf("target pool %v, want the health check %s", pool, sharedHC)
		}
		if hcs := legacyChecks(); !slices.Equal(hcs, []string{sharedHC}) {
			t.Errorf("HTTP health checks %v, want upstream's %s alone", hcs, sharedHC)
		}
		if _, ok := emu.Firewall(sharedHC + "-http-hc"); !ok {
			t.Errorf("no firewall rule %s-http-hc", sharedHC)
		}
		env.deleteServiceAndWait(t, k)
		if hcs := legacyChecks(); len(hcs) != 0 {
			t.Errorf("HTTP health checks left after the last Service: %v", hcs)
		}
		if _, ok := emu.Firewall(sharedHC + "-http-hc"); ok {
			t.Errorf("the firewall rule %s-http-hc outlived the last Service", sharedHC)
		}
	})

	t.Run("an external Service's address is released once its rule holds the IP, which survives a port change", func(t *testing.T) {
		k := env.createService(t, lbService("gce-ephemeral-ip", 80))
		got := env.waitService(t, k, "an address", hasAddress)
		s.waitLB(t, k, []int32{80}, i1, i2)
		base, ip := baseOf(got), got.Status.LoadBalancer.Ingress[0].IP
		if a, ok := emu.Address(base); ok {
			t.Errorf("the address stays reserved: %v", a)
		}
		if fr, ok := emu.ForwardingRule(base); !ok || fr.GetIPAddress() != ip {
			t.Errorf("forwarding rule %v, want it on %s", fr, ip)
		}
		// A new port range makes the forwarding rule again.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := env.getService(ctx, k)
			if err != nil {
				return err
			}
			cur.Spec.Ports = lbService(k.Name, 81).Spec.Ports
			_, err = env.admin.CoreV1().Services(k.Namespace).Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		s.waitLB(t, k, []int32{81}, i1, i2)
		poll(t, converge, "the rule on port 81 at "+ip+" and no address reserved", func(ctx context.Context) (bool, string, error) {
			cur, err := env.getService(ctx, k)
			if err != nil {
				return false, "", err
			}
			fr, _ := emu.ForwardingRule(base)
			_, reserved := emu.Address(base)
			st := ingressAddrs(cur.Status.LoadBalancer)
			return fr.GetPortRange() == "81-81" && fr.GetIPAddress() == ip && st == ip && !reserved,
				fmt.Sprintf("rule %s at %s, status %s, address reserved %t", fr.GetPortRange(), fr.GetIPAddress(), st, reserved), nil
		})
		env.deleteServiceAndWait(t, k)
	})

	t.Run("a Local Service's health check firewall rule is upstream's k8s-<base>-http-hc and goes with it", func(t *testing.T) {
		svc := lbService("gce-local", 80)
		svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		k := env.createService(t, svc)
		got := env.waitService(t, k, "an address", hasAddress)
		s.waitLB(t, k, []int32{80}, i1, i2)
		base := baseOf(got)
		fwName := "k8s-" + base + "-http-hc"
		fw, ok := emu.Firewall(fwName)
		if want := strconv.Itoa(int(got.Spec.HealthCheckNodePort)); !ok || len(fw.GetAllowed()) != 1 || !slices.Equal(fw.GetAllowed()[0].GetPorts(), []string{want}) {
			t.Errorf("firewall rule %s %v, want it on the health check node port %s", fwName, fw, want)
		}
		if hcs := legacyChecks(); !slices.Equal(hcs, []string{base}) {
			t.Errorf("HTTP health checks %v, want the Service's own %s alone", hcs, base)
		}
		env.deleteServiceAndWait(t, k)
		if _, ok := emu.Firewall(fwName); ok {
			t.Errorf("the firewall rule %s outlived its Service", fwName)
		}
		if hcs := legacyChecks(); len(hcs) != 0 {
			t.Errorf("HTTP health checks left: %v", hcs)
		}
	})

	t.Run("upstream's finalizers are removed with the load balancer, so the Service does not stay Terminating", func(t *testing.T) {
		ext := lbService("gce-netlb-finalizer", 80)
		ext.Finalizers = []string{"gke.networking.io/l4-netlb-v1"}
		in := lbService("gce-ilb-finalizer", 80)
		in.Annotations = internal
		in.Finalizers = []string{"gke.networking.io/l4-ilb-v1"}
		var keys []types.NamespacedName
		var bases []string
		for _, svc := range []*corev1.Service{ext, in} {
			k := env.createService(t, svc)
			got := env.waitService(t, k, "an address", hasAddress)
			if !slices.Contains(got.Finalizers, svc.Finalizers[0]) {
				t.Errorf("%s: upstream's finalizer %s was removed from a live Service: %v", k, svc.Finalizers[0], got.Finalizers)
			}
			keys, bases = append(keys, k), append(bases, baseOf(got))
		}
		for _, k := range keys {
			env.deleteService(t, k)
		}
		for i, k := range keys {
			env.deleteServiceAndWait(t, k)
			if fr, ok := emu.ForwardingRule(bases[i]); ok {
				t.Errorf("%s: the forwarding rule outlived the Service: %v", k, fr)
			}
		}
	})

	t.Run("upstream's pod route is kept for its Node, not made twice, and goes with the Node", func(t *testing.T) {
		// The route controller marks the Node's network available once it
		// has every pod CIDR's route, after making any it found missing.
		poll(t, converge, "node "+routed.NodeName+" has its route", func(ctx context.Context) (bool, string, error) {
			n, err := env.getNode(ctx, routed.NodeName)
			if err != nil {
				return false, "", err
			}
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeNetworkUnavailable {
					return cond.Status == corev1.ConditionFalse && cond.Reason == "RouteCreated", cond.Reason, nil
				}
			}
			return false, "no NetworkUnavailable condition", nil
		})
		routesTo := func(cidr string) []string {
			var out []string
			for _, r := range emu.Routes() {
				if r.GetDestRange() == cidr {
					out = append(out, r.GetName())
				}
			}
			return out
		}
		if got := routesTo(routedCIDR); !slices.Equal(got, []string{upstreamRoute}) {
			t.Errorf("routes to %s: %v, want upstream's %s alone", routedCIDR, got, upstreamRoute)
		}
		env.deleteNode(t, routed.NodeName)
		poll(t, converge, "upstream's route deleted with its Node", func(context.Context) (bool, string, error) {
			got := routesTo(routedCIDR)
			return len(got) == 0, fmt.Sprint(got), nil
		})
	})

	t.Run("an upstream annotation read differently here is refused with a Warning", func(t *testing.T) {
		// Upstream keeps an internal load balancer regional unless exactly
		// "true"; "True" here would open it to every region.
		const key = "networking.gke.io/internal-load-balancer-allow-global-access"
		svc := lbService("gce-global-access", 80)
		svc.Annotations = map[string]string{key: "True"}
		for k, v := range internal {
			svc.Annotations[k] = v
		}
		k := env.createService(t, svc)
		poll(t, converge, "a Warning event naming "+key, func(ctx context.Context) (bool, string, error) {
			ws, err := env.warnings(ctx, k)
			return slices.ContainsFunc(ws, func(w string) bool {
				return strings.Contains(w, key) && strings.Contains(w, "is not supported here") && strings.Contains(w, "not provisioned")
			}), fmt.Sprint(ws), err
		})
		got, err := env.getService(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Status.LoadBalancer.Ingress) != 0 {
			t.Errorf("the refused Service got an address: %v", got.Status.LoadBalancer.Ingress)
		}
		if rs := s.cloud.ServiceResources(k); len(rs) != 0 {
			t.Errorf("cloud resources for the refused Service: %s", resList(rs))
		}
		env.deleteServiceAndWait(t, k)
	})

	// Last: the manager runs again with keepAddresses.
	t.Run("keepAddresses keeps an external Service's address reserved for its life", func(t *testing.T) {
		s.ccm.stop()
		s.cfg.Section += "  keepAddresses: true\n"
		s.ccm = s.startCCM(t, "gce-keep-addresses")
		k := env.createService(t, lbService("gce-kept-ip", 80))
		got := env.waitService(t, k, "an address", hasAddress)
		s.waitLB(t, k, []int32{80}, i1, i2)
		base, ip := baseOf(got), got.Status.LoadBalancer.Ingress[0].IP
		if a, ok := emu.Address(base); !ok || a.GetAddress() != ip || a.GetStatus() != "IN_USE" {
			t.Errorf("address %v, want %s reserved and in use", a, ip)
		}
		env.deleteServiceAndWait(t, k)
		if a, ok := emu.Address(base); ok {
			t.Errorf("the kept address outlived its Service: %v", a)
		}
	})
}
