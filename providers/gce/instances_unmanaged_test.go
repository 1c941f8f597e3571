package gce

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	cloudproviderapi "k8s.io/cloud-provider/api"
	nodecontroller "k8s.io/cloud-provider/controllers/node"
	"k8s.io/cloud-provider/controllers/nodelifecycle"
	controllersmetrics "k8s.io/component-base/metrics/prometheus/controllers"

	"github.com/multicloud-ccm/multicloud-ccm/providers/compose"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	gceemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/gce"
	"github.com/multicloud-ccm/multicloud-ccm/test/controlplane"
)

// TestUnmanagedNodes: a Node labelled components.gke.io/gke-unmanaged-node
// =true, which upstream's node and lifecycle controllers never see, exists
// and runs (never deleted, never tainted shut down, even when its instance
// is stopped or gone), gets no metadata while tainted (the node controller
// skips it and keeps the taint) and empty metadata once initialized (its
// addresses stay), all without a cloud call, and is left out of the
// lifecycle checks' batched lookup. Any other value of the label leaves
// the Node managed, as upstream.
func TestUnmanagedNodes(t *testing.T) {
	env := newTestEnv(t, gceemu.Config{Zones: []string{"a"}}, nil)
	zone := env.emu.Config().Zones[0]
	env.launch(t, cloudsim.InstanceSpec{Name: "managed-0"}, cloudsim.InstanceSpec{Name: "unmanaged-0"},
		cloudsim.InstanceSpec{Name: "unmanaged-1"}, cloudsim.InstanceSpec{Name: "labelled-false"})
	if err := env.emu.StopInstance("unmanaged-0"); err != nil {
		t.Fatal(err)
	}
	if err := env.emu.TerminateInstance("unmanaged-1"); err != nil {
		t.Fatal(err)
	}
	pid := func(name string) string { return "gce://" + env.s.ProjectID + "/" + zone + "/" + name }
	tainted := []v1.Taint{{Key: cloudproviderapi.TaintExternalCloudProvider, Value: "true", Effect: v1.TaintEffectNoSchedule}}
	node := func(name, providerID, label string, taints []v1.Taint) *v1.Node {
		n := &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       v1.NodeSpec{ProviderID: providerID, Taints: taints},
			Status:     v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}}},
		}
		if label != "" {
			n.Labels = map[string]string{labelUnmanagedNode: label}
		}
		return n
	}
	managed := node("managed-0", pid("managed-0"), "", nil)
	unmanaged := []*v1.Node{
		// Stopped, and deleted: upstream would taint and delete them,
		// were they managed.
		node("unmanaged-0", pid("unmanaged-0"), "true", nil),
		node("unmanaged-1", pid("unmanaged-1"), "true", nil),
		// Another cloud's providerID, and none with a name no instance
		// has: an error (not a cloud call) were they managed.
		node("on-prem-0", "aws:///eu-west-1a/i-0abc", "true", nil),
		node("on-prem-1", "", "true", tainted),
		node("unmanaged-tainted", pid("unmanaged-0"), "true", tainted),
	}
	labelledFalse := node("labelled-false", pid("labelled-false"), "false", nil)
	objs := []runtime.Object{managed, labelledFalse}
	for _, n := range unmanaged {
		objs = append(objs, n)
	}
	client := fake.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	env.cloud.nodes.SetInformers(f)
	f.Start(t.Context().Done())
	if !cache.WaitForCacheSync(t.Context().Done(), f.Core().V1().Nodes().Informer().HasSynced) {
		t.Fatal("Node informer did not sync")
	}

	in := env.cloud.instances
	env.srv.ResetCalls()
	for _, n := range unmanaged {
		if ok, err := in.InstanceExists(t.Context(), n); err != nil || !ok {
			t.Errorf("%s: exists %v, %v; want true (never deleted)", n.Name, ok, err)
		}
		if down, err := in.InstanceShutdown(t.Context(), n); err != nil || down {
			t.Errorf("%s: shutdown %v, %v; want false (never tainted)", n.Name, down, err)
		}
		md, err := in.InstanceMetadata(t.Context(), n)
		switch {
		case err != nil:
			t.Errorf("%s: metadata error %v; the node controller would retry it forever", n.Name, err)
		case len(n.Spec.Taints) > 0 && md != nil:
			t.Errorf("%s (tainted): metadata %+v; want nil, so the node controller skips it", n.Name, md)
		case len(n.Spec.Taints) == 0 && (md == nil || md.ProviderID != "" || len(md.NodeAddresses) != 0 || md.Zone != "" || md.InstanceType != ""):
			t.Errorf("%s (initialized): metadata %+v; want empty, so its addresses stay", n.Name, md)
		}
	}
	if calls := env.srv.Calls(); len(calls) != 0 {
		t.Errorf("calls for unmanaged Nodes: %v; want none", calls)
	}

	// The lifecycle checks of the NotReady Nodes: the managed ones'
	// lookup leaves the unmanaged ones' instances out (one GET each of
	// the two managed instances, none of unmanaged-0 or unmanaged-1).
	env.clk.Step(5 * time.Second)
	for _, n := range []*v1.Node{managed, labelledFalse} {
		if ok, err := in.InstanceExists(t.Context(), n); err != nil || !ok {
			t.Errorf("%s: exists %v, %v", n.Name, ok, err)
		}
		if down, err := in.InstanceShutdown(t.Context(), n); err != nil || down {
			t.Errorf("%s: shutdown %v, %v", n.Name, down, err)
		}
	}
	calls := env.srv.Calls()
	t.Logf("lifecycle checks of 2 managed and 5 unmanaged NotReady Nodes: %v", calls)
	if calls["compute:Instances.Get"] != 2 || len(calls) != 1 {
		t.Errorf("calls %v: want 2 GETs (the managed Nodes' instances only)", calls)
	}

	// A managed Node (label "false") gets its metadata as any other.
	md, err := in.InstanceMetadata(t.Context(), labelledFalse)
	if err != nil || md == nil || md.ProviderID != pid("labelled-false") {
		t.Errorf("labelled-false: metadata %+v, %v; want the instance's", md, err)
	}
	// And its instance, stopped, is shut down.
	if err := env.emu.StopInstance("labelled-false"); err != nil {
		t.Fatal(err)
	}
	env.clk.Step(5 * time.Second)
	if down, err := in.InstanceShutdown(t.Context(), labelledFalse); err != nil || !down {
		t.Errorf("labelled-false, stopped: shutdown %v, %v; want true", down, err)
	}
}

