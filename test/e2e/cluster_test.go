package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/multicloud-ccm/multicloud-ccm/test/ccmproc"
	"github.com/multicloud-ccm/multicloud-ccm/test/controlplane"
)

// cluster is one control plane the tests run managers against. The
// package's shared one (env.cluster) serves the per-cloud and foundation
// tests one after another; each conformance run starts its own
// (newCluster), so the runs go side by side without one run's managers
// acting on another run's Nodes and Services.
type cluster struct {
	cp *controlplane.ControlPlane
	// admin is a cluster-admin clientset for setting up and checking.
	admin kubernetes.Interface
	// saKubeconfig authenticates as kube-system/cloud-controller-manager,
	// bound only by deploy/'s RBAC.
	saKubeconfig string
}

// startCluster starts a control plane with dual-stack Service addresses
// (for the clouds' IPv6 and dual-stack Services; a Service asks for them
// with ipFamilyPolicy, SingleStack IPv4 otherwise) and deploy/'s RBAC for
// real: the managers get exactly these permissions. Its log goes to
// <name>-controlplane.log in the suite's temp dir.
func startCluster(name string) (*cluster, error) {
	logf, err := os.Create(filepath.Join(env.tmp, name+"-controlplane.log"))
	if err != nil {
		return nil, err
	}
	cp, err := controlplane.Start(controlplane.Options{Output: logf, ExtraAPIServerArgs: map[string]string{
		"service-cluster-ip-range": "10.96.0.0/16,fd00:10:96::/112",
	}})
	if err != nil {
		return nil, err
	}
	cl := &cluster{cp: cp, admin: cp.AdminClient}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if cl.saKubeconfig, err = cp.CCMKubeconfig(ctx, 2*time.Hour); err != nil {
		_ = cp.Stop()
		return nil, err
	}
	return cl, nil
}

// newCluster is startCluster for one test, stopped at its cleanup.
func newCluster(t *testing.T, name string) *cluster {
	t.Helper()
	cl, err := startCluster(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cl.cp.Stop(); err != nil {
			t.Logf("stop control plane %s: %v", name, err)
		}
	})
	return cl
}

// registerNode creates the Node a kubelet on inst would register: inst's
// default name unless name is set, the pod CIDR node IPAM would assign,
// and, when providerID is set, the providerID given to the kubelet with
// --provider-id. The Node is deleted at cleanup.
func (cl *cluster) registerNode(t *testing.T, name, providerID, podCIDR string) string {
	t.Helper()
	n := ccmproc.KubeletNode(name, podCIDR)
	n.Spec.ProviderID = providerID
	return cl.createNode(t, n)
}

// createNode creates n (a Node as its kubelet registers it, with
// whatever labels the test gives it) and deletes it at cleanup.
func (cl *cluster) createNode(t *testing.T, n *corev1.Node) string {
	t.Helper()
	if _, err := cl.admin.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.deleteNode(t, n.Name) })
	return n.Name
}

func (cl *cluster) deleteNode(t *testing.T, name string) {
	err := cl.admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete node %s: %v", name, err)
	}
}

func (cl *cluster) getNode(ctx context.Context, name string) (*corev1.Node, error) {
	return cl.admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
}

// waitInitialized waits until the manager has initialized the Node and
// written its addresses: the node controller removes the taint in one
// update and patches the addresses into the status in the next, so a
// Node seen between the two has none yet.
func (cl *cluster) waitInitialized(t *testing.T, name string) *corev1.Node {
	t.Helper()
	var node *corev1.Node
	poll(t, converge, "node "+name+" initialized", func(ctx context.Context) (bool, string, error) {
		n, err := cl.getNode(ctx, name)
		if err != nil {
			return false, "", err
		}
		node = n
		return ccmproc.Initialized(n) && len(n.Status.Addresses) > 0, describeNode(n), nil
	})
	return node
}

// setReady writes the Node's Ready condition as a kubelet (or its absence)
// would leave it.
func (cl *cluster) setReady(t *testing.T, name string, status corev1.ConditionStatus) {
	t.Helper()
	if err := ccmproc.SetReady(context.Background(), cl.admin, name, status); err != nil {
		t.Fatal(err)
	}
}

func (cl *cluster) hasTaintCond(name, key string, want bool) func(ctx context.Context) (bool, string, error) {
	return func(ctx context.Context) (bool, string, error) {
		n, err := cl.getNode(ctx, name)
		if err != nil {
			return false, "", err
		}
		return ccmproc.HasTaint(n, key) == want, fmt.Sprint(n.Spec.Taints), nil
	}
}

// createService creates svc and deletes it at cleanup if the scenario
// did not.
func (cl *cluster) createService(t *testing.T, svc *corev1.Service) types.NamespacedName {
	t.Helper()
	if _, err := cl.admin.CoreV1().Services(svc.Namespace).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	t.Cleanup(func() {
		err := cl.admin.CoreV1().Services(key.Namespace).Delete(context.Background(), key.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete service %s: %v", key, err)
		}
	})
	return key
}

