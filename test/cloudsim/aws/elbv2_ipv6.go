package aws

import (
	"net/netip"
	"slices"
)

// Dual-stack Network Load Balancers: IpAddressType dualstack on
// CreateLoadBalancer and SetIpAddressType. The rules ELBv2 applies, from
// the API reference (CreateLoadBalancer, SetIpAddressType) and the NLB
// guide's "Update the IP address types" page:
//   - an NLB takes ipv4 or dualstack, nothing else
//     (dualstack-without-public-ipv4 is for Application Load Balancers);
//   - every subnet of a dualstack load balancer has an associated IPv6
//     CIDR block, and the load balancer gets an IPv6 address in each;
//   - a UDP or TCP_UDP listener on a dualstack NLB needs
//     EnablePrefixForIpv6SourceNat on, which is set at creation.
// Internal dualstack NLBs are accepted: the reference says "Internal load
// balancers must use ipv4", but AWS creates them (kops #13006, the NLB
// guide), and that is what clients meet.

const (
	ipTypeIPv4      = "ipv4"
	ipTypeDualstack = "dualstack"
	// tgTypeIPv6 is a target group's IPv6 IpAddressType.
	tgTypeIPv6 = "ipv6"
)

// IPv6 target groups (NLB guide, "IP address type" of target groups):
// "IPv6 target groups can only be associated with dualstack Network Load
// Balancers"; "All IP addresses within a target group must have the same
// IP address type"; instances registered by ID need a primary IPv6
// address. The texts below are those quoted from ELBv2 in public issues
// (zalando-incubator/kube-ingress-aws-controller#752,
// kubernetes-sigs/aws-load-balancer-controller#3572); the codes are
// [unverified].

func ipv6TGOnIPv4LB() error {
	return apiErr("InvalidConfigurationRequest", "You cannot associate an IPv6 target group with a load balancer that has an 'ipv4' IP address type")
}

func ipv6TargetMismatch(id string) error {
	return apiErr("InvalidTarget", "All IP addresses within a target group must have the same IP address type: '%s' is not an IPv6 address", id)
}

func missingPrimaryIPv6(id string) error {
	return apiErr("InvalidTarget", "The following targets cannot be used with this IPv6 target group because of missing primary IPv6 addresses: '%s'", id)
}

// hasIPv6 says the instance's primary interface has an IPv6 address (the
// emulator does not model IsPrimaryIpv6: its first one counts).
func (e *Emulator) hasIPv6(inst *instance) bool {
	n, ok := e.networkInterfaces.Get(inst.eniID)
	return ok && len(n.ipv6Addrs) > 0
}

// checkIPAddressType checks an IpAddressType value for a load balancer
// type. The error code and text are ValidationError's shape for an
// enumerated value [exact text unverified].
func checkIPAddressType(lbType, v string) error {
	allowed := []string{ipTypeIPv4, ipTypeDualstack}
	if lbType == lbTypeApplication {
		allowed = append(allowed, "dualstack-without-public-ipv4")
	}
	if !slices.Contains(allowed, v) {
		return validation("IP address type '%s' is not valid for a load balancer of type '%s'; valid values are %v", v, lbType, allowed)
	}
	return nil
}

// checkDualstackSubnets refuses subnets without an IPv6 block. The text is
// the one the AWS Load Balancer Controller quotes from ELBv2
// (pkg/networking/subnet_resolver.go:513); the code [unverified] is the
// one the reference lists for a bad subnet.
func (e *Emulator) checkDualstackSubnets(subnets []string) error {
	for _, id := range subnets {
		if s, ok := e.subnets.Get(id); !ok || !s.ipv6CIDR.IsValid() {
			return apiErr("InvalidSubnet", "You must specify subnets with an associated IPv6 CIDR block.")
		}
	}
	return nil
}

