package gce

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	gceemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/gce"
)

// lbEnv is a test environment with n initialized Nodes and the external
// load balancer implementation.
func lbEnv(t *testing.T, n int) (*testEnv, *loadBalancers, []*v1.Node) {
	t.Helper()
	env := newTestEnv(t, gceemu.Config{}, func(s *Section) { s.NodeTags = []string{"k8s-node"} })
	var specs []cloudsim.InstanceSpec
	for i := range n {
		specs = append(specs, cloudsim.InstanceSpec{Name: fmt.Sprintf("lb-node-%d", i)})
	}
	nodes := env.launch(t, specs...)
	for _, nd := range nodes {
		md, err := env.cloud.instances.InstanceMetadata(t.Context(), nd)
		if err != nil {
			t.Fatal(err)
		}
		nd.Spec.ProviderID = md.ProviderID
		nd.Status.Addresses = md.NodeAddresses
	}
	return env, env.cloud.lb, nodes
}

func poolMembers(t *testing.T, env *testEnv, name string) []string {
	t.Helper()
	p, err := env.api.targetPools.Get(t.Context(), &computepb.GetTargetPoolRequest{Project: env.s.ProjectID, Region: env.s.Region, TargetPool: name})
	if err != nil {
		t.Fatalf("target pool %s: %v", name, err)
	}
	var out []string
	for _, i := range p.GetInstances() {
		out = append(out, lastSegment(i))
	}
	slices.Sort(out)
	return out
}

// TestExternalLoadBalancer: a Service gets a reserved address, a target
// pool of its nodes with the shared kube-proxy health check, a forwarding
// rule and firewall rules; a node-set change costs only the member diff;
// deletion removes everything the Service had, and the shared check with the last Service.
func TestExternalLoadBalancer(t *testing.T) {
	env, lb, nodes := lbEnv(t, 3)
	ctx := t.Context()
	svc := svcWith(nil, v1.ServicePort{Name: "http", Port: 80, Protocol: v1.ProtocolTCP, NodePort: 30080}, v1.ServicePort{Name: "https", Port: 443, Protocol: v1.ProtocolTCP, NodePort: 30443})
	st, err := lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes)
	if err != nil {
		t.Fatal(err)
	}
	base := lbName(svc)
	if len(st.Ingress) != 1 || st.Ingress[0].IP == "" {
		t.Fatalf("status %+v", st)
	}
	fr, err := env.api.forwardingRules.Get(ctx, &computepb.GetForwardingRuleRequest{Project: env.s.ProjectID, Region: env.s.Region, ForwardingRule: base})
	if err != nil || fr.GetIPAddress() != st.Ingress[0].IP || fr.GetPortRange() != "80-443" || !strings.HasSuffix(fr.GetTarget(), "/targetPools/"+base) {
		t.Fatalf("forwarding rule %v: %v", fr, err)
	}
	if got := poolMembers(t, env, base); fmt.Sprint(got) != "[lb-node-0 lb-node-1 lb-node-2]" {
		t.Errorf("pool members %v", got)
	}
	fw, err := env.api.firewalls.Get(ctx, &computepb.GetFirewallRequest{Project: env.s.ProjectID, Firewall: firewallName(base)})
	if err != nil || fmt.Sprint(fw.GetTargetTags()) != "[k8s-node]" || fmt.Sprint(fw.GetSourceRanges()) != "[0.0.0.0/0]" {
		t.Fatalf("firewall %v: %v", fw, err)
	}
	if _, err := env.api.firewalls.Get(ctx, &computepb.GetFirewallRequest{Project: env.s.ProjectID, Firewall: healthCheckFirewallName(nodeHealthCheckName("kubernetes"), true)}); err != nil {
		t.Errorf("health check firewall: %v", err)
	}
	got, found, err := lb.GetLoadBalancer(ctx, "kubernetes", svc)
	if err != nil || !found || got.Ingress[0].IP != st.Ingress[0].IP {
		t.Errorf("GetLoadBalancer: %+v %v %v", got, found, err)
	}

	// Ensuring again writes nothing.
	env.srv.ResetCalls()
	if _, err := lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if n := env.srv.CallCount(cloudsim.MutatingOps); n != 0 {
		t.Errorf("a repeated ensure made %d writes: %v", n, env.srv.Calls())
	}

	// One node leaves, one joins: one removeInstance and one addInstance.
	more := env.launch(t, cloudsim.InstanceSpec{Name: "lb-node-9"})
	md, err := env.cloud.instances.InstanceMetadata(ctx, more[0])
	if err != nil {
		t.Fatal(err)
	}
	more[0].Spec.ProviderID = md.ProviderID
	env.srv.ResetCalls()
	if err := lb.UpdateLoadBalancer(ctx, "kubernetes", svc, append(nodes[1:], more[0])); err != nil {
		t.Fatal(err)
	}
	calls := env.srv.Calls()
	// The pool is not read: the record of the last sync says its members.
	if calls["compute:TargetPools.AddInstance"] != 1 || calls["compute:TargetPools.RemoveInstance"] != 1 || calls["compute:TargetPools.Get"] != 0 {
		t.Errorf("node change calls %v", calls)
	}
	if got := poolMembers(t, env, base); fmt.Sprint(got) != "[lb-node-1 lb-node-2 lb-node-9]" {
		t.Errorf("pool members %v", got)
	}

	if err := lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", svc); err != nil {
		t.Fatal(err)
	}
	// The shared health check and its firewall rule went with the last
	// Service.
	for _, r := range env.srv.Resources() {
		if strings.Contains(r.ID, base) || strings.Contains(r.ID, "k8s-kubernetes-node") {
			t.Errorf("left behind: %s %s", r.Kind, r.ID)
		}
	}
}

