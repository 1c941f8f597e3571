package openstack

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	restclient "k8s.io/client-go/rest"
	cloudprovider "k8s.io/cloud-provider"

	osemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

// fakeBuilder hands Initialize a fake clientset.
type fakeBuilder struct{ c kubernetes.Interface }

var _ cloudprovider.ControllerClientBuilder = fakeBuilder{}

func (b fakeBuilder) Config(string) (*restclient.Config, error)   { return &restclient.Config{}, nil }
func (b fakeBuilder) ConfigOrDie(string) *restclient.Config       { return &restclient.Config{} }
func (b fakeBuilder) Client(string) (kubernetes.Interface, error) { return b.c, nil }
func (b fakeBuilder) ClientOrDie(string) kubernetes.Interface     { return b.c }

// withKube gives the backend a Kubernetes client holding svcs, through
// Initialize, and returns it.
func (e *lbEnv) withKube(t *testing.T, svcs ...*v1.Service) kubernetes.Interface {
	t.Helper()
	c := fake.NewClientset()
	for _, s := range svcs {
		if _, err := c.CoreV1().Services(s.Namespace).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e.cloud.initialize(fakeBuilder{c}, nil)
	return c
}

// annotationOf is the load-balancer-id annotation the API server holds.
func annotationOf(t *testing.T, c kubernetes.Interface, svc *v1.Service) string {
	t.Helper()
	got, err := c.CoreV1().Services(svc.Namespace).Get(t.Context(), svc.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got.Annotations[annotationLoadBalancerID.String()]
}

// sharing is a Service naming load balancer id.
func sharing(name, id string, ports ...int32) *v1.Service {
	svc := service(name, ports...)
	svc.Annotations[annotationLoadBalancerID.String()] = id
	return svc
}

// listenersByPort is "<protocol>:<port>=<tags>" for each listener.
func listenersByPort(lb osemu.LoadBalancerInfo) []string {
	var out []string
	for _, l := range lb.Listeners {
		out = append(out, fmt.Sprintf("%s:%d=%s", l.Protocol, l.ProtocolPort, strings.Join(l.Tags, ",")))
	}
	slices.Sort(out)
	return out
}

func (e *lbEnv) lbByID(t *testing.T, id string) osemu.LoadBalancerInfo {
	t.Helper()
	lb, ok := e.emu.LoadBalancer(id)
	if !ok {
		t.Fatalf("load balancer %s is gone", id)
	}
	return lb
}

func usageTags(tags []string) []string {
	return slices.Sorted(slices.Values(slices.DeleteFunc(slices.Clone(tags), func(t string) bool { return !strings.HasPrefix(t, servicePrefix) })))
}

// TestSharedLoadBalancer: a Service naming another's load balancer by
// ID gets a listener on its own port there, tagged with its name, the
// load balancer's floating IP as its address, and its tag on the load
// balancer; both ports are served. Deleting either Service (in either
// order) removes only its listeners and tag; the last one takes the load
// balancer and the floating IP made with it.
func TestSharedLoadBalancer(t *testing.T) {
	for _, ownerFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("ownerDeletedFirst=%v", ownerFirst), func(t *testing.T) {
			e := newLBEnv(t, 2, nil)
			owner := service("owner", 80)
			st, err := e.lb.EnsureLoadBalancer(t.Context(), "", owner, e.nodes)
			if err != nil {
				t.Fatal(err)
			}
			lb := e.lbOf(t, owner)
			addr := st.Ingress[0].IP

			sharer := sharing("sharer", lb.ID, 8080)
			st, err = e.lb.EnsureLoadBalancer(t.Context(), "", sharer, e.nodes)
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Ingress) != 1 || st.Ingress[0].IP != addr {
				t.Errorf("sharer's status %+v, want the load balancer's address %s", st, addr)
			}
			if n := len(e.emu.LoadBalancers()); n != 1 {
				t.Errorf("%d load balancers, want the one shared", n)
			}
			got := e.lbByID(t, lb.ID)
			ownerTag, sharerTag := lbName("kubernetes", owner), lbName("kubernetes", sharer)
			if want := []string{"TCP:8080=" + sharerTag, "TCP:80=" + ownerTag}; !slices.Equal(listenersByPort(got), want) {
				t.Errorf("listeners %v, want %v", listenersByPort(got), want)
			}
			if want := slices.Sorted(slices.Values([]string{ownerTag, sharerTag})); !slices.Equal(usageTags(got.Tags), want) {
				t.Errorf("usage tags %v, want %v", got.Tags, want)
			}
			for _, p := range got.Pools {
				port := owner.Spec.Ports[0]
				if strings.Contains(p.Name, "_sharer") {
					port = sharer.Spec.Ports[0]
				}
				if got, want := memberAddrs(p), e.wantMembers(e.nodes, port.NodePort); !slices.Equal(got, want) {
					t.Errorf("pool %s members %v, want %v", p.Name, got, want)
				}
			}
			if n := len(e.emu.FloatingIPs()); n != 1 {
				t.Errorf("%d floating IPs, want the owner's only", n)
			}

			// Steady: neither Service writes anything.
			e.srv.ResetCalls()
			for _, svc := range []*v1.Service{owner, sharer} {
				if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes); err != nil {
					t.Fatal(err)
				}
			}
			for op, n := range e.srv.Calls() {
				if e.emu.Mutating(op) {
					t.Errorf("steady ensures made %d %s", n, op)
				}
			}
			// A node joining reaches both Services' pools.
			nodes := append(slices.Clone(e.nodes), e.addNodes(t, 1)...)
			for _, svc := range []*v1.Service{owner, sharer} {
				if err := e.lb.UpdateLoadBalancer(t.Context(), "", svc, nodes); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range e.lbByID(t, lb.ID).Pools {
				if len(p.Members) != 3 {
					t.Errorf("pool %s members %v after a node joined", p.Name, memberAddrs(p))
				}
			}

			first, last := owner, sharer
			if !ownerFirst {
				first, last = sharer, owner
			}
			if err := e.lb.EnsureLoadBalancerDeleted(t.Context(), "", first); err != nil {
				t.Fatal(err)
			}
			got = e.lbByID(t, lb.ID)
			lastTag := lbName("kubernetes", last)
			if want := []string{fmt.Sprintf("TCP:%d=%s", last.Spec.Ports[0].Port, lastTag)}; !slices.Equal(listenersByPort(got), want) {
				t.Errorf("after %s's deletion: listeners %v, want %v", first.Name, listenersByPort(got), want)
			}
			if want := []string{lastTag}; !slices.Equal(usageTags(got.Tags), want) {
				t.Errorf("after %s's deletion: usage tags %v, want %v", first.Name, got.Tags, want)
			}
			if len(got.Pools) != 1 {
				t.Errorf("after %s's deletion: pools %+v", first.Name, got.Pools)
			}
			fips := e.emu.FloatingIPs()
			if len(fips) != 1 || fips[0].PortID != got.VIPPortID {
				t.Errorf("after %s's deletion: floating IPs %+v, want the address still on the VIP port", first.Name, fips)
			}
			// The one left still syncs, with its address.
			st, err = e.lb.EnsureLoadBalancer(t.Context(), "", last, e.nodes)
			if err != nil || st.Ingress[0].IP != addr {
				t.Fatalf("the Service left: %v, %+v", err, st)
			}

			if err := e.lb.EnsureLoadBalancerDeleted(t.Context(), "", last); err != nil {
				t.Fatal(err)
			}
			if lbs := e.emu.LoadBalancers(); len(lbs) != 0 {
				t.Errorf("load balancers left: %+v", lbs)
			}
			if fips := e.emu.FloatingIPs(); len(fips) != 0 {
				t.Errorf("floating IPs left: %+v", fips)
			}
		})
	}
}

