package aws

import "slices"

// A Classic ELB's place in the VPC: its security groups and subnets.

// clbListParams reads the load balancer and a required, non-empty list
// parameter (what names it in the error, as AWS spells the field).
func (e *Emulator) clbListParams(p params, key, what string) (*classicLB, []string, error) {
	lb, err := e.clbParam(p)
	if err != nil {
		return nil, nil, err
	}
	ids := p.list(key)
	if len(ids) == 0 {
		return nil, nil, clbRequired(what)
	}
	return lb, ids, nil
}

type clbSecurityGroupsResponse struct {
	SecurityGroups []string `xml:"SecurityGroups>member"`
}

// clbApplySecurityGroups replaces the load balancer's security groups.
func (e *Emulator) clbApplySecurityGroups(p params) (any, error) {
	lb, ids, err := e.clbListParams(p, "SecurityGroups.member", "securityGroups")
	if err != nil {
		return nil, err
	}
	sgs, err := e.clbSecurityGroups(ids, lb.vpcID)
	if err != nil {
		return nil, err
	}
	lb.securityGroups = sgs
	return clbSecurityGroupsResponse{SecurityGroups: slices.Clone(sgs)}, nil
}

type clbSubnetsResponse struct {
	Subnets []string `xml:"Subnets>member"`
}

// clbAttachSubnets adds subnets of the load balancer's VPC, at most one
// per zone counting the ones it has; attaching an attached subnet is a
// no-op.
func (e *Emulator) clbAttachSubnets(p params) (any, error) {
	lb, ids, err := e.clbListParams(p, "Subnets.member", "subnets")
	if err != nil {
		return nil, err
	}
	subnets, _, err := e.clbSubnets(slices.Concat(lb.subnets, ids), lb.vpcID, lb.scheme)
	if err != nil {
		return nil, err
	}
	lb.subnets = subnets
	return clbSubnetsResponse{Subnets: slices.Clone(subnets)}, nil
}

// clbDetachSubnets removes subnets; a load balancer keeps at least one.
// Subnets it is not attached to are ignored.
func (e *Emulator) clbDetachSubnets(p params) (any, error) {
	lb, ids, err := e.clbListParams(p, "Subnets.member", "subnets")
	if err != nil {
		return nil, err
	}
	left := slices.DeleteFunc(slices.Clone(lb.subnets), func(id string) bool { return slices.Contains(ids, id) })
	if len(left) == 0 {
		return nil, clbInvalidConfig("Requested configuration change for LoadBalancer %s would leave it without a subnet; it must remain attached to at least one", lb.name)
	}
	lb.subnets = left
	return clbSubnetsResponse{Subnets: slices.Clone(left)}, nil
}
