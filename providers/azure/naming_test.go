package azure

import (
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	azemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/azure"
)

// Upstream's names (cloud-provider-azure v1.36.5; naming.go cites each
// function), worked out by hand from its rules for one UID. MUST NOT
// change: existing frontends, rules, probes and public IPs are found by
// them.
func TestUpstreamNamesGolden(t *testing.T) {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "6f2b1c3d-1234-4abc-8def-0123456789ab"}}
	tcp80 := v1.ServicePort{Protocol: v1.ProtocolTCP, Port: 80}
	udp53 := v1.ServicePort{Protocol: v1.ProtocolUDP, Port: 53}

	n := upstreamNames("kubernetes", svc)
	for what, got := range map[string][2]string{
		"base":     {n.base, "a6f2b1c3d12344abc8def0123456789a"}, // 32: the UID's last digit cut
		"frontend": {n.frontend, "a6f2b1c3d12344abc8def0123456789a"},
		"rule":     {n.rule(tcp80), "a6f2b1c3d12344abc8def0123456789a-TCP-80"},
		"udp rule": {n.rule(udp53), "a6f2b1c3d12344abc8def0123456789a-UDP-53"},
		"pip":      {n.pip, "kubernetes-a6f2b1c3d12344abc8def0123456789a"},
		"pool":     {(&loadBalancers{clusterID: "kubernetes"}).poolName(false), "kubernetes"},
		// IPv6: the pool always carries -IPv6; the Service's parts only
		// when it is dual-stack (azure_utils.go:435-440).
		"IPv6 pool":          {(&loadBalancers{clusterID: "kubernetes"}).poolName(true), "kubernetes-IPv6"},
		"dual IPv6 frontend": {n.forFamily(true, true).frontend, "a6f2b1c3d12344abc8def0123456789a-IPv6"},
		"dual IPv6 rule":     {n.forFamily(true, true).rule(tcp80), "a6f2b1c3d12344abc8def0123456789a-TCP-80-IPv6"},
		"dual IPv6 pip":      {n.forFamily(true, true).pip, "kubernetes-a6f2b1c3d12344abc8def0123456789a-IPv6"},
		"dual IPv4 rule":     {n.forFamily(false, true).rule(tcp80), "a6f2b1c3d12344abc8def0123456789a-TCP-80"},
		"IPv6-only frontend": {n.forFamily(true, false).frontend, "a6f2b1c3d12344abc8def0123456789a"},
		"IPv6-only rule":     {n.forFamily(true, false).rule(tcp80), "a6f2b1c3d12344abc8def0123456789a-TCP-80"},
	} {
		if got[0] != got[1] {
			t.Errorf("%s = %q, want %q", what, got[0], got[1])
		}
	}

	// An internal Service on an annotated subnet: the subnet joins the
	// frontend and rule names.
	internal := svc.DeepCopy()
	internal.Annotations = map[string]string{string(annotationInternal): "true", string(annotationInternalSubnet): "lb-subnet"}
	n = upstreamNames("kubernetes", internal)
	if n.frontend != "a6f2b1c3d12344abc8def0123456789a-lb-subnet" || n.rule(tcp80) != "a6f2b1c3d12344abc8def0123456789a-lb-subnet-TCP-80" {
		t.Errorf("internal subnet names: frontend %q rule %q", n.frontend, n.rule(tcp80))
	}
	if n6 := n.forFamily(true, true); n6.frontend != "a6f2b1c3d12344abc8def0123456789a-lb-subnet-IPv6" || n6.rule(tcp80) != "a6f2b1c3d12344abc8def0123456789a-lb-subnet-TCP-80-IPv6" {
		t.Errorf("internal subnet IPv6 names: frontend %q rule %q", n6.frontend, n6.rule(tcp80))
	}
	// The subnet annotation on a public Service is not part of a name.
	public := svc.DeepCopy()
	public.Annotations = map[string]string{string(annotationInternalSubnet): "lb-subnet"}
	if n := upstreamNames("kubernetes", public); n.frontend != n.base {
		t.Errorf("public Service frontend %q", n.frontend)
	}

	// Long subnets: the frontend is cut to 75 with its last character
	// made "_" unless a letter; the rule's subnet part is cut to fit 75.
	long := svc.DeepCopy()
	long.Annotations = map[string]string{string(annotationInternal): "true", string(annotationInternalSubnet): strings.Repeat("s", 40) + "-0123456789"}
	n = upstreamNames("kubernetes", long)
	if len(n.frontend) != 75 || !strings.HasSuffix(n.frontend, "_") || !strings.HasPrefix(n.frontend, n.base+"-ssss") {
		t.Errorf("long frontend %q (%d)", n.frontend, len(n.frontend))
	}
	if r := n.rule(tcp80); len(r) > 75 || !strings.HasSuffix(r, "-TCP-80") || !strings.HasPrefix(r, n.base+"-ssss") {
		t.Errorf("long rule %q (%d)", r, len(r))
	}

	// The public IP keeps its first 75 characters.
	cluster := strings.Repeat("c", 60)
	if n := upstreamNames(cluster, svc); n.pip != (cluster + "-" + n.base)[:75] {
		t.Errorf("long public IP name %q", n.pip)
	}

	// The tag keys upstream writes and reads on public IPs
	// (pkg/consts/consts.go:351-358), which ownership depends on.
	for got, want := range map[string]string{tagService: "k8s-azure-service", tagCluster: "k8s-azure-cluster-name", tagLegacyService: "service", tagLegacyCluster: "kubernetes-cluster-name"} {
		if got != want {
			t.Errorf("tag key %q, want upstream's %q", got, want)
		}
	}

	// This manager's names before upstream's: the whole UID.
	old := legacyNames("kubernetes", svc)
	if old.base != "a6f2b1c3d12344abc8def0123456789ab" || old.pip != "kubernetes-a6f2b1c3d12344abc8def0123456789ab" || old.rule(tcp80) != "a6f2b1c3d12344abc8def0123456789ab-TCP-80" {
		t.Errorf("legacy names %+v", old)
	}
	// Neither naming's parts are the other's.
	if ownedBy(old.rule(tcp80), n.base) || ownedBy(upstreamNames("kubernetes", svc).rule(tcp80), old.base) {
		t.Error("legacy and upstream rule names overlap")
	}
}

