package aws

import decl "github.com/multicloud-ccm/multicloud-ccm/providers/permissions"

// The IAM actions of each feature, declared here once: the policy in
// docs/reference/aws.md and deploy/permissions/aws-iam-policy.json is
// generated from it, and the conformance suite runs the emulator under
// it, denying every call it lacks (test/cloudsim/aws/authz.go). A new
// call (a field of ec2Calls, elbv2Calls or elbCalls, clients_calls.go)
// needs its action here, in the feature whose code makes it.
//
// Differences from upstream's hand-written list (cloud-provider-aws
// docs/prerequisites.md): no ec2:DescribeInstanceTopology (the topology
// labels are not served, so nothing degrades), no autoscaling, kms, iam
// or ec2 volume actions (volumes are the EBS CSI driver's), and the
// elasticloadbalancing target-group attribute actions upstream's code
// calls but its list omits.

// ec2Action and elbAction prefix IAM actions.
func ec2Action(action, why string) decl.Grant {
	return decl.Grant{Permission: "ec2:" + action, Why: why}
}

func elbAction(action, why string) decl.Grant {
	return decl.Grant{Permission: "elasticloadbalancing:" + action, Why: why}
}

// Permissions is the backend's declaration.
func Permissions() decl.Declaration {
	return decl.Declaration{Cloud: ProviderName, Features: []decl.Feature{
		{
			Name: "nodes",
			Doc:  "Node initialization and lifecycle: providerID, addresses, instance type, zone and zone-ID labels; deletion of Nodes whose instance is terminated, the shutdown taint.",
			Grants: []decl.Grant{
				ec2Action("DescribeInstances", "list the cluster's instances and look Nodes up (instances_lookup.go)"),
			},
		},
		{
			Name:     "zone-id-label",
			Doc:      "The topology.k8s.aws/zone-id label on Nodes (instances.go).",
			Degrades: "Nodes are initialized without the label, as upstream's topology labels go without ec2:DescribeInstanceTopology (cloud-provider-aws pkg/providers/v1/topology.go).",
			Grants: []decl.Grant{
				ec2Action("DescribeAvailabilityZones", "map the instance's zone to its zone ID (instances_zones.go)"),
			},
		},
		{
			Name: "network-load-balancers",
			Doc:  "Network Load Balancers for LoadBalancer Services (the default type, and aws-load-balancer-type: nlb/external), their listeners and target groups, the nodes' security-group rules for their clients and health checks.",
			Grants: []decl.Grant{
				elbAction("DescribeLoadBalancers", "find the Service's NLB"),
				elbAction("DescribeLoadBalancerAttributes", "compare attributes (cross-zone, access logs)"),
				elbAction("DescribeListeners", "compare listeners"),
				elbAction("DescribeTargetGroups", "compare target groups"),
				elbAction("DescribeTargetGroupAttributes", "compare target group attributes (proxy protocol, preserve client IP)"),
				elbAction("DescribeTargetHealth", "compare registered targets"),
				elbAction("DescribeTags", "find load balancers and target groups by their cluster and Service tags"),
				elbAction("CreateLoadBalancer", "create the NLB"),
				elbAction("CreateListener", "create a listener per port"),
				elbAction("CreateTargetGroup", "create a target group per port"),
				elbAction("AddTags", "tag what it creates (also required to tag on create)"),
				elbAction("RemoveTags", "drop tags an annotation no longer asks for"),
				elbAction("ModifyLoadBalancerAttributes", "apply the Service's attributes"),
				elbAction("ModifyListener", "follow a port's target group or certificate"),
				elbAction("ModifyTargetGroup", "follow health-check annotations"),
				elbAction("ModifyTargetGroupAttributes", "follow proxy-protocol and client-IP annotations"),
				elbAction("SetSecurityGroups", "the NLB's frontend security group"),
				elbAction("SetIpAddressType", "turn an NLB dualstack or back to ipv4 as its Service's families change"),
				elbAction("RegisterTargets", "add nodes as targets"),
				elbAction("DeregisterTargets", "remove nodes"),
				elbAction("DeleteListener", "remove a port"),
				elbAction("DeleteTargetGroup", "remove a port's target group"),
				elbAction("DeleteLoadBalancer", "delete the NLB with its Service"),
				ec2Action("DescribeSubnets", "discover the load balancer subnets"),
				ec2Action("DescribeRouteTables", "tell public subnets (routed to an internet gateway) from private ones"),
				ec2Action("DescribeSecurityGroups", "find the nodes' and the load balancer's security groups"),
				ec2Action("CreateSecurityGroup", "the load balancer's security group"),
				ec2Action("CreateTags", "tag the security group it creates (required to tag on create)"),
				ec2Action("DeleteSecurityGroup", "delete it with its Service"),
				ec2Action("AuthorizeSecurityGroupIngress", "admit clients and health checks on the nodes"),
				ec2Action("RevokeSecurityGroupIngress", "remove rules no Service needs"),
			},
		},
		{
			Name: "classic-load-balancers",
			Doc:  "Classic ELBs (loadBalancer.defaultType: classic, or a Service's aws-load-balancer-type naming another type), named and shaped as upstream makes them.",
			Grants: []decl.Grant{
				elbAction("DescribeLoadBalancers", "find the Service's ELB"),
				elbAction("DescribeLoadBalancerAttributes", "compare attributes"),
				elbAction("DescribeTags", "find ELBs by their tags"),
				elbAction("CreateLoadBalancer", "create the ELB"),
				elbAction("CreateLoadBalancerListeners", "add a port"),
				elbAction("DeleteLoadBalancerListeners", "remove a port"),
				elbAction("CreateLoadBalancerPolicy", "proxy protocol and TLS policies"),
				elbAction("SetLoadBalancerPoliciesForBackendServer", "proxy protocol"),
				elbAction("SetLoadBalancerPoliciesOfListener", "TLS negotiation policies"),
				elbAction("SetLoadBalancerListenerSSLCertificate", "the listener's certificate"),
				elbAction("ConfigureHealthCheck", "the health check"),
				elbAction("ModifyLoadBalancerAttributes", "apply the Service's attributes"),
				elbAction("ApplySecurityGroupsToLoadBalancer", "the ELB's security group"),
				elbAction("AttachLoadBalancerToSubnets", "follow the subnets"),
				elbAction("DetachLoadBalancerFromSubnets", "follow the subnets"),
				elbAction("RegisterInstancesWithLoadBalancer", "add nodes"),
				elbAction("DeregisterInstancesFromLoadBalancer", "remove nodes"),
				elbAction("AddTags", "tag the ELB"),
				elbAction("DeleteLoadBalancer", "delete the ELB with its Service"),
				ec2Action("DescribeSubnets", "discover the ELB's subnets"),
				ec2Action("DescribeRouteTables", "tell public subnets from private ones"),
				ec2Action("DescribeSecurityGroups", "find security groups"),
				ec2Action("CreateSecurityGroup", "the ELB's security group k8s-elb-<name>"),
				ec2Action("CreateTags", "tag it"),
				ec2Action("DeleteSecurityGroup", "delete it with its Service"),
				ec2Action("AuthorizeSecurityGroupIngress", "admit clients, and the ELB on the nodes"),
				ec2Action("RevokeSecurityGroupIngress", "remove rules no Service needs"),
			},
		},
		{
			Name: "drift-repair-and-orphans",
			Doc:  "The drift check (--load-balancer-repair-period) and the orphan scan (--orphan-scan-period): one listing of every load balancer part; repairs use the load balancer features' actions.",
			Grants: []decl.Grant{
				elbAction("DescribeLoadBalancers", "list load balancers"),
				elbAction("DescribeTargetGroups", "list target groups"),
				elbAction("DescribeTags", "tell the cluster's parts by their tags"),
				ec2Action("DescribeSecurityGroups", "list security groups and their rules"),
			},
		},
		{
			Name:     "orphan-deletion",
			Optional: true,
			Doc:      "orphans: delete in the cloud-config: parts no Service owns are deleted after the grace period.",
			Grants: []decl.Grant{
				elbAction("DeleteLoadBalancer", "delete an orphaned load balancer"),
				elbAction("DeleteListener", "delete its listeners"),
				elbAction("DeleteTargetGroup", "delete an orphaned target group"),
				ec2Action("DeleteSecurityGroup", "delete an orphaned security group"),
				ec2Action("RevokeSecurityGroupIngress", "revoke an orphaned rule"),
			},
		},
		{
			Name:     "routes",
			Optional: true,
			Doc:      "Pod-CIDR routes (--configure-cloud-routes with routeTables.ids or routeTables.discover).",
			Grants: []decl.Grant{
				ec2Action("DescribeRouteTables", "list the routes"),
				ec2Action("CreateRoute", "a Node's pod-CIDR route"),
				ec2Action("DeleteRoute", "the route of a Node that is gone"),
				ec2Action("ModifyInstanceAttribute", "turn off source/destination checks so the instance forwards pod traffic"),
			},
		},
		{
			Name:     "tagging",
			Optional: true,
			Doc:      "Upstream's tagging controller (--controllers=*,tagging): tags on the instances of Nodes.",
			Grants: []decl.Grant{
				ec2Action("CreateTags", "tag the instances"),
				ec2Action("DeleteTags", "untag the instance of a deleted Node"),
			},
		},
		{
			Name:     "node-ipam-assign",
			Optional: true,
			Doc:      "nodeIPAM.assignIPv6Prefix: an IPv6 /80 prefix for an instance's primary interface that has none (the cloud allocator itself needs only the nodes feature).",
			Grants: []decl.Grant{
				ec2Action("AssignIpv6Addresses", "delegate a /80 to the interface"),
			},
		},
		{
			Name:     "assume-role",
			Optional: true,
			Doc:      "assumeRole.roleARN: the base identity assumes that role, which gets the other features' actions.",
			Grants: []decl.Grant{
				{Permission: "sts:AssumeRole", Scope: "the role assumeRole.roleARN names (and its trust policy must admit the base identity)", Why: "assume the role"},
			},
		},
	}}
}

// PermissionFeatures are the features s turns on, beside the always-on
// ones; the tagging controller is a flag's (--controllers), and
// `multicloud-ccm permissions --features` adds it.
func PermissionFeatures(s *Section, deleteOrphans bool) []string {
	out := []string{"nodes", "zone-id-label", "network-load-balancers", "classic-load-balancers", "drift-repair-and-orphans"}
	if deleteOrphans {
		out = append(out, "orphan-deletion")
	}
	if len(s.RouteTables.IDs) > 0 || s.RouteTables.Discover {
		out = append(out, "routes")
	}
	if s.NodeIPAM.AssignIPv6Prefix {
		out = append(out, "node-ipam-assign")
	}
	if s.AssumeRole.RoleARN != "" {
		out = append(out, "assume-role")
	}
	return out
}
