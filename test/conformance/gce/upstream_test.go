package gce

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// TestMakeUpstreamLoadBalancer makes each adoption shape against the
// emulator and checks upstream's names and descriptions, that no address
// is left and that the adapter's view finds the load balancer.
func TestMakeUpstreamLoadBalancer(t *testing.T) {
	// Both of upstream's shapes, whichever the adoption scenario runs.
	shapes := map[string]map[string]string{"external": nil, "internal": {annotationLBType: "Internal"}}
	cl, insts := conformance.StartWithNodes(t, Adapter{}, conformance.Options{ClusterID: "cid"})
	c := cl.(*Cloud)
	uids := map[string]string{"external": "1234abcd-0000-1111-2222-333344445555", "internal": "9876abcd-0000-1111-2222-333344445555"}
	for _, shape := range []string{"external", "internal"} {
		t.Run(shape, func(t *testing.T) {
			svc := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc-" + shape, UID: types.UID(uids[shape]), Annotations: shapes[shape]},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, SessionAffinity: corev1.ServiceAffinityNone,
					Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}},
			}
			base := "a" + strings.ReplaceAll(uids[shape], "-", "")[:31]
			up, err := c.MakeUpstreamLoadBalancer(svc, "cid", insts)
			if shape == "internal" && err != nil && strings.Contains(err.Error(), "HealthChecks.Get is not emulated") {
				t.Skip("the emulator has no global health checks:", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			ip := up.Status.Ingress[0].IP
			lbs := c.LoadBalancers(types.NamespacedName{Namespace: "ns", Name: svc.Name})
			if len(lbs) != 1 || lbs[0].ID != up.ID || !slices.Equal(lbs[0].Ports, []int32{80}) || len(lbs[0].Backends) != 2 {
				t.Errorf("load balancers %+v, want one %s on 80 with 2 backends", lbs, up.ID)
			}
			svcDesc := `{"kubernetes.io/service-name":"ns/` + svc.Name + `"}`
			var rule string
			for _, r := range c.emu.ForwardingRules() {
				if r.GetName() == base {
					rule = r.GetDescription()
					if r.GetIPAddress() != ip {
						t.Errorf("rule %s on %s, status %s", base, r.GetIPAddress(), ip)
					}
				}
			}
			if rule != svcDesc {
				t.Errorf("rule %s described %q, want %q", base, rule, svcDesc)
			}
			fws := map[string]string{}
			for _, f := range c.emu.Firewalls() {
				fws[f.GetName()] = f.GetDescription()
			}
			if want := `{"kubernetes.io/service-name":"ns/` + svc.Name + `", "kubernetes.io/service-ip":"` + ip + `"}`; fws["k8s-fw-"+base] != want {
				t.Errorf("firewall k8s-fw-%s described %q, want %q", base, fws["k8s-fw-"+base], want)
			}
			hcFW, hcDesc := "k8s-"+upstreamUID+"-node-http-hc", `{"kubernetes.io/cluster-id":"`+upstreamUID+`"}`
			if shape == "internal" {
				hcFW, hcDesc = "k8s-"+upstreamUID+"-node-hc", ""
			}
			if d, ok := fws[hcFW]; !ok || d != hcDesc {
				t.Errorf("health check firewall %s: %t, described %q, want %q", hcFW, ok, d, hcDesc)
			}
			if a := c.emu.Addresses(); len(a) != 0 {
				t.Errorf("addresses left: %v", a)
			}
		})
	}
}
