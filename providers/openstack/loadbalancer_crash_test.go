package openstack

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/cloud-provider/api"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/svcopts"
)

var errCrash = errors.New("simulated crash")

// crashTransport fails the k-th mutating request and every later one
// without sending them: the process "died" just before that write.
type crashTransport struct {
	next http.RoundTripper
	k    int32
	n    atomic.Int32
}

func (c *crashTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !strings.HasSuffix(r.URL.Path, "/auth/tokens") && c.n.Add(1) >= c.k {
		return nil, errCrash
	}
	return c.next.RoundTrip(r)
}

// restarted is a new controller with its own clients and empty memory;
// with k > 0 it crashes before its k-th write.
func (e *lbEnv) restarted(t *testing.T, k int32) (*loadBalancers, *crashTransport) {
	t.Helper()
	api, err := newClients(t.Context(), e.s)
	if err != nil {
		t.Fatal(err)
	}
	var ct *crashTransport
	if k > 0 {
		ct = &crashTransport{next: api.provider.HTTPClient.Transport, k: k}
		api.provider.HTTPClient.Transport = ct
	}
	c := newCloud(e.s, "kubernetes", api, clock.RealClock{})
	c.lb.firstPoll = e.lb.firstPoll
	return c.lb, ct
}

// shape summarises what the cloud holds for the Service.
func (e *lbEnv) shape(svc *v1.Service) string {
	var parts []string
	for _, lb := range e.emu.LoadBalancers() {
		if lb.Name != lbName("kubernetes", svc) {
			continue
		}
		parts = append(parts, "lb "+lb.ProvisioningStatus)
		for _, l := range lb.Listeners {
			parts = append(parts, fmt.Sprintf("listener %s:%d %v %d %v", l.Protocol, l.ProtocolPort, l.AllowedCIDRs, l.TimeoutClientData, l.InsertHeaders))
		}
		for _, p := range lb.Pools {
			m := "none"
			if p.HealthMonitor != nil {
				m = p.HealthMonitor.Type
			}
			parts = append(parts, fmt.Sprintf("pool %s %s members %v monitor %s", p.Protocol, p.LBAlgorithm, memberAddrs(p), m))
		}
		for _, f := range e.emu.FloatingIPs() {
			if f.PortID == lb.VIPPortID {
				parts = append(parts, "fip on vip: "+f.Description)
			}
		}
	}
	for _, f := range e.emu.FloatingIPs() {
		if f.Description == fipDescription("kubernetes", svc) {
			parts = append(parts, fmt.Sprintf("our fip associated=%v", f.PortID != ""))
		}
	}
	groups := 0
	for _, g := range e.emu.SecurityGroups() {
		if g.Name == memberGroupName("kubernetes") {
			groups++
			for _, r := range g.Rules {
				if r.Description == ruleDescription(svc) {
					parts = append(parts, fmt.Sprintf("rule %s %d %s", r.Protocol, *r.PortRangeMin, r.RemoteIPPrefix))
				}
			}
		}
	}
	parts = append(parts, fmt.Sprintf("member groups %d", groups))
	slices.Sort(parts)
	return strings.Join(parts, "\n")
}

