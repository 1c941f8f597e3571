package ccmproc

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
