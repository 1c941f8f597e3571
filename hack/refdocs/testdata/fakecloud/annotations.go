package fakecloud

import (
	v1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/hack/refdocs/testdata/fakeopts"
	"github.com/multicloud-ccm/multicloud-ccm/hack/refdocs/testdata/svcopts"
)

const (
	// annotationInternal makes the load balancer internal.
	//
	// Type: bool
	// Default: false
	annotationInternal svcopts.Annotation = "fake.example.com/internal"
	// annotationNoTypeNoDefault has neither line, and its text
	// spans two lines | with a pipe.
	annotationNoTypeNoDefault svcopts.Annotation = "fake.example.com/plain"
	// annotationSourceRanges is another package's constant.
	//
	// Type: comma-separated CIDRs
	// Default: everyone, unless
	// spec.loadBalancerSourceRanges says otherwise
	annotationSourceRanges svcopts.Annotation = v1.AnnotationLoadBalancerSourceRangesKey
	// notAnAnnotation has another type and is not listed.
	notAnAnnotation = "fake.example.com/not-listed"
)

// annotationZone stands alone, outside a const group, and names a constant
// of a sibling package.
//
// Type: string
const annotationZone svcopts.Annotation = fakeopts.ZoneKey

var _ = []any{annotationInternal, annotationNoTypeNoDefault, annotationSourceRanges, annotationZone, notAnAnnotation}
