package azure

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	v1 "k8s.io/api/core/v1"

	azemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/azure"
)

func dualStack(svc *v1.Service, families ...v1.IPFamily) *v1.Service {
	svc.Spec.IPFamilies = families
	return svc
}

// A Service's families and their addresses, read as upstream's
// getServiceLoadBalancerIP and getServicePIPName.
func TestServiceFamilies(t *testing.T) {
	s := &Section{SubnetName: "nodes"}
	t.Run("no families is IPv4", func(t *testing.T) {
		sp, err := serviceSpec(s, lbService("v4", 80))
		if err != nil || len(sp.fams) != 1 || sp.fams[0].v6 || sp.dualStack {
			t.Fatalf("fams %+v err %v", sp.fams, err)
		}
	})
	t.Run("dual-stack in the Service's order, each family's address and public IP", func(t *testing.T) {
		svc := dualStack(lbService("dual", 80), v1.IPv6Protocol, v1.IPv4Protocol)
		svc.Annotations = map[string]string{
			string(annotationIPv4):        "20.1.2.3",
			string(annotationPIPNameIPv6): "web-v6",
		}
		sp, err := serviceSpec(s, svc)
		if err != nil {
			t.Fatal(err)
		}
		if !sp.dualStack || len(sp.fams) != 2 || !sp.fams[0].v6 || sp.fams[1].v6 {
			t.Fatalf("fams %+v", sp.fams)
		}
		if sp.fams[0].pipName != "web-v6" || sp.fams[0].staticIP != "" || sp.fams[1].staticIP != "20.1.2.3" || sp.fams[1].pipName != "" {
			t.Errorf("fams %+v", sp.fams)
		}
	})
	t.Run("spec.loadBalancerIP serves its own family only", func(t *testing.T) {
		svc := dualStack(lbService("lbip", 80), v1.IPv4Protocol, v1.IPv6Protocol)
		svc.Spec.LoadBalancerIP = "2001:db8::5"
		sp, err := serviceSpec(s, svc)
		if err != nil {
			t.Fatal(err)
		}
		if sp.fams[0].staticIP != "" || sp.fams[1].staticIP != "2001:db8::5" {
			t.Errorf("fams %+v", sp.fams)
		}
	})
	t.Run("an IPv6 Service takes azure-pip-name when azure-pip-name-ipv6 is unset", func(t *testing.T) {
		svc := dualStack(lbService("v6", 80), v1.IPv6Protocol)
		svc.Annotations = map[string]string{string(annotationPIPName): "plain"}
		sp, err := serviceSpec(s, svc)
		if err != nil || sp.fams[0].pipName != "plain" {
			t.Fatalf("fams %+v err %v", sp.fams, err)
		}
		// A dual-stack Service's azure-pip-name is its IPv4 one only.
		svc = dualStack(lbService("d", 80), v1.IPv4Protocol, v1.IPv6Protocol)
		svc.Annotations = map[string]string{string(annotationPIPName): "plain"}
		if sp, err = serviceSpec(s, svc); err != nil || sp.fams[0].pipName != "plain" || sp.fams[1].pipName != "" {
			t.Fatalf("fams %+v err %v", sp.fams, err)
		}
	})
	t.Run("an internal Service's IPv6 half has no floating IP", func(t *testing.T) {
		svc := dualStack(lbService("int", 80), v1.IPv4Protocol, v1.IPv6Protocol)
		svc.Annotations = map[string]string{string(annotationInternal): "true"}
		sp, err := serviceSpec(s, svc)
		if err != nil || !sp.fams[0].floatingIP || sp.fams[1].floatingIP {
			t.Fatalf("fams %+v err %v", sp.fams, err)
		}
	})
	for name, ann := range map[string]map[string]string{
		"an IPv4 address in the IPv6 annotation": {string(annotationIPv6): "20.1.2.3"},
		"an IPv6 address in the IPv4 annotation": {string(annotationIPv4): "2001:db8::1"},
		"an IPv6 public IP name and an address":  {string(annotationPIPNameIPv6): "p", string(annotationIPv6): "2001:db8::1"},
	} {
		t.Run("refused: "+name, func(t *testing.T) {
			svc := dualStack(lbService("bad", 80), v1.IPv4Protocol, v1.IPv6Protocol)
			svc.Annotations = ann
			if _, err := serviceSpec(s, svc); err == nil {
				t.Fatal("no error")
			} else if !strings.Contains(err.Error(), "annotation service.beta.kubernetes.io/azure-") {
				t.Errorf("error %q does not name the annotation", err)
			}
		})
	}
}

