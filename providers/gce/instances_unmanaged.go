package gce

import (
	"context"
	"slices"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodeinstance"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodes"
)

// Nodes GKE does not manage. The upstream GCE CCM hands its cloud-node,
// cloud-node-lifecycle and node-ipam controllers a Node informer that
// hides every Node labelled components.gke.io/gke-unmanaged-node=true
// (kubernetes/cloud-provider-gcp at 4e24531, since d4f479e, #1081:
// pkg/util/node/node.go:46-49 the label, :52-101 the filtering informer
// and IsUnmanagedNode; wired in cmd/cloud-controller-manager/
// nodecontroller.go:40 and nodelifecyclecontroller.go:40). Such a Node
// is never initialized by the CCM, never deleted and never tainted shut
// down, and its addresses are never refreshed. Our manager runs the same
// upstream controllers unfiltered, so the backend answers for such a
// Node what those controllers do nothing with, and asks the cloud
// nothing about it.

// labelUnmanagedNode and unmanagedNodeValue are upstream's label; only the
// exact value "true" marks a Node unmanaged (node.go:95-101: "false",
// "True" or "" leave it managed). MUST NOT change: users set it.
const (
	labelUnmanagedNode = "components.gke.io/gke-unmanaged-node"
	unmanagedNodeValue = "true"
)

// unmanagedNode says the Node carries upstream's unmanaged label.
func unmanagedNode(node *v1.Node) bool {
	return node != nil && node.Labels[labelUnmanagedNode] == unmanagedNodeValue
}

// unmanagedMetadata is the metadata of an unmanaged Node, which the
// cloud-node controller must leave as it is (nodeinstance.NotOursMetadata).
func unmanagedMetadata(ctx context.Context, node *v1.Node) *cloudprovider.InstanceMetadata {
	md := nodeinstance.NotOursMetadata(node)
	if md == nil {
		klog.FromContext(ctx).Info("Leaving the Node uninitialized: it is labelled unmanaged, as GKE's CCM would",
			"node", klog.KObj(node), "label", labelUnmanagedNode+"="+unmanagedNodeValue)
	}
	return md
}

// watchedKeys are the instance keys of the NotReady Nodes the lifecycle
// checks will ask about, for the snapshot's batched refresh: the
// unmanaged ones are never asked about, so they cost no lookup either.
func watchedKeys(l *nodes.Lister, byName func(nodeName string) (string, bool)) []string {
	unmanaged := func(name string) bool {
		n, ok := l.Node(name)
		return ok && unmanagedNode(n)
	}
	keys := l.NotReadyInstanceIDs(func(name string) (string, bool) {
		if unmanaged(name) {
			return "", false
		}
		return byName(name)
	})
	return slices.DeleteFunc(keys, func(key string) bool {
		name, ok := l.NodeName(key)
		return ok && unmanaged(name)
	})
}
