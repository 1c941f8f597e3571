package gce

import (
	"errors"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/upstreamann"
)

// upstreamRepo is the upstream GCE CCM, read at commit 4e245312 (Aug 2026),
// for the Ref of every row.
const upstreamRepo = "kubernetes/cloud-provider-gcp"

// upstreamAnnotations lists every Service annotation the upstream GCE CCM
// reads (its constants in providers/gce/gce_annotations.go, plus the
// source-ranges annotation it reads through
// k8s.io/cloud-provider/service/helpers) and what this backend does with
// each.
//
// Left out on purpose: networking.gke.io/target-pool and
// networking.gke.io/backend-service (gce_annotations.go:102-106), which
// upstream writes onto Services to record its resources' names and only
// re-reads to update them; they ask for nothing, so a Warning about them
// would be noise. Upstream's loadBalancerClass values are a field, not an
// annotation, and IPv6 comes from spec.ipFamilies and the config's
// stack-type, not from an annotation.
func upstreamAnnotations() *upstreamann.Table {
	return &upstreamann.Table{
		Upstream: "the upstream GCE CCM",
		// upstream: kubernetes/cloud-provider-gcp providers/gce/gce_util.go:488-497
		// (usesL4RBS): the same Services go to GKE's controller there.
		Elsewhere: handedToGKEController,
		Annotations: []upstreamann.Annotation{
			{
				Key:      string(annotationLBType),
				Support:  upstreamann.Supported,
				ByValue:  lbTypeSupport,
				Upstream: `"Internal" (or "internal") makes an internal passthrough load balancer; any other value, or none, an external one.`,
				Note:     lbTypeNote,
				Ref:      upstreamRepo + " providers/gce/gce_annotations.go:38",
			},
			{
				Key:      string(annotationLBTypeLegacy),
				Support:  upstreamann.Supported,
				ByValue:  lbTypeSupport,
				Upstream: "The deprecated name of networking.gke.io/load-balancer-type, read when that one is absent.",
				Note:     lbTypeNote,
				Ref:      upstreamRepo + " providers/gce/gce_annotations.go:41",
			},
			{
				Key:      string(annotationILBSubnet),
				Support:  upstreamann.Supported,
				Upstream: "The subnetwork of the cluster's network an internal load balancer's address comes from, instead of the config's subnetwork.",
				Note:     "Here it is an error on an external Service, where upstream ignored it.",
				Ref:      upstreamRepo + " providers/gce/gce_annotations.go:73",
			},
			{
				Key:      string(annotationILBGlobalAccess),
				Support:  upstreamann.Supported,
				ByValue:  globalAccessSupport,
				Upstream: `"true" lets clients in every region reach an internal load balancer; any other value keeps it to its region.`,
				Note: `upstream grants global access only for exactly "true" and keeps any other value regional, while here "True", "1" or "t" ` +
					`would grant it and other values are errors; set "true" or "false" (here it is also an error on an external Service, which upstream ignored).`,
				Ref: upstreamRepo + " providers/gce/gce_annotations.go:68",
			},
			{
				Key:      string(annotationNetworkTier),
				Support:  upstreamann.Supported,
				Upstream: `The network tier, "Premium" (default) or "Standard", of an external load balancer's address and forwarding rule.`,
				Note:     `Here the value is case-insensitive, and "Standard" on an internal Service is an error (upstream ignored the tier there).`,
				Ref:      upstreamRepo + " providers/gce/gce_annotations.go:78",
			},
			{
				Key:      string(annotationRBS),
				Support:  upstreamann.Supported,
				Upstream: `"enabled" hands the Service to GKE's backend-service-based external load balancer controller; the CCM leaves it alone.`,
				Note:     `The same here (exactly "enabled", as upstream compares it): the Service is left to GKE's controller.`,
				Ref:      upstreamRepo + " providers/gce/gce_annotations.go:88",
			},
			backendShareRow("alpha.cloud.google.com/load-balancer-backend-share", "gce_annotations.go:60",
				`"true" lets internal load balancers share one backend service (except with externalTrafficPolicy Local).`),
			backendShareRow("cloud.google.com/load-balancer-backend-share", "gce_annotations.go:63",
				"The deprecated name of alpha.cloud.google.com/load-balancer-backend-share, still read."),
			{
				Key:     v1.AnnotationLoadBalancerSourceRangesKey,
				Support: upstreamann.Supported,
				Upstream: "The client CIDRs the firewall rule admits when spec.loadBalancerSourceRanges is empty, " +
					"read through k8s.io/cloud-provider/service/helpers.",
				Ref: upstreamRepo + " providers/gce/gce_loadbalancer_external.go:1191",
			},
		},
	}
}

// lbTypeNote is the Event text of a load balancer type both CCMs would
// not read alike.
const lbTypeNote = `upstream makes an internal load balancer only for exactly "Internal" or "internal" and an external one for every other value, ` +
	`while here any capitalization of "internal" is internal and other values are errors; set "Internal", or "External" (or remove the annotation) for an external load balancer.`

// lbTypeSupport refuses the values upstream and serviceSpec read
// differently: upstream compares exactly (gce_annotations.go:133-135), so
// " internal" or "INTERNAL" was external there and would be internal here.
func lbTypeSupport(value string) upstreamann.Support {
	switch {
	case value == "Internal" || value == "internal":
		return upstreamann.Supported
	case strings.EqualFold(strings.TrimSpace(value), "external") || strings.TrimSpace(value) == "":
		return upstreamann.Supported
	}
	return upstreamann.Refused
}

// globalAccessSupport refuses the values upstream and serviceSpec read
// differently: upstream compares with "true" exactly
// (gce_annotations.go:189), serviceSpec uses strconv.ParseBool, so
// "True" would open the load balancer to every region.
func globalAccessSupport(value string) upstreamann.Support {
	if value == "true" {
		return upstreamann.Supported
	}
	if b, err := strconv.ParseBool(strings.TrimSpace(value)); err == nil && !b {
		return upstreamann.Supported
	}
	return upstreamann.Refused
}

// backendShareRow is one spelling of upstream's backend-service sharing.
// Only "true" does anything upstream (gce_annotations.go:143-155). Not
// sharing changes neither who reaches the load balancer nor how: each
// internal Service gets its own backend service over the same nodes.
func backendShareRow(key, at, upstream string) upstreamann.Annotation {
	return upstreamann.Annotation{
		Key:     key,
		Support: upstreamann.Ignored,
		ByValue: func(value string) upstreamann.Support {
			if value == "true" {
				return upstreamann.Ignored
			}
			return upstreamann.Supported
		},
		Upstream: upstream,
		Note: "every internal Service here gets its own regional backend service per protocol over the cluster's shared instance groups, " +
			"so the same nodes serve it and only the number of backend services differs; remove the annotation.",
		Ref: upstreamRepo + " providers/gce/" + at,
	}
}

// handedToGKEController reports the Services serviceSpec leaves to GKE's
// backend-service-based controller (cloud.google.com/l4-rbs), so that the
// gate and the load balancer decide alike: their annotations are that
// controller's to read.
func handedToGKEController(svc *v1.Service) bool {
	// The RBS check comes first in serviceSpec and needs no config.
	_, err := serviceSpec(&Section{}, svc)
	return errors.Is(err, cloudprovider.ImplementedElsewhere)
}
