package openstack

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

var _ conformance.Sharer = (*Cloud)(nil)

// ShareAnnotations implements conformance.Sharer: the load-balancer-id the
// manager writes back on the first Service names the load balancer to
// share (the upstream CCM's annotation, which ours serves).
func (c *Cloud) ShareAnnotations(first *corev1.Service) map[string]string {
	return map[string]string{upstreamAnnotationLBID: first.Annotations[upstreamAnnotationLBID]}
}
