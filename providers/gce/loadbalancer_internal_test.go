package gce

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	gceemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/gce"
)

// ilbEnv is a test environment with n initialized Nodes spread over the
// region's first two zones.
func ilbEnv(t *testing.T, n int) (*testEnv, *loadBalancers, []*v1.Node) {
	t.Helper()
	env := newTestEnv(t, gceemu.Config{}, func(s *Section) { s.NodeTags = []string{"k8s-node"} })
	zones := env.emu.Config().Zones
	var specs []cloudsim.InstanceSpec
	for i := range n {
		specs = append(specs, cloudsim.InstanceSpec{Name: fmt.Sprintf("ilb-node-%d", i), Zone: zones[i%2]})
	}
	nodes := env.launch(t, specs...)
	for _, nd := range nodes {
		initNode(t, env, nd)
	}
	return env, env.cloud.lb, nodes
}

func initNode(t *testing.T, env *testEnv, nd *v1.Node) {
	t.Helper()
	md, err := env.cloud.instances.InstanceMetadata(t.Context(), nd)
	if err != nil {
		t.Fatal(err)
	}
	nd.Spec.ProviderID = md.ProviderID
	nd.Status.Addresses = md.NodeAddresses
}

func internalSvc(uid string, ann map[string]string, ports ...v1.ServicePort) *v1.Service {
	all := map[string]string{string(annotationLBType): "Internal"}
	for k, v := range ann {
		all[k] = v
	}
	svc := svcWith(all, ports...)
	if uid != "" {
		svc.UID = types.UID(uid)
		svc.Name = "web-" + uid[:4]
	}
	return svc
}

// groupMembers are the names of the instances in the cluster's group of
// zone, sorted.
func groupMembers(env *testEnv, zone string) []string {
	var out []string
	for _, m := range env.emu.InstanceGroupMembers(zone, instanceGroupName("kubernetes")) {
		out = append(out, lastSegment(m))
	}
	slices.Sort(out)
	return out
}