// TestCrashAnywhereConverges kills create, a port change and delete before
// each of their writes in turn, then runs the operation again in a
// restarted controller: the result is what an uninterrupted run gives,
// with no duplicate and nothing leaked.
func TestCrashAnywhereConverges(t *testing.T) {
	edit := func(s *Section) {
		s.LoadBalancer.ManageSecurityGroups = true
		s.LoadBalancer.CreateMonitor = true
		s.MaxAttempts = 1
	}
	svc := func() *v1.Service { return service("web", 80, 443) }
	changed := func() *v1.Service {
		s := svc()
		s.Spec.Ports = []v1.ServicePort{s.Spec.Ports[0], {Name: "dns", Protocol: v1.ProtocolUDP, Port: 53, NodePort: 31053}}
		s.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"}
		return s
	}
	ops := []struct {
		name  string
		setup func(e *lbEnv) error
		run   func(e *lbEnv, l *loadBalancers) error
	}{
		{"create", func(*lbEnv) error { return nil }, func(e *lbEnv, l *loadBalancers) error {
			_, err := l.EnsureLoadBalancer(e.t.Context(), "", svc(), e.nodes)
			return err
		}},
		{"port change", func(e *lbEnv) error {
			_, err := e.lb.EnsureLoadBalancer(e.t.Context(), "", svc(), e.nodes)
			return err
		}, func(e *lbEnv, l *loadBalancers) error {
			_, err := l.EnsureLoadBalancer(e.t.Context(), "", changed(), e.nodes)
			return err
		}},
		// Octavia changes neither a listener's protocol nor a pool's:
		// each is replaced, and a crash between the deletion and the
		// creation must leave nothing the next sync cannot finish.
		{"x-forwarded-for to proxy-protocol", func(e *lbEnv) error {
			_, err := e.lb.EnsureLoadBalancer(e.t.Context(), "", annotated(svc(), annotationXForwardedFor, "true"), e.nodes)
			return err
		}, func(e *lbEnv, l *loadBalancers) error {
			_, err := l.EnsureLoadBalancer(e.t.Context(), "", annotated(svc(), annotationProxyProtocol, "v2"), e.nodes)
			return err
		}},
		{"proxy-protocol version and timeouts", func(e *lbEnv) error {
			_, err := e.lb.EnsureLoadBalancer(e.t.Context(), "", annotated(svc(), annotationProxyProtocol, "v1"), e.nodes)
			return err
		}, func(e *lbEnv, l *loadBalancers) error {
			s := annotated(annotated(svc(), annotationProxyProtocol, "v2"), annotationTimeoutClientData, "300000")
			_, err := l.EnsureLoadBalancer(e.t.Context(), "", s, e.nodes)
			return err
		}},
		{"delete", func(e *lbEnv) error {
			_, err := e.lb.EnsureLoadBalancer(e.t.Context(), "", svc(), e.nodes)
			return err
		}, func(e *lbEnv, l *loadBalancers) error { return l.EnsureLoadBalancerDeleted(e.t.Context(), "", svc()) }},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			// The uninterrupted result.
			ref := newLBEnv(t, 2, edit)
			ref.t = t
			if err := op.setup(ref); err != nil {
				t.Fatal(err)
			}
			if err := retrying(func() error { return op.run(ref, ref.lb) }); err != nil {
				t.Fatal(err)
			}
			want := ref.shape(svc())
			for k := int32(1); ; k++ {
				e := newLBEnv(t, 2, edit)
				e.t = t
				if err := op.setup(e); err != nil {
					t.Fatal(err)
				}
				crashing, ct := e.restarted(t, k)
				err := op.run(e, crashing)
				if err == nil {
					if k == 1 {
						t.Fatal("the operation made no write")
					}
					t.Logf("%s: crashed before each of its %d writes, converged every time", op.name, k-1)
					return
				}
				if !errors.Is(err, errCrash) && ct.n.Load() < k {
					t.Fatalf("k=%d: %v", k, err)
				}
				again, _ := e.restarted(t, 0)
				if err := retrying(func() error { return op.run(e, again) }); err != nil {
					t.Fatalf("after a crash before write %d: %v", k, err)
				}
				if got := e.shape(svc()); got != want {
					t.Fatalf("after a crash before write %d:\n%s\nwant\n%s", k, got, want)
				}
				if k > 60 {
					t.Fatal("too many writes")
				}
			}
		})
	}
}

// annotated is svc with the annotation a set to v.
func annotated(svc *v1.Service, a svcopts.Annotation, v string) *v1.Service {
	svc.Annotations[a.String()] = v
	return svc
}

// retrying runs f again while it asks to be retried (a load balancer
// still PENDING), as the service controller would.
func retrying(f func() error) error {
	for i := 0; ; i++ {
		err := f()
		var re *api.RetryError
		if err == nil || !errors.As(err, &re) || i > 50 {
			return err
		}
	}
}