// TestExternalLoadBalancerNoLeaks: a deletion finds the forwarding rule
// already gone (upstream then leaked the target pool) and still removes
// the pool, firewall rules and address; a user's spec.loadBalancerIP is
// used and never released.
func TestExternalLoadBalancerNoLeaks(t *testing.T) {
	env, lb, nodes := lbEnv(t, 2)
	ctx := t.Context()
	svc := svcWith(nil)
	if _, err := lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	base := lbName(svc)
	if err := waitOp(ctx)(env.api.forwardingRules.Delete(ctx, &computepb.DeleteForwardingRuleRequest{Project: env.s.ProjectID, Region: env.s.Region, ForwardingRule: base})); err != nil {
		t.Fatal(err)
	}
	// The service controller deletes only what GetLoadBalancer says
	// exists: the pool and the rest still make it exist.
	if _, exists, err := lb.GetLoadBalancer(ctx, "kubernetes", svc); err != nil || !exists {
		t.Fatalf("GetLoadBalancer without the rule: exists %v, %v", exists, err)
	}
	if err := lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", svc); err != nil {
		t.Fatal(err)
	}
	for _, r := range env.srv.Resources() {
		if strings.Contains(r.ID, base) {
			t.Errorf("leaked: %s %s", r.Kind, r.ID)
		}
	}
	if _, exists, err := lb.GetLoadBalancer(ctx, "kubernetes", svc); err != nil || exists {
		t.Errorf("GetLoadBalancer after deletion: exists %v, %v", exists, err)
	}

	// The user's reserved address.
	userAddr := "user-reserved"
	if err := waitOp(ctx)(env.api.addresses.Insert(ctx, &computepb.InsertAddressRequest{Project: env.s.ProjectID, Region: env.s.Region,
		AddressResource: &computepb.Address{Name: &userAddr}})); err != nil {
		t.Fatal(err)
	}
	a, err := env.api.addresses.Get(ctx, &computepb.GetAddressRequest{Project: env.s.ProjectID, Region: env.s.Region, Address: userAddr})
	if err != nil {
		t.Fatal(err)
	}
	pinned := svcWith(nil)
	pinned.UID = types.UID("7f7f7f7f-1b9a-4f3e-9d5c-0a1b2c3d4e5f")
	pinned.Spec.LoadBalancerIP = a.GetAddress()
	st, err := lb.EnsureLoadBalancer(ctx, "kubernetes", pinned, nodes)
	if err != nil || st.Ingress[0].IP != a.GetAddress() {
		t.Fatalf("pinned: %+v, %v", st, err)
	}
	if err := lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", pinned); err != nil {
		t.Fatal(err)
	}
	if _, err := env.api.addresses.Get(ctx, &computepb.GetAddressRequest{Project: env.s.ProjectID, Region: env.s.Region, Address: userAddr}); err != nil {
		t.Errorf("the user's address was released: %v", err)
	}
}

