package nodeipam_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/multicloud-ccm/multicloud-ccm/controllers/nodeipam"
	"github.com/multicloud-ccm/multicloud-ccm/providers/podcidrs"
	"github.com/multicloud-ccm/multicloud-ccm/test/controlplane"
)

// cloud is a podcidrs.Allocator answering from a table, counting asks.
type cloud struct {
	mu      sync.Mutex
	answers map[string]podcidrs.Answer
	errs    map[string]error
	asks    map[string]int
}

func newCloud() *cloud {
	return &cloud{answers: map[string]podcidrs.Answer{}, errs: map[string]error{}, asks: map[string]int{}}
}

func (c *cloud) PodCIDRs(_ context.Context, n *v1.Node) (podcidrs.Answer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asks[n.Name]++
	if err := c.errs[n.Name]; err != nil {
		return podcidrs.Answer{}, err
	}
	a, ok := c.answers[n.Name]
	if !ok {
		return podcidrs.Answer{}, fmt.Errorf("%w: unknown node", podcidrs.ErrNotServed)
	}
	return a, nil
}

func (c *cloud) set(name string, a podcidrs.Answer, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.answers[name], c.errs[name] = a, err
}

func (c *cloud) askCount(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.asks[name]
}

func run(t *testing.T, kube kubernetes.Interface, opts nodeipam.Options, alloc podcidrs.Allocator) (stop func()) {
	t.Helper()
	f := informers.NewSharedInformerFactory(kube, 0)
	bc := record.NewBroadcaster()
	bc.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	c, err := nodeipam.New(opts, alloc, kube, f.Core().V1().Nodes(), bc.NewRecorder(scheme.Scheme, v1.EventSource{Component: "cidrAllocator"}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	f.Start(ctx.Done())
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
		f.Shutdown()
		bc.Shutdown()
	}
}

func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %s", what, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func node(name string, podCIDRs ...string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: "test://" + name}}
	if len(podCIDRs) > 0 {
		n.Spec.PodCIDR, n.Spec.PodCIDRs = podCIDRs[0], podCIDRs
	}
	return n
}

