package aws

import (
	"fmt"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// Resource kinds reported by Resources.
const (
	KindVPC               = "vpc"
	KindSubnet            = "subnet"
	KindRouteTable        = "route-table"
	KindInternetGateway   = "internet-gateway"
	KindRoute             = "route"
	KindSecurityGroup     = "security-group"
	KindSecurityGroupRule = "security-group-rule"
	KindInstance          = "instance"
	KindElasticIP         = "elastic-ip" // ID the allocation ID, name the public address
	KindLoadBalancer      = "load-balancer"
	KindTargetGroup       = "target-group"
	KindListener          = "listener"
	KindTarget            = "target"

	// Classic Load Balancers, with their listeners, policies and
	// registered instances as children.
	KindClassicLoadBalancer = "classic-load-balancer"
	KindClassicListener     = "classic-listener"
	KindClassicPolicy       = "classic-policy"
	KindClassicInstance     = "classic-instance"
)

// Resources implements cloudsim.Cloud. It lists everything a controller
// could create or leak, each route, security group rule and target
// registration on its own, so a leak check can be precise. Routes are
// "<rtb>:<cidr>", targets "<target group ARN>:<id>:<port>"; a Classic ELB's
// ID is its name, its listeners are "<name>:<port>", its policies
// "<name>:<policy>" and its instances "<name>:<instance ID>".
func (e *Emulator) Resources() []cloudsim.Resource {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []cloudsim.Resource
	add := func(kind, id, name, parent string, tags map[string]string) {
		var t map[string]string
		if len(tags) > 0 {
			t = copyTags(tags)
		}
		out = append(out, cloudsim.Resource{Kind: kind, ID: id, Name: name, Parent: parent, Tags: t})
	}
	for _, v := range e.vpcs.All() {
		add(KindVPC, v.id, v.tags["Name"], "", v.tags)
	}
	for _, s := range e.subnets.All() {
		add(KindSubnet, s.id, s.tags["Name"], s.vpcID, s.tags)
	}
	for _, g := range e.internetGateways.All() {
		add(KindInternetGateway, g.id, g.tags["Name"], g.vpcID, g.tags)
	}
	for _, rt := range e.routeTables.All() {
		add(KindRouteTable, rt.id, rt.tags["Name"], rt.vpcID, rt.tags)
		for _, r := range rt.routes {
			target := r.gatewayID + r.instanceID
			if target == "" {
				target = r.eniID
			}
			add(KindRoute, rt.id+":"+r.destination, r.destination+" via "+target, rt.id, nil)
		}
	}
	for _, sg := range e.securityGroups.All() {
		add(KindSecurityGroup, sg.id, sg.name, sg.vpcID, sg.tags)
		for _, r := range sg.ingress {
			add(KindSecurityGroupRule, r.id, "ingress "+r.String(), sg.id, nil)
		}
		for _, r := range sg.egress {
			add(KindSecurityGroupRule, r.id, "egress "+r.String(), sg.id, nil)
		}
	}
	for _, i := range e.instances.All() {
		add(KindInstance, i.id, i.tags["Name"], i.subnetID, i.tags)
	}
	e.addressResources(add)
	for _, lb := range e.loadBalancers.All() {
		add(KindLoadBalancer, lb.arn, lb.name, lb.vpcID, lb.tags)
	}
	for _, tg := range e.targetGroups.All() {
		add(KindTargetGroup, tg.arn, tg.name, tg.vpcID, tg.tags)
		for _, t := range tg.targets {
			add(KindTarget, fmt.Sprintf("%s:%s:%d", tg.arn, t.id, t.port), t.id, tg.arn, nil)
		}
	}
	for _, l := range e.listeners.All() {
		add(KindListener, l.arn, fmt.Sprintf("%s:%d", l.protocol, l.port), l.lbARN, l.tags)
	}
	for _, lb := range e.classicLBs.All() {
		add(KindClassicLoadBalancer, lb.name, lb.name, lb.vpcID, lb.tags)
		for _, l := range lb.listeners {
			add(KindClassicListener, fmt.Sprintf("%s:%d", lb.name, l.port), l.String(), lb.name, nil)
		}
		for _, pol := range lb.policies {
			add(KindClassicPolicy, lb.name+":"+pol.name, pol.typeName, lb.name, nil)
		}
		for _, id := range e.clbMembers(lb) {
			add(KindClassicInstance, lb.name+":"+id, id, lb.name, nil)
		}
	}
	cloudsim.SortResources(out)
	return out
}