// TestSharedPortConflict: a Service asking for a port another Service's
// listener holds on the shared load balancer is refused with a message
// naming the port, before any write; deleting it leaves the other's
// listener alone.
func TestSharedPortConflict(t *testing.T) {
	e := newLBEnv(t, 2, nil)
	owner := service("owner", 80, 443)
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", owner, e.nodes); err != nil {
		t.Fatal(err)
	}
	lb := e.lbOf(t, owner)
	sharer := sharing("sharer", lb.ID, 8080, 443)
	e.srv.ResetCalls()
	_, err := e.lb.EnsureLoadBalancer(t.Context(), "", sharer, e.nodes)
	if err == nil || !strings.Contains(err.Error(), "port 443/TCP of load balancer "+lb.ID+" is taken by listener") || !strings.Contains(err.Error(), lbName("kubernetes", owner)) {
		t.Fatalf("conflicting port: %v", err)
	}
	for op, n := range e.srv.Calls() {
		if e.emu.Mutating(op) {
			t.Errorf("the refused Service made %d %s", n, op)
		}
	}
	if err := e.lb.EnsureLoadBalancerDeleted(t.Context(), "", sharer); err != nil {
		t.Fatal(err)
	}
	got := e.lbByID(t, lb.ID)
	ownerTag := lbName("kubernetes", owner)
	if want := []string{"TCP:443=" + ownerTag, "TCP:80=" + ownerTag}; !slices.Equal(listenersByPort(got), want) {
		t.Errorf("listeners %v, want the owner's %v", listenersByPort(got), want)
	}
	if want := []string{ownerTag}; !slices.Equal(usageTags(got.Tags), want) {
		t.Errorf("usage tags %v", got.Tags)
	}
}

