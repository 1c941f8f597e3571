// Package svcopts reads what a Service says about its load balancer
// (annotations, source ranges, health check, ports) for every backend, so
// that a malformed Service gets the same precise, actionable error on every
// cloud: the error names the annotation or field and gives a valid example,
// and becomes a Warning Event on that Service only.
package svcopts

import (
	v1 "k8s.io/api/core/v1"
)

// Annotation is the name of a Service annotation a backend reads.
//
// Backends declare each one as a constant of this type with a doc comment
// that ends in "Type:" and "Default:" lines; hack/refdocs turns those into
// docs/reference/<cloud>.md:
//
//	// annotationInternal puts the load balancer on internal subnets.
//	//
//	// Type: bool
//	// Default: false
//	annotationInternal svcopts.Annotation = "service.beta.kubernetes.io/aws-load-balancer-internal"
//
// An annotation name is part of the Service API users write: it MUST NOT
// change once released.
type Annotation string

// String is the annotation's name.
func (a Annotation) String() string { return string(a) }

// Lookup returns the annotation's value on svc and whether it is set.
func (a Annotation) Lookup(svc *v1.Service) (string, bool) {
	v, ok := svc.Annotations[string(a)]
	return v, ok
}
