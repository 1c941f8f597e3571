package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/multicloud-ccm/multicloud-ccm/test/ccmproc"
	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
	confopenstack "github.com/multicloud-ccm/multicloud-ccm/test/conformance/openstack"
)

// TestOpenStack checks, through the release binary, what is OpenStack's
// own (what every cloud must do is TestConformance's): the whole Octavia
// tree comes from one fully-populated create, a node joining costs batch
// member updates only, spec.loadBalancerIP's floating IP survives its
// Service while ours is released, and a load balancer held PENDING makes
// the sync wait and retry, then converge once Octavia is done. And what
// users of the upstream CCM rely on (issue 20): the floating network
// found at start, networking.internalNetworkNames on a two-NIC node, the
// listener, pool, monitor, flavor, zone, node-selector and hostname
// annotations, load balancers shared through load-balancer-id, legacy
// a<uid> load balancers adopted, network-id and port-id,
// floating-subnet-tags, and loadBalancer.internalLB.
func TestOpenStack(t *testing.T) {
	flavor := cloudsimopenstack.OctaviaFlavor{ID: "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9", Name: "amphora-ha", Metadata: map[string]string{"loadbalancer_topology": "ACTIVE_STANDBY"}}
	s := startSuiteCloud(t, env.cluster, confopenstack.Adapter{Options: confopenstack.Options{
		Flavors:               []cloudsimopenstack.OctaviaFlavor{flavor},
		AvailabilityZones:     []cloudsimopenstack.OctaviaAvailabilityZone{{Name: "lb-az-1", ComputeZone: "az-1"}},
		DetectFloatingNetwork: true,
		NodeNetworkOnly:       true,
	}}, "openstack-only")
	c, ok := s.cloud.(*confopenstack.Cloud)
	if !ok {
		t.Fatalf("the openstack adapter returned %T", s.cloud)
	}
	emu, srv, fx := c.Emulator(), c.Server(), c.Fixture()
	zones := s.cloud.Zones()
	i1 := s.launchNode(t, zones[0], "os-1", "")
	i2 := s.launchNode(t, zones[1], "os-2", "")
	for _, i := range []conformance.Instance{i1, i2} {
		env.waitInitialized(t, i.NodeName)
	}
	t.Run("a kubelet's provided-node-ip is honoured", func(t *testing.T) {
		// The node controller puts the kubelet's --node-ip first among
		// the addresses the backend reports, and refuses to initialise
		// a Node whose --node-ip the server does not have.
		inst := s.launch(t, zones[0], "os-nodeip")
		info, _ := emu.Server(inst.ID)
		good := ccmproc.KubeletNode(inst.NodeName, "")
		good.Annotations = map[string]string{cloudproviderapi.AnnotationAlphaProvidedIPAddr: info.PrivateIP}
		if _, err := env.admin.CoreV1().Nodes().Create(context.Background(), good, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { env.deleteNode(t, good.Name) })
		n := env.waitInitialized(t, good.Name)
		if len(n.Status.Addresses) == 0 || n.Status.Addresses[0] != (corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: info.PrivateIP}) {
			t.Errorf("addresses %v, want %s first", n.Status.Addresses, info.PrivateIP)
		}

		other := s.launch(t, zones[1], "os-badip")
		bad := ccmproc.KubeletNode(other.NodeName, "")
		bad.Annotations = map[string]string{cloudproviderapi.AnnotationAlphaProvidedIPAddr: "10.99.99.99"}
		if _, err := env.admin.CoreV1().Nodes().Create(context.Background(), bad, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { env.deleteNode(t, bad.Name) })
		time.Sleep(5 * time.Second)
		if n, err := env.getNode(context.Background(), bad.Name); err != nil || ccmproc.Initialized(n) {
			t.Errorf("node with a --node-ip its server lacks: %v, %s", err, describeNode(n))
		}
	})

	lbOf := func(name string) *cloudsimopenstack.LoadBalancerInfo {
		for _, lb := range emu.LoadBalancers() {
			if slices.Contains(lb.Tags, "kube_service="+confNS+"/"+name) {
				return &lb
			}
		}
		return nil
	}

	// Services live as long as the whole test (createService deletes at
	// the cleanup of the t it is given).
	srv.ResetCalls()
	web := env.createService(t, lbService("os-web", 80, 443))
	t.Run("a new service's load balancer is created in one call", func(t *testing.T) {
		env.waitService(t, web, "an address", hasAddress)
		s.waitLB(t, web, []int32{80, 443}, i1, i2)
		calls := srv.Calls()
		if calls["octavia:CreateLoadBalancer"] != 1 || calls["octavia:CreateListener"]+calls["octavia:CreatePool"]+calls["octavia:CreateHealthMonitor"]+calls["octavia:BatchUpdateMembers"] != 0 {
			t.Errorf("calls %v: want one fully-populated create", calls)
		}
		lb := lbOf(web.Name)
		for _, p := range lb.Pools {
			if p.HealthMonitor == nil {
				t.Errorf("pool %s has no health monitor (createMonitor is on)", p.Name)
			}
		}
	})

	t.Run("a node joining costs one batch member update per pool", func(t *testing.T) {
		srv.ResetCalls()
		i3 := s.launchNode(t, zones[0], "os-3", "")
		s.waitLB(t, web, []int32{80, 443}, i1, i2, i3)
		time.Sleep(2 * time.Second) // let every sync finish
		calls := srv.Calls()
		if calls["octavia:BatchUpdateMembers"] != 2 || calls["octavia:CreateMember"]+calls["octavia:DeleteMember"]+calls["octavia:UpdateMember"] != 0 {
			t.Errorf("calls %v: want two batch member updates", calls)
		}
		env.deleteNode(t, i3.NodeName)
		s.waitLB(t, web, []int32{80, 443}, i1, i2)
		// The node set's updates changed only the pools' members:
		// drift repair, listing every repair period, repairs nothing.
		s.noRepairs(t, "after a node joined and left", web)
	})

	t.Run("spec.loadBalancerIP's floating IP is used and kept; ours is released", func(t *testing.T) {
		user, err := emu.AllocateFloatingIP(fx.ExternalNetworkID, "reserved by a person")
		if err != nil {
			t.Fatal(err)
		}
		pinned := lbService("os-pinned", 80)
		pinned.Spec.LoadBalancerIP = user.Address
		pk := env.createService(t, pinned)
		env.waitService(t, pk, "the reserved address", func(s *corev1.Service) (bool, string) {
			ing := s.Status.LoadBalancer.Ingress
			return len(ing) == 1 && ing[0].IP == user.Address, fmt.Sprint(ing)
		})
		var ours string
		for _, f := range emu.FloatingIPs() {
			if strings.Contains(f.Description, "service "+web.String()+" ") {
				ours = f.ID
			}
		}
		if ours == "" {
			t.Fatal("no floating IP of ours for", web)
		}
		env.deleteServiceAndWait(t, pk)
		env.deleteServiceAndWait(t, web)
		var left []string
		for _, f := range emu.FloatingIPs() {
			left = append(left, f.ID)
			if f.ID == user.ID && f.PortID != "" {
				t.Errorf("the reserved floating IP is still associated with %s", f.PortID)
			}
		}
		if !slices.Contains(left, user.ID) || slices.Contains(left, ours) {
			t.Errorf("floating IPs left %v: want the reserved %s and not ours %s", left, user.ID, ours)
		}
	})

	// Issue 20: what users of the upstream CCM rely on.
	ctx := context.Background()
	_, netc, err := c.Clients(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fipOf := func(lb *cloudsimopenstack.LoadBalancerInfo) *cloudsimopenstack.FloatingIPInfo {
		for _, f := range emu.FloatingIPs() {
			if f.PortID == lb.VIPPortID {
				return &f
			}
		}
		return nil
	}
	ingressIP := func(ip string) func(*corev1.Service) (bool, string) {
		return func(s *corev1.Service) (bool, string) {
			ing := s.Status.LoadBalancer.Ingress
			return len(ing) == 1 && ing[0].IP == ip, fmt.Sprint(ing)
		}
	}

	t.Run("the floating network is found at start when the config names none", func(t *testing.T) {
		// The suite's config has no floatingNetworkID (DetectFloatingNetwork).
		k := env.createService(t, lbService("os-detect", 80))
		got := env.waitService(t, k, "an address", hasAddress)
		lb := lbOf(k.Name)
		f := fipOf(lb)
		if f == nil || f.NetworkID != fx.ExternalNetworkID || f.Address != got.Status.LoadBalancer.Ingress[0].IP {
			t.Errorf("floating IP %+v, want one on the only external network %s holding the status address", f, fx.ExternalNetworkID)
		}
		env.deleteServiceAndWait(t, k)
	})

	t.Run("a node's fixed addresses on other networks are left out (networking.internalNetworkNames)", func(t *testing.T) {
		storage, err := emu.CreateNetwork(cloudsimopenstack.NetworkSpec{Name: "os-storage", CIDR: "10.88.0.0/24"})
		if err != nil {
			t.Fatal(err)
		}
		ids, err := emu.Launch(cloudsimopenstack.LaunchSpec{Name: "os-twonics", Zone: zones[0], ExtraSubnetIDs: []string{storage.SubnetID}})
		if err != nil {
			t.Fatal(err)
		}
		info, _ := emu.Server(ids[0])
		env.createNode(t, ccmproc.KubeletNode(info.Name, ""))
		n := env.waitInitialized(t, info.Name)
		var internal []string
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				internal = append(internal, a.Address)
			}
		}
		if !slices.Equal(internal, []string{info.PrivateIP}) {
			t.Errorf("InternalIPs %v, want only the node network's %s (not os-storage's %s)", internal, info.PrivateIP, storage.CIDR)
		}
	})

	t.Run("upstream's annotations shape the Octavia tree", func(t *testing.T) {
		// Only the Node labelled lb-pool=a is a member (node-selector).
		node, err := env.getNode(ctx, i1.NodeName)
		if err != nil {
			t.Fatal(err)
		}
		node.Labels["lb-pool"] = "a"
		if _, err := env.admin.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if n, err := env.getNode(ctx, i1.NodeName); err == nil {
				delete(n.Labels, "lb-pool")
				_, _ = env.admin.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
			}
		})
		svc := lbService("os-tuned", 80, 443)
		svc.Annotations = map[string]string{
			"loadbalancer.openstack.org/proxy-protocol":                  "v2",
			"loadbalancer.openstack.org/timeout-client-data":             "60000",
			"loadbalancer.openstack.org/timeout-member-connect":          "3000",
			"loadbalancer.openstack.org/timeout-member-data":             "61000",
			"loadbalancer.openstack.org/timeout-tcp-inspect":             "100",
			"loadbalancer.openstack.org/connection-limit":                "1000",
			"loadbalancer.openstack.org/flavor-id":                       flavor.ID,
			"loadbalancer.openstack.org/availability-zone":               "lb-az-1",
			"loadbalancer.openstack.org/health-monitor-delay":            "7",
			"loadbalancer.openstack.org/health-monitor-timeout":          "4",
			"loadbalancer.openstack.org/health-monitor-max-retries":      "2",
			"loadbalancer.openstack.org/health-monitor-max-retries-down": "3",
			"loadbalancer.openstack.org/node-selector":                   "lb-pool=a",
			"loadbalancer.openstack.org/hostname":                        "tuned.example.com",
		}
		k := env.createService(t, svc)
		env.waitService(t, k, "the hostname", func(s *corev1.Service) (bool, string) {
			ing := s.Status.LoadBalancer.Ingress
			return len(ing) == 1 && ing[0].Hostname == "tuned.example.com" && ing[0].IP == "", fmt.Sprint(ing)
		})
		s.waitLB(t, k, []int32{80, 443}, i1)
		lb := lbOf(k.Name)
		if lb.FlavorID != flavor.ID || lb.AvailabilityZone != "lb-az-1" {
			t.Errorf("flavor %q zone %q", lb.FlavorID, lb.AvailabilityZone)
		}
		for _, l := range lb.Listeners {
			if l.TimeoutClientData != 60000 || l.TimeoutMemberConnect != 3000 || l.TimeoutMemberData != 61000 || l.TimeoutTCPInspect != 100 || l.ConnectionLimit != 1000 {
				t.Errorf("listener %s: %+v", l.Name, l)
			}
		}
		for _, p := range lb.Pools {
			m := p.HealthMonitor
			if p.Protocol != "PROXYV2" || m == nil || m.Delay != 7 || m.Timeout != 4 || m.MaxRetries != 2 || m.MaxRetriesDown != 3 {
				t.Errorf("pool %s %s, monitor %+v", p.Name, p.Protocol, m)
			}
		}
		env.deleteServiceAndWait(t, k)
	})

	t.Run("Services share a load balancer through load-balancer-id; it goes with the last", func(t *testing.T) {
		own := env.createService(t, lbService("os-own", 80))
		var id string
		got := env.waitService(t, own, "the load-balancer-id written back", func(s *corev1.Service) (bool, string) {
			id = s.Annotations["loadbalancer.openstack.org/load-balancer-id"]
			ok, desc := hasAddress(s)
			return ok && id != "", desc + " id=" + id
		})
		addr := got.Status.LoadBalancer.Ingress[0].IP
		if lb := lbOf(own.Name); lb == nil || lb.ID != id {
			t.Fatalf("load-balancer-id %s, load balancer %+v", id, lb)
		}
		svc := lbService("os-sharing", 8080)
		svc.Annotations = map[string]string{"loadbalancer.openstack.org/load-balancer-id": id}
		sharing := env.createService(t, svc)
		env.waitService(t, sharing, "the shared address", ingressIP(addr))
		poll(t, converge, "both Services' listeners on one load balancer", func(context.Context) (bool, string, error) {
			lb, ok := emu.LoadBalancer(id)
			var ports []int
			for _, l := range lb.Listeners {
				ports = append(ports, l.ProtocolPort)
			}
			slices.Sort(ports)
			return ok && slices.Equal(ports, []int{80, 8080}), fmt.Sprint(ports), nil
		})
		// The first Service's load balancer and address are listed
		// under none once shared: a move, which no one made by hand.
		s.noRepairs(t, "once sharing started", own, sharing)
		env.deleteServiceAndWait(t, own)
		lb, ok := emu.LoadBalancer(id)
		if !ok || len(lb.Listeners) != 1 || lb.Listeners[0].ProtocolPort != 8080 || fipOf(&lb) == nil {
			t.Errorf("after the first Service went: %v %+v, want the load balancer with the other's listener and its floating IP", ok, lb)
		}
		env.waitService(t, sharing, "its address kept", ingressIP(addr))
		s.noRepairs(t, "once the first Service went", sharing)
		env.deleteServiceAndWait(t, sharing)
		if _, ok := emu.LoadBalancer(id); ok {
			t.Error("the shared load balancer outlived its last Service")
		}
		for _, f := range emu.FloatingIPs() {
			if f.Address == addr {
				t.Errorf("the floating IP %s outlived the load balancer", addr)
			}
		}
	})

	t.Run("a load balancer with upstream's legacy name is adopted with its address", func(t *testing.T) {
		// The Service exists first as a NodePort one, so the load
		// balancer can be named after its UID before the manager
		// serves it.
		svc := lbService("os-legacy", 80)
		svc.Spec.Type = corev1.ServiceTypeNodePort
		k := env.createService(t, svc)
		cur, err := env.getService(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		up, err := c.MakeLegacyLoadBalancer(cur, "kubernetes", []conformance.Instance{i1, i2})
		if err != nil {
			t.Fatal(err)
		}
		before := len(emu.LoadBalancers())
		env.updateService(t, k, func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer })
		env.waitService(t, k, "the legacy load balancer's address", ingressIP(up.Status.Ingress[0].IP))
		if lb, ok := emu.LoadBalancer(up.ID); !ok || len(lb.Listeners) != 1 || len(lb.Pools) != 1 || len(lb.Pools[0].Members) != 2 {
			t.Errorf("the legacy load balancer after adoption: %v %+v", ok, lb)
		}
		if n := len(emu.LoadBalancers()); n != before {
			t.Errorf("%d load balancers, want the %d before: the legacy one adopted, none made", n, before)
		}
		env.deleteServiceAndWait(t, k)
		if _, ok := emu.LoadBalancer(up.ID); ok {
			t.Error("the adopted legacy load balancer outlived its Service")
		}
		for _, f := range emu.FloatingIPs() {
			if f.Address == up.Status.Ingress[0].IP {
				t.Error("its floating IP outlived it")
			}
		}
	})

	t.Run("the VIP goes in network-id's network or on port-id's port", func(t *testing.T) {
		vips, err := emu.CreateNetwork(cloudsimopenstack.NetworkSpec{Name: "os-vips", CIDR: "10.77.0.0/24"})
		if err != nil {
			t.Fatal(err)
		}
		byNet := lbService("os-vipnet", 80)
		byNet.Annotations = map[string]string{
			"service.beta.kubernetes.io/openstack-internal-load-balancer": "true",
			"loadbalancer.openstack.org/network-id":                       vips.ID,
		}
		kn := env.createService(t, byNet)
		got := env.waitService(t, kn, "an address", hasAddress)
		if lb := lbOf(kn.Name); lb.VIPNetworkID != vips.ID || lb.VIPSubnetID != vips.SubnetID || got.Status.LoadBalancer.Ingress[0].IP != lb.VIPAddress || !strings.HasPrefix(lb.VIPAddress, "10.77.0.") {
			t.Errorf("VIP %s in network %s, status %v; want the VIP in %s", lb.VIPAddress, lb.VIPNetworkID, got.Status.LoadBalancer.Ingress, vips.CIDR)
		}

		port, err := ports.Create(ctx, netc, ports.CreateOpts{NetworkID: fx.NetworkID, Name: "reserved-vip"}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		byPort := lbService("os-vipport", 80)
		byPort.Annotations = map[string]string{
			"loadbalancer.openstack.org/port-id":         port.ID,
			"loadbalancer.openstack.org/x-forwarded-for": "true",
		}
		kp := env.createService(t, byPort)
		env.waitService(t, kp, "an address", hasAddress)
		lb := lbOf(kp.Name)
		if lb.VIPPortID != port.ID || lb.VIPAddress != port.FixedIPs[0].IPAddress {
			t.Errorf("VIP port %s address %s, want the user's %s %s", lb.VIPPortID, lb.VIPAddress, port.ID, port.FixedIPs[0].IPAddress)
		}
		for _, l := range lb.Listeners {
			if l.Protocol != "HTTP" || l.InsertHeaders["X-Forwarded-For"] != "true" {
				t.Errorf("listener %s %s headers %v, want HTTP inserting X-Forwarded-For", l.Name, l.Protocol, l.InsertHeaders)
			}
		}
		env.deleteServiceAndWait(t, kn)
		env.deleteServiceAndWait(t, kp)
		if _, ok := emu.Port(port.ID); !ok {
			t.Error("the user's VIP port was deleted with the Service")
		}
		for _, f := range emu.FloatingIPs() {
			if f.PortID == port.ID {
				t.Errorf("floating IP %s allocated for the Service still on the user's port", f.Address)
			}
		}
	})

	t.Run("floating-subnet-tags picks the floating IP's subnet", func(t *testing.T) {
		sub, err := emu.AddSubnet(cloudsimopenstack.SubnetSpec{NetworkID: fx.ExternalNetworkID, Name: "public-lb", CIDR: "172.31.0.0/24", Tags: []string{"lb-pool"}})
		if err != nil {
			t.Fatal(err)
		}
		svc := lbService("os-fipsubnet", 80)
		svc.Annotations = map[string]string{"loadbalancer.openstack.org/floating-subnet-tags": "lb-pool"}
		k := env.createService(t, svc)
		got := env.waitService(t, k, "an address", hasAddress)
		if ip := got.Status.LoadBalancer.Ingress[0].IP; !strings.HasPrefix(ip, "172.31.0.") {
			t.Errorf("floating IP %s, want one of subnet %s (172.31.0.0/24)", ip, sub)
		}
		env.deleteServiceAndWait(t, k)
	})

	t.Run("a load balancer held PENDING is retried, then converges", func(t *testing.T) {
		held := env.createService(t, lbService("os-held", 80))
		s.waitLB(t, held, []int32{80}, i1, i2)
		lb := lbOf(held.Name)
		// Its create done first, so the change held is the manager's
		// update below: a new listener for the new port.
		poll(t, converge, "the load balancer ACTIVE", func(context.Context) (bool, string, error) {
			info, ok := emu.LoadBalancer(lb.ID)
			return ok && info.ProvisioningStatus == "ACTIVE", info.ProvisioningStatus, nil
		})
		// Octavia's next change to it stays PENDING_* until released: a
		// stuck provider.
		if err := emu.HoldLoadBalancer(lb.ID); err != nil {
			t.Fatal(err)
		}
		// With conflict retries: the manager may be writing the Service's
		// status right after the create it has just finished.
		env.updateService(t, held, func(svc *corev1.Service) {
			svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "p8443", Port: 8443, Protocol: corev1.ProtocolTCP})
		})
		// The sync waits waitActiveTimeout (10 s with the suite's quick
		// errors) and is requeued with a retry, not failed for good.
		poll(t, converge, "the manager retrying the held load balancer", func(context.Context) (bool, string, error) {
			return strings.Contains(s.ccm.log.String(), "is still PENDING_"), "", nil
		})
		// While held: the one load balancer (no second made beside the
		// stuck one), its new listener accepted and the operation still
		// pending, so what follows is the manager's retry after release.
		if got := s.cloud.LoadBalancers(held); len(got) != 1 || !slices.Equal(got[0].Ports, []int32{80, 8443}) {
			t.Errorf("while held: %+v, want one load balancer with ports [80 8443]", got)
		}
		if info, ok := emu.LoadBalancer(lb.ID); !ok || !info.Held || !strings.HasPrefix(info.ProvisioningStatus, "PENDING_") {
			t.Errorf("while held: load balancer %s found %v, held %v, %s; want held PENDING_*", lb.ID, ok, info.Held, info.ProvisioningStatus)
		}
		warns, err := env.warnings(context.Background(), held)
		if err != nil {
			t.Fatal(err)
		}
		if len(warns) > 3 {
			t.Errorf("%d Warning events while the load balancer was held: %v", len(warns), warns)
		}
		if err := emu.ReleaseLoadBalancer(lb.ID); err != nil {
			t.Fatal(err)
		}
		s.waitLB(t, held, []int32{80, 8443}, i1, i2)
		env.waitService(t, held, "its address kept", hasAddress)
		env.deleteServiceAndWait(t, held)
	})

	// Last: the manager runs again with the config's internal-lb.
	t.Run("loadBalancer.internalLB makes every Service internal, whatever its annotation", func(t *testing.T) {
		s.ccm.stop()
		const lbSection = "  loadBalancer:\n"
		if !strings.Contains(s.cfg.Section, lbSection) {
			t.Fatalf("no loadBalancer section in %q", s.cfg.Section)
		}
		s.cfg.Section = strings.Replace(s.cfg.Section, lbSection, lbSection+"    internalLB: true\n", 1)
		s.ccm = s.startCCM(t, "internal-lb")
		fips := len(emu.FloatingIPs())
		svc := lbService("os-internal-lb", 80)
		svc.Annotations = map[string]string{"service.beta.kubernetes.io/openstack-internal-load-balancer": "false"}
		k := env.createService(t, svc)
		got := env.waitService(t, k, "an address", hasAddress)
		s.waitLB(t, k, []int32{80}, i1, i2)
		if lb := lbOf(k.Name); got.Status.LoadBalancer.Ingress[0].IP != lb.VIPAddress || fipOf(lb) != nil {
			t.Errorf("status %v, VIP %s, floating IP %+v: want the VIP and no floating IP", got.Status.LoadBalancer.Ingress, lb.VIPAddress, fipOf(lb))
		}
		if n := len(emu.FloatingIPs()); n != fips {
			t.Errorf("%d floating IPs, want the %d before", n, fips)
		}
		env.deleteServiceAndWait(t, k)
	})
}

// noRepairs waits for three more listings of the cloud by drift repair
// (pastRepairs) and fails t for any repair the manager counted meanwhile
// and for every LoadBalancerRepaired Event on the Services: nothing
// changed their load balancers outside the manager.
func (s *suiteCloud) noRepairs(t *testing.T, when string, svcs ...types.NamespacedName) {
	t.Helper()
	repairs := s.metricSum(lbRepairsMetric, "")
	s.pastRepairs(t, `result="ok"`, when)
	if n := s.metricSum(lbRepairsMetric, "") - repairs; n != 0 {
		t.Errorf("%s: %d load balancer repairs counted on /metrics", when, n)
	}
	for _, k := range svcs {
		if n, msgs, err := s.repairEvents(context.Background(), k); err != nil || n != 0 {
			t.Errorf("%s: %d LoadBalancerRepaired Events on %s: %s %v", when, n, k, msgs, err)
		}
	}
}
