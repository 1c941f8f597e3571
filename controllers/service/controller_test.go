package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	servicehelper "k8s.io/cloud-provider/service/helpers"

	"github.com/multicloud-ccm/multicloud-ccm/providers/cloudhealth"
	"github.com/multicloud-ccm/multicloud-ccm/providers/lbhosts"
)

// These are small unit tests on a fake clientset and a recording load
// balancer; the conformance suite (test/e2e) runs the controller in the
// release binary against a real kube-apiserver and every cloud emulator.

// fakeLB records calls per Service; hook, when set, runs first and may
// block or fail a call.
type fakeLB struct {
	mu    sync.Mutex
	calls []string
	hosts map[string][]string
	hook  func(op string, svc *v1.Service) error
	// ensureCtx, when set, runs first in EnsureLoadBalancer with its
	// context (a call sleeping in its SDK's retries).
	ensureCtx func(ctx context.Context, svc *v1.Service) error
}

func (f *fakeLB) record(op string, svc *v1.Service, nodes []*v1.Node) error {
	f.mu.Lock()
	hook := f.hook
	f.mu.Unlock()
	if hook != nil {
		if err := hook(op, svc); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, op+" "+svc.Name)
	if nodes != nil || op == "ensure" || op == "update" {
		var names []string
		for _, n := range nodes {
			names = append(names, n.Name)
		}
		slices.Sort(names)
		if f.hosts == nil {
			f.hosts = map[string][]string{}
		}
		f.hosts[svc.Name] = names
	}
	if op == "delete" {
		delete(f.hosts, svc.Name)
	}
	return nil
}

func (f *fakeLB) count(op, name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c == op+" "+name {
			n++
		}
	}
	return n
}

func (f *fakeLB) hostsOf(name string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hosts[name]
}

func (f *fakeLB) GetLoadBalancer(_ context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.hosts[svc.Name]
	return &v1.LoadBalancerStatus{}, ok, nil
}

func (f *fakeLB) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return cloudprovider.DefaultLoadBalancerName(svc)
}

func (f *fakeLB) EnsureLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	if f.ensureCtx != nil {
		if err := f.ensureCtx(ctx, svc); err != nil {
			return nil, err
		}
	}
	if err := f.record("ensure", svc, nodes); err != nil {
		return nil, err
	}
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: "192.0.2.1"}}}, nil
}

func (f *fakeLB) UpdateLoadBalancer(_ context.Context, _ string, svc *v1.Service, nodes []*v1.Node) error {
	return f.record("update", svc, nodes)
}

func (f *fakeLB) EnsureLoadBalancerDeleted(_ context.Context, _ string, svc *v1.Service) error {
	return f.record("delete", svc, nil)
}

// fakeCloud serves lb; with lanes, Services go to the lane their
// "lane" annotation names and Nodes to the lane of their "lane" label.
type fakeCloud struct {
	lb    *fakeLB
	lanes []string
}

func (c *fakeCloud) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {}
func (c *fakeCloud) LoadBalancer() (cloudprovider.LoadBalancer, bool)                  { return c.lb, true }
func (c *fakeCloud) Instances() (cloudprovider.Instances, bool)                        { return nil, false }
func (c *fakeCloud) InstancesV2() (cloudprovider.InstancesV2, bool)                    { return nil, false }
func (c *fakeCloud) Zones() (cloudprovider.Zones, bool)                                { return nil, false }
func (c *fakeCloud) Clusters() (cloudprovider.Clusters, bool)                          { return nil, false }
func (c *fakeCloud) Routes() (cloudprovider.Routes, bool)                              { return nil, false }
func (c *fakeCloud) ProviderName() string                                              { return "fake" }
func (c *fakeCloud) HasClusterID() bool                                                { return true }

// lanedCloud is fakeCloud with lanes.
type lanedCloud struct{ fakeCloud }

func (c *lanedCloud) LoadBalancerLanes() []string { return c.lanes }
func (c *lanedCloud) LoadBalancerLane(svc *v1.Service) string {
	return svc.Annotations["lane"]
}
func (c *lanedCloud) LanesInUse() {}

func (c *lanedCloud) LaneNodes(lane string, nodes []*v1.Node) []*v1.Node {
	var out []*v1.Node
	for _, n := range nodes {
		if n.Labels["lane"] == lane {
			out = append(out, n)
		}
	}
	return out
}

type env struct {
	kube   *fake.Clientset
	lb     *fakeLB
	events *record.FakeRecorder
	health *cloudhealth.Board
}

