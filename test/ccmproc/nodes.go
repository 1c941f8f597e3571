package ccmproc

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	cloudproviderapi "k8s.io/cloud-provider/api"
)

// KubeletNode is a Node as a --cloud-provider=external kubelet registers
// it: no providerID, the uninitialized taint, and the pod CIDR (if any)
// that node IPAM would have assigned.
func KubeletNode(name, podCIDR string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Spec: corev1.NodeSpec{
			PodCIDR: podCIDR,
			Taints: []corev1.Taint{{
				Key: cloudproviderapi.TaintExternalCloudProvider, Value: "true", Effect: corev1.TaintEffectNoSchedule,
			}},
		},
	}
}

// Initialized reports whether the CCM has initialized n: it has a
// providerID and no longer carries the uninitialized taint.
func Initialized(n *corev1.Node) bool {
	return n.Spec.ProviderID != "" && !HasTaint(n, cloudproviderapi.TaintExternalCloudProvider)
}

// HasTaint reports whether n carries a taint with key.
func HasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// SetReady writes the Node's Ready condition as its kubelet (or its
// silence) leaves it.
func SetReady(ctx context.Context, client kubernetes.Interface, name string, status corev1.ConditionStatus) error {
	n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	reason := "KubeletReady"
	if status != corev1.ConditionTrue {
		reason = "KubeletNotReady"
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, LastHeartbeatTime: now, LastTransitionTime: now, Reason: reason}}
	_, err = client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	return err
}

// BearerToken is the token a kubeconfig authenticates with (the
// manager's ServiceAccount's, which deploy/'s ClusterRole allows GET
// /metrics).
func BearerToken(kubeconfig string) (string, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return "", err
	}
	if cfg.BearerToken == "" {
		return "", fmt.Errorf("%s has no bearer token", kubeconfig)
	}
	return cfg.BearerToken, nil
}