func prefixes(s ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range s {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}

// TestAgainstAPIServer runs the controller against a real kube-apiserver:
// cloud-held ranges are written with NetworkUnavailable=False, allocated
// ranges skip every pod CIDR already on a Node (also after a restart),
// existing pod CIDRs are never changed, and Nodes of no cloud allocator,
// without ranges, or given pod CIDRs by someone else are told apart.
func TestAgainstAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("needs etcd and kube-apiserver (test/controlplane)")
	}
	cp, err := controlplane.Start(controlplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	kube := cp.AdminClient
	ctx := t.Context()
	create := func(n *v1.Node) {
		t.Helper()
		if _, err := kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(name string) *v1.Node {
		t.Helper()
		n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	hasCIDRs := func(name string, want ...string) func() (bool, string) {
		return func() (bool, string) {
			got := get(name).Spec.PodCIDRs
			return slices.Equal(got, want), fmt.Sprint(got)
		}
	}
	event := func(name, reason, contains string) func() (bool, string) {
		return func() (bool, string) {
			evs, err := kube.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
			if err != nil {
				t.Fatal(err)
			}
			var seen []string
			for _, e := range evs.Items {
				if e.Reason == reason && e.Type == v1.EventTypeWarning && strings.Contains(e.Message, contains) {
					return true, ""
				}
				seen = append(seen, e.Reason+": "+e.Message)
			}
			return false, fmt.Sprint(seen)
		}
	}

	c := newCloud()
	// Before the controller starts: a Node already holding an allocated
	// range, and one whose CIDR differs from what its cloud now holds.
	create(node("pre", "10.244.0.0/24", "fd00:10:244::/64"))
	c.set("pre", podcidrs.Answer{IPv4: podcidrs.Family{Allocate: true}, IPv6: podcidrs.Family{Allocate: true}}, nil)
	create(node("mismatch", "10.100.7.0/24", "fd00:77::/112"))
	c.set("mismatch", podcidrs.Answer{IPv4: podcidrs.Family{CIDR: "10.100.9.0/24"}, IPv6: podcidrs.Family{CIDR: "fd00:77::/112"}, CloudRouted: true}, nil)

	opts := nodeipam.Options{
		ClusterCIDRs: prefixes("10.244.0.0/16", "fd00:10:244::/56"),
		ServiceCIDRs: prefixes("10.96.0.0/12", "fd00:96::/112"),
		Workers:      4,
	}
	stop := run(t, kube, opts, c)

	// Cloud-held ranges (GCE alias ranges), dual-stack in service order.
	c.set("cloud", podcidrs.Answer{IPv4: podcidrs.Family{CIDR: "10.100.1.0/24"}, IPv6: podcidrs.Family{CIDR: "fd00:77::1:0/112"}, CloudRouted: true}, nil)
	create(node("cloud"))
	eventually(t, "the cloud's ranges on Node cloud", hasCIDRs("cloud", "10.100.1.0/24", "fd00:77::1:0/112"))
	eventually(t, "NetworkUnavailable=False on Node cloud", func() (bool, string) {
		for _, cond := range get("cloud").Status.Conditions {
			if cond.Type == v1.NodeNetworkUnavailable {
				return cond.Status == v1.ConditionFalse && cond.Reason == "RouteCreated", fmt.Sprint(cond)
			}
		}
		return false, "no NetworkUnavailable condition"
	})

	// Allocated ranges (Azure), a pool mask of /26: never the one "pre" holds.
	c.set("alloc", podcidrs.Answer{IPv4: podcidrs.Family{Allocate: true, Mask: 26}, IPv6: podcidrs.Family{Allocate: true}}, nil)
	create(node("alloc"))
	eventually(t, "allocated ranges on Node alloc", hasCIDRs("alloc", "10.244.1.0/26", "fd00:10:244:1::/64"))
	for _, cond := range get("alloc").Status.Conditions {
		if cond.Type == v1.NodeNetworkUnavailable {
			t.Fatalf("allocated ranges need routes, but NetworkUnavailable was set: %v", cond)
		}
	}

	// Existing pod CIDRs stay; the difference is a Warning.
	eventually(t, "a PodCIDRMismatch Warning on Node mismatch", event("mismatch", nodeipam.ReasonPodCIDRMismatch, "10.100.9.0/24"))
	if got := get("mismatch").Spec.PodCIDRs; !slices.Equal(got, []string{"10.100.7.0/24", "fd00:77::/112"}) {
		t.Fatalf("Node mismatch's pod CIDRs changed to %v", got)
	}

	// No range: CIDRNotAvailable, nothing written. One family missing: the same.
	c.set("bare", podcidrs.Answer{}, fmt.Errorf("%w: instance has no alias range", podcidrs.ErrNoRanges))
	create(node("bare"))
	c.set("half", podcidrs.Answer{IPv4: podcidrs.Family{CIDR: "10.100.2.0/24"}, CloudRouted: true}, nil)
	create(node("half"))
	eventually(t, "CIDRNotAvailable on Node bare", event("bare", nodeipam.ReasonCIDRNotAvailable, "no range"))
	eventually(t, "CIDRNotAvailable on Node half", event("half", nodeipam.ReasonCIDRNotAvailable, "IPv6"))
	for _, name := range []string{"bare", "half"} {
		if got := get(name).Spec.PodCIDRs; len(got) != 0 {
			t.Fatalf("Node %s got pod CIDRs %v without a range for every family", name, got)
		}
	}

	// Another allocator (kube-controller-manager's range allocator) sets
	// a Node's pod CIDRs while this one runs.
	c.set("elsewhere", podcidrs.Answer{}, errors.New("the cloud is slow today"))
	create(node("elsewhere"))
	eventually(t, "the controller asked about Node elsewhere", func() (bool, string) { return c.askCount("elsewhere") > 0, "not asked" })
	patch := []byte(`{"spec":{"podCIDR":"10.244.200.0/24","podCIDRs":["10.244.200.0/24","fd00:10:244:c8::/64"]}}`)
	if _, err := kube.CoreV1().Nodes().Patch(ctx, "elsewhere", types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: "kube-controller-manager"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "PodCIDRSetElsewhere naming kube-controller-manager", event("elsewhere", nodeipam.ReasonPodCIDRSetElsewhere, `"kube-controller-manager"`))

	// A Node of no cloud allocator is left alone.
	create(node("foreign"))
	eventually(t, "the controller asked about Node foreign", func() (bool, string) { return c.askCount("foreign") > 0, "not asked" })

	// Steady state: label changes do not ask the cloud again.
	before := c.askCount("cloud")
	n := get("cloud")
	n.Labels = map[string]string{"touched": "yes"}
	if _, err := kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stop()
	if got := c.askCount("cloud"); got != before {
		t.Errorf("a label change on a served Node asked the cloud again: %d asks, then %d", before, got)
	}
	if got := get("foreign").Spec.PodCIDRs; len(got) != 0 {
		t.Fatalf("Node foreign got pod CIDRs %v", got)
	}

	// A restarted controller marks every pod CIDR on a Node used before
	// it allocates: the next /26 follows alloc's, and the next /24 skips
	// pre's, alloc's and the one the other allocator wrote.
	stop = run(t, kube, opts, c)
	defer stop()
	c.set("after1", podcidrs.Answer{IPv4: podcidrs.Family{Allocate: true, Mask: 26}, IPv6: podcidrs.Family{Allocate: true}}, nil)
	create(node("after1"))
	eventually(t, "allocated ranges on Node after1", hasCIDRs("after1", "10.244.1.64/26", "fd00:10:244:2::/64"))
	c.set("after2", podcidrs.Answer{IPv4: podcidrs.Family{Allocate: true}, IPv6: podcidrs.Family{Allocate: true}}, nil)
	create(node("after2"))
	eventually(t, "allocated ranges on Node after2", hasCIDRs("after2", "10.244.2.0/24", "fd00:10:244:3::/64"))
	all, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var held []netip.Prefix
	for _, n := range all.Items {
		for _, s := range n.Spec.PodCIDRs {
			p := netip.MustParsePrefix(s)
			for _, h := range held {
				if h.Overlaps(p) {
					t.Errorf("Node %s's pod CIDR %s overlaps %s", n.Name, p, h)
				}
			}
			held = append(held, p)
		}
	}
}

// assigningCloud is a cloud that can give an instance the IPv6 range it
// lacks (AWS's assignIPv6Prefix), counting what it is asked.
type assigningCloud struct {
	*cloud
	assigned map[string]int
}

func (a *assigningCloud) AssignIPv6Range(_ context.Context, n *v1.Node) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.assigned[n.Name]++
	return "fd00:ec2::" + fmt.Sprint(len(a.assigned)) + ":0:0:0/80", nil
}

// TestRangesAssignedOnlyWhereNeeded: the controller asks the cloud to
// assign an IPv6 range only for a Node without pod CIDRs whose cloud has
// none, in a cluster with IPv6; never in an IPv4 cluster, never for a
// Node that has pod CIDRs.
func TestRangesAssignedOnlyWhereNeeded(t *testing.T) {
	if testing.Short() {
		t.Skip("needs etcd and kube-apiserver (test/controlplane)")
	}
	cp, err := controlplane.Start(controlplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	kube := cp.AdminClient
	c := &assigningCloud{cloud: newCloud(), assigned: map[string]int{}}
	for _, n := range []*v1.Node{node("has", "fd00:ec2::9:0:0:0/80"), node("lacks"), node("holds")} {
		if _, err := kube.CoreV1().Nodes().Create(t.Context(), n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		c.set(n.Name, podcidrs.Answer{CloudRouted: true}, nil)
	}
	c.set("holds", podcidrs.Answer{IPv6: podcidrs.Family{CIDR: "fd00:ec2::8:0:0:0/80"}, CloudRouted: true}, nil)

	// An IPv4 cluster: nothing is assigned.
	stop := run(t, kube, nodeipam.Options{ClusterCIDRs: prefixes("10.244.0.0/16")}, c)
	eventually(t, "the controller asked about every Node", func() (bool, string) {
		return c.askCount("has") > 0 && c.askCount("lacks") > 0 && c.askCount("holds") > 0, "not yet"
	})
	stop()
	if len(c.assigned) != 0 {
		t.Fatalf("an IPv4 cluster assigned IPv6 ranges: %v", c.assigned)
	}
	// An IPv6 cluster: only the Node that needs one.
	stop = run(t, kube, nodeipam.Options{ClusterCIDRs: prefixes("fd00:ec2::/56")}, c)
	defer stop()
	eventually(t, "Node lacks got the assigned range", func() (bool, string) {
		n, err := kube.CoreV1().Nodes().Get(t.Context(), "lacks", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(n.Spec.PodCIDRs) == 1, fmt.Sprint(n.Spec.PodCIDRs)
	})
	eventually(t, "Node holds got its range", func() (bool, string) {
		n, err := kube.CoreV1().Nodes().Get(t.Context(), "holds", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return slices.Equal(n.Spec.PodCIDRs, []string{"fd00:ec2:0:0:8::/80"}), fmt.Sprint(n.Spec.PodCIDRs)
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.assigned["lacks"] != 1 || len(c.assigned) != 1 {
		t.Errorf("assigned %v; want only Node lacks, once", c.assigned)
	}
}