// udpOnDualstack is the refusal of a UDP or TCP_UDP listener on a dualstack
// NLB without a source-NAT prefix; the text is the older SetIpAddressType
// reference's ("You can't specify dualstack for a load balancer with a UDP
// or TCP_UDP listener") [code unverified].
func udpOnDualstack() error {
	return apiErr("InvalidConfigurationRequest", "You can't specify dualstack for a load balancer with a UDP or TCP_UDP listener unless EnablePrefixForIpv6SourceNat is on")
}

func isUDP(protocol string) bool { return protocol == "UDP" || protocol == "TCP_UDP" }

// claimIPv6 gives a dualstack load balancer an IPv6 address in each of its
// subnets that has none yet, held in the subnet like an interface's.
func (e *Emulator) claimIPv6(lb *loadBalancer) {
	if lb.ipAddressType != ipTypeDualstack {
		return
	}
	for _, id := range lb.subnets {
		if _, ok := lb.ipv6[id]; ok {
			continue
		}
		s, ok := e.subnets.Get(id)
		if !ok || !s.ipv6CIDR.IsValid() {
			continue
		}
		a := s.freeIPv6Addrs(1, map[netip.Addr]bool{})[0]
		s.ipv6Addrs[a] = lb.arn
		if lb.ipv6 == nil {
			lb.ipv6 = map[string]netip.Addr{}
		}
		lb.ipv6[id] = a
	}
}

// releaseIPv6 frees the load balancer's IPv6 addresses in the subnets not
// in keep.
func (e *Emulator) releaseIPv6(lb *loadBalancer, keep []string) {
	for id, a := range lb.ipv6 {
		if slices.Contains(keep, id) {
			continue
		}
		if s, ok := e.subnets.Get(id); ok && s.ipv6Addrs[a] == lb.arn {
			delete(s.ipv6Addrs, a)
		}
		delete(lb.ipv6, id)
	}
}

type setIPAddressTypeResponse struct {
	IPAddressType string `xml:"IpAddressType"`
}

// setIPAddressType is SetIpAddressType: the same checks as at creation,
// against the load balancer's subnets and listeners.
func (e *Emulator) setIPAddressType(p params) (any, error) {
	lb, err := e.lbParam(p)
	if err != nil {
		return nil, err
	}
	v := p.get("IpAddressType")
	if v == "" {
		return nil, validation("1 validation error detected: Value null at 'ipAddressType' failed to satisfy constraint: Member must not be null")
	}
	if err := checkIPAddressType(lb.lbType, v); err != nil {
		return nil, err
	}
	if v == ipTypeDualstack {
		if err := e.checkDualstackSubnets(lb.subnets); err != nil {
			return nil, err
		}
		if !lb.prefixSourceNAT {
			for _, l := range e.listeners.All() {
				if l.lbARN == lb.arn && isUDP(l.protocol) {
					return nil, udpOnDualstack()
				}
			}
		}
	} else {
		// Back to ipv4 with an IPv6 target group attached.
		for _, l := range e.listeners.All() {
			if l.lbARN != lb.arn {
				continue
			}
			for _, a := range l.actions {
				for _, wtg := range a.targetGroups {
					if tg, err := e.tgByARN(wtg.arn); err == nil && tg.ipType == tgTypeIPv6 {
						return nil, ipv6TGOnIPv4LB()
					}
				}
			}
		}
	}
	lb.ipAddressType = v
	if v == ipTypeDualstack {
		e.claimIPv6(lb)
	} else {
		e.releaseIPv6(lb, nil)
	}
	return setIPAddressTypeResponse{IPAddressType: v}, nil
}

// LoadBalancerIPAddressType is an ELBv2 load balancer's IpAddressType, ""
// for an unknown ARN: what tests ask of a Service's NLB.
func (e *Emulator) LoadBalancerIPAddressType(arn string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if lb, ok := e.loadBalancers.Get(arn); ok {
		return lb.ipAddressType
	}
	return ""
}
