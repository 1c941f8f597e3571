package gce

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
	confgce "github.com/multicloud-ccm/multicloud-ccm/test/conformance/gce"
)

// switchEnv is the backend on the conformance adapter's emulator, with
// two nodes, the upstream CCM's cluster ID (kube-system/ingress-uid) set
// as at Initialize, and the adapter to make upstream's load balancers.
func switchEnv(t *testing.T) (*testEnv, *confgce.Cloud, []conformance.Instance, []*v1.Node) {
	t.Helper()
	cl, insts := conformance.StartWithNodes(t, confgce.Adapter{}, conformance.Options{ClusterID: "kubernetes"})
	c := cl.(*confgce.Cloud)
	env := newTestEnvOn(t, c.Emulator(), c.Server(), nil)
	env.cloud.lb.setSharedID(c.UpstreamConfigMaps()[0].Data["uid"])
	var nodes []*v1.Node
	for _, in := range insts {
		nd := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: in.ID}}
		initNode(t, env, nd)
		nodes = append(nodes, nd)
	}
	return env, c, insts, nodes
}

// switchSvc is a Service as the upstream CCM served it: one TCP port.
func switchSvc(name, uid string, ann map[string]string, local bool) *v1.Service {
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(uid), Annotations: ann},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, SessionAffinity: v1.ServiceAffinityNone,
			Ports: []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080), NodePort: 30080}}},
	}
	if local {
		svc.Spec.ExternalTrafficPolicy, svc.Spec.HealthCheckNodePort = v1.ServiceExternalTrafficPolicyLocal, 31999
	}
	return svc
}

// firewallsNow are the project's firewall rules by name.
func firewallsNow(env *testEnv) map[string]*computepb.Firewall {
	out := map[string]*computepb.Firewall{}
	for _, f := range env.emu.Firewalls() {
		out[f.GetName()] = f
	}
	return out
}

