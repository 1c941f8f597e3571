// Package events makes the Event recorders the manager's own parts use
// (the upstream-annotation gate, the Nodes no configured cloud owns),
// each once leadership is won, under a controller's identity that has the
// RBAC for Events.
package events

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
)

// NewRecorder returns a recorder writing Events from component with the
// client of the named controller identity, shut down when stop closes.
func NewRecorder(b cloudprovider.ControllerClientBuilder, identity, component string, stop <-chan struct{}) (record.EventRecorder, error) {
	client, err := b.Client(identity)
	if err != nil {
		return nil, err
	}
	bc := record.NewBroadcaster()
	bc.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	go func() {
		<-stop
		bc.Shutdown()
	}()
	return bc.NewRecorder(scheme.Scheme, v1.EventSource{Component: component}), nil
}