// TestInternalLoadBalancer: an internal Service gets an internal IP in
// the subnetwork (its address reserved only while the rule is made, as
// upstream), the cluster's instance group in each zone with
// nodes, the shared regional health check, a backend service over the
// groups and an internal forwarding rule; a repeated ensure writes
// nothing; a node change is one group change per zone, and a second
// internal Service's update after it makes no write; deletions leave
// nothing, the groups going with the last internal Service.
func TestInternalLoadBalancer(t *testing.T) {
	env, lb, nodes := ilbEnv(t, 4)
	ctx := t.Context()
	zones := env.emu.Config().Zones
	svc := internalSvc("", nil, v1.ServicePort{Name: "http", Port: 80, Protocol: v1.ProtocolTCP, NodePort: 30080}, v1.ServicePort{Name: "alt", Port: 8080, Protocol: v1.ProtocolTCP, NodePort: 30081})
	st, err := lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes)
	if err != nil {
		t.Fatal(err)
	}
	base := lbName(svc)
	ip := st.Ingress[0].IP
	// As upstream, the address is reserved only while the rule is made.
	if a, ok := env.emu.Address(base); ok {
		t.Errorf("address %v still reserved after the rule was made", a)
	}
	if !strings.HasPrefix(ip, "10.128.") {
		t.Errorf("internal IP %s is not in the subnetwork", ip)
	}
	fr, err := env.api.forwardingRules.Get(ctx, &computepb.GetForwardingRuleRequest{Project: env.s.ProjectID, Region: env.s.Region, ForwardingRule: base})
	if err != nil || fr.GetLoadBalancingScheme() != schemeInternal || fr.GetIPAddress() != ip || fmt.Sprint(fr.GetPorts()) != "[80 8080]" ||
		!strings.HasSuffix(fr.GetBackendService(), "/backendServices/"+base) || fr.GetAllowGlobalAccess() {
		t.Fatalf("forwarding rule %v: %v", fr, err)
	}
	bs, ok := env.emu.RegionBackendService(base)
	if !ok || bs.GetProtocol() != "TCP" || len(bs.GetBackends()) != 2 || !strings.HasSuffix(bs.GetHealthChecks()[0], "/healthChecks/"+nodeHealthCheckName("kubernetes")) {
		t.Fatalf("backend service %v", bs)
	}
	if got := fmt.Sprint(groupMembers(env, zones[0]), groupMembers(env, zones[1])); got != "[ilb-node-0 ilb-node-2] [ilb-node-1 ilb-node-3]" {
		t.Errorf("group members %s", got)
	}
	hc, ok := env.emu.HealthCheck(nodeHealthCheckName("kubernetes"))
	if !ok || hc.GetHttpHealthCheck().GetPort() != kubeProxyHealthPort {
		t.Errorf("health check %v", hc)
	}
	fw, err := env.api.firewalls.Get(ctx, &computepb.GetFirewallRequest{Project: env.s.ProjectID, Firewall: firewallName(base)})
	if err != nil || fmt.Sprint(fw.GetTargetTags()) != "[k8s-node]" || fmt.Sprint(fw.GetDestinationRanges()) != "["+ip+"]" {
		t.Fatalf("firewall %v: %v", fw, err)
	}

	// Ensuring again writes nothing.
	env.srv.ResetCalls()
	if _, err := lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if n := env.srv.CallCount(cloudsim.MutatingOps); n != 0 {
		t.Errorf("a repeated ensure made %d writes: %v", n, env.srv.Calls())
	}

	// A second internal Service shares the groups.
	other := internalSvc("9a9a9a9a-1b9a-4f3e-9d5c-0a1b2c3d4e5f", nil, v1.ServicePort{Port: 53, Protocol: v1.ProtocolUDP, NodePort: 30053})
	if _, err := lb.EnsureLoadBalancer(ctx, "kubernetes", other, nodes); err != nil {
		t.Fatal(err)
	}

	// Node 0 leaves, a node joins in the third zone: one removeInstances in
	// the first zone, a new group in the third, both backend services
	// take it; the other Service's update then writes nothing more than
	// its backend service.
	more := env.launch(t, cloudsim.InstanceSpec{Name: "ilb-node-9", Zone: zones[2]})
	initNode(t, env, more[0])
	now := append(slices.Clone(nodes[1:]), more[0])
	env.srv.ResetCalls()
	if err := lb.UpdateLoadBalancer(ctx, "kubernetes", svc, now); err != nil {
		t.Fatal(err)
	}
	calls := env.srv.Calls()
	if calls["compute:InstanceGroups.RemoveInstances"] != 1 || calls["compute:InstanceGroups.AddInstances"] != 1 || calls["compute:InstanceGroups.Insert"] != 1 ||
		calls["compute:RegionBackendServices.Patch"] != 1 {
		t.Errorf("node change calls %v", calls)
	}
	env.srv.ResetCalls()
	if err := lb.UpdateLoadBalancer(ctx, "kubernetes", other, now); err != nil {
		t.Fatal(err)
	}
	calls = env.srv.Calls()
	if calls["compute:InstanceGroups.AggregatedList"] != 0 || calls["compute:InstanceGroups.ListInstances"] != 0 || calls["compute:RegionBackendServices.Patch"] != 1 {
		t.Errorf("second Service's update calls %v", calls)
	}
	if got := fmt.Sprint(groupMembers(env, zones[0]), groupMembers(env, zones[2])); got != "[ilb-node-2] [ilb-node-9]" {
		t.Errorf("group members %s", got)
	}
	if bs, _ := env.emu.RegionBackendService(lbName(other)); len(bs.GetBackends()) != 3 {
		t.Errorf("other's backends %v", bs.GetBackends())
	}

	// Deleting the first keeps the groups the other uses; deleting the
	// other removes them.
	if err := lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", svc); err != nil {
		t.Fatal(err)
	}
	if _, ok := env.emu.InstanceGroup(zones[0], instanceGroupName("kubernetes")); !ok {
		t.Fatal("the groups went while another internal Service uses them")
	}
	if _, ok := env.emu.HealthCheck(nodeHealthCheckName("kubernetes")); !ok {
		t.Fatal("the shared health check went while another internal Service uses it")
	}
	if err := lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", other); err != nil {
		t.Fatal(err)
	}
	for _, r := range env.srv.Resources() {
		if strings.Contains(r.ID, base) || strings.Contains(r.ID, lbName(other)) || strings.Contains(r.ID, "k8s-ig--") || strings.Contains(r.ID, "k8s-kubernetes-node") {
			t.Errorf("left behind: %s %s", r.Kind, r.ID)
		}
	}
}

