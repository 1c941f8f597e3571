package aws

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/svcopts"
)

// IPv6 and dual-stack Services. The upstream AWS CCM has none: its NLBs
// and Classic ELBs never set an IP address type and ignore
// spec.ipFamilies (kubernetes/cloud-provider-aws
// pkg/providers/v1/aws_loadbalancer.go:165-180, no IpAddressType; PR #1313
// for dual-stack NLBs is unmerged). The behaviour AWS users know is the AWS
// Load Balancer Controller's: its ip-address-type annotation
// (annotationIPAddressType). Here:
//   - an NLB is dualstack when the annotation says so or, without it, when
//     the Service's families include IPv6 (as our Azure backend follows
//     spec.ipFamilies);
//   - its target groups stay IPv4, registered by instance ID. ELBv2 sends
//     an IPv4 target group's traffic over IPv4 whatever the client's
//     family ("The Network Load Balancer communicates with targets based on
//     the IP address type of the target group", NLB guide), so nodes need
//     no primary IPv6 address and a Service's NodePorts serve both
//     families. The Load Balancer Controller instead makes an IPv6 target
//     group whenever the families include IPv6 (model_build_target_group.go:828-842),
//     which needs a primary IPv6 address on every instance target.
//   - an IPv6-only Service is refused: an NLB always has IPv4 addresses,
//     and kube-proxy opens an IPv6-only Service's NodePorts on IPv6 only,
//     which IPv4 target groups cannot reach.

// parseIPAddressType chooses the NLB's IP address type, and says whether
// the annotation chose it.
func parseIPAddressType(svc *v1.Service, ports []listenerSpec) (elbv2types.IpAddressType, bool, error) {
	if !svcopts.HasFamily(svc, v1.IPv4Protocol) {
		return "", false, fmt.Errorf("spec.ipFamilies is [IPv6]: an NLB always has IPv4 addresses and sends traffic to the nodes over IPv4, which an IPv6-only Service's NodePorts do not take; make the Service dual-stack (spec.ipFamilyPolicy: PreferDualStack or RequireDualStack) for an NLB with IPv6 addresses")
	}
	t, asked := elbv2types.IpAddressTypeIpv4, false
	if v, ok := annotationIPAddressType.Lookup(svc); ok {
		switch elbv2types.IpAddressType(strings.TrimSpace(v)) {
		case elbv2types.IpAddressTypeIpv4:
		case elbv2types.IpAddressTypeDualstack:
			t = elbv2types.IpAddressTypeDualstack
		default:
			// The Load Balancer Controller refuses the rest too,
			// dualstack-without-public-ipv4 included, which only its
			// Ingresses take (model_build_load_balancer.go:184-198).
			return "", false, annotationIPAddressType.Invalid(v, "ipv4 or dualstack")
		}
		asked = true
	} else if svcopts.HasFamily(svc, v1.IPv6Protocol) {
		t = elbv2types.IpAddressTypeDualstack
	}
	if t == elbv2types.IpAddressTypeDualstack {
		for _, p := range ports {
			if p.udp {
				return "", false, fmt.Errorf("port %d is UDP, which a dualstack NLB takes only with an IPv6 source-NAT prefix per subnet, not supported here; remove the UDP port, or set annotation %s: ipv4", p.port, annotationIPAddressType)
			}
		}
	}
	return t, asked, nil
}

// addressType is the NLB's IP address type, ipv4 when not chosen.
func (o *lbOptions) addressType() elbv2types.IpAddressType {
	if o.ipAddressType == "" {
		return elbv2types.IpAddressTypeIpv4
	}
	return o.ipAddressType
}

// checkClassicFamilies refuses what a Classic ELB cannot serve: it has no
// IPv6 in a VPC (its API has no IP address type at all). A dual-stack
// Service gets an IPv4 Classic ELB, as upstream's, so the switch keeps
// the ones upstream made.
func checkClassicFamilies(svc *v1.Service) error {
	if v, ok := annotationIPAddressType.Lookup(svc); ok && strings.TrimSpace(v) == string(elbv2types.IpAddressTypeDualstack) {
		return fmt.Errorf("annotation %s: dualstack: a Classic ELB has no IPv6 addresses in a VPC; use an NLB (annotation %s: nlb) for a dualstack load balancer", annotationIPAddressType, annotationLBType)
	}
	if !svcopts.HasFamily(svc, v1.IPv4Protocol) {
		return fmt.Errorf("spec.ipFamilies is [IPv6]: a Classic ELB has no IPv6 addresses in a VPC; make the Service dual-stack, or use an NLB (annotation %s: nlb) with a dual-stack Service", annotationLBType)
	}
	return nil
}

// ensureIPAddressType turns an existing NLB dualstack or ipv4 as the
// Service asks. An ipv4 NLB with upstream's name is turned dualstack only
// when the annotation asks: upstream made every NLB ipv4, whatever the
// Service's families, and taking one over must not give it new addresses
// the Service never had.
func (l *loadBalancers) ensureIPAddressType(ctx context.Context, st *lbState, opts *lbOptions) error {
	have, want := st.lb.IpAddressType, opts.addressType()
	if have == "" {
		have = elbv2types.IpAddressTypeIpv4
	}
	if have == want {
		return nil
	}
	if st.upstream && have == elbv2types.IpAddressTypeIpv4 && !opts.ipTypeAsked {
		klog.FromContext(ctx).V(2).Info("Load balancer made as upstream makes it stays ipv4; annotation turns it dualstack", "annotation", annotationIPAddressType)
		// It serves IPv4 clients only, so its default clients are too.
		opts.ipAddressType = elbv2types.IpAddressTypeIpv4
		if opts.defaultRanges {
			opts.sourceRanges = svcopts.AllClients(v1.IPv4Protocol)
		}
		return nil
	}
	if _, err := l.api.elbv2.SetIpAddressType(ctx, &elbv2.SetIpAddressTypeInput{LoadBalancerArn: st.lb.LoadBalancerArn, IpAddressType: want}); err != nil {
		return fmt.Errorf("set IP address type %s on load balancer %s: %w", want, st.name, err)
	}
	klog.FromContext(ctx).Info("Set load balancer IP address type", "from", have, "to", want, "loadBalancer", aws.ToString(st.lb.LoadBalancerName))
	st.lb.IpAddressType = want
	return nil
}