func (cl *cluster) getService(ctx context.Context, key types.NamespacedName) (*corev1.Service, error) {
	return cl.admin.CoreV1().Services(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
}

func (cl *cluster) waitService(t *testing.T, key types.NamespacedName, what string, cond func(*corev1.Service) (bool, string)) *corev1.Service {
	t.Helper()
	var svc *corev1.Service
	poll(t, converge, key.String()+": "+what, func(ctx context.Context) (bool, string, error) {
		s, err := cl.getService(ctx, key)
		if err != nil {
			return false, "", err
		}
		svc = s
		ok, seen := cond(s)
		return ok, seen, nil
	})
	return svc
}

func (cl *cluster) deleteServiceAndWait(t *testing.T, key types.NamespacedName) {
	t.Helper()
	err := cl.admin.CoreV1().Services(key.Namespace).Delete(context.Background(), key.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	poll(t, converge, "service "+key.String()+" gone (finalizer released)", func(ctx context.Context) (bool, string, error) {
		_, err := cl.getService(ctx, key)
		return apierrors.IsNotFound(err), fmt.Sprint(err), nil
	})
}

// warnings lists the manager's Warning events on the Service now named
// key: by UID, since events outlive a deleted Service of the same name (a
// scenario of another cloud's run), and only the manager's (the
// kube-apiserver's ClusterIP repair loop may warn about an address it is
// still committing).
func (cl *cluster) warnings(ctx context.Context, key types.NamespacedName) ([]string, error) {
	svc, err := cl.getService(ctx, key)
	if err != nil {
		return nil, err
	}
	return cl.warningsOf(ctx, key.Namespace, svc.UID)
}

// warningsOf lists the manager's Warning events on the Service with this
// UID, which may be gone.
func (cl *cluster) warningsOf(ctx context.Context, ns string, uid types.UID) ([]string, error) {
	managerEventSources := map[string]bool{
		"service-controller": true, // k8s.io/cloud-provider controllers/service
		"multicloud-ccm":     true, // providers/internal/upstreamann
	}
	evs, err := cl.admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Service,involvedObject.uid=" + string(uid),
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ev := range evs.Items {
		if ev.Type == corev1.EventTypeWarning && managerEventSources[ev.Source.Component] {
			out = append(out, ev.Reason+": "+ev.Message)
		}
	}
	return out, nil
}

// repairEvents counts the LoadBalancerRepaired Events on the Service now
// named k, and gives their messages.
func (cl *cluster) repairEvents(ctx context.Context, k types.NamespacedName) (int, string, error) {
	svc, err := cl.getService(ctx, k)
	if err != nil {
		return 0, "", err
	}
	evs, err := cl.admin.CoreV1().Events(k.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Service,involvedObject.uid=" + string(svc.UID) + ",reason=LoadBalancerRepaired",
	})
	if err != nil {
		return 0, "", err
	}
	var msgs []string
	n := 0
	for _, ev := range evs.Items {
		n += int(max(ev.Count, 1))
		msgs = append(msgs, ev.Message)
	}
	return n, strings.Join(msgs, " | "), nil
}

func (cl *cluster) deleteService(t *testing.T, k types.NamespacedName) {
	t.Helper()
	err := cl.admin.CoreV1().Services(k.Namespace).Delete(context.Background(), k.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// ensureNamespace creates ns unless it exists. It is never deleted: the
// suite runs no namespace controller to finish a deletion.
func (cl *cluster) ensureNamespace(t *testing.T, ns string) {
	t.Helper()
	_, err := cl.admin.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// startCCM runs the binary as the cloud-controller-manager ServiceAccount,
// with delegated authentication and authorization through the same
// identity, as deploy/ runs it, with leader election on unless extraArgs
// say otherwise. The process is stopped at test cleanup.
func (cl *cluster) startCCM(t testing.TB, name, binary, cloudConfig string, extraArgs ...string) *ccmProcess {
	t.Helper()
	log := &ccmproc.Output{}
	p, err := ccmproc.Start(ccmproc.Options{
		Binary: binary, CloudConfig: cloudConfig, Kubeconfig: cl.saKubeconfig,
		LeaderElect: true, Args: extraArgs, Output: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	c := &ccmProcess{Process: p, name: name, log: log, cluster: cl}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("---- %s output ----\n%s", name, tail(log.String(), 80))
		}
	})
	return c
}

// updateService changes the Service, again on a conflict.
func (cl *cluster) updateService(t *testing.T, k types.NamespacedName, change func(*corev1.Service)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		svc, err := cl.getService(ctx, k)
		if err != nil {
			return false, err
		}
		change(svc)
		_, err = cl.admin.CoreV1().Services(k.Namespace).Update(ctx, svc, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("update service %s: %v", k, err)
	}
}
