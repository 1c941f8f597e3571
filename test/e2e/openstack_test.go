package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
// the sync wait and retry, then converge once Octavia is done.
func TestOpenStack(t *testing.T) {
	s := startSuiteCloud(t, confopenstack.Adapter{}, "openstack-only")
	c, ok := s.cloud.(*confopenstack.Cloud)
	if !ok {
		t.Fatalf("the openstack adapter returned %T", s.cloud)
	}
	emu, srv, fx := c.Emulator(), c.Server(), c.Fixture()
	zones := s.cloud.Zones()
	i1 := s.launchNode(t, zones[0], "os-1", "")
	i2 := s.launchNode(t, zones[1], "os-2", "")
	for _, i := range []conformance.Instance{i1, i2} {
		waitInitialized(t, i.NodeName)
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
		t.Cleanup(func() { deleteNode(t, good.Name) })
		n := waitInitialized(t, good.Name)
		if len(n.Status.Addresses) == 0 || n.Status.Addresses[0] != (corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: info.PrivateIP}) {
			t.Errorf("addresses %v, want %s first", n.Status.Addresses, info.PrivateIP)
		}

		other := s.launch(t, zones[1], "os-badip")
		bad := ccmproc.KubeletNode(other.NodeName, "")
		bad.Annotations = map[string]string{cloudproviderapi.AnnotationAlphaProvidedIPAddr: "10.99.99.99"}
		if _, err := env.admin.CoreV1().Nodes().Create(context.Background(), bad, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { deleteNode(t, bad.Name) })
		time.Sleep(5 * time.Second)
		if n, err := getNode(context.Background(), bad.Name); err != nil || ccmproc.Initialized(n) {
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
	web := createService(t, lbService("os-web", 80, 443))
	t.Run("a new service's load balancer is created in one call", func(t *testing.T) {
		waitService(t, web, "an address", hasAddress)
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
		deleteNode(t, i3.NodeName)
		s.waitLB(t, web, []int32{80, 443}, i1, i2)
	})

	t.Run("spec.loadBalancerIP's floating IP is used and kept; ours is released", func(t *testing.T) {
		user, err := emu.AllocateFloatingIP(fx.ExternalNetworkID, "reserved by a person")
		if err != nil {
			t.Fatal(err)
		}
		pinned := lbService("os-pinned", 80)
		pinned.Spec.LoadBalancerIP = user.Address
		pk := createService(t, pinned)
		waitService(t, pk, "the reserved address", func(s *corev1.Service) (bool, string) {
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
		deleteServiceAndWait(t, pk)
		deleteServiceAndWait(t, web)
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

	t.Run("a load balancer held PENDING is retried, then converges", func(t *testing.T) {
		held := createService(t, lbService("os-held", 80))
		s.waitLB(t, held, []int32{80}, i1, i2)
		lb := lbOf(held.Name)
		// Octavia's pending change to it (or its next one) stays
		// PENDING_* until released: a stuck provider.
		if err := emu.HoldLoadBalancer(lb.ID); err != nil {
			t.Fatal(err)
		}
		svc, err := getService(context.Background(), held)
		if err != nil {
			t.Fatal(err)
		}
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "p8443", Port: 8443, Protocol: corev1.ProtocolTCP})
		if _, err := env.admin.CoreV1().Services(held.Namespace).Update(context.Background(), svc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The sync waits waitActiveTimeout (10 s with the suite's quick
		// errors) and is requeued with a retry, not failed for good.
		poll(t, converge, "the manager retrying the held load balancer", func(context.Context) (bool, string, error) {
			return strings.Contains(s.ccm.log.String(), "is still PENDING_"), "", nil
		})
		if got := s.cloud.LoadBalancers(held); len(got) != 1 || !slices.Equal(got[0].Ports, []int32{80, 8443}) {
			t.Logf("while held: %+v", got)
		}
		warns, err := warnings(context.Background(), held)
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
		waitService(t, held, "its address kept", hasAddress)
		deleteServiceAndWait(t, held)
	})
}