// TestSwitchKeepsUpstreamParts: the load balancers the upstream GCE CCM
// made (external, external with externalTrafficPolicy Local, internal;
// made by the conformance adapter as upstream makes them) are taken over
// with no write to their firewall rules and, internal too, no address
// reserved: upstream's health-check rules keep their destination (the
// Service's IP) and description. A later change (a second port, and for
// the Local Service another healthCheckNodePort) rewrites only what it
// must, leaving upstream's descriptions, destinations and priorities, and
// no address behind; deletion leaves nothing.
func TestSwitchKeepsUpstreamParts(t *testing.T) {
	env, c, insts, nodes := switchEnv(t)
	ctx := t.Context()
	lb := env.cloud.lb
	upID := c.UpstreamConfigMaps()[0].Data["uid"]
	for _, tc := range []struct {
		name  string
		svc   *v1.Service
		hcFWs []string // upstream's health-check rules the Service uses
	}{
		{"external", switchSvc("ext", "1234abcd-0000-1111-2222-333344445555", nil, false), []string{"k8s-" + upID + "-node-http-hc"}},
		{"external Local", switchSvc("local", "2234abcd-0000-1111-2222-333344445555", nil, true), []string{"k8s-a2234abcd00001111222233334444555-http-hc"}},
		{"internal", switchSvc("int", "3234abcd-0000-1111-2222-333344445555", map[string]string{string(annotationLBType): "Internal"}, false), []string{"k8s-" + upID + "-node-hc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := tc.svc
			base := lbName(svc)
			up, err := c.MakeUpstreamLoadBalancer(svc, "kubernetes", insts)
			if err != nil {
				t.Fatal(err)
			}
			ip := up.Status.Ingress[0].IP
			before := firewallsNow(env)
			for _, name := range append([]string{firewallName(base)}, tc.hcFWs...) {
				if before[name] == nil {
					t.Fatalf("upstream made no firewall rule %s: %v", name, slices.Sorted(maps.Keys(before)))
				}
			}
			if local := before["k8s-"+base+"-http-hc"]; local != nil && fmt.Sprint(local.GetDestinationRanges()) != "["+ip+"]" {
				t.Fatalf("upstream's Local health-check rule %v", local)
			}

			// The switch: the first sync of this manager.
			env.srv.ResetCalls()
			st, err := lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes)
			if err != nil {
				t.Fatal(err)
			}
			if st.Ingress[0].IP != ip {
				t.Errorf("status %s, upstream's IP %s", st.Ingress[0].IP, ip)
			}
			writes := env.srv.CallCount(cloudsim.MutatingOps)
			t.Logf("switch: %d writes %v", writes, env.srv.Calls())
			for _, op := range []string{"compute:Firewalls.Update", "compute:Firewalls.Patch", "compute:Firewalls.Insert", "compute:Firewalls.Delete", "compute:Addresses.Insert"} {
				if n := env.srv.CallCount(op); n != 0 {
					t.Errorf("switch: %s called %d times", op, n)
				}
			}
			for name, fw := range firewallsNow(env) {
				if !proto.Equal(fw, before[name]) {
					t.Errorf("switch changed firewall rule %s:\n%v\nwas\n%v", name, fw, before[name])
				}
			}
			if a := env.emu.Addresses(); len(a) != 0 {
				t.Errorf("switch left addresses %v", a)
			}

			// A later change: a second port; Local: another health check port.
			svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Name: "https", Protocol: v1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(8443), NodePort: 30443})
			if svc.Spec.HealthCheckNodePort != 0 {
				svc.Spec.HealthCheckNodePort = 31998
			}
			env.srv.ResetCalls()
			if st, err = lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
				t.Fatal(err)
			}
			t.Logf("change: %v", env.srv.Calls())
			if st.Ingress[0].IP != ip {
				t.Errorf("after the change, status %s, upstream's IP %s", st.Ingress[0].IP, ip)
			}
			after := firewallsNow(env)
			client := after[firewallName(base)]
			if want := `{"kubernetes.io/service-name":"default/` + svc.Name + `", "kubernetes.io/service-ip":"` + ip + `"}`; client.GetDescription() != want ||
				fmt.Sprint(client.GetDestinationRanges()) != "["+ip+"]" || client.GetPriority() != before[firewallName(base)].GetPriority() ||
				fmt.Sprint(allowedSpans(client)) != "[tcp:443-443 tcp:80-80]" {
				t.Errorf("client rule after the change: %v", client)
			}
			for _, name := range tc.hcFWs {
				fw, was := after[name], before[name]
				if fw.GetDescription() != was.GetDescription() || !slices.Equal(fw.GetDestinationRanges(), was.GetDestinationRanges()) || fw.GetPriority() != was.GetPriority() {
					t.Errorf("health-check rule %s after the change:\n%v\nwas\n%v", name, fw, was)
				}
				if svc.Spec.HealthCheckNodePort != 0 && fmt.Sprint(fw.GetAllowed()[0].GetPorts()) != "[31998]" {
					t.Errorf("health-check rule %s does not follow the port: %v", name, fw.GetAllowed())
				}
				if svc.Spec.HealthCheckNodePort == 0 && !proto.Equal(fw, was) {
					t.Errorf("shared health-check rule %s changed:\n%v\nwas\n%v", name, fw, was)
				}
			}
			if a := env.emu.Addresses(); len(a) != 0 {
				t.Errorf("the change left addresses %v", a)
			}

			// Nothing to do: no write.
			env.srv.ResetCalls()
			if _, err = lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
				t.Fatal(err)
			}
			if n := env.srv.CallCount(cloudsim.MutatingOps); n != 0 {
				t.Errorf("a repeated ensure made %d writes: %v", n, env.srv.Calls())
			}

			if err := lb.EnsureLoadBalancerDeleted(ctx, "kubernetes", svc); err != nil {
				t.Fatal(err)
			}
			for _, r := range env.srv.Resources() {
				if strings.Contains(r.Name, base[:20]) {
					t.Errorf("left after deletion: %v", r)
				}
			}
		})
	}
	if left := env.srv.Resources(); len(left) > 0 {
		for _, r := range left {
			if r.Kind != "compute#instance" && r.Kind != "compute#network" && r.Kind != "compute#subnetwork" && r.Kind != "compute#route" {
				t.Errorf("left after every deletion: %s %s", r.Kind, r.Name)
			}
		}
	}
}

