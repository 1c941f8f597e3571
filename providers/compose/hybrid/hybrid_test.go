package hybrid

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
	"k8s.io/component-base/metrics/testutil"

	"github.com/multicloud-ccm/multicloud-ccm/providers/compose"
)

// fakeCloud is one cloud with instances by name, a load balancer and
// routes, recording what it is asked to do.
type fakeCloud struct {
	name string
	// instances are the cloud's instance names; gone and stopped are by
	// name too.
	instances, gone, stopped []string
	lookupErr                error
	noRoutes                 bool
	// hang, when set, makes every load balancer and instance call wait
	// for it to close: a cloud that does not answer.
	hang chan struct{}

	mu       sync.Mutex
	ensured  map[string][]string // Service name -> backend Node names
	deleted  []string
	routes   []*cloudprovider.Route
	lookups  int
	lbExists map[string]bool
}

func newFake(name string, instances ...string) *fakeCloud {
	return &fakeCloud{name: name, instances: instances, ensured: map[string][]string{}, lbExists: map[string]bool{}}
}

// instanceOf is the instance a Node names: by providerID, else by name.
func (f *fakeCloud) instanceOf(node *v1.Node) (string, error) {
	if f.hang != nil {
		<-f.hang
	}
	f.mu.Lock()
	f.lookups++
	f.mu.Unlock()
	if f.lookupErr != nil {
		return "", f.lookupErr
	}
	name := node.Name
	if pid := node.Spec.ProviderID; pid != "" {
		rest, ok := strings.CutPrefix(pid, f.name+"://")
		if !ok {
			return "", fmt.Errorf("providerID %s is not %s's", pid, f.name)
		}
		name = rest
	}
	if slices.Contains(f.instances, name) || slices.Contains(f.gone, name) {
		return name, nil
	}
	return "", fmt.Errorf("no instance %s in %s: %w", name, f.name, cloudprovider.InstanceNotFound)
}

func (f *fakeCloud) InstanceExists(_ context.Context, node *v1.Node) (bool, error) {
	i, err := f.instanceOf(node)
	if err != nil {
		return false, err
	}
	return !slices.Contains(f.gone, i), nil
}

func (f *fakeCloud) InstanceShutdown(_ context.Context, node *v1.Node) (bool, error) {
	i, err := f.instanceOf(node)
	if err != nil {
		return false, err
	}
	return slices.Contains(f.stopped, i), nil
}

func (f *fakeCloud) InstanceMetadata(_ context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	i, err := f.instanceOf(node)
	if err != nil {
		return nil, err
	}
	return &cloudprovider.InstanceMetadata{ProviderID: f.name + "://" + i, Zone: f.name + "-zone", AdditionalLabels: map[string]string{f.name + "/own": "x"}}, nil
}

func (f *fakeCloud) GetLoadBalancer(_ context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	if f.hang != nil {
		<-f.hang
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return &v1.LoadBalancerStatus{}, f.lbExists[svc.Name], nil
}

func (f *fakeCloud) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return f.name + "-" + svc.Name
}

func (f *fakeCloud) EnsureLoadBalancer(_ context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	if f.hang != nil {
		<-f.hang
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	f.ensured[svc.Name] = names
	f.lbExists[svc.Name] = true
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{Hostname: f.name + ".example"}}}, nil
}

func (f *fakeCloud) UpdateLoadBalancer(ctx context.Context, c string, svc *v1.Service, nodes []*v1.Node) error {
	_, err := f.EnsureLoadBalancer(ctx, c, svc, nodes)
	return err
}

func (f *fakeCloud) EnsureLoadBalancerDeleted(_ context.Context, _ string, svc *v1.Service) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lbExists[svc.Name] {
		f.deleted = append(f.deleted, svc.Name)
	}
	delete(f.lbExists, svc.Name)
	delete(f.ensured, svc.Name)
	return nil
}

func (f *fakeCloud) ListRoutes(context.Context, string) ([]*cloudprovider.Route, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.routes), nil
}

func (f *fakeCloud) CreateRoute(_ context.Context, _, hint string, r *cloudprovider.Route) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	rr := *r
	rr.Name = f.name + "-" + hint
	f.routes = append(f.routes, &rr)
	return nil
}

func (f *fakeCloud) DeleteRoute(_ context.Context, _ string, r *cloudprovider.Route) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.IndexFunc(f.routes, func(x *cloudprovider.Route) bool { return x.Name == r.Name })
	if i < 0 {
		return fmt.Errorf("%s has no route %s", f.name, r.Name)
	}
	f.routes = slices.Delete(f.routes, i, i+1)
	return nil
}