// Each family's destinations get that family's rules: the service tags
// (Internet too) serve both, ranges only their own family.
func TestSecurityRulesByFamily(t *testing.T) {
	s := &Section{SubnetName: "nodes"}
	svc := dualStack(lbService("sec", 80), v1.IPv4Protocol, v1.IPv6Protocol)
	svc.Spec.LoadBalancerSourceRanges = []string{"203.0.113.0/24", "2001:db8:1::/48"}
	svc.Annotations = map[string]string{string(annotationAllowedServiceTags): "AzureFrontDoor.Backend"}
	sp, err := serviceSpec(s, svc)
	if err != nil {
		t.Fatal(err)
	}
	rules := sp.access.rules([]string{"20.1.2.3", "2603:1030::7"})
	got := map[string]string{}
	for _, r := range rules {
		got[*r.Name] = strings.Join(sources(r.Properties), ",") + " -> " + strings.Join(destinations(r.Properties), ",")
	}
	want := map[string]string{
		allowRuleName(armnetwork.SecurityRuleProtocolTCP, false, []string{"AzureFrontDoor.Backend"}, []int32{80}): "AzureFrontDoor.Backend -> 20.1.2.3",
		allowRuleName(armnetwork.SecurityRuleProtocolTCP, false, []string{"203.0.113.0/24"}, []int32{80}):         "203.0.113.0/24 -> 20.1.2.3",
		allowRuleName(armnetwork.SecurityRuleProtocolTCP, true, []string{"AzureFrontDoor.Backend"}, []int32{80}):  "AzureFrontDoor.Backend -> 2603:1030::7",
		allowRuleName(armnetwork.SecurityRuleProtocolTCP, true, []string{"2001:db8:1::/48"}, []int32{80}):         "2001:db8:1::/48 -> 2603:1030::7",
	}
	if len(got) != len(want) {
		t.Fatalf("rules %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("rule %s: %q, want %q", k, got[k], v)
		}
	}
	if names := sp.access.allowRuleNames(); len(names) != 4 || !slices.Contains(names, allowRuleName(armnetwork.SecurityRuleProtocolTCP, true, []string{"2001:db8:1::/48"}, []int32{80})) {
		t.Errorf("allow rule names %v", names)
	}
}

// A dual-stack internal Service on the load balancer: a frontend, rule
// and probe per family, each family's rule on its own pool, the IPv6 one
// to the NodePort without floating IP; going single-stack drops the IPv6
// frontend and rules.
func TestEnsureServiceDualStack(t *testing.T) {
	s := &Section{SubnetName: "nodes"}
	l := &loadBalancers{cfg: s, clusterID: "k"}
	svc := dualStack(lbService("ds", 80), v1.IPv4Protocol, v1.IPv6Protocol)
	svc.Annotations = map[string]string{string(annotationInternal): "true"}
	sp, err := serviceSpec(s, svc)
	if err != nil {
		t.Fatal(err)
	}
	base := upstreamNames("k", svc)
	wants := l.famWants(base, sp)
	for _, w := range wants {
		w.fe = &armnetwork.FrontendIPConfiguration{Properties: &armnetwork.FrontendIPConfigurationPropertiesFormat{
			Subnet: &armnetwork.Subnet{ID: new("/subnets/nodes")}, PrivateIPAllocationMethod: new(armnetwork.IPAllocationMethodDynamic),
		}}
		if w.f.v6 {
			w.fe.Properties.PrivateIPAddressVersion = new(armnetwork.IPVersionIPv6)
		}
	}
	lb := &armnetwork.LoadBalancer{}
	if !ensureService(lb, "/lb", wants, sp) {
		t.Fatal("no change")
	}
	var fes, rules []string
	for _, fe := range lb.Properties.FrontendIPConfigurations {
		fes = append(fes, *fe.Name)
	}
	for _, r := range lb.Properties.LoadBalancingRules {
		p := r.Properties
		rules = append(rules, *r.Name)
		v6 := strings.HasSuffix(*r.Name, "-IPv6")
		wantPool := "/lb/backendAddressPools/k"
		if v6 {
			wantPool += "-IPv6"
		}
		if *p.BackendAddressPool.ID != wantPool || *p.EnableFloatingIP == v6 || (*p.BackendPort == svc.Spec.Ports[0].NodePort) != v6 {
			t.Errorf("rule %s: pool %s floating IP %v backend port %d", *r.Name, *p.BackendAddressPool.ID, *p.EnableFloatingIP, *p.BackendPort)
		}
	}
	if strings.Join(fes, ",") != base.frontend+","+base.frontend+"-IPv6" || len(rules) != 2 || len(lb.Properties.Probes) != 2 {
		t.Fatalf("frontends %v rules %v probes %d", fes, rules, len(lb.Properties.Probes))
	}
	if ensureService(lb, "/lb", wants, sp) {
		t.Error("a second ensure changed something")
	}

	svc.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol}
	sp, err = serviceSpec(s, svc)
	if err != nil {
		t.Fatal(err)
	}
	single := l.famWants(base, sp)
	single[0].fe = wants[0].fe
	ensureService(lb, "/lb", single, sp)
	if n := len(lb.Properties.FrontendIPConfigurations); n != 1 || len(lb.Properties.LoadBalancingRules) != 1 || *lb.Properties.LoadBalancingRules[0].Name != base.rule(svc.Spec.Ports[0]) {
		t.Errorf("after going single-stack: %d frontends, rules %v", n, lb.Properties.LoadBalancingRules)
	}
}