// TestSwitchedNamesAsUpstream: on a switched cluster (the upstream CCM's
// cluster ID from kube-system/ingress-uid), the parts this manager makes
// for a new Service carry the names the upstream GCE CCM gives the same
// Service's parts (the conformance adapter makes them as upstream does,
// on an emulator of its own), so upstream, started again, finds every one
// of them by name. Golden: the names, MUST NOT change.
func TestSwitchedNamesAsUpstream(t *testing.T) {
	const upID = "5f1e2d3c4b5a6978" // the adapter's ingress-uid
	for _, tc := range []struct {
		name   string
		svc    func() *v1.Service
		golden []string
	}{
		{"external", func() *v1.Service { return switchSvc("ext", "1234abcd-0000-1111-2222-333344445555", nil, false) }, []string{
			"compute#firewall k8s-" + upID + "-node-http-hc",
			"compute#firewall k8s-fw-a1234abcd00001111222233334444555",
			"compute#forwardingRule a1234abcd00001111222233334444555",
			"compute#httpHealthCheck k8s-" + upID + "-node",
			"compute#targetPool a1234abcd00001111222233334444555",
		}},
		{"external Local", func() *v1.Service { return switchSvc("local", "2234abcd-0000-1111-2222-333344445555", nil, true) }, []string{
			"compute#firewall k8s-a2234abcd00001111222233334444555-http-hc",
			"compute#firewall k8s-fw-a2234abcd00001111222233334444555",
			"compute#forwardingRule a2234abcd00001111222233334444555",
			"compute#httpHealthCheck a2234abcd00001111222233334444555",
			"compute#targetPool a2234abcd00001111222233334444555",
		}},
		{"internal", func() *v1.Service {
			return switchSvc("int", "3234abcd-0000-1111-2222-333344445555", map[string]string{string(annotationLBType): "Internal"}, false)
		}, []string{
			"compute#backendService a3234abcd00001111222233334444555",
			"compute#firewall k8s-" + upID + "-node-hc",
			"compute#firewall k8s-fw-a3234abcd00001111222233334444555",
			"compute#forwardingRule a3234abcd00001111222233334444555",
			"compute#healthCheck k8s-" + upID + "-node",
			"compute#instanceGroup k8s-ig--" + upID,
			"compute#instanceGroup k8s-ig--" + upID,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			names := func(env *testEnv) ([]string, map[string]*computepb.Firewall) {
				var out []string
				for _, r := range env.srv.Resources() {
					switch r.Kind {
					case "compute#instance", "compute#network", "compute#subnetwork", "compute#route":
						continue
					}
					out = append(out, r.Kind+" "+r.Name)
				}
				slices.Sort(out)
				return out, firewallsNow(env)
			}
			ours, _, _, nodes := switchEnv(t)
			if ours.cloud.lb.sharedID() != upID {
				t.Fatalf("shared ID %s", ours.cloud.lb.sharedID())
			}
			if _, err := ours.cloud.lb.EnsureLoadBalancer(t.Context(), "kubernetes", tc.svc(), nodes); err != nil {
				t.Fatal(err)
			}
			upEnv, c, insts, _ := switchEnv(t)
			if _, err := c.MakeUpstreamLoadBalancer(tc.svc(), "kubernetes", insts); err != nil {
				t.Fatal(err)
			}
			got, ourFWs := names(ours)
			want, upFWs := names(upEnv)
			if !slices.Equal(got, want) {
				t.Errorf("names\n%s\nupstream's\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if !slices.Equal(got, tc.golden) {
				t.Errorf("names\n%s\ngolden\n%s", strings.Join(got, "\n"), strings.Join(tc.golden, "\n"))
			}
			// The rules admit what upstream's admit, to the same tags.
			for name, up := range upFWs {
				fw := ourFWs[name]
				if fw == nil || !slices.Equal(sorted(fw.GetSourceRanges()), sorted(up.GetSourceRanges())) || !slices.Equal(fw.GetTargetTags(), up.GetTargetTags()) ||
					!slices.Equal(allowedSpans(fw), allowedSpans(up)) || len(fw.GetDestinationRanges()) > len(up.GetDestinationRanges()) {
					t.Errorf("firewall rule %s:\n%v\nupstream's\n%v", name, fw, up)
				}
				if len(fw.GetDestinationRanges()) != len(up.GetDestinationRanges()) {
					t.Logf("firewall rule %s: destinations %v, upstream's %v", name, fw.GetDestinationRanges(), up.GetDestinationRanges())
				}
			}
		})
	}
}