// line is the fake's own line, as the registry builds a member.
func (f *fakeCloud) line() *compose.Cloud {
	p := compose.Parts{Name: f.name, Instances: f, LoadBalancer: f}
	if !f.noRoutes {
		p.Routes = f
	}
	return compose.New(p)
}

func node(name, providerID string, labels map[string]string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: labels}, Spec: v1.NodeSpec{ProviderID: providerID}}
}

func composite(t *testing.T, lbDefault string, clouds ...*fakeCloud) *Composite {
	t.Helper()
	var ms []Member
	for _, c := range clouds {
		ms = append(ms, Member{Name: c.name, Cloud: c.line()})
	}
	h, err := newComposite(ms, lbDefault)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestNodeOwnership: a Node belongs to the cloud its providerID's scheme
// names, else its label's, else the one cloud with an instance of its
// name; a Node of no configured cloud is never gone or shut down and
// never initialized; initialized Nodes carry their cloud's label.
func TestNodeOwnership(t *testing.T) {
	aws, os := newFake("aws", "a1", "both"), newFake("openstack", "o1", "both")
	aws.gone, os.stopped = []string{"a-gone"}, []string{"o1"}
	in := &instances{h: composite(t, "openstack", os, aws)}
	ctx := context.Background()

	for _, tt := range []struct {
		node            *v1.Node
		cloud           string // "" for an error
		exists, stopped bool
		err             string
	}{
		{node: node("n1", "aws://a1", nil), cloud: "aws", exists: true},
		{node: node("n2", "openstack://o1", nil), cloud: "openstack", exists: true, stopped: true},
		{node: node("n3", "aws://a-gone", nil), cloud: "aws", exists: false},
		{node: node("a1", "", nil), cloud: "aws", exists: true},
		{node: node("o1", "", map[string]string{LabelProvider: "openstack"}), cloud: "openstack", exists: true, stopped: true},
		{node: node("both", "", nil), err: "clouds openstack and aws each have an instance of that name"},
		{node: node("nowhere", "", nil), err: "no configured cloud (openstack,aws) has an instance of that name"},
	} {
		t.Run(tt.node.Name, func(t *testing.T) {
			md, err := in.InstanceMetadata(ctx, tt.node)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("metadata %+v, %v; want an error saying %q", md, err, tt.err)
				}
				if _, err := in.InstanceExists(ctx, tt.node); err == nil {
					t.Error("exists without an owner")
				}
				return
			}
			if err != nil && tt.exists {
				t.Fatal(err)
			}
			if tt.exists && (md.AdditionalLabels[LabelProvider] != tt.cloud || md.AdditionalLabels[tt.cloud+"/own"] != "x" || !strings.HasPrefix(md.ProviderID, tt.cloud+"://")) {
				t.Errorf("metadata %+v, want %s's with its label", md, tt.cloud)
			}
			exists, err := in.InstanceExists(ctx, tt.node)
			if err != nil || exists != tt.exists {
				t.Errorf("exists %v, %v; want %v", exists, err, tt.exists)
			}
			if !tt.exists {
				return
			}
			stopped, err := in.InstanceShutdown(ctx, tt.node)
			if err != nil || stopped != tt.stopped {
				t.Errorf("shutdown %v, %v; want %v", stopped, err, tt.stopped)
			}
		})
	}

	// Of no configured cloud: there and running, never initialized. A
	// tainted one gets nil metadata (skipped, not retried); one its own
	// manager initialized gets empty metadata (its addresses left alone).
	uninitialized := []v1.Taint{{Key: cloudproviderapi.TaintExternalCloudProvider, Value: "true", Effect: v1.TaintEffectNoSchedule}}
	for _, n := range []*v1.Node{node("k3s", "k3s://k3s", nil), node("gpu", "", map[string]string{LabelProvider: "gce"})} {
		for _, tainted := range []bool{true, false} {
			n := n.DeepCopy()
			if tainted {
				n.Spec.Taints = uninitialized
			}
			exists, err := in.InstanceExists(ctx, n)
			stopped, err2 := in.InstanceShutdown(ctx, n)
			md, err3 := in.InstanceMetadata(ctx, n)
			if !exists || err != nil || stopped || err2 != nil || err3 != nil || (md == nil) != tainted || (md != nil && !reflect.DeepEqual(*md, cloudprovider.InstanceMetadata{})) {
				t.Errorf("%s (tainted %v): exists %v %v, shutdown %v %v, metadata %+v %v", n.Name, tainted, exists, err, stopped, err2, md, err3)
			}
		}
	}

	// A cloud that cannot answer makes a Node without providerID wait,
	// never someone else's.
	aws.lookupErr = errors.New("throttled")
	if _, err := in.InstanceExists(ctx, node("o1", "", nil)); err == nil || !strings.Contains(err.Error(), "cloud aws could not be asked") {
		t.Errorf("with aws throttled: %v", err)
	}
	aws.lookupErr = nil

	// One cloud: a Node without providerID is asked of it alone.
	single := &instances{h: composite(t, "aws", newFake("aws", "a1"))}
	if md, err := single.InstanceMetadata(ctx, node("a1", "", nil)); err != nil || md.AdditionalLabels[LabelProvider] != "aws" {
		t.Errorf("one cloud: %+v %v", md, err)
	}
	if ok, err := single.InstanceExists(ctx, node("x", "openstack://o1", nil)); !ok || err != nil {
		t.Errorf("one cloud, another cloud's Node: exists %v %v", ok, err)
	}
}

