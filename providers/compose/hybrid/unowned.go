package hybrid

import (
	"fmt"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/events"
)

// Nodes of no configured cloud are counted on /metrics by reason (as
// KEP-5778's skip metric proposes) and told once, in an Event on the
// Node, rather than logged at every lifecycle check.

// UnownedNodesName is the gauge of Nodes no configured cloud owns.
const UnownedNodesName = "multicloud_ccm_unowned_nodes"

// Reasons a Node is not served.
const (
	// ReasonForeignProviderID: the providerID's scheme is no configured
	// cloud's (k3s://, kind://, another cloud).
	ReasonForeignProviderID = "foreign-provider-id"
	// ReasonForeignLabel: no providerID, and its LabelProvider label
	// names no configured cloud.
	ReasonForeignLabel = "foreign-label"
	// ReasonAmbiguous: no providerID or label, and several clouds have an
	// instance of its name.
	ReasonAmbiguous = "ambiguous-name"
)

// EventUnowned: no configured cloud owns the Node (reasons
// foreign-provider-id, foreign-label, ambiguous-name). Recorded once per Node and reason: Normal when another manager's
// providerID or label names it, Warning when several clouds have an
// instance of its name (ambiguous-name, a mistake to fix). The message
// says why and what to do.
// Type: Normal; Warning for ambiguous-name
// Object: Node
const EventUnowned = "NodeNotServed"

var (
	unownedOnce  sync.Once
	unownedGauge = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name: UnownedNodesName,
		Help: "Nodes no configured cloud owns, by reason (foreign-provider-id, foreign-label, ambiguous-name): the manager never deletes, taints or initializes them.",
	}, []string{"reason"})
)

type unownedNodes struct {
	clouds string

	mu       sync.Mutex
	recorder record.EventRecorder
	// reasons are the unowned Nodes' reasons by UID; told are the Nodes
	// already told (an Event each), with the reason they were told.
	reasons map[types.UID]string
	told    map[types.UID]string
	pending []*v1.Node // seen before the recorder existed
}

// Metrics are the series this package registers in legacyregistry.
func Metrics() []metrics.Registerable { return []metrics.Registerable{unownedGauge} }

func newUnownedNodes(clouds []string) *unownedNodes {
	unownedOnce.Do(func() { legacyregistry.MustRegister(Metrics()...) })
	return &unownedNodes{clouds: strings.Join(clouds, ","), reasons: map[types.UID]string{}, told: map[types.UID]string{}}
}

// start makes the Event recorder, once leadership is won.
func (u *unownedNodes) start(b cloudprovider.ControllerClientBuilder, stop <-chan struct{}) {
	rec, err := events.NewRecorder(b, "cloud-node-lifecycle-controller", "cloud-controller-manager", stop)
	if err != nil {
		klog.ErrorS(err, "No Events for Nodes of no configured cloud; they are logged once instead")
		return
	}
	u.mu.Lock()
	u.recorder = rec
	pending := u.pending
	u.pending = nil
	u.mu.Unlock()
	for _, n := range pending {
		u.tell(n)
	}
}

// watch classifies every Node the informer sees.
func (u *unownedNodes) watch(f informers.SharedInformerFactory) {
	_, err := f.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { u.classify(obj) },
		UpdateFunc: func(_, obj any) { u.classify(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if n, ok := obj.(*v1.Node); ok {
				u.set(n, "")
			}
		},
	})
	if err != nil {
		klog.ErrorS(err, "Nodes of no configured cloud will not be counted")
	}
}

func (u *unownedNodes) classify(obj any) {
	n, ok := obj.(*v1.Node)
	if !ok {
		return
	}
	u.set(n, reasonOf(u.clouds, n))
}

// reasonOf is why a Node of clouds (comma-separated) is not served; ""
// when it is or may be. An ambiguous name is found only by asking the
// clouds (ambiguous).
func reasonOf(clouds string, n *v1.Node) string {
	ours := func(name string) bool {
		for _, c := range strings.Split(clouds, ",") {
			if c == name {
				return true
			}
		}
		return false
	}
	if s := providerScheme(n.Spec.ProviderID); s != "" {
		if !ours(s) {
			return ReasonForeignProviderID
		}
		return ""
	}
	if name, ok := n.Labels[LabelProvider]; ok && !ours(name) {
		return ReasonForeignLabel
	}
	return ""
}

// ambiguous records a Node several clouds claim by name.
func (u *unownedNodes) ambiguous(n *v1.Node, clouds []string) {
	u.set(n, ReasonAmbiguous+": "+strings.Join(clouds, ","))
}

// set records n's reason ("" for served) and tells about a new one.
func (u *unownedNodes) set(n *v1.Node, reason string) {
	u.mu.Lock()
	old := u.reasons[n.UID]
	if reason == "" {
		delete(u.reasons, n.UID)
		delete(u.told, n.UID)
	} else {
		u.reasons[n.UID] = reason
	}
	gaugeKey := func(r string) string { r, _, _ = strings.Cut(r, ":"); return r }
	if old != reason {
		if old != "" {
			unownedGauge.WithLabelValues(gaugeKey(old)).Dec()
		}
		if reason != "" {
			unownedGauge.WithLabelValues(gaugeKey(reason)).Inc()
		}
	}
	tell := reason != "" && u.told[n.UID] != reason
	u.mu.Unlock()
	if tell {
		u.tell(n)
	}
}

// tell says once why the Node is not served.
func (u *unownedNodes) tell(n *v1.Node) {
	u.mu.Lock()
	reason := u.reasons[n.UID]
	rec := u.recorder
	if reason == "" || u.told[n.UID] == reason {
		u.mu.Unlock()
		return
	}
	if rec == nil {
		u.pending = append(u.pending, n)
		u.mu.Unlock()
		return
	}
	u.told[n.UID] = reason
	u.mu.Unlock()
	msg := message(u.clouds, n, reason)
	klog.InfoS("Node not served", "node", klog.KObj(n), "reason", reason)
	typ := v1.EventTypeNormal
	if strings.HasPrefix(reason, ReasonAmbiguous) {
		// A mistake to fix, unlike a Node another manager serves.
		typ = v1.EventTypeWarning
	}
	rec.Event(n, typ, EventUnowned, msg)
}

func message(clouds string, n *v1.Node, reason string) string {
	switch {
	case reason == ReasonForeignProviderID:
		return fmt.Sprintf("providerID %q is of no configured cloud (%s): this manager never initializes, taints or deletes this Node", n.Spec.ProviderID, clouds)
	case reason == ReasonForeignLabel:
		return fmt.Sprintf("label %s=%s names no configured cloud (%s): this manager never initializes, taints or deletes this Node", LabelProvider, n.Labels[LabelProvider], clouds)
	}
	return fmt.Sprintf("no providerID, and clouds %s each have an instance named %s: register it with --provider-id or --node-labels=%s=<cloud>",
		strings.TrimPrefix(reason, ReasonAmbiguous+": "), n.Name, LabelProvider)
}
