package gce

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
)

func svcWith(ann map[string]string, ports ...v1.ServicePort) *v1.Service {
	if len(ports) == 0 {
		ports = []v1.ServicePort{{Port: 80, Protocol: v1.ProtocolTCP, NodePort: 30080}}
	}
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "2c4d7d4e-1b9a-4f3e-9d5c-0a1b2c3d4e5f", Annotations: ann},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: ports},
	}
}

// TestServiceSpec: what each annotation and field asks for, and a clear
// error naming the annotation for each bad value.
func TestServiceSpec(t *testing.T) {
	s := &Section{ProjectID: "my-project-123", Region: "europe-west1", SubnetworkName: "nodes"}
	sp, err := serviceSpec(s, svcWith(nil,
		v1.ServicePort{Port: 53, Protocol: v1.ProtocolUDP, NodePort: 30053},
		v1.ServicePort{Port: 53, Protocol: v1.ProtocolTCP, NodePort: 30054}))
	if err != nil || sp.internal || sp.tier != tierPremium || len(sp.protocols) != 2 || sp.sources[0] != "0.0.0.0/0" {
		t.Fatalf("default: %+v, %v", sp, err)
	}
	sp, err = serviceSpec(s, svcWith(map[string]string{
		string(annotationLBType):          "Internal",
		string(annotationILBSubnet):       "ilb-subnet",
		string(annotationILBGlobalAccess): "true",
	}))
	if err != nil || !sp.internal || sp.subnet != "ilb-subnet" || !sp.globalAccess {
		t.Fatalf("internal: %+v, %v", sp, err)
	}
	sp, err = serviceSpec(s, svcWith(map[string]string{string(annotationNetworkTier): "Standard"}))
	if err != nil || sp.tier != tierStandard {
		t.Fatalf("standard tier: %+v, %v", sp, err)
	}
	if _, err := serviceSpec(s, svcWith(map[string]string{string(annotationRBS): "enabled"})); !errors.Is(err, cloudprovider.ImplementedElsewhere) {
		t.Errorf("l4-rbs: %v, want ImplementedElsewhere", err)
	}
	for ann, v := range map[string]string{
		string(annotationLBType):          "internal-ish",
		string(annotationNetworkTier):     "Gold",
		string(annotationILBGlobalAccess): "yes please",
		string(annotationILBSubnet):       "Not_A_Subnet",
	} {
		svc := svcWith(map[string]string{ann: v})
		if ann == string(annotationILBSubnet) {
			svc.Annotations[string(annotationLBType)] = "Internal"
		}
		if _, err := serviceSpec(s, svc); err == nil || !strings.Contains(err.Error(), ann) {
			t.Errorf("%s=%q: err %v", ann, v, err)
		}
	}
	noSubnet := &Section{ProjectID: "my-project-123", Region: "europe-west1"}
	if _, err := serviceSpec(noSubnet, svcWith(map[string]string{string(annotationLBType): "Internal"})); err == nil || !strings.Contains(err.Error(), "subnetworkName") {
		t.Errorf("internal without a subnetwork: %v", err)
	}
}

// TestLoadBalancerNames: upstream's names, and descriptions that say
// whose a resource is.
func TestLoadBalancerNames(t *testing.T) {
	svc := svcWith(nil)
	base := lbName(svc)
	if base != "a2c4d7d4e1b9a4f3e9d5c0a1b2c3d4e5" {
		t.Errorf("base name %s", base)
	}
	if forwardingRuleName(base, v1.ProtocolTCP, true) != base || forwardingRuleName(base, v1.ProtocolUDP, false) != base+"-udp" {
		t.Error("forwarding rule names")
	}
	// Upstream's names (gce_loadbalancer_naming.go); MUST NOT change.
	if firewallName(base) != "k8s-fw-"+base || healthCheckFirewallName(nodeHealthCheckName("Prod_1"), true) != "k8s-prod1-node-http-hc" ||
		healthCheckFirewallName(base, false) != "k8s-"+base+"-http-hc" ||
		internalHealthCheckFirewallName(nodeHealthCheckName("5f1e2d3c4b5a6978")) != "k8s-5f1e2d3c4b5a6978-node-hc" ||
		internalHealthCheckFirewallName(base) != base+"-hc" || instanceGroupName("5f1e2d3c4b5a6978") != "k8s-ig--5f1e2d3c4b5a6978" {
		t.Error("firewall and instance group names")
	}
	r := &routes{cfg: &Section{UpstreamClusterName: "a-cluster-name-longer-than-26"}}
	if p := r.upstreamRoutePrefix(); p != "a-cluster-name-longer-than-"[:26]+"-" {
		t.Errorf("upstream route prefix %q", p)
	}
	d := description{Service: "default/web", Cluster: "prod1"}.String()
	if !ours(d, "prod1", "default/web") || ours(d, "prod2", "") || ours(d, "prod1", "default/other") || ours("made by hand", "prod1", "") {
		t.Errorf("ownership of %s", d)
	}
}

// What the manager takes as its own: its descriptions, and the upstream
// GCE CCM's (no cluster ID), byte for byte as upstream writes them.
func TestOwnsUpstreamDescriptions(t *testing.T) {
	l := &loadBalancers{clusterID: "prod1"}
	l.setSharedID("3b2c1a0f9e8d7c6b")
	for _, c := range []struct {
		desc, svc, name string
		want            bool
	}{
		{description{Service: "default/web", Cluster: "prod1"}.String(), "default/web", "", true},
		{description{Service: "default/web", Cluster: "prod2"}.String(), "default/web", "", false},
		// A Service's parts (makeServiceDescription, makeFirewallDescription).
		{`{"kubernetes.io/service-name":"default/web"}`, "default/web", "", true},
		{`{"kubernetes.io/service-name":"default/web", "kubernetes.io/service-ip":"34.1.2.3"}`, "default/web", "", true},
		{`{"kubernetes.io/service-name":"default/other"}`, "default/web", "", false},
		// Health checks name themselves (makeHealthCheckDescription).
		{`{"kubernetes.io/service-name":"k8s-3b2c1a0f9e8d7c6b-node"}`, "", "k8s-3b2c1a0f9e8d7c6b-node", true},
		{`{"kubernetes.io/service-name":"a1234"}`, "default/web", "a1234", true},
		{`{"kubernetes.io/service-name":"k8s-other-node"}`, "", "k8s-3b2c1a0f9e8d7c6b-node", false},
		// The shared check's firewall rule names the cluster ID.
		{`{"kubernetes.io/cluster-id":"3b2c1a0f9e8d7c6b"}`, "", "", true},
		{`{"kubernetes.io/cluster-id":"someone-else"}`, "", "", false},
		{"made by hand", "", "", false},
	} {
		if got := l.owns(c.desc, c.svc, c.name); got != c.want {
			t.Errorf("owns(%s, %q, %q) = %v, want %v", c.desc, c.svc, c.name, got, c.want)
		}
	}
}