// TestUnownedNodesCounted: the Node informer counts Nodes of no
// configured cloud by reason, and forgets them when they go.
func TestUnownedNodesCounted(t *testing.T) {
	h := composite(t, "aws", newFake("aws"))
	value := func(reason string) float64 {
		v, err := testutil.GetGaugeMetricValue(unownedGauge.WithLabelValues(reason))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := value(ReasonForeignProviderID)
	// The Nodes exist before the informer lists: the fake clientset's
	// watch does not replay what happened between its list and watch.
	client := fake.NewClientset(node("k3s-1", "k3s://k3s-1", nil), node("kind-1", "kind://docker/kind/kind-1", nil), node("ours", "aws:///a/i-1", nil))
	f := informers.NewSharedInformerFactory(client, 0)
	h.unowned.watch(f)
	stop := make(chan struct{})
	defer close(stop)
	f.Start(stop)
	f.WaitForCacheSync(stop)
	waitFor(t, func() bool { return value(ReasonForeignProviderID) == before+2 })
	// A Node the lister sees after the sync proves the watch is live.
	ctx := context.Background()
	if _, err := client.CoreV1().Nodes().Create(ctx, node("later", "aws:///a/i-2", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, err := f.Core().V1().Nodes().Lister().Get("later"); return err == nil })
	if err := client.CoreV1().Nodes().Delete(ctx, "k3s-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return value(ReasonForeignProviderID) == before+1 })
}

// waitFor waits for the informer to deliver: generously, as on a loaded
// CI machine its watch may start late.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 3000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met in 30 s")
}

// TestLoadBalancerRouting: a Service's load balancer is its annotated
// cloud's (else the default's) with only that cloud's Nodes; a change of
// annotation makes the new one, then deletes the old one; deletion asks
// every cloud.
func TestLoadBalancerRouting(t *testing.T) {
	aws, os := newFake("aws"), newFake("openstack")
	lb := &loadBalancers{h: composite(t, "openstack", os, aws)}
	ctx := context.Background()
	nodes := []*v1.Node{node("a1", "aws://a1", nil), node("o1", "openstack://o1", nil), node("o2", "openstack://o2", nil), node("k3s", "k3s://k", nil), node("new", "", nil)}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "uid-web", Annotations: map[string]string{}}}

	st, err := lb.EnsureLoadBalancer(ctx, "c", svc, nodes)
	if err != nil || st.Ingress[0].Hostname != "openstack.example" || !slices.Equal(os.ensured["web"], []string{"o1", "o2"}) || len(aws.ensured) != 0 {
		t.Fatalf("default cloud: %+v %v; openstack backends %v, aws %v", st, err, os.ensured, aws.ensured)
	}
	if aws.lookups != 0 {
		t.Errorf("placing Nodes asked aws %d times", aws.lookups)
	}

	// Moved to aws: made there, then deleted from openstack.
	svc.Annotations[AnnotationLoadBalancerProvider] = "aws"
	st, err = lb.EnsureLoadBalancer(ctx, "c", svc, nodes)
	if err != nil || st.Ingress[0].Hostname != "aws.example" || !slices.Equal(aws.ensured["web"], []string{"a1"}) || !slices.Equal(os.deleted, []string{"web"}) {
		t.Fatalf("moved: %+v %v; aws backends %v, openstack deleted %v", st, err, aws.ensured, os.deleted)
	}
	if err := lb.UpdateLoadBalancer(ctx, "c", svc, nodes[:1]); err != nil || !slices.Equal(aws.ensured["web"], []string{"a1"}) {
		t.Errorf("update: %v %v", err, aws.ensured)
	}

	// A cloud with none of the Nodes, and an unknown cloud: errors.
	svc.Annotations[AnnotationLoadBalancerProvider] = "openstack"
	if _, err := lb.EnsureLoadBalancer(ctx, "c", svc, nodes[:1]); err == nil || !strings.Contains(err.Error(), "cloud openstack has none of the cluster's 1 Nodes") {
		t.Errorf("no Nodes: %v", err)
	}
	svc.Annotations[AnnotationLoadBalancerProvider] = "gce"
	if _, err := lb.EnsureLoadBalancer(ctx, "c", svc, nodes); err == nil || !strings.Contains(err.Error(), `names no configured cloud`) {
		t.Errorf("unknown cloud: %v", err)
	}

	// After a restart, the first ensure finds a load balancer left in
	// the other cloud and deletes it.
	other := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "api", UID: "uid-api", Annotations: map[string]string{}},
		Status: v1.ServiceStatus{LoadBalancer: v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: "192.0.2.1"}}}}}
	aws.lbExists["api"] = true
	if _, err := lb.EnsureLoadBalancer(ctx, "c", other, nodes); err != nil || !slices.Contains(aws.deleted, "api") {
		t.Errorf("left in aws: %v, deleted %v", err, aws.deleted)
	}

	delete(svc.Annotations, AnnotationLoadBalancerProvider)
	if err := lb.EnsureLoadBalancerDeleted(ctx, "c", svc); err != nil || !slices.Contains(aws.deleted, "web") {
		t.Errorf("delete: %v, aws deleted %v", err, aws.deleted)
	}
}

