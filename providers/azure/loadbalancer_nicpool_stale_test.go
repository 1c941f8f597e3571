package azure

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// TestNICPoolStaleNodeListKeepsJoinedNode (issue 32, found by make
// upstream-check CLOUD=azure): a node joins while two Services' port
// changes run, and those syncs carry the node list the service controller
// took before the node joined. Sharing the pool with the Services synced
// for the join, they took the node out again right after it was put in (5
// writes to its NIC, the node out of the pools for a moment). Now the
// pool asks the Node informer before taking a node out: the node stays,
// its NIC is written once. A node that really left (gone from the
// informer) is still taken out by such a sync.
func TestNICPoolStaleNodeListKeepsJoinedNode(t *testing.T) {
	env := newNICPoolEnv(t, 2)
	ctx := t.Context()
	var svcs []*v1.Service
	for i, internal := range []bool{false, false, true, true} {
		s := lbService("stale-"+string(rune('a'+i)), int32(80+i))
		if internal {
			s.Annotations = map[string]string{string(annotationInternal): "true"}
		}
		svcs = append(svcs, s)
	}
	uniqueUIDs(svcs)
	before := slices.Clone(env.nodes)
	for _, s := range svcs {
		if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", s, before); err != nil {
			t.Fatal(err)
		}
	}
	joined := env.lbNodes(t, 1)[0]
	after := append(slices.Clone(before), joined)
	client := env.withNodes(t, after)

	inPools := func(node string) int {
		n := 0
		for _, lbName := range []string{"kubernetes", "kubernetes-internal"} {
			id := env.cloud.lb.poolID(lbName, false)
			if slices.ContainsFunc(env.pools(t, node), func(p string) bool { return strings.EqualFold(p, id) }) {
				n++
			}
		}
		return n
	}
	portChange := func(s *v1.Service) *v1.Service {
		c := s.DeepCopy()
		c.Spec.Ports[0].Port += 1000
		return c
	}

	env.srv.ResetCalls()
	// The join's sync of one Service, then the port changes with the
	// older list, then the join's sync of the others.
	if err := env.cloud.lb.UpdateLoadBalancer(ctx, "kubernetes", svcs[0], after); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*v1.Service{svcs[1], svcs[2]} {
		if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", portChange(s), before); err != nil {
			t.Fatal(err)
		}
		if got := inPools(joined.Name); got != 2 {
			t.Errorf("after %s's port change with the node list from before the join: the joined node is in %d of 2 pools", s.Name, got)
		}
	}
	for _, s := range []*v1.Service{svcs[1], svcs[2], svcs[3]} {
		if err := env.cloud.lb.UpdateLoadBalancer(ctx, "kubernetes", s, after); err != nil {
			t.Fatal(err)
		}
	}
	if n := env.srv.Calls()["network:NetworkInterfaces_CreateOrUpdate"]; n != 1 {
		t.Errorf("%d NIC writes for one node joining beside two port changes with an older node list, want 1", n)
	}
	if got := inPools(joined.Name); got != 2 {
		t.Errorf("the joined node is in %d of 2 pools", got)
	}

	// The node leaves: once the informer no longer has it, a sync without
	// it takes it out of both pools (one write).
	if err := client.CoreV1().Nodes().Delete(ctx, joined.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		_, ok := env.cloud.nodes.Node(joined.Name)
		return !ok, nil
	})
	if err != nil {
		t.Fatal("the Node informer still has the deleted node")
	}
	env.srv.ResetCalls()
	if _, err := env.cloud.lb.EnsureLoadBalancer(ctx, "kubernetes", portChange(svcs[0]), before); err != nil {
		t.Fatal(err)
	}
	if got := inPools(joined.Name); got != 0 {
		t.Errorf("a node gone from the cluster is still in %d pools", got)
	}
	if n := env.srv.Calls()["network:NetworkInterfaces_CreateOrUpdate"]; n != 1 {
		t.Errorf("%d NIC writes to take a leaving node out of both pools, want 1", n)
	}
}

// withNodes gives the backend a Node informer over nodes, as the
// manager's SetInformers does, and returns its client to change them.
func (e *testEnv) withNodes(t *testing.T, nodes []*v1.Node) *fake.Clientset {
	t.Helper()
	var objs []runtime.Object
	for _, n := range nodes {
		objs = append(objs, n)
	}
	client := fake.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	e.cloud.nodes.SetInformers(f)
	f.Start(t.Context().Done())
	if !cache.WaitForCacheSync(t.Context().Done(), f.Core().V1().Nodes().Informer().HasSynced) {
		t.Fatal("Node informer did not sync")
	}
	return client
}