// A Service an earlier version of this manager provisioned (the whole
// UID in its names) keeps its frontend, public IP and address; deleting
// it removes everything of either naming.
func TestLegacyNamesKept(t *testing.T) {
	env := newTestEnv(t, azemu.Config{}, nil)
	nodes := env.lbNodes(t, 2)
	ctx := t.Context()
	svc := lbService("legacy", 80)
	l := env.cloud.lb
	old := legacyNames(l.clusterID, svc)

	// What the earlier version made: its public IP and frontend, rule and
	// probe under the legacy names.
	sp, err := serviceSpec(l.cfg, svc)
	if err != nil {
		t.Fatal(err)
	}
	pipID, addr, err := l.createPublicIP(ctx, svc, l.cfg.LoadBalancerResourceGroup, old.pip, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	fe := &armnetwork.FrontendIPConfiguration{Properties: &armnetwork.FrontendIPConfigurationPropertiesFormat{PublicIPAddress: &armnetwork.PublicIPAddress{ID: &pipID}}}
	backends, err := l.backendAddresses(ctx, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.public.submit(ctx, true, func(lb *armnetwork.LoadBalancer) (bool, error) {
		ensureService(lb, l.lbID(l.lbNameFor(false)), []*feWant{{f: sp.fams[0], names: old, fe: fe, pool: l.poolName(false)}}, sp)
		return l.ensurePools(lb, backends, false), nil
	}); err != nil {
		t.Fatal(err)
	}

	st, err := l.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Ingress) != 1 || st.Ingress[0].IP != addr {
		t.Errorf("status %+v, want the legacy address %s", st, addr)
	}
	lb, _ := env.lb(t, "kubernetes")
	var fes []string
	for _, f := range lb.Properties.FrontendIPConfigurations {
		fes = append(fes, deref(f.Name))
	}
	if len(fes) != 1 || fes[0] != old.frontend {
		t.Errorf("frontends %v, want only the legacy %s", fes, old.frontend)
	}
	up := upstreamNames(l.clusterID, svc)
	if _, ok := env.emu.PublicIP(env.fx.ResourceGroup, up.pip); ok {
		t.Errorf("a second public IP %s was made", up.pip)
	}

	if err := l.EnsureLoadBalancerDeleted(ctx, "kubernetes", svc); err != nil {
		t.Fatal(err)
	}
	if _, ok := env.emu.PublicIP(env.fx.ResourceGroup, old.pip); ok {
		t.Errorf("legacy public IP %s left", old.pip)
	}
	if lb, ok := env.lb(t, "kubernetes"); ok && lb.Properties != nil && len(lb.Properties.LoadBalancingRules)+len(lb.Properties.FrontendIPConfigurations) > 0 {
		t.Errorf("load balancer parts left: %+v", lb.Properties)
	}
}