// makeLB makes a load balancer outside Kubernetes, as a person would,
// with a listener on port 22 and, with fip, a floating IP on its VIP.
func (e *lbEnv) makeLB(t *testing.T, name string, fip bool) *loadbalancers.LoadBalancer {
	t.Helper()
	lb, err := loadbalancers.Create(t.Context(), e.api.lb, loadbalancers.CreateOpts{
		Name: name, VipSubnetID: e.fx.SubnetID,
		Listeners: []listeners.CreateOpts{{Name: "ssh", Protocol: "TCP", ProtocolPort: 22,
			DefaultPool: &pools.CreateOpts{Name: "ssh", Protocol: "TCP", LBMethod: pools.LBMethodRoundRobin}}},
	}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if lb, err = e.lb.waitActive(t.Context(), lb.ID); err != nil {
		t.Fatal(err)
	}
	if fip {
		if _, err := floatingips.Create(t.Context(), e.api.network, floatingips.CreateOpts{
			FloatingNetworkID: e.fx.ExternalNetworkID, PortID: lb.VipPortID, Description: "the web front",
		}).Extract(); err != nil {
			t.Fatal(err)
		}
	}
	return lb
}

// TestUserLoadBalancerShared: a load balancer a person made is shared by
// up to maxSharedLB Services, never by an internal one, and never
// deleted: the last Service's deletion leaves it with the person's
// listener, no usage tag, and its floating IP. Without a floating IP a
// sharing Service is refused (only the owner allocates one).
func TestUserLoadBalancerShared(t *testing.T) {
	e := newLBEnv(t, 2, nil)
	users := e.makeLB(t, "web-front", true)
	a, b := sharing("a", users.ID, 80), sharing("b", users.ID, 443)
	for _, svc := range []*v1.Service{a, b} {
		if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes); err != nil {
			t.Fatalf("%s: %v", svc.Name, err)
		}
	}
	got := e.lbByID(t, users.ID)
	if want := []string{"TCP:22=", "TCP:443=" + lbName("kubernetes", b), "TCP:80=" + lbName("kubernetes", a)}; !slices.Equal(listenersByPort(got), want) {
		t.Errorf("listeners %v, want %v", listenersByPort(got), want)
	}

	third := sharing("c", users.ID, 8443)
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", third, e.nodes); err == nil || !strings.Contains(err.Error(), "maxSharedLB allows 2") {
		t.Errorf("a third Service: %v, want the maxSharedLB refusal", err)
	}
	internal := sharing("i", users.ID, 8443)
	internal.Annotations[annotationInternal.String()] = "true"
	e.lb.cfg.LoadBalancer.MaxSharedLB = 5
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", internal, e.nodes); err == nil || !strings.Contains(err.Error(), "an internal Service cannot share") {
		t.Errorf("an internal Service: %v", err)
	}

	for _, svc := range []*v1.Service{a, b, third, internal} {
		if err := e.lb.EnsureLoadBalancerDeleted(t.Context(), "", svc); err != nil {
			t.Fatalf("delete %s: %v", svc.Name, err)
		}
	}
	got = e.lbByID(t, users.ID)
	if want := []string{"TCP:22="}; !slices.Equal(listenersByPort(got), want) || len(got.Tags) != 0 || len(got.Pools) != 1 {
		t.Errorf("the person's load balancer after its Services went: listeners %v tags %v pools %d", listenersByPort(got), got.Tags, len(got.Pools))
	}
	if fips := e.emu.FloatingIPs(); len(fips) != 1 || fips[0].PortID != got.VIPPortID {
		t.Errorf("floating IPs %+v, want the person's still on the VIP port", fips)
	}

	bare := e.makeLB(t, "no-address", false)
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", sharing("d", bare.ID, 80), e.nodes); err == nil || !strings.Contains(err.Error(), "has no floating IP") {
		t.Errorf("sharing a load balancer without a floating IP: %v", err)
	}
}