// TestRoutes: one list of every cloud's routes; a route is made in its
// Node's cloud and deleted in the cloud that listed it. The pod CIDRs of
// Nodes no routed cloud serves (a cloud without routes, a k3s Node) are
// listed as routed, so the route controller neither fails to create them
// each period nor marks those Nodes NetworkUnavailable, and deleting
// them touches no cloud.
func TestRoutes(t *testing.T) {
	aws, os, gce := newFake("aws"), newFake("openstack"), newFake("gce")
	gce.noRoutes = true
	h := composite(t, "openstack", os, aws, gce)
	withCIDR := func(n *v1.Node, cidr string) *v1.Node {
		n.Spec.PodCIDR, n.Spec.PodCIDRs = cidr, []string{cidr}
		return n
	}
	client := fake.NewClientset(node("a1", "aws://a1", nil), node("o1", "openstack://o1", nil),
		withCIDR(node("g1", "gce://p/z/g1", nil), "10.0.7.0/24"), withCIDR(node("k1", "k3s://k1", nil), "10.0.8.0/24"),
		withCIDR(node("unplaced", "", nil), "10.0.9.0/24"))
	f := informers.NewSharedInformerFactory(client, 0)
	h.nodes = f.Core().V1().Nodes().Lister()
	stop := make(chan struct{})
	defer close(stop)
	f.Start(stop)
	f.WaitForCacheSync(stop)
	rt := &routes{h: h}
	ctx := context.Background()
	for _, n := range []string{"a1", "o1"} {
		if err := rt.CreateRoute(ctx, "c", "h-"+n, &cloudprovider.Route{TargetNode: types.NodeName(n), DestinationCIDR: "10.0.0.0/24"}); err != nil {
			t.Fatal(err)
		}
	}
	if len(aws.routes) != 1 || len(os.routes) != 1 || aws.routes[0].TargetNode != "a1" {
		t.Fatalf("aws %v, openstack %v", aws.routes, os.routes)
	}
	if err := rt.CreateRoute(ctx, "c", "h-g1", &cloudprovider.Route{TargetNode: "g1"}); err == nil || !strings.Contains(err.Error(), "cloud gce, which has no routes configured") {
		t.Errorf("gce: %v", err)
	}
	all, err := rt.ListRoutes(ctx, "c")
	if err != nil || len(all) != 4 {
		t.Fatalf("list %v %v", all, err)
	}
	var unrouted []string
	for _, r := range all {
		if strings.HasPrefix(r.Name, unroutedPrefix) {
			unrouted = append(unrouted, string(r.TargetNode)+" "+r.DestinationCIDR)
		}
	}
	if slices.Sort(unrouted); !slices.Equal(unrouted, []string{"g1 10.0.7.0/24", "k1 10.0.8.0/24"}) {
		t.Errorf("unrouted Nodes listed as %v", unrouted)
	}
	for _, r := range all {
		if err := rt.DeleteRoute(ctx, "c", r); err != nil {
			t.Error(err)
		}
	}
	if len(aws.routes)+len(os.routes) != 0 {
		t.Errorf("left: %v %v", aws.routes, os.routes)
	}
}