// TestInternalLoadBalancerChanges: ports and global access change in
// place of the rule with the IP kept; TCP and UDP get a rule and a
// backend service each on one shared address; a Service turning external
// loses its internal parts and back; a user's spec.loadBalancerIP is
// used and never released.
func TestInternalLoadBalancerChanges(t *testing.T) {
	env, lb, nodes := ilbEnv(t, 2)
	ctx := t.Context()
	svc := internalSvc("", nil)
	base := lbName(svc)
	st, err := lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes)
	if err != nil {
		t.Fatal(err)
	}
	ip := st.Ingress[0].IP
	rule := func(name string) *computepb.ForwardingRule {
		t.Helper()
		fr, err := env.api.forwardingRules.Get(ctx, &computepb.GetForwardingRuleRequest{Project: env.s.ProjectID, Region: env.s.Region, ForwardingRule: name})
		if err != nil {
			t.Fatalf("rule %s: %v", name, err)
		}
		return fr
	}

	// Global access and more than five ports: the rule is made again on the
	// same IP and takes all ports.
	svc.Annotations[string(annotationILBGlobalAccess)] = "true"
	for i := range 6 {
		svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Name: fmt.Sprint("p", i), Port: int32(9000 + i), Protocol: v1.ProtocolTCP, NodePort: int32(31000 + i)})
	}
	if st, err = lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil || st.Ingress[0].IP != ip {
		t.Fatalf("ensure: %+v, %v", st, err)
	}
	if fr := rule(base); !fr.GetAllowGlobalAccess() || !fr.GetAllPorts() || len(fr.GetPorts()) != 0 || fr.GetIPAddress() != ip {
		t.Errorf("rule %v", fr)
	}

	// TCP and UDP: a rule and a backend service each, one IP.
	svc.Spec.Ports = []v1.ServicePort{{Name: "dns", Port: 53, Protocol: v1.ProtocolUDP, NodePort: 30053}, {Name: "dnstcp", Port: 53, Protocol: v1.ProtocolTCP, NodePort: 30054}}
	if _, err := lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	udp := forwardingRuleName(base, v1.ProtocolUDP, false)
	if tcp, u := rule(base), rule(udp); tcp.GetIPProtocol() != "TCP" || u.GetIPProtocol() != "UDP" || u.GetIPAddress() != ip || tcp.GetIPAddress() != ip {
		t.Errorf("rules %v %v", tcp, u)
	}
	if bs, ok := env.emu.RegionBackendService(udp); !ok || bs.GetProtocol() != "UDP" {
		t.Errorf("udp backend service %v", bs)
	}
	// Only UDP: the UDP rule goes, the base rule and its backend service
	// turn UDP.
	svc.Spec.Ports = svc.Spec.Ports[:1]
	if _, err := lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if fr := rule(base); fr.GetIPProtocol() != "UDP" || fr.GetIPAddress() != ip {
		t.Errorf("rule %v", fr)
	}
	if _, ok := env.emu.RegionBackendService(udp); ok {
		t.Error("the -udp backend service stayed")
	}

	// Internal -> external: the internal parts go, the groups with them.
	delete(svc.Annotations, string(annotationLBType))
	delete(svc.Annotations, string(annotationILBGlobalAccess))
	if st, err = lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if fr := rule(base); fr.GetLoadBalancingScheme() != schemeExternal || fr.GetIPAddress() != st.Ingress[0].IP || st.Ingress[0].IP == ip {
		t.Errorf("external rule %v, status %v", fr, st)
	}
	if len(env.emu.RegionBackendServices()) != 0 || len(env.emu.InstanceGroups()) != 0 {
		t.Errorf("internal parts left: %v %v", env.emu.RegionBackendServices(), env.emu.InstanceGroups())
	}
	// and back.
	svc.Annotations[string(annotationLBType)] = "Internal"
	if _, err = lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if fr := rule(base); fr.GetLoadBalancingScheme() != schemeInternal {
		t.Errorf("internal rule %v", fr)
	}
	if _, ok := env.emu.TargetPool(base); ok {
		t.Error("the target pool stayed")
	}
	if err := lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", svc); err != nil {
		t.Fatal(err)
	}

	// The user's internal address.
	userAddr := "user-internal"
	if err := waitOp(ctx)(env.api.addresses.Insert(ctx, &computepb.InsertAddressRequest{Project: env.s.ProjectID, Region: env.s.Region,
		AddressResource: &computepb.Address{Name: &userAddr, AddressType: protoString("INTERNAL"), Purpose: protoString("SHARED_LOADBALANCER_VIP"), Subnetwork: protoString(env.emu.Fixture().SubnetworkURL)}})); err != nil {
		t.Fatal(err)
	}
	ua, err := env.api.addresses.Get(ctx, &computepb.GetAddressRequest{Project: env.s.ProjectID, Region: env.s.Region, Address: userAddr})
	if err != nil {
		t.Fatal(err)
	}
	pinned := internalSvc("7f7f7f7f-1b9a-4f3e-9d5c-0a1b2c3d4e5f", nil)
	pinned.Spec.LoadBalancerIP = ua.GetAddress()
	if st, err := lb.EnsureLoadBalancer(ctx, "kubernetes", pinned, nodes); err != nil || st.Ingress[0].IP != ua.GetAddress() {
		t.Fatalf("pinned: %+v, %v", st, err)
	}
	if err := lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", pinned); err != nil {
		t.Fatal(err)
	}
	if _, err := env.api.addresses.Get(ctx, &computepb.GetAddressRequest{Project: env.s.ProjectID, Region: env.s.Region, Address: userAddr}); err != nil {
		t.Errorf("the user's address was released: %v", err)
	}
	for _, r := range env.srv.Resources() {
		if strings.Contains(r.ID, base) || strings.Contains(r.ID, lbName(pinned)) || strings.Contains(r.ID, "k8s-ig--") {
			t.Errorf("left behind: %s %s", r.Kind, r.ID)
		}
	}
}