// hasBothFamilies says a Node has an InternalIP of each family.
func hasBothFamilies(n *v1.Node) bool {
	ip4, ip6 := internalIPs(n.Status.Addresses)
	return ip4 != "" && ip6 != ""
}

// Dual-stack and IPv6 Services against the dual-stack emulator, through
// the real SDK clients, with either kind of pool: an address per family
// in the Service's order, upstream's names, the IPv6 pool holding the
// nodes' IPv6 addresses (or IPv6 IP configurations), the IPv6 security
// rules, and nothing left after deletion.
func TestDualStackLoadBalancers(t *testing.T) {
	for _, pool := range []string{"nodeIP", "nodeIPConfiguration"} {
		t.Run(pool, func(t *testing.T) {
			env := newTestEnv(t, azemu.Config{DualStack: true}, func(s *Section) {
				s.LoadBalancerBackendPoolConfigurationType = pool
				s.VMType = VMTypeStandard
			})
			ctx := t.Context()
			nodes := env.lbNodes(t, 2)
			for _, n := range nodes {
				if !hasBothFamilies(n) {
					t.Fatalf("node %s addresses %v: want an InternalIP of each family", n.Name, n.Status.Addresses)
				}
			}
			l := env.cloud.lb
			public := dualStack(lbService("ds-pub", 80), v1.IPv4Protocol, v1.IPv6Protocol)
			internal := dualStack(lbService("ds-int", 8080), v1.IPv6Protocol, v1.IPv4Protocol)
			internal.Annotations = map[string]string{string(annotationInternal): "true"}
			single6 := dualStack(lbService("v6-only", 9090), v1.IPv6Protocol)
			single6.Annotations = map[string]string{string(annotationInternal): "true", string(annotationIPv6): "fd00:10:0:f0::99"}
			env.withServices(t, public, internal, single6)

			st, err := l.EnsureLoadBalancer(ctx, "kubernetes", public, nodes)
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Ingress) != 2 || strings.Contains(st.Ingress[0].IP, ":") || !strings.Contains(st.Ingress[1].IP, ":") {
				t.Fatalf("public status %+v: want IPv4 then IPv6", st.Ingress)
			}
			n := upstreamNames(l.clusterID, public)
			for _, name := range []string{n.pip, n.pip + "-IPv6"} {
				pip, ok := env.emu.PublicIP(env.fx.ResourceGroup, name)
				if !ok {
					t.Fatalf("no public IP %s", name)
				}
				if v6 := strings.HasSuffix(name, "-IPv6"); string(deref(pip.Properties.PublicIPAddressVersion)) != familyName(v6) {
					t.Errorf("public IP %s is %s", name, deref(pip.Properties.PublicIPAddressVersion))
				}
			}
			got, exists, err := l.GetLoadBalancer(ctx, "kubernetes", public)
			if err != nil || !exists || len(got.Ingress) != 2 || got.Ingress[1].IP != st.Ingress[1].IP {
				t.Errorf("GetLoadBalancer %+v %v %v", got, exists, err)
			}

			ist, err := l.EnsureLoadBalancer(ctx, "kubernetes", internal, nodes)
			if err != nil {
				t.Fatal(err)
			}
			if len(ist.Ingress) != 2 || !strings.HasPrefix(ist.Ingress[0].IP, "fd00:10:0:f0:") || strings.Contains(ist.Ingress[1].IP, ":") {
				t.Fatalf("internal status %+v: want IPv6 from the subnet, then IPv4", ist.Ingress)
			}
			// The IPv6-only Service: refused while the internal load
			// balancer's only IPv4 frontend is another Service's, served
			// once it has one of its own.
			if _, err := l.EnsureLoadBalancer(ctx, "kubernetes", single6, nodes); !errors.Is(err, errNeedsIPv4Frontend) {
				t.Fatalf("IPv6-only Service beside another Service's IPv4 frontend: %v, want the refusal", err)
			}
			env.seedLastingIPv4(t, true)
			sst, err := l.EnsureLoadBalancer(ctx, "kubernetes", single6, nodes)
			if err != nil {
				t.Fatal(err)
			}
			if len(sst.Ingress) != 1 || sst.Ingress[0].IP != "fd00:10:0:f0::99" {
				t.Fatalf("IPv6 Service status %+v", sst.Ingress)
			}

			// The internal load balancer: each family's rule on its pool,
			// the IPv6 ones to the NodePort without floating IP.
			ilb, _ := env.lb(t, "kubernetes-internal")
			in := upstreamNames(l.clusterID, internal)
			for _, r := range ilb.Properties.LoadBalancingRules {
				v6 := strings.HasSuffix(*r.Name, "-IPv6") || strings.HasPrefix(*r.Name, upstreamNames(l.clusterID, single6).base)
				p := r.Properties
				if strings.HasSuffix(*p.BackendAddressPool.ID, "-IPv6") != v6 || *p.EnableFloatingIP == v6 {
					t.Errorf("rule %s: pool %s floating IP %v", *r.Name, *p.BackendAddressPool.ID, *p.EnableFloatingIP)
				}
			}
			if fes := names(ilb.Properties.FrontendIPConfigurations, func(f *armnetwork.FrontendIPConfiguration) *string { return f.Name }); !slices.Contains(fes, in.frontend+"-IPv6") || !slices.Contains(fes, in.frontend) {
				t.Errorf("internal frontends %v", fes)
			}

			// The pools: IPv4 and IPv6, each holding every node once.
			for _, name := range []string{"kubernetes", "kubernetes-internal"} {
				lb, _ := env.lb(t, name)
				for _, v6 := range []bool{false, true} {
					bp := findPool(&lb, l.poolName(v6))
					if bp == nil {
						t.Fatalf("%s has no pool %s", name, l.poolName(v6))
					}
					members := len(bp.Properties.LoadBalancerBackendAddresses)
					if pool == "nodeIP" {
						for _, a := range bp.Properties.LoadBalancerBackendAddresses {
							if strings.Contains(deref(a.Properties.IPAddress), ":") != v6 {
								t.Errorf("%s pool %s lists %s", name, *bp.Name, deref(a.Properties.IPAddress))
							}
						}
					}
					if members != len(nodes) {
						t.Errorf("%s pool %s has %d members, want %d", name, *bp.Name, members, len(nodes))
					}
				}
			}

			// Security rules of both families: Internet to each public
			// address on 80; none for the internal Services (no ranges).
			rules := env.nsgRules(t)
			r4 := allowRuleName(armnetwork.SecurityRuleProtocolTCP, false, []string{"Internet"}, []int32{80})
			r6 := allowRuleName(armnetwork.SecurityRuleProtocolTCP, true, []string{"Internet"}, []int32{80})
			if !slices.Contains(rules, r4) || !slices.Contains(rules, r6) {
				t.Fatalf("rules %v: want %s and %s", rules, r4, r6)
			}
			if got := env.nsgRule(t, r6); got != "Tcp Internet->"+st.Ingress[1].IP+":80 Allow" {
				t.Errorf("IPv6 rule %s", got)
			}

			// Deletion leaves nothing of the Services: the public load
			// balancer goes, the internal one keeps only the frontend
			// that is no Service's.
			for _, s := range []*v1.Service{public, internal, single6} {
				if err := l.EnsureLoadBalancerDeleted(ctx, "kubernetes", s); err != nil {
					t.Fatal(err)
				}
			}
			if _, ok := env.lb(t, "kubernetes"); ok {
				t.Error("load balancer kubernetes left")
			}
			env.onlyLastingLeft(t, "kubernetes-internal")
			for _, name := range []string{n.pip, n.pip + "-IPv6"} {
				if _, ok := env.emu.PublicIP(env.fx.ResourceGroup, name); ok {
					t.Errorf("public IP %s left", name)
				}
			}
			if rules := env.nsgRules(t); slices.ContainsFunc(rules, func(r string) bool { return strings.HasPrefix(r, nsgRulePrefix) }) {
				t.Errorf("security rules left: %v", rules)
			}
		})
	}
}