// TestLoadBalancerIDWrittenBack: the ID of the load balancer a Service
// gets is written onto it as the annotation (Initialize's client); the
// annotation naming no load balancer is an error; a Service that has its
// own cannot move to another; once its own is deleted (the Service
// stopped being a LoadBalancer), the annotation goes, so it would get a
// new one.
func TestLoadBalancerIDWrittenBack(t *testing.T) {
	e := newLBEnv(t, 2, nil)
	owner, other := service("owner", 80), service("other", 80)
	kube := e.withKube(t, owner, other)
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", owner, e.nodes); err != nil {
		t.Fatal(err)
	}
	id := e.lbOf(t, owner).ID
	if got := annotationOf(t, kube, owner); got != id {
		t.Fatalf("annotation %q, want the load balancer's ID %s", got, id)
	}
	// The informer's copy then has it: no read beyond the usual, no patch.
	owner.Annotations[annotationLoadBalancerID.String()] = id
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", owner, e.nodes); err != nil {
		t.Fatal(err)
	}

	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", other, e.nodes); err != nil {
		t.Fatal(err)
	}
	other.Annotations[annotationLoadBalancerID.String()] = id
	_, err := e.lb.EnsureLoadBalancer(t.Context(), "", other, e.nodes)
	if err == nil || !strings.Contains(err.Error(), "the Service has its own") {
		t.Errorf("a Service with its own naming another: %v", err)
	}
	if got := annotationOf(t, kube, other); got == id {
		t.Errorf("the refused move was recorded")
	}

	stale := service("stale", 80)
	stale.Annotations[annotationLoadBalancerID.String()] = "0d9b3c4e-1f2a-4b5c-8d6e-7f8091a2b3c4"
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", stale, e.nodes); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("an annotation naming no load balancer: %v", err)
	}
	stale.Annotations[annotationLoadBalancerID.String()] = "lb-1"
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", stale, e.nodes); err == nil || !strings.Contains(err.Error(), annotationLoadBalancerID.String()) {
		t.Errorf("a malformed annotation: %v", err)
	}

	// type: LoadBalancer -> ClusterIP: the load balancer goes, and so
	// does the annotation naming it.
	if err := e.lb.EnsureLoadBalancerDeleted(t.Context(), "", owner); err != nil {
		t.Fatal(err)
	}
	if got := annotationOf(t, kube, owner); got != "" {
		t.Errorf("annotation %q left naming the deleted load balancer", got)
	}
}

// TestLegacyNamedLoadBalancerAdopted: a load balancer the upstream CCM
// made before March 2019, named a<UID> (cut to 32), with its floating IP
// described after that name, is found and used as it is: same load
// balancer, name and address, its listeners now tagged; deleting the
// Service leaves nothing.
func TestLegacyNamedLoadBalancerAdopted(t *testing.T) {
	// Listeners made before upstream tagged them have no tags; later
	// upstream versions tag them with the load balancer's name.
	for _, tagged := range []bool{false, true} {
		t.Run(fmt.Sprintf("tagged listeners %v", tagged), func(t *testing.T) { legacyAdopted(t, tagged) })
	}
}

