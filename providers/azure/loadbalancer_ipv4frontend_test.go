package azure

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	v1 "k8s.io/api/core/v1"

	azemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/azure"
)

// Names of the IPv4 frontend that is no Service's, as a cluster's
// provisioning makes it: AKS's outbound frontend on the public load
// balancer (with its pool and outbound rule), a plain private one on the
// internal load balancer.
const (
	lastingFrontend = "aks-outbound-ipv4"
	lastingPIP      = "aks-outbound-ip"
	lastingPool     = "aksOutboundBackendPool"
	lastingRule     = "aksOutboundRule"
)

// seedLastingIPv4 gives the cluster's public (or internal) load balancer
// an IPv4 frontend that is no Service's, creating the load balancer if
// it does not exist, as AKS and Cluster API Provider Azure do.
func (e *testEnv) seedLastingIPv4(t *testing.T, internal bool) {
	t.Helper()
	ctx := t.Context()
	l := e.cloud.lb
	name := l.lbNameFor(internal)
	lb := armnetwork.LoadBalancer{
		Location:   to.Ptr(e.s.Location),
		SKU:        &armnetwork.LoadBalancerSKU{Name: to.Ptr(armnetwork.LoadBalancerSKUNameStandard)},
		Properties: &armnetwork.LoadBalancerPropertiesFormat{},
	}
	if resp, err := e.api.lbs.Get(ctx, e.fx.ResourceGroup, name, nil); err == nil {
		lb = resp.LoadBalancer
	}
	p := lb.Properties
	fe := &armnetwork.FrontendIPConfiguration{Name: to.Ptr(lastingFrontend), Properties: &armnetwork.FrontendIPConfigurationPropertiesFormat{}}
	if internal {
		fe.Properties.Subnet = &armnetwork.Subnet{ID: to.Ptr(l.subnetID(e.s.SubnetName))}
		fe.Properties.PrivateIPAllocationMethod = to.Ptr(armnetwork.IPAllocationMethodDynamic)
	} else {
		poller, err := e.api.publicIPs.BeginCreateOrUpdate(ctx, e.fx.ResourceGroup, lastingPIP, armnetwork.PublicIPAddress{
			Location: to.Ptr(e.s.Location),
			SKU:      &armnetwork.PublicIPAddressSKU{Name: to.Ptr(armnetwork.PublicIPAddressSKUNameStandard)},
			Properties: &armnetwork.PublicIPAddressPropertiesFormat{
				PublicIPAllocationMethod: to.Ptr(armnetwork.IPAllocationMethodStatic),
				PublicIPAddressVersion:   to.Ptr(armnetwork.IPVersionIPv4),
			},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		pip, err := poller.PollUntilDone(ctx, pollOptions)
		if err != nil {
			t.Fatal(err)
		}
		fe.Properties.PublicIPAddress = &armnetwork.PublicIPAddress{ID: pip.ID}
		lbID := l.lbID(name)
		p.BackendAddressPools = append(p.BackendAddressPools, &armnetwork.BackendAddressPool{Name: to.Ptr(lastingPool)})
		p.OutboundRules = append(p.OutboundRules, &armnetwork.OutboundRule{Name: to.Ptr(lastingRule), Properties: &armnetwork.OutboundRulePropertiesFormat{
			FrontendIPConfigurations: []*armnetwork.SubResource{{ID: to.Ptr(lbID + "/frontendIPConfigurations/" + lastingFrontend)}},
			BackendAddressPool:       &armnetwork.SubResource{ID: to.Ptr(lbID + "/backendAddressPools/" + lastingPool)},
			Protocol:                 to.Ptr(armnetwork.LoadBalancerOutboundRuleProtocolAll),
		}})
	}
	p.FrontendIPConfigurations = append(p.FrontendIPConfigurations, fe)
	e.putLB(t, name, lb)
}

// dropLastingIPv4 takes the seeded frontend (and its outbound rule) off
// the public load balancer by hand, as a user might while a Service's
// IPv4 frontend is still there.
func (e *testEnv) dropLastingIPv4(t *testing.T) {
	t.Helper()
	resp, err := e.api.lbs.Get(t.Context(), e.fx.ResourceGroup, "kubernetes", nil)
	if err != nil {
		t.Fatal(err)
	}
	lb := resp.LoadBalancer
	p := lb.Properties
	p.OutboundRules = nil
	p.FrontendIPConfigurations = slices.DeleteFunc(p.FrontendIPConfigurations, func(fe *armnetwork.FrontendIPConfiguration) bool { return deref(fe.Name) == lastingFrontend })
	e.putLB(t, "kubernetes", lb)
}

func (e *testEnv) putLB(t *testing.T, name string, lb armnetwork.LoadBalancer) {
	t.Helper()
	poller, err := e.api.lbs.BeginCreateOrUpdate(t.Context(), e.fx.ResourceGroup, name, lb, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := poller.PollUntilDone(t.Context(), pollOptions); err != nil {
		t.Fatal(err)
	}
}

// onlyLastingLeft: the load balancer holds the seeded frontend and no
// Service's frontend, rule or probe.
func (e *testEnv) onlyLastingLeft(t *testing.T, name string) {
	t.Helper()
	lb, ok := e.lb(t, name)
	if !ok {
		t.Fatalf("load balancer %s gone with the frontend that is no Service's", name)
	}
	p := lb.Properties
	if fes := names(p.FrontendIPConfigurations, func(f *armnetwork.FrontendIPConfiguration) *string { return f.Name }); !slices.Equal(fes, []string{lastingFrontend}) {
		t.Errorf("load balancer %s frontends %v, want only %s", name, fes, lastingFrontend)
	}
	if len(p.LoadBalancingRules) != 0 || len(p.Probes) != 0 {
		t.Errorf("load balancer %s keeps %d rules and %d probes", name, len(p.LoadBalancingRules), len(p.Probes))
	}
}

// nothingOfServices: no public IP but the seeded one, and no security
// rule of the manager's.
func (e *testEnv) nothingOfServices(t *testing.T) {
	t.Helper()
	for _, id := range e.emu.ListNetwork("publicIPAddresses") {
		if !strings.HasSuffix(id, "/"+lastingPIP) {
			t.Errorf("public IP %s left", id)
		}
	}
	if rules := e.nsgRules(t); slices.ContainsFunc(rules, func(r string) bool { return strings.HasPrefix(r, nsgRulePrefix) }) {
		t.Errorf("security rules left: %v", rules)
	}
}

// ensureAll and deleteAll sync Services at once, one worker each, as the
// service controller's workers do; the errors are by Service.
func ensureAll(ctx context.Context, l *loadBalancers, svcs []*v1.Service, nodes []*v1.Node) map[string]error {
	return eachAtOnce(svcs, func(s *v1.Service) error {
		_, err := l.EnsureLoadBalancer(ctx, "kubernetes", s, nodes)
		return err
	})
}

func deleteAll(ctx context.Context, l *loadBalancers, svcs []*v1.Service) map[string]error {
	return eachAtOnce(svcs, func(s *v1.Service) error { return l.EnsureLoadBalancerDeleted(ctx, "kubernetes", s) })
}

func eachAtOnce(svcs []*v1.Service, f func(*v1.Service) error) map[string]error {
	var mu sync.Mutex
	out := map[string]error{}
	var wg sync.WaitGroup
	for _, s := range svcs {
		wg.Go(func() {
			err := f(s)
			mu.Lock()
			out[s.Name] = err
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// familyServices are IPv4, dual-stack (either order) and
// IPv6-only Services, internal or not, with their own UIDs.
func familyServices(internal bool) (v4, dual, v6 []*v1.Service) {
	mk := func(name string, fams ...v1.IPFamily) *v1.Service {
		s := dualStack(lbService(name, 80), fams...)
		if internal {
			s.Annotations = map[string]string{string(annotationInternal): "true"}
		}
		return s
	}
	for i := range 3 {
		v4 = append(v4, mk(fmt.Sprintf("v4-%d", i), v1.IPv4Protocol))
		v6 = append(v6, mk(fmt.Sprintf("v6-%d", i), v1.IPv6Protocol))
	}
	dual = []*v1.Service{mk("ds-0", v1.IPv4Protocol, v1.IPv6Protocol), mk("ds-1", v1.IPv6Protocol, v1.IPv4Protocol)}
	uniqueUIDs(slices.Concat(v4, dual, v6))
	return v4, dual, v6
}

// An IPv6-only Service on a load balancer with no IPv4 frontend that is
// no Service's is refused before anything is made, whether it is alone or
// beside IPv4 and dual-stack Services, synced before, after or with them:
// no public IP, no frontend, no security rule, a refusal naming the load
// balancer and Azure's rule; the others are served and go without a trace.
func TestIPv6OnlyServiceRefusedWithoutLastingIPv4(t *testing.T) {
	for _, internal := range []bool{false, true} {
		t.Run(map[bool]string{false: "public", true: "internal"}[internal], func(t *testing.T) {
			env := newTestEnv(t, azemu.Config{DualStack: true}, nil)
			l := env.cloud.lb
			nodes := env.lbNodes(t, 2)
			v4, dual, v6 := familyServices(internal)
			lbName := l.lbNameFor(internal)

			// Alone: refused, no call that writes.
			env.srv.ResetCalls()
			_, err := l.EnsureLoadBalancer(t.Context(), "kubernetes", v6[0], nodes)
			if !errors.Is(err, errNeedsIPv4Frontend) || !strings.Contains(err.Error(), "an IPv6-only Service needs an IPv4 frontend on load balancer "+lbName) ||
				!strings.Contains(err.Error(), codeIPv4Required) || !strings.Contains(err.Error(), "PreferDualStack") {
				t.Fatalf("IPv6-only Service alone: %v, want the refusal naming %s and Azure's rule", err, lbName)
			}
			for op, n := range env.srv.Calls() {
				if n > 0 && (strings.Contains(op, "CreateOrUpdate") || strings.Contains(op, "Delete")) {
					t.Errorf("refusal made %d %s calls", n, op)
				}
			}
			if _, ok := env.lb(t, lbName); ok {
				t.Errorf("load balancer %s made for a refused Service", lbName)
			}

			// With the others, all at once: the IPv6-only ones refused
			// whatever the batches' order, the others served.
			errs := ensureAll(t.Context(), l, slices.Concat(v4, dual, v6), nodes)
			for name, err := range errs {
				if refused := strings.HasPrefix(name, "v6-"); refused != errors.Is(err, errNeedsIPv4Frontend) || !refused && err != nil {
					t.Errorf("Service %s: %v", name, err)
				}
			}
			lb, _ := env.lb(t, lbName)
			for _, s := range v6 {
				base := upstreamNames(l.clusterID, s).base
				if slices.ContainsFunc(lb.Properties.FrontendIPConfigurations, func(f *armnetwork.FrontendIPConfiguration) bool {
					return strings.HasPrefix(deref(f.Name), base)
				}) {
					t.Errorf("refused Service %s has a frontend", s.Name)
				}
				if _, ok := env.emu.PublicIP(env.fx.ResourceGroup, upstreamNames(l.clusterID, s).pip); ok {
					t.Errorf("refused Service %s has a public IP", s.Name)
				}
			}
			if n := len(lb.Properties.FrontendIPConfigurations); n != len(v4)+2*len(dual) {
				t.Errorf("%d frontends, want %d", n, len(v4)+2*len(dual))
			}

			// Deleting every Service at once, the refused ones too.
			for name, err := range deleteAll(t.Context(), l, slices.Concat(v4, dual, v6)) {
				if err != nil {
					t.Errorf("deleting %s: %v", name, err)
				}
			}
			if _, ok := env.lb(t, lbName); ok {
				t.Errorf("load balancer %s left", lbName)
			}
			env.nothingOfServices(t)
		})
	}
}

// Beside an IPv4 frontend that is no Service's (AKS's outbound frontend,
// whose public IP version only its public IP tells), IPv6-only Services
// are served with IPv4 and dual-stack ones, synced at once; the IPv4
// Services then go before the IPv6-only ones or after them, or all at
// once, and each deletion completes with nothing of the Services left.
func TestIPv6OnlyServiceBesideLastingIPv4(t *testing.T) {
	for _, internal := range []bool{false, true} {
		for _, order := range []string{"IPv4 first", "IPv6 first", "all at once"} {
			t.Run(fmt.Sprintf("%s/%s", map[bool]string{false: "public", true: "internal"}[internal], order), func(t *testing.T) {
				env := newTestEnv(t, azemu.Config{DualStack: true}, nil)
				l := env.cloud.lb
				nodes := env.lbNodes(t, 2)
				env.seedLastingIPv4(t, internal)
				v4, dual, v6 := familyServices(internal)
				lbName := l.lbNameFor(internal)
				env.srv.ResetCalls()
				all := slices.Concat(v4, dual, v6)
				for name, err := range ensureAll(t.Context(), l, all, nodes) {
					if err != nil {
						t.Errorf("Service %s: %v", name, err)
					}
				}
				// The writes were shared: fewer than one per Service.
				if n := env.srv.CallCount("network:LoadBalancers_CreateOrUpdate"); n >= len(all) {
					t.Errorf("%d load balancer writes for %d Services synced at once", n, len(all))
				}
				lb, _ := env.lb(t, lbName)
				if n := len(lb.Properties.FrontendIPConfigurations); n != 1+len(v4)+2*len(dual)+len(v6) {
					t.Fatalf("%d frontends, want %d", n, 1+len(v4)+2*len(dual)+len(v6))
				}
				var steps [][]*v1.Service
				switch order {
				case "IPv4 first":
					steps = [][]*v1.Service{slices.Concat(v4, dual), v6}
				case "IPv6 first":
					steps = [][]*v1.Service{v6, slices.Concat(v4, dual)}
				default:
					steps = [][]*v1.Service{slices.Concat(v4, dual, v6)}
				}
				for _, step := range steps {
					for name, err := range deleteAll(t.Context(), l, step) {
						if err != nil {
							t.Errorf("deleting %s: %v", name, err)
						}
					}
				}
				env.onlyLastingLeft(t, lbName)
				env.nothingOfServices(t)
			})
		}
	}
}

// A load balancer made before the rule (by upstream, or by hand taking
// the frontend that is no Service's away): a dual-stack Service's IPv4
// frontend is the only IPv4 one beside an IPv6-only Service's. Deleting
// the dual-stack Service takes its rules, probes, IPv6 frontend and IPv6
// public IP, keeps its IPv4 frontend and public IP, and fails naming the
// IPv6-only Service; neither that Service's sync nor an orphan removal
// nor the IPv6-only Service's own parts are touched; once the IPv6-only
// Service is deleted, the retried deletion completes and nothing is left.
// The other order needs no wait.
func TestIPv6OnlyServiceHoldsLastIPv4Frontend(t *testing.T) {
	for _, v6First := range []bool{false, true} {
		t.Run(map[bool]string{false: "dual-stack deleted first", true: "IPv6-only deleted first"}[v6First], func(t *testing.T) {
			env := newTestEnv(t, azemu.Config{DualStack: true}, nil)
			l := env.cloud.lb
			ctx := t.Context()
			nodes := env.lbNodes(t, 2)
			env.seedLastingIPv4(t, false)
			ds := dualStack(lbService("ds-public", 80), v1.IPv4Protocol, v1.IPv6Protocol)
			only6 := dualStack(lbService("ds-v6-only", 8080), v1.IPv6Protocol)
			env.withServices(t, ds, only6)
			for _, s := range []*v1.Service{ds, only6} {
				if _, err := l.EnsureLoadBalancer(ctx, "kubernetes", s, nodes); err != nil {
					t.Fatal(err)
				}
			}
			env.dropLastingIPv4(t)
			dsNames, v6Names := upstreamNames(l.clusterID, ds), upstreamNames(l.clusterID, only6)

			if v6First {
				for _, s := range []*v1.Service{only6, ds} {
					if err := l.EnsureLoadBalancerDeleted(ctx, "kubernetes", s); err != nil {
						t.Fatalf("deleting %s: %v", s.Name, err)
					}
				}
			} else {
				err := l.EnsureLoadBalancerDeleted(ctx, "kubernetes", ds)
				if !errors.Is(err, errNeedsIPv4Frontend) || !strings.Contains(err.Error(), "Service default/ds-v6-only") || !strings.Contains(err.Error(), dsNames.frontend) {
					t.Fatalf("deleting the dual-stack Service: %v, want the held frontend and the IPv6-only Service named", err)
				}
				lb, _ := env.lb(t, "kubernetes")
				fes := names(lb.Properties.FrontendIPConfigurations, func(f *armnetwork.FrontendIPConfiguration) *string { return f.Name })
				if !slices.Equal(fes, sortedStrings(dsNames.frontend, v6Names.frontend)) {
					t.Errorf("frontends %v, want the held IPv4 one and the IPv6-only Service's", fes)
				}
				for _, r := range lb.Properties.LoadBalancingRules {
					if strings.HasPrefix(deref(r.Name), dsNames.base) {
						t.Errorf("the deleted Service's rule %s stayed", *r.Name)
					}
				}
				if _, ok := env.emu.PublicIP(env.fx.ResourceGroup, dsNames.pip+ipv6Suffix); ok {
					t.Error("the deleted Service's IPv6 public IP stayed")
				}
				if _, ok := env.emu.PublicIP(env.fx.ResourceGroup, dsNames.pip); !ok {
					t.Error("the held frontend's public IP is gone")
				}
				// The IPv6-only Service keeps its parts; its sync is
				// refused, and so is the held frontend's orphan removal.
				if !slices.ContainsFunc(lb.Properties.LoadBalancingRules, func(r *armnetwork.LoadBalancingRule) bool { return v6Names.ownsRule(deref(r.Name)) }) {
					t.Error("the IPv6-only Service lost its rule")
				}
				if _, err := l.EnsureLoadBalancer(ctx, "kubernetes", only6, nodes); !errors.Is(err, errNeedsIPv4Frontend) {
					t.Errorf("IPv6-only Service's sync: %v, want the refusal", err)
				}
				if err := l.removeLBPart(ctx, false, collFrontends, dsNames.frontend); !errors.Is(err, errPartInUse) || !errors.Is(err, errNeedsIPv4Frontend) {
					t.Errorf("orphan removal of the held frontend: %v", err)
				}
				if after, _ := env.lb(t, "kubernetes"); len(after.Properties.FrontendIPConfigurations) != 2 || deref(after.Etag) != deref(lb.Etag) {
					t.Errorf("the load balancer changed: %d frontends", len(after.Properties.FrontendIPConfigurations))
				}

				if err := l.EnsureLoadBalancerDeleted(ctx, "kubernetes", only6); err != nil {
					t.Fatalf("deleting the IPv6-only Service: %v", err)
				}
				if err := l.EnsureLoadBalancerDeleted(ctx, "kubernetes", ds); err != nil {
					t.Fatalf("the retried deletion: %v", err)
				}
			}
			if _, ok := env.lb(t, "kubernetes"); ok {
				t.Error("load balancer left")
			}
			env.nothingOfServices(t)
		})
	}
}

// Whatever the manager cannot tell beforehand, ARM's refusal comes back
// naming the rule.
func TestIPv4RequiredErrorNamesTheRule(t *testing.T) {
	env := newTestEnv(t, azemu.Config{DualStack: true}, nil)
	lb := armnetwork.LoadBalancer{
		Location: to.Ptr(env.s.Location),
		SKU:      &armnetwork.LoadBalancerSKU{Name: to.Ptr(armnetwork.LoadBalancerSKUNameStandard)},
		Properties: &armnetwork.LoadBalancerPropertiesFormat{FrontendIPConfigurations: []*armnetwork.FrontendIPConfiguration{{
			Name: to.Ptr("v6"), Properties: &armnetwork.FrontendIPConfigurationPropertiesFormat{
				Subnet:                    &armnetwork.Subnet{ID: to.Ptr(env.cloud.lb.subnetID(env.s.SubnetName))},
				PrivateIPAllocationMethod: to.Ptr(armnetwork.IPAllocationMethodDynamic),
				PrivateIPAddressVersion:   to.Ptr(armnetwork.IPVersionIPv6),
			},
		}}},
	}
	_, err := env.cloud.lb.internal.ops.put(t.Context(), &lb, "")
	if !errors.Is(err, errNeedsIPv4Frontend) || !isIPv4Required(err) || !strings.Contains(err.Error(), "load balancer kubernetes-internal") {
		t.Fatalf("ARM's refusal: %v", err)
	}
}