// start runs the controller on cloud with opts (retries short unless
// opts says otherwise).
func start(t *testing.T, cloud cloudprovider.Interface, lb *fakeLB, opts Options) *env {
	t.Helper()
	kube := fake.NewClientset()
	f := informers.NewSharedInformerFactory(kube, 0)
	events := record.NewFakeRecorder(1000)
	if opts.Health == nil {
		opts.Health = cloudhealth.New(nil)
	}
	if opts.MinRetryDelay == 0 {
		opts.MinRetryDelay, opts.MaxRetryDelay = 10*time.Millisecond, 100*time.Millisecond
	}
	c, err := New(opts, cloud, kube, events, f.Core().V1().Services(), f.Core().V1().Nodes())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx.Done())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done; f.Shutdown() })
	return &env{kube: kube, lb: lb, events: events, health: opts.Health}
}

func lbService(name string, annotations map[string]string) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Annotations: annotations},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}},
	}
}

func node(name string, labels map[string]string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: v1.NodeSpec{ProviderID: "fake://" + name}}
}

func (e *env) create(t *testing.T, objs ...any) {
	t.Helper()
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *v1.Service:
			_, err = e.kube.CoreV1().Services(o.Namespace).Create(context.Background(), o, metav1.CreateOptions{})
		case *v1.Node:
			_, err = e.kube.CoreV1().Nodes().Create(context.Background(), o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func (e *env) service(t *testing.T, name string) *v1.Service {
	t.Helper()
	svc, err := e.kube.CoreV1().Services("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// drain returns the events recorded so far.
func (e *env) drain() []string {
	var out []string
	for {
		select {
		case ev := <-e.events.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

// TestEnsureAndDeleteKeepUpstreamContracts: a LoadBalancer Service gets
// the finalizer before its load balancer, its address in the status, and
// upstream's Events; deleted, its load balancer goes, then the
// finalizer.
func TestEnsureAndDeleteKeepUpstreamContracts(t *testing.T) {
	lb := &fakeLB{}
	e := start(t, &fakeCloud{lb: lb}, lb, Options{})
	e.create(t, node("n1", nil), lbService("web", nil))
	eventually(t, "the address", func() bool {
		s := e.service(t, "web")
		return len(s.Status.LoadBalancer.Ingress) == 1 && servicehelper.HasLBFinalizer(s)
	})
	if got := lb.hostsOf("web"); !slices.Equal(got, []string{"n1"}) {
		t.Errorf("backends %v, want [n1]", got)
	}
	evs := strings.Join(e.drain(), "\n")
	for _, want := range []string{"Normal EnsuringLoadBalancer Ensuring load balancer", "Normal EnsuredLoadBalancer Ensured load balancer"} {
		if !strings.Contains(evs, want) {
			t.Errorf("events %q lack %q", evs, want)
		}
	}
	// Deleting: the API server sets the deletion timestamp and keeps the
	// object while the finalizer is on it.
	s := e.service(t, "web")
	now := metav1.Now()
	s.DeletionTimestamp = &now
	if _, err := e.kube.CoreV1().Services("default").Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the finalizer removed", func() bool { return !servicehelper.HasLBFinalizer(e.service(t, "web")) })
	if lb.count("delete", "web") != 1 {
		t.Errorf("calls %v: want one delete", lb.calls)
	}
	evs = strings.Join(e.drain(), "\n")
	for _, want := range []string{"Normal DeletingLoadBalancer Deleting load balancer", "Normal DeletedLoadBalancer Deleted load balancer"} {
		if !strings.Contains(evs, want) {
			t.Errorf("events %q lack %q", evs, want)
		}
	}
}

// TestLoadBalancerClassIsLeftAlone: a Service naming a
// loadBalancerClass belongs to another implementation.
func TestLoadBalancerClassIsLeftAlone(t *testing.T) {
	lb := &fakeLB{}
	e := start(t, &fakeCloud{lb: lb}, lb, Options{})
	other := lbService("other", nil)
	class := "example.com/other"
	other.Spec.LoadBalancerClass = &class
	e.create(t, node("n1", nil), other, lbService("web", nil))
	eventually(t, "web served", func() bool { return lb.count("ensure", "web") == 1 })
	time.Sleep(50 * time.Millisecond)
	if n := lb.count("ensure", "other"); n != 0 || servicehelper.HasLBFinalizer(e.service(t, "other")) {
		t.Errorf("the classed Service was touched: %d ensures, finalizers %v", n, e.service(t, "other").Finalizers)
	}
}

// TestNodeChangesUpdateEachServiceOnce: a joining Node is one
// UpdateLoadBalancer per Service, with the new set; a Ready change is
// none (KEP-3458); the exclude label takes a Node out.
func TestNodeChangesUpdateEachServiceOnce(t *testing.T) {
	lb := &fakeLB{}
	e := start(t, &fakeCloud{lb: lb}, lb, Options{Workers: 3})
	e.create(t, node("n1", nil))
	names := []string{"a", "b", "c"}
	for _, n := range names {
		e.create(t, lbService(n, nil))
	}
	for _, n := range names {
		eventually(t, n+" served", func() bool { return len(e.service(t, n).Status.LoadBalancer.Ingress) == 1 })
	}
	e.create(t, node("n2", nil))
	for _, n := range names {
		eventually(t, n+" has n2", func() bool { return slices.Equal(lb.hostsOf(n), []string{"n1", "n2"}) })
	}
	for _, n := range names {
		if u := lb.count("update", n); u != 1 {
			t.Errorf("%s: %d updates for one joining node, want 1", n, u)
		}
	}
	// Readiness is not a criterion.
	n2, _ := e.kube.CoreV1().Nodes().Get(context.Background(), "n2", metav1.GetOptions{})
	n2.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}
	if _, err := e.kube.CoreV1().Nodes().UpdateStatus(context.Background(), n2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Excluded: out of every load balancer.
	n2.Labels = map[string]string{v1.LabelNodeExcludeBalancers: "true"}
	if _, err := e.kube.CoreV1().Nodes().Update(context.Background(), n2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		eventually(t, n+" without n2", func() bool { return slices.Equal(lb.hostsOf(n), []string{"n1"}) })
		if u := lb.count("update", n); u != 2 {
			t.Errorf("%s: %d updates after a Ready change and an exclusion, want 2", n, u)
		}
	}
}

// TestOneCloudHangingTakesNothingFromAnother: while the "slow" cloud's
// create hangs, the "fast" cloud's Service is served and a Node joining
// it reaches its load balancer.
func TestOneCloudHangingTakesNothingFromAnother(t *testing.T) {
	release := make(chan struct{})
	lb := &fakeLB{hook: func(op string, svc *v1.Service) error {
		if svc.Annotations["lane"] == "slow" {
			<-release
		}
		return nil
	}}
	defer close(release)
	e := start(t, &lanedCloud{fakeCloud{lb: lb, lanes: []string{"slow", "fast"}}}, lb, Options{Workers: 1})
	e.create(t, node("s1", map[string]string{"lane": "slow"}), node("f1", map[string]string{"lane": "fast"}))
	e.create(t, lbService("stuck", map[string]string{"lane": "slow"}), lbService("web", map[string]string{"lane": "fast"}))
	eventually(t, "the fast cloud's Service served", func() bool { return len(e.service(t, "web").Status.LoadBalancer.Ingress) == 1 })
	if got := lb.hostsOf("web"); !slices.Equal(got, []string{"f1"}) {
		t.Errorf("fast backends %v, want its own node only", got)
	}
	e.create(t, node("f2", map[string]string{"lane": "fast"}))
	eventually(t, "the joining node in the fast cloud's load balancer", func() bool { return slices.Equal(lb.hostsOf("web"), []string{"f1", "f2"}) })
}

// outage is a cloud that does not answer until end.
type outage struct {
	mu   sync.Mutex
	over bool
}

func (o *outage) end() {
	o.mu.Lock()
	o.over = true
	o.mu.Unlock()
}

// outageLB is a load balancer whose cloud does not answer (every call
// refused, told to health) until the outage ends; then its calls are
// served, and told as answers if answers.
func outageLB(health *cloudhealth.Board, answers bool) (*fakeLB, *outage) {
	o := &outage{}
	return &fakeLB{hook: func(string, *v1.Service) error {
		o.mu.Lock()
		defer o.mu.Unlock()
		if !o.over {
			health.Observe("fake", 0, false) // refused
			return errors.New("connection refused")
		}
		if answers {
			health.Observe("fake", 200, false)
		}
		return nil
	}}, o
}

// TestRetriedWhenTheCloudAnswersAgain: a Service that failed while its
// cloud did not answer is retried once the cloud answers, long before
// its backoff (an hour here) would.
func TestRetriedWhenTheCloudAnswersAgain(t *testing.T) {
	health := cloudhealth.New(nil)
	lb, o := outageLB(health, true)
	e := start(t, &fakeCloud{lb: lb}, lb, Options{Health: health, MinRetryDelay: time.Hour, MaxRetryDelay: time.Hour, ProbeInterval: 20 * time.Millisecond})
	e.create(t, node("n1", nil), lbService("a", nil), lbService("b", nil))
	var failed []string
	eventually(t, "both failed", func() bool {
		for _, ev := range e.drain() {
			if strings.HasPrefix(ev, "Warning SyncLoadBalancerFailed") {
				failed = append(failed, ev)
			}
		}
		return len(failed) >= 2
	})
	time.Sleep(100 * time.Millisecond)
	o.end()
	for _, n := range []string{"a", "b"} {
		eventually(t, fmt.Sprintf("%s served after the outage", n), func() bool { return len(e.service(t, n).Status.LoadBalancer.Ingress) == 1 })
	}
}

// TestRetriedAtTheCloudsFirstAnswer: Services waiting for the cloud are
// retried as soon as it answers any call, not at the next probe (an hour
// here, as their backoff is).
func TestRetriedAtTheCloudsFirstAnswer(t *testing.T) {
	health := cloudhealth.New(nil)
	lb, o := outageLB(health, false)
	e := start(t, &fakeCloud{lb: lb}, lb, Options{Health: health, MinRetryDelay: time.Hour, MaxRetryDelay: time.Hour, ProbeInterval: time.Hour})
	e.create(t, node("n1", nil), lbService("a", nil), lbService("b", nil))
	failed := 0
	eventually(t, "both failed", func() bool {
		for _, ev := range e.drain() {
			if strings.HasPrefix(ev, "Warning SyncLoadBalancerFailed") {
				failed++
			}
		}
		return failed >= 2
	})
	o.end()
	for _, n := range []string{"a", "b"} {
		eventually(t, fmt.Sprintf("%s served after the cloud answers", n), func() bool {
			// Some other call (a Node's lookup, say) is answered.
			health.Observe("fake", 200, false)
			return len(e.service(t, n).Status.LoadBalancer.Ingress) == 1
		})
	}
}

// TestNodeJoiningDuringTheFirstEnsure: a Node that joins while a lane's
// first load balancer is being made (no Service ensured yet, so no node
// pass runs) reaches it right after.
func TestNodeJoiningDuringTheFirstEnsure(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	lb := &fakeLB{hook: func(op string, svc *v1.Service) error {
		if op == "ensure" {
			once.Do(func() { close(entered); <-release })
		}
		return nil
	}}
	e := start(t, &fakeCloud{lb: lb}, lb, Options{})
	e.create(t, node("n1", nil), lbService("web", nil))
	<-entered
	e.create(t, node("n2", nil))
	time.Sleep(50 * time.Millisecond) // the node loop's pass, skipped
	close(release)
	eventually(t, "the joining node in the load balancer", func() bool { return slices.Equal(lb.hostsOf("web"), []string{"n1", "n2"}) })
}

// batchLB is fakeLB with a batch (lbhosts.Updater): "solo" is not
// batched, "flaky" fails in its first batch.
type batchLB struct {
	*fakeLB
	batches [][]string
	flaked  bool
}

func (b *batchLB) UpdateLoadBalancerHosts(_ context.Context, _ string, svcs []*v1.Service, nodes []*v1.Node) []error {
	errs := make([]error, len(svcs))
	var names []string
	for i, svc := range svcs {
		names = append(names, svc.Name)
		switch {
		case svc.Name == "solo":
			errs[i] = lbhosts.ErrNotBatched
		case svc.Name == "flaky" && !b.flaked:
			b.flaked = true
			errs[i] = errors.New("pool busy")
		default:
			errs[i] = b.record("batch", svc, nodes)
		}
	}
	b.mu.Lock()
	b.batches = append(b.batches, names)
	b.mu.Unlock()
	return errs
}

type batchCloud struct {
	fakeCloud
	b *batchLB
}

func (c *batchCloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return c.b, true }

// TestNodeChangeIsOneBatch: with a backend batch, a joining Node reaches
// every load balancer in one call; a Service the batch does not take, or
// whose update failed in it, is updated alone, once.
func TestNodeChangeIsOneBatch(t *testing.T) {
	lb := &fakeLB{}
	b := &batchLB{fakeLB: lb}
	e := start(t, &batchCloud{fakeCloud: fakeCloud{lb: lb}, b: b}, lb, Options{Workers: 2})
	e.create(t, node("n1", nil))
	names := []string{"a", "b", "c", "flaky", "solo"}
	for _, n := range names {
		e.create(t, lbService(n, nil))
	}
	for _, n := range names {
		eventually(t, n+" served", func() bool { return len(e.service(t, n).Status.LoadBalancer.Ingress) == 1 })
	}
	e.drain()
	e.create(t, node("n2", nil))
	for _, n := range names {
		eventually(t, n+" has n2", func() bool { return slices.Equal(lb.hostsOf(n), []string{"n1", "n2"}) })
	}
	b.mu.Lock()
	batches := slices.Clone(b.batches)
	b.mu.Unlock()
	if len(batches) != 1 || !slices.Equal(batches[0], names) {
		t.Errorf("batches %v, want one of %v", batches, names)
	}
	for _, n := range []string{"a", "b", "c"} {
		if lb.count("batch", n) != 1 || lb.count("update", n) != 0 {
			t.Errorf("%s: %d batched and %d single updates, want 1 and 0", n, lb.count("batch", n), lb.count("update", n))
		}
	}
	for _, n := range []string{"flaky", "solo"} {
		if lb.count("update", n) != 1 {
			t.Errorf("%s: %d single updates, want 1", n, lb.count("update", n))
		}
	}
	evs := strings.Join(e.drain(), "\n")
	if got := strings.Count(evs, "Normal UpdatedLoadBalancer Updated load balancer with new hosts"); got != len(names) {
		t.Errorf("%d UpdatedLoadBalancer events, want %d: %s", got, len(names), evs)
	}
}

// TestSyncSleepingInRetriesStartsOverWhenTheCloudAnswers: a sync that
// began while its cloud did not answer and sleeps in its SDK's retry
// backoff is interrupted once the cloud answers again and run at once,
// without a Warning for the interruption.
func TestSyncSleepingInRetriesStartsOverWhenTheCloudAnswers(t *testing.T) {
	health := cloudhealth.New(nil)
	var mu sync.Mutex
	outage := true
	lb := &fakeLB{ensureCtx: func(ctx context.Context, svc *v1.Service) error {
		mu.Lock()
		down := outage
		mu.Unlock()
		if !down {
			return nil
		}
		health.Observe("fake", 503, false)
		if svc.Name == "a" {
			return errors.New("503 Service Unavailable")
		}
		// b: an SDK sleeping a minute before its next attempt.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Minute):
			return errors.New("503 Service Unavailable")
		}
	}}
	e := start(t, &fakeCloud{lb: lb}, lb, Options{Workers: 2, Health: health, MinRetryDelay: time.Hour, MaxRetryDelay: time.Hour, ProbeInterval: 20 * time.Millisecond})
	e.create(t, node("n1", nil), lbService("a", nil), lbService("b", nil))
	eventually(t, "a failed", func() bool {
		for _, ev := range e.drain() {
			if strings.Contains(ev, "SyncLoadBalancerFailed") {
				return true
			}
		}
		return false
	})
	mu.Lock()
	outage = false
	mu.Unlock()
	health.Observe("fake", 200, false) // another controller's call is answered
	for _, n := range []string{"a", "b"} {
		eventually(t, n+" served once the cloud answers", func() bool { return len(e.service(t, n).Status.LoadBalancer.Ingress) == 1 })
	}
	for _, ev := range e.drain() {
		if strings.Contains(ev, "SyncLoadBalancerFailed") && strings.Contains(ev, "context") {
			t.Errorf("the interruption became a Warning: %s", ev)
		}
	}
}

// TestBackendAnnotationIsNoChange: a backend that records something on
// the Service during the ensure (OpenStack's load-balancer-id), on the
// API object and on the Service it was given, is not ensured again when
// that change comes back from the informer.
func TestBackendAnnotationIsNoChange(t *testing.T) {
	var kube *fake.Clientset
	var mu sync.Mutex
	lb := &fakeLB{}
	lb.ensureCtx = func(ctx context.Context, svc *v1.Service) error {
		if svc.Annotations["lb-id"] != "" {
			return nil
		}
		mu.Lock()
		k := kube
		mu.Unlock()
		cur, err := k.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Annotations = map[string]string{"lb-id": "lb-1"}
		if _, err := k.CoreV1().Services(svc.Namespace).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			return err
		}
		svc.Annotations = cur.Annotations
		return nil
	}
	e := start(t, &fakeCloud{lb: lb}, lb, Options{})
	mu.Lock()
	kube = e.kube
	mu.Unlock()
	e.create(t, node("n1", nil), lbService("web", nil))
	eventually(t, "the address", func() bool { return len(e.service(t, "web").Status.LoadBalancer.Ingress) == 1 })
	time.Sleep(200 * time.Millisecond) // the annotation's update event
	if n := lb.count("ensure", "web"); n != 1 {
		t.Errorf("%d ensures, want 1: the backend's own annotation was taken for a change", n)
	}
}