func legacyAdopted(t *testing.T, tagged bool) {
	e := newLBEnv(t, 2, nil)
	svc := service("old", 80)
	svc.UID = "6f1c2a3b-4d5e-4f60-8a9b-0c1d2e3f4a5b"
	kube := e.withKube(t, svc)
	name := legacyName(svc)
	if name != "a6f1c2a3b4d5e4f608a9b0c1d2e3f4a5" {
		t.Fatalf("legacy name %s", name)
	}
	var listenerTags []string
	if tagged {
		listenerTags = []string{name}
	}
	var members []pools.CreateMemberOpts
	for _, n := range e.nodes {
		members = append(members, pools.CreateMemberOpts{Address: n.Status.Addresses[0].Address, ProtocolPort: int(svc.Spec.Ports[0].NodePort)})
	}
	lb, err := loadbalancers.Create(t.Context(), e.api.lb, loadbalancers.CreateOpts{
		Name: name, Description: "Kubernetes external service " + name + " from cluster kubernetes", VipSubnetID: e.fx.SubnetID,
		Listeners: []listeners.CreateOpts{{Name: "listener_" + name + "_0", Protocol: "TCP", ProtocolPort: 80, Tags: listenerTags,
			DefaultPool: &pools.CreateOpts{Name: "pool_" + name + "_0", Protocol: "TCP", LBMethod: pools.LBMethodRoundRobin, Members: members}}},
	}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if lb, err = e.lb.waitActive(t.Context(), lb.ID); err != nil {
		t.Fatal(err)
	}
	fip, err := floatingips.Create(t.Context(), e.api.network, floatingips.CreateOpts{
		FloatingNetworkID: e.fx.ExternalNetworkID, PortID: lb.VipPortID,
		Description: "Floating IP for Kubernetes external service " + name + " from cluster kubernetes",
	}).Extract()
	if err != nil {
		t.Fatal(err)
	}

	st, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Ingress) != 1 || st.Ingress[0].IP != fip.FloatingIP {
		t.Errorf("status %+v, want the legacy floating IP %s", st, fip.FloatingIP)
	}
	lbs := e.emu.LoadBalancers()
	if len(lbs) != 1 || lbs[0].ID != lb.ID || lbs[0].Name != name {
		t.Fatalf("load balancers %+v, want the legacy one kept as it is", lbs)
	}
	tag := lbName("kubernetes", svc)
	want := []string{"TCP:80=" + tag}
	if tagged {
		want = []string{"TCP:80=" + name + "," + tag}
	}
	if !slices.Equal(listenersByPort(lbs[0]), want) || !slices.Contains(lbs[0].Tags, tag) {
		t.Errorf("listeners %v tags %v, want the Service's tag on both", listenersByPort(lbs[0]), lbs[0].Tags)
	}
	if got := annotationOf(t, kube, svc); got != lb.ID {
		t.Errorf("annotation %q, want the legacy load balancer's ID %s", got, lb.ID)
	}
	// Synced again with the ID written back: still its own.
	svc.Annotations[annotationLoadBalancerID.String()] = lb.ID
	e.srv.ResetCalls()
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes); err != nil {
		t.Fatal(err)
	}
	for op, n := range e.srv.Calls() {
		if e.emu.Mutating(op) {
			t.Errorf("steady ensure of the legacy load balancer made %d %s", n, op)
		}
	}

	if err := e.lb.EnsureLoadBalancerDeleted(t.Context(), "", svc); err != nil {
		t.Fatal(err)
	}
	if lbs := e.emu.LoadBalancers(); len(lbs) != 0 {
		t.Errorf("load balancers left: %+v", lbs)
	}
	if fips := e.emu.FloatingIPs(); len(fips) != 0 {
		t.Errorf("floating IPs left: %+v", fips)
	}
}

// TestSharedConcurrent: Services sharing a load balancer, synced and
// then deleted all at once, neither lose each other's tags nor leave
// anything behind.
func TestSharedConcurrent(t *testing.T) {
	e := newLBEnv(t, 2, func(s *Section) { s.LoadBalancer.MaxSharedLB = 5 })
	owner := service("owner", 80)
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", owner, e.nodes); err != nil {
		t.Fatal(err)
	}
	lb := e.lbOf(t, owner)
	svcs := []*v1.Service{owner}
	for i := range 4 {
		svcs = append(svcs, sharing(fmt.Sprintf("s%d", i), lb.ID, int32(8080+i)))
	}
	all := func(f func(*v1.Service) error) {
		t.Helper()
		var wg sync.WaitGroup
		for _, svc := range svcs {
			wg.Go(func() {
				if err := f(svc); err != nil {
					t.Errorf("%s: %v", svc.Name, err)
				}
			})
		}
		wg.Wait()
	}
	all(func(svc *v1.Service) error {
		_, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes)
		return err
	})
	got := e.lbByID(t, lb.ID)
	if n := len(usageTags(got.Tags)); n != len(svcs) {
		t.Errorf("usage tags %v, want %d", got.Tags, len(svcs))
	}
	if n := len(got.Listeners); n != len(svcs) {
		t.Errorf("%d listeners, want %d", n, len(svcs))
	}
	all(func(svc *v1.Service) error { return e.lb.EnsureLoadBalancerDeleted(t.Context(), "", svc) })
	if lbs := e.emu.LoadBalancers(); len(lbs) != 0 {
		t.Errorf("load balancers left: %+v", lbs)
	}
	if fips := e.emu.FloatingIPs(); len(fips) != 0 {
		t.Errorf("floating IPs left: %+v", fips)
	}
}