// TestUnmanagedNodesUpstreamControllers runs the upstream cloud-node and
// cloud-node-lifecycle controllers (k8s.io/cloud-provider v0.37, as the
// manager runs them) on a real kube-apiserver with this backend: beside a
// managed Node that gets initialized and a managed Node whose instance is
// gone, which gets deleted, the unmanaged Nodes are left as upstream's
// filtered informers leave them: a tainted one stays tainted without a
// providerID, one whose instance is gone stays with no shutdown taint,
// and an initialized one keeps its addresses through the periodic
// address updates.
func TestUnmanagedNodesUpstreamControllers(t *testing.T) {
	if testing.Short() {
		t.Skip("needs etcd and kube-apiserver (test/controlplane)")
	}
	env := newTestEnv(t, gceemu.Config{Zones: []string{"a"}}, nil)
	zone := env.emu.Config().Zones[0]
	env.launch(t, cloudsim.InstanceSpec{Name: "managed-0"}, cloudsim.InstanceSpec{Name: "managed-gone"},
		cloudsim.InstanceSpec{Name: "unmanaged-0"}, cloudsim.InstanceSpec{Name: "unmanaged-gone"}, cloudsim.InstanceSpec{Name: "unmanaged-addr"})
	for _, name := range []string{"managed-gone", "unmanaged-gone"} {
		if err := env.emu.TerminateInstance(name); err != nil {
			t.Fatal(err)
		}
	}

	cp, err := controlplane.Start(controlplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	ctx := t.Context()
	client := cp.AdminClient
	pid := func(name string) string { return "gce://" + env.s.ProjectID + "/" + zone + "/" + name }
	taint := v1.Taint{Key: cloudproviderapi.TaintExternalCloudProvider, Value: "true", Effect: v1.TaintEffectNoSchedule}
	unmanagedLabel := map[string]string{labelUnmanagedNode: unmanagedNodeValue}
	notReady := []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: "KubeletStopped", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	kubeletAddrs := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "192.0.2.10"}, {Type: v1.NodeHostName, Address: "unmanaged-addr"}}
	for _, n := range []struct {
		node   *v1.Node
		status v1.NodeStatus
	}{
		{&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "managed-0"}, Spec: v1.NodeSpec{Taints: []v1.Taint{taint}}}, v1.NodeStatus{}},
		{&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "managed-gone"}, Spec: v1.NodeSpec{ProviderID: pid("managed-gone")}}, v1.NodeStatus{Conditions: notReady}},
		{&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "unmanaged-0", Labels: unmanagedLabel}, Spec: v1.NodeSpec{Taints: []v1.Taint{taint}}}, v1.NodeStatus{}},
		{&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "unmanaged-gone", Labels: unmanagedLabel}, Spec: v1.NodeSpec{ProviderID: pid("unmanaged-gone")}}, v1.NodeStatus{Conditions: notReady}},
		{&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "unmanaged-addr", Labels: unmanagedLabel}, Spec: v1.NodeSpec{ProviderID: pid("unmanaged-addr")}}, v1.NodeStatus{Addresses: kubeletAddrs}},
	} {
		created, err := client.CoreV1().Nodes().Create(ctx, n.node, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(n.status.Conditions) > 0 || len(n.status.Addresses) > 0 {
			created.Status = n.status
			if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}

	cloud := compose.New(env.cloud.Parts())
	f := informers.NewSharedInformerFactory(client, 0)
	cloud.SetInformers(f)
	metrics := controllersmetrics.NewControllerManagerMetrics("test")
	nc, err := nodecontroller.NewCloudNodeController(f.Core().V1().Nodes(), client, cloud, 200*time.Millisecond, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	lc, err := nodelifecycle.NewCloudNodeLifecycleController(f.Core().V1().Nodes(), client, cloud, 200*time.Millisecond, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go nc.RunWithContext(ctx, metrics)
	go lc.Run(ctx, metrics)
	f.Start(ctx.Done())

	// The managed Nodes show both controllers at work.
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, err := client.CoreV1().Nodes().Get(ctx, "managed-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, goneErr := client.CoreV1().Nodes().Get(ctx, "managed-gone", metav1.GetOptions{})
		if m.Spec.ProviderID == pid("managed-0") && !hasTaint(m, taint.Key) && apierrors.IsNotFound(goneErr) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the controllers did not initialize managed-0 (%+v) and delete managed-gone (%v)", m.Spec, goneErr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Several more address updates and lifecycle checks.
	time.Sleep(time.Second)

	get := func(name string) *v1.Node {
		t.Helper()
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return n
	}
	// (The apiserver adds node.kubernetes.io/not-ready to every new Node.)
	if n := get("unmanaged-0"); n.Spec.ProviderID != "" || !hasTaint(n, taint.Key) {
		t.Errorf("unmanaged-0 was initialized: %+v", n.Spec)
	}
	if n := get("unmanaged-gone"); hasTaint(n, nodelifecycle.ShutdownTaint.Key) {
		t.Errorf("unmanaged-gone got the shutdown taint: %v", n.Spec.Taints)
	}
	if n := get("unmanaged-addr"); !reflect.DeepEqual(n.Status.Addresses, kubeletAddrs) {
		t.Errorf("unmanaged-addr addresses %v, want the kubelet's %v", n.Status.Addresses, kubeletAddrs)
	}
}

func hasTaint(n *v1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == key })
}