// TestPoolRecordStale: a node-set change works from the record of the
// last sync; when the pool changed under it (an operator added the new
// node already, so GCE refuses adding it), the update reads the pool and
// syncs in full in the same call.
func TestPoolRecordStale(t *testing.T) {
	env, lb, nodes := lbEnv(t, 3)
	ctx := t.Context()
	svc := svcWith(nil)
	if _, err := lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes[:2]); err != nil {
		t.Fatal(err)
	}
	base := lbName(svc)
	link := "projects/" + env.s.ProjectID + "/zones/" + env.emu.Config().Zones[2] + "/instances/lb-node-2"
	if err := waitOp(ctx)(env.api.targetPools.AddInstance(ctx, &computepb.AddInstanceTargetPoolRequest{Project: env.s.ProjectID, Region: env.s.Region, TargetPool: base,
		TargetPoolsAddInstanceRequestResource: &computepb.TargetPoolsAddInstanceRequest{Instances: []*computepb.InstanceReference{{Instance: &link}}}})); err != nil {
		t.Fatal(err)
	}
	env.srv.ResetCalls()
	if err := lb.UpdateLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if calls := env.srv.Calls(); calls["compute:TargetPools.Get"] != 1 {
		t.Errorf("calls %v: want the stale record to fall back to one read of the pool", calls)
	}
	if got := poolMembers(t, env, base); fmt.Sprint(got) != "[lb-node-0 lb-node-1 lb-node-2]" {
		t.Errorf("pool members %v", got)
	}
}

// Addresses, as upstream: reserved while the forwarding rule is made, then
// released, the rule keeping the IP (no static address quota held); a
// port change that makes the rule again promotes the IP first, so it
// stays. With keepAddresses the reservation stays for the Service's life.
func TestExternalAddressReservation(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keepAddresses=%v", keep), func(t *testing.T) {
			env, lb, nodes := lbEnv(t, 1)
			env.s.KeepAddresses = keep
			ctx := t.Context()
			svc := svcWith(nil)
			st, err := lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes)
			if err != nil {
				t.Fatal(err)
			}
			base := lbName(svc)
			reserved := func() bool {
				_, err := env.api.addresses.Get(ctx, &computepb.GetAddressRequest{Project: env.s.ProjectID, Region: env.s.Region, Address: base})
				return err == nil
			}
			if reserved() != keep {
				t.Errorf("address %s reserved: %v, want %v", base, reserved(), keep)
			}
			// A port change makes the rule again (its port range changes):
			// the IP stays.
			svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Name: "p8443", Protocol: v1.ProtocolTCP, Port: 8443, NodePort: 30999})
			st2, err := lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes)
			if err != nil {
				t.Fatal(err)
			}
			if st2.Ingress[0].IP != st.Ingress[0].IP {
				t.Errorf("the port change moved the address from %s to %s", st.Ingress[0].IP, st2.Ingress[0].IP)
			}
			if reserved() != keep {
				t.Errorf("after the change, address %s reserved: %v, want %v", base, reserved(), keep)
			}
			if err := lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", svc); err != nil {
				t.Fatal(err)
			}
			if reserved() {
				t.Error("the address is still reserved after the deletion")
			}
		})
	}
}

// TestUpstreamFinalizersRemoved: a Service the upstream GCE CCM served
// carries its finalizer; deleting the load balancer takes it off (as
// upstream's deletion does), or the Service would stay Terminating. Other
// finalizers stay.
func TestUpstreamFinalizersRemoved(t *testing.T) {
	_, lb, _ := lbEnv(t, 1)
	svc := svcWith(nil)
	svc.Finalizers = []string{"service.kubernetes.io/load-balancer-cleanup", "gke.networking.io/l4-netlb-v1"}
	client := fake.NewSimpleClientset(svc)
	lb.services = client.CoreV1()
	if err := lb.EnsureLoadBalancerDeleted(t.Context(), "kubernetes", svc); err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().Services(svc.Namespace).Get(t.Context(), svc.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Finalizers) != "[service.kubernetes.io/load-balancer-cleanup]" {
		t.Errorf("finalizers %v", got.Finalizers)
	}
}
