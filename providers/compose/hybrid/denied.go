package hybrid

import (
	"errors"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/permissions"
)

// EventPermissionDenied: the cloud refused a call about the Node's
// instance because the manager's identity lacks a permission; the
// message names it and the features that need it. Recorded once per
// Node and permission: the node controllers ask again every few seconds,
// and the denial is also counted on /metrics and logged once.
// Type: Warning
// Object: Node
const EventPermissionDenied = "CloudPermissionDenied"

// nodeDenials tells each Node once per permission that a call about its
// instance was denied (Service denials are the service controller's
// SyncLoadBalancerFailed Events).
type nodeDenials struct {
	u    *unownedNodes // whose Event recorder is used
	mu   sync.Mutex
	told map[types.UID]map[string]bool
}

func newNodeDenials(u *unownedNodes) *nodeDenials {
	return &nodeDenials{u: u, told: map[types.UID]map[string]bool{}}
}

// observe records a Warning Event on node when err is a denial not yet
// told for it; err is returned unchanged.
func (d *nodeDenials) observe(node *v1.Node, err error) error {
	var denied *permissions.DeniedError
	if node == nil || !errors.As(err, &denied) {
		return err
	}
	d.u.mu.Lock()
	rec := d.u.recorder
	d.u.mu.Unlock()
	if rec == nil {
		return err
	}
	d.mu.Lock()
	if d.told[node.UID][denied.Permission] {
		d.mu.Unlock()
		return err
	}
	if d.told[node.UID] == nil {
		d.told[node.UID] = map[string]bool{}
	}
	d.told[node.UID][denied.Permission] = true
	d.mu.Unlock()
	rec.Event(node, v1.EventTypeWarning, EventPermissionDenied, fmt.Sprintf("Looking up the Node's instance: %v", denied))
	return err
}

// watch forgets what was told of each deleted Node.
func (d *nodeDenials) watch(f informers.SharedInformerFactory) {
	_, err := f.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if n, ok := obj.(*v1.Node); ok {
				d.mu.Lock()
				delete(d.told, n.UID)
				d.mu.Unlock()
			}
		},
	})
	if err != nil {
		klog.ErrorS(err, "Permission denials are told once per Node for the life of the process")
	}
}