// TestOneCloudDownKeepsTheOthersServed: while one cloud does not answer,
// its calls hold at most callShare workers; the rest fail within slotWait
// (an error, never "gone"), and the other cloud's Nodes and Services are
// served at once, including a Service with an address whose previous
// cloud cannot be asked.
func TestOneCloudDownKeepsTheOthersServed(t *testing.T) {
	aws, os := newFake("aws", "a1"), newFake("openstack", "o1")
	aws.hang = make(chan struct{})
	defer close(aws.hang)
	h := composite(t, "openstack", os, aws)
	lb, in := &loadBalancers{h: h}, &instances{h: h}
	ctx := context.Background()
	nodes := []*v1.Node{node("a1", "aws://a1", nil), node("o1", "openstack://o1", nil)}

	// Ten workers on the down cloud's Services: callShare of them hang.
	results := make(chan error, 10)
	for i := range 10 {
		svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("aws-", i), UID: types.UID(fmt.Sprint("uid-aws-", i)),
			Annotations: map[string]string{AnnotationLoadBalancerProvider: "aws"}}}
		go func() { _, err := lb.EnsureLoadBalancer(ctx, "c", svc, nodes); results <- err }()
	}
	start := time.Now()
	for range 10 - callShare {
		if err := <-results; err == nil || !strings.Contains(err.Error(), "cloud aws already has 5 load balancer calls in flight") {
			t.Errorf("a call past the down cloud's share: %v", err)
		}
	}
	if d := time.Since(start); d > 3*slotWait {
		t.Errorf("the calls past the share took %s to fail", d)
	}

	// The other cloud: a Service (one with an address, whose previous
	// cloud is the down one), a Node's lifecycle answers.
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "uid-web"},
		Status: v1.ServiceStatus{LoadBalancer: v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: "192.0.2.9"}}}}}
	if st, err := lb.EnsureLoadBalancer(ctx, "c", svc, nodes); err != nil || st.Ingress[0].Hostname != "openstack.example" {
		t.Errorf("openstack Service with aws down: %+v %v", st, err)
	}
	if ok, err := in.InstanceExists(ctx, nodes[1]); !ok || err != nil {
		t.Errorf("openstack Node with aws down: %v %v", ok, err)
	}
	// The down cloud's Node: an error within slotWait once its share is
	// taken, never "gone".
	for range callShare {
		go func() { _, _ = in.InstanceExists(ctx, nodes[0]) }()
	}
	time.Sleep(50 * time.Millisecond)
	if ok, err := in.InstanceExists(ctx, nodes[0]); err == nil || ok {
		t.Errorf("aws Node with aws down: %v %v", ok, err)
	}
}

// TestLanesLiftTheLoadBalancerShare: a call past a cloud's share is a
// RetryError (retried after slotWait, not a grown backoff); once the
// service controller says its lanes are in use, a cloud's load-balancer
// calls are not bounded here.
func TestLanesLiftTheLoadBalancerShare(t *testing.T) {
	aws, os := newFake("aws", "a1"), newFake("openstack", "o1")
	aws.hang = make(chan struct{})
	defer close(aws.hang)
	h := composite(t, "openstack", os, aws)
	lb := &loadBalancers{h: h}
	nodes := []*v1.Node{node("a1", "aws://a1", nil), node("o1", "openstack://o1", nil)}
	ensure := func(i int) chan error {
		done := make(chan error, 1)
		svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("aws-", i), UID: types.UID(fmt.Sprint("uid-aws-", i)),
			Annotations: map[string]string{AnnotationLoadBalancerProvider: "aws"}}}
		go func() { _, err := lb.EnsureLoadBalancer(context.Background(), "c", svc, nodes); done <- err }()
		return done
	}
	// callShare+1 calls: callShare hang in the cloud, one finds no slot.
	results := make(chan error, callShare+1)
	for i := range callShare + 1 {
		go func() { results <- <-ensure(i) }()
	}
	var re *cloudproviderapi.RetryError
	select {
	case err := <-results:
		if !errors.As(err, &re) || re.RetryAfter() != slotWait {
			t.Errorf("a call past the share: %v, want a RetryError after %s", err, slotWait)
		}
	case <-time.After(3 * slotWait):
		t.Fatal("no call past the share failed")
	}
	lb.LanesInUse()
	select {
	case err := <-ensure(callShare + 1):
		t.Errorf("with lanes, a call past the share still returned at once: %v", err)
	case <-time.After(3 * slotWait):
		// It reached the (hanging) cloud: no bound.
	}
}
