// Package nodes gives a backend the cluster's Nodes from the manager's
// shared Node informer, so it can map a Node name to its cloud instance
// (through spec.providerID, which kubelets often set themselves) and an
// instance back to its Node name, without a call to the API server or the
// cloud. A backend's Cloud implements cloudprovider.InformerUser by
// handing SetInformers to its Lister.
package nodes

import (
	"strconv"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
)

// byInstanceID, with a number per Lister, names the index of Nodes by the
// cloud instance ID in their providerID. Each Lister has its own: in a
// hybrid manager every cloud's Lister indexes the one shared Node informer
// with its own parser, and an informer refuses a second index of a name.
const byInstanceID = "multicloud-ccm/instance-id-"

var listers atomic.Int64

// Lister answers from the informer's cache. Before SetInformers is called
// or before the informer has synced it knows no Node, and callers fall
// back to what they did without it.
type Lister struct {
	// instanceID parses a providerID of this cloud into the instance ID
	// the cloud's API uses; an error means "not one of ours".
	instanceID func(providerID string) (string, error)
	// index is this Lister's index name on the informer.
	index string

	mu       sync.RWMutex
	informer cache.SharedIndexInformer
	indexed  bool
}

var _ cloudprovider.InformerUser = (*Lister)(nil)

// New returns a Lister for a cloud whose providerIDs instanceID parses.
func New(instanceID func(providerID string) (string, error)) *Lister {
	return &Lister{instanceID: instanceID, index: byInstanceID + strconv.FormatInt(listers.Add(1), 10)}
}

// SetInformers implements cloudprovider.InformerUser. The manager calls it
// once, before it starts the shared informers.
func (l *Lister) SetInformers(f informers.SharedInformerFactory) {
	inf := f.Core().V1().Nodes().Informer()
	err := inf.AddIndexers(cache.Indexers{l.index: l.indexFunc})
	if err != nil {
		// The informer has started already: scan instead.
		klog.Background().Error(err, "Cannot index Nodes by instance ID; lookups will scan every Node")
	}
	l.mu.Lock()
	l.informer, l.indexed = inf, err == nil
	l.mu.Unlock()
}

func (l *Lister) indexFunc(obj any) ([]string, error) {
	n, ok := obj.(*v1.Node)
	if !ok || n.Spec.ProviderID == "" {
		return nil, nil
	}
	id, err := l.instanceID(n.Spec.ProviderID)
	if err != nil || id == "" {
		// Another cloud's Node is simply not indexed.
		return nil, nil
	}
	return []string{id}, nil
}

// synced returns the informer once it has synced.
func (l *Lister) synced() (cache.SharedIndexInformer, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.informer == nil || !l.informer.HasSynced() {
		return nil, false
	}
	return l.informer, l.indexed
}

// Node returns the Node called name.
func (l *Lister) Node(name string) (*v1.Node, bool) {
	inf, _ := l.synced()
	if inf == nil {
		return nil, false
	}
	obj, ok, err := inf.GetStore().GetByKey(name)
	if err != nil || !ok {
		return nil, false
	}
	n, ok := obj.(*v1.Node)
	return n, ok
}

// InstanceID is the instance ID in the providerID of the Node called name;
// false when the Node is unknown, has no providerID, or has another
// cloud's.
func (l *Lister) InstanceID(name string) (string, bool) {
	n, ok := l.Node(name)
	if !ok || n.Spec.ProviderID == "" {
		return "", false
	}
	id, err := l.instanceID(n.Spec.ProviderID)
	if err != nil || id == "" {
		return "", false
	}
	return id, true
}

// NodeName is the name of the Node whose providerID names the instance.
// When several do (a Node re-registered under a new name), the first in
// name order wins, so the answer is stable.
func (l *Lister) NodeName(instanceID string) (string, bool) {
	inf, indexed := l.synced()
	if inf == nil {
		return "", false
	}
	var objs []any
	if indexed {
		var err error
		if objs, err = inf.GetIndexer().ByIndex(l.index, instanceID); err != nil {
			return "", false
		}
	} else {
		for _, obj := range inf.GetStore().List() {
			if ids, _ := l.indexFunc(obj); len(ids) == 1 && ids[0] == instanceID {
				objs = append(objs, obj)
			}
		}
	}
	best := ""
	for _, obj := range objs {
		if n, ok := obj.(*v1.Node); ok && (best == "" || n.Name < best) {
			best = n.Name
		}
	}
	return best, best != ""
}

// NotReadyInstanceIDs are the instance IDs of the Nodes whose Ready
// condition is not True: the Nodes the node-lifecycle controller checks
// against the cloud every period. A Node without a providerID (not yet
// initialized) is resolved by byName, which must answer from memory
// without a cloud call, or is left out; nil byName leaves them all out.
func (l *Lister) NotReadyInstanceIDs(byName func(nodeName string) (string, bool)) []string {
	inf, _ := l.synced()
	if inf == nil {
		return nil
	}
	var out []string
	for _, obj := range inf.GetStore().List() {
		n, ok := obj.(*v1.Node)
		if !ok || ready(n) {
			continue
		}
		if ids, _ := l.indexFunc(n); len(ids) == 1 {
			out = append(out, ids[0])
		} else if n.Spec.ProviderID == "" && byName != nil {
			if id, ok := byName(n.Name); ok {
				out = append(out, id)
			}
		}
	}
	return out
}

// ready mirrors the node-lifecycle controller: only Ready=True is ready.
func ready(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// LoadBalancerBackend reports whether the Node of the instance is one the
// service controller gives load balancers today: it exists, is not being
// deleted, is not labelled node.kubernetes.io/exclude-from-external-load-balancers
// and has no ToBeDeletedByClusterAutoscaler taint (k8s.io/cloud-provider
// controllers/service/controller.go, stableNodeSetPredicates, about lines
// 1001-1035). A part several Services share (Azure's NIC-based pool) asks
// it before it takes a Node out on one Service's word: that Service's node
// list may be older than the Node. False when the Node is unknown or the
// informer has not synced.
func (l *Lister) LoadBalancerBackend(instanceID string) bool {
	name, ok := l.NodeName(instanceID)
	if !ok {
		return false
	}
	n, ok := l.Node(name)
	if !ok || !n.DeletionTimestamp.IsZero() {
		return false
	}
	if v, ok := n.Labels[v1.LabelNodeExcludeBalancers]; ok {
		if excluded, err := strconv.ParseBool(v); err != nil || excluded {
			return false
		}
	}
	for _, t := range n.Spec.Taints {
		if t.Key == toBeDeletedTaint {
			return false
		}
	}
	return true
}

// toBeDeletedTaint is the cluster autoscaler's taint on a Node it is
// about to remove (k8s.io/cloud-provider controllers/service ToBeDeletedTaint).
const toBeDeletedTaint = "ToBeDeletedByClusterAutoscaler"
