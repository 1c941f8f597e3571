package azure

import decl "github.com/multicloud-ccm/multicloud-ccm/providers/permissions"

// The Azure RBAC actions of each feature, declared here once: the custom
// role in docs/reference/azure.md and deploy/permissions/azure-role.json
// is generated from it, and the conformance suite runs the emulator under
// it, denying every call it lacks (test/cloudsim/azure/authz.go). A new
// call (a method of a client in clients.go) needs its action here, in the
// feature whose code makes it: ARM asks "{namespace}/{type}/read" of a GET
// or list, ".../write" of a PUT or PATCH, ".../delete" of a DELETE, and
// of a write also the "join" action of every resource its body
// references (the linked access check: a subnet, a public IP, a backend
// pool, a security group, a route table).
//
// Differences from upstream's list (cloud-provider-azure
// site/content/en/topics/azure-permissions.md): no disk, snapshot,
// storage account or VM write actions (volumes are the CSI drivers'), no
// Private Link Service actions (not served), no routeTables/routes/*
// (the route table is written whole), no manualupgrade action (pool
// membership is written on each instance); and the linked scopes'
// join actions and the polling of long-running operations on the
// network side, which upstream's list leaves out.

const (
	nsCompute = "Microsoft.Compute/"
	nsNetwork = "Microsoft.Network/"
)

func computeAction(action, why string) decl.Grant {
	return decl.Grant{Permission: nsCompute + action, Why: why}
}

func networkAction(action, why string) decl.Grant {
	return decl.Grant{Permission: nsNetwork + action, Why: why}
}

// linked is a join action checked on another resource than the one
// written (ARM's LinkedAuthorizationFailed), granted where that resource
// is.
func linked(action, scope, why string) decl.Grant {
	return decl.Grant{Permission: nsNetwork + action, Scope: scope, Why: why}
}

// Scopes of the linked resources.
const (
	scopeSubnets   = "the nodes' subnet (subnetName, or a Service's azure-load-balancer-internal-subnet) in vnetResourceGroup"
	scopeVNet      = "the nodes' virtual network (vnetName) in vnetResourceGroup"
	scopePublicIPs = "the public IPs of Services and nodes: resourceGroup, loadBalancerResourceGroup and any group a Service's azure-load-balancer-resource-group annotation names"
	scopePools     = "the cluster's load balancers' backend pools, in loadBalancerResourceGroup"
	scopeNSGs      = "a security group a node's NIC, scale set model or subnet names (the nodes' subnet's, in its resource group)"
	scopeRouteTbl  = "routeTableName in routeTableResourceGroup"
)

// Permissions is the backend's declaration.
func Permissions() decl.Declaration {
	return decl.Declaration{Cloud: ProviderName, Features: []decl.Feature{
		{
			Name: "nodes",
			Doc:  "Node initialization and lifecycle: providerID, addresses, instance type, zone and region labels of VMs and scale set instances; deletion of Nodes whose VM is gone, the shutdown taint.",
			Grants: []decl.Grant{
				computeAction("virtualMachines/read", "list the resource group's VMs and read one by ID or name (instances_vms.go bulk, get)"),
				{Permission: nsCompute + "virtualMachines/read", Scope: "the subscription", Why: "the VMs' power states in one subscription-wide listing with statusOnly=true, which ARM authorizes on the subscription (instances_vms.go statuses)"},
				computeAction("virtualMachineScaleSets/read", "list the scale sets whose instances are Nodes, and their node-CIDR mask tags (instances_vms.go scaleSets)"),
				computeAction("virtualMachineScaleSets/virtualMachines/read", "list and read scale set instances with their instance view (instances_vms.go scaleSetInstances, get)"),
				computeAction("virtualMachineScaleSets/networkInterfaces/read", "a uniform scale set's NICs, the instances' addresses (instances_vms.go scaleSetInstances)"),
				computeAction("virtualMachineScaleSets/virtualMachines/networkInterfaces/read", "an instance's NIC the listing lacks (instances_vms.go getNIC)"),
				networkAction("networkInterfaces/read", "the VMs' NICs, their InternalIP addresses (instances_vms.go bulk, getNIC)"),
				networkAction("publicIPAddresses/read", "the VMs' public IPs, their ExternalIP addresses (instances_vms.go bulk, getPublicIP)"),
			},
		},
		{
			Name: "load-balancers",
			Doc:  "The cluster's Standard Load Balancers (<loadBalancerName> and -internal) for LoadBalancer Services: frontends, rules, probes and backend pools, and the Services' own public IPs.",
			Grants: []decl.Grant{
				networkAction("loadBalancers/read", "read the cluster's load balancer before each write (loadbalancer.go lbOps)"),
				networkAction("loadBalancers/write", "create it and write the Service's frontends, rules, probes and pools (loadbalancer.go lbOps)"),
				networkAction("loadBalancers/delete", "delete it with its last frontend (loadbalancer.go lbOps)"),
				networkAction("publicIPAddresses/read", "find the Service's public IP, by name or by address (loadbalancer_publicip.go)"),
				networkAction("publicIPAddresses/write", "create the Service's public IP, follow its DNS label and tags, list the Services sharing it (loadbalancer_publicip.go)"),
				networkAction("publicIPAddresses/delete", "delete the Service's public IP with the Service (loadbalancer_publicip.go)"),
				networkAction("locations/operations/read", "poll the long-running writes and deletes (loadbalancer.go pollOptions)"),
				linked("publicIPAddresses/join/action", scopePublicIPs, "a public frontend names its public IP (loadbalancer_parts.go)"),
				linked("virtualNetworks/subnets/join/action", scopeSubnets, "an internal frontend names its subnet (loadbalancer_parts.go)"),
			},
		},
		{
			Name:     "ip-backend-pools",
			Optional: true,
			Doc:      "loadBalancerBackendPoolConfigurationType nodeIP (the default): the backend pools list the nodes' addresses in the nodes' virtual network, written with the load balancer. A pool that holds NICs (upstream's) is emptied of them first, once, with nic-backend-pools' actions (add that feature for the switch).",
			Grants: []decl.Grant{
				linked("virtualNetworks/joinLoadBalancer/action", scopeVNet, "an address-based pool names the nodes' virtual network (loadbalancer_parts.go)"),
			},
		},
		{
			Name:     "nic-backend-pools",
			Optional: true,
			Doc:      "loadBalancerBackendPoolConfigurationType nodeIPConfiguration: a node is in the backend pool when its NIC, or its scale set model and instance, names the pool.",
			Grants: []decl.Grant{
				networkAction("networkInterfaces/read", "read a VM's NIC before adding or removing the pool (loadbalancer_nicpool.go setNICMember)"),
				networkAction("networkInterfaces/write", "write the NIC with the pool added or removed (loadbalancer_nicpool.go setNICMember)"),
				networkAction("locations/operations/read", "poll the NIC writes (loadbalancer_nicpool.go)"),
				computeAction("virtualMachineScaleSets/read", "read a scale set's model (loadbalancer_nicpool.go writeModel)"),
				computeAction("virtualMachineScaleSets/write", "put the pool in, or take it out of, the scale set's model (loadbalancer_nicpool.go writeModel)"),
				computeAction("virtualMachineScaleSets/virtualMachines/read", "read an instance's network configuration (loadbalancer_nicpool.go setInstanceMember)"),
				computeAction("virtualMachineScaleSets/virtualMachines/write", "write the instance's network configuration with the pool (loadbalancer_nicpool.go setInstanceMember)"),
				computeAction("locations/operations/read", "poll the scale set and instance writes (loadbalancer_nicpool.go)"),
				linked("loadBalancers/backendAddressPools/join/action", scopePools, "a NIC, scale set model or instance names the pool (loadbalancer_nicpool.go)"),
				linked("virtualNetworks/subnets/join/action", scopeSubnets, "the NIC's, model's or instance's write names its subnet again (loadbalancer_nicpool.go)"),
				linked("publicIPAddresses/join/action", scopePublicIPs, "the write of a NIC with a public IP names it again (loadbalancer_nicpool.go setNICMember)"),
				linked("networkSecurityGroups/join/action", scopeNSGs, "the write of a NIC or model with its own security group names it again (loadbalancer_nicpool.go)"),
			},
		},
		{
			Name:     "security-rules",
			Optional: true,
			Doc:      "securityGroupName: the security group gets a rule for each load-balanced port, source ranges and destinations (the manager never creates or deletes the group).",
			Grants: []decl.Grant{
				networkAction("networkSecurityGroups/read", "read the rules before each write, and list them for the drift check (loadbalancer.go nsgOps, inventory.go)"),
				networkAction("networkSecurityGroups/write", "add and remove the Services' rules (loadbalancer.go nsgOps, loadbalancer_nsg.go)"),
				networkAction("locations/operations/read", "poll the writes"),
			},
		},
		{
			Name: "drift-repair-and-orphans",
			Doc:  "The drift check (--load-balancer-repair-period) and the orphan scan (--orphan-scan-period): one listing of the load balancers and public IPs (and the security group's rules, with security-rules); repairs use the load balancer features' actions.",
			Grants: []decl.Grant{
				networkAction("loadBalancers/read", "list the load balancers of loadBalancerResourceGroup (inventory.go listOwnLoadBalancers)"),
				networkAction("publicIPAddresses/read", "list the public IPs of the cluster's groups (inventory.go listPublicIPs)"),
			},
		},
		{
			Name:     "orphan-deletion",
			Optional: true,
			Doc:      "orphans: delete in the cloud-config: parts no Service owns are deleted after the grace period (security rules through security-rules' actions).",
			Grants: []decl.Grant{
				networkAction("loadBalancers/write", "take an orphaned frontend, rule or probe out of the load balancer (inventory.go removeLBPart)"),
				networkAction("loadBalancers/delete", "delete a load balancer left without frontends (inventory.go deleteUnneededLB)"),
				networkAction("publicIPAddresses/write", "take a gone Service off a shared public IP's tag (inventory.go releaseOrphanPIP)"),
				networkAction("publicIPAddresses/delete", "delete an orphaned public IP (inventory.go releaseOrphanPIP)"),
				networkAction("locations/operations/read", "poll the writes and deletes"),
				linked("publicIPAddresses/join/action", scopePublicIPs, "the load balancer's write names its frontends' public IPs again"),
				linked("virtualNetworks/subnets/join/action", scopeSubnets, "the load balancer's write names its internal frontends' subnets again"),
			},
		},
		{
			Name:     "routes",
			Optional: true,
			Doc:      "Pod-CIDR routes (--configure-cloud-routes with routeTableName): a route per Node in the route table, which the manager creates if missing and associates with the nodes' subnet.",
			Grants: []decl.Grant{
				networkAction("routeTables/read", "list the routes (routes.go)"),
				networkAction("routeTables/write", "create the table, add and remove the Nodes' routes (routes.go)"),
				networkAction("virtualNetworks/subnets/read", "check the nodes' subnet is associated with the table (routes.go associate)"),
				networkAction("virtualNetworks/subnets/write", "associate it (routes.go associate)"),
				networkAction("locations/operations/read", "poll the writes"),
				linked("routeTables/join/action", scopeRouteTbl, "the subnet's write names the route table (routes.go associate)"),
				linked("networkSecurityGroups/join/action", scopeNSGs, "the subnet's write names its security group again (routes.go associate)"),
			},
		},
		{
			Name:     "node-ipam",
			Optional: true,
			Doc:      "The cloud allocator (--allocate-node-cidrs with --cidr-allocator-type=CloudAllocator): pod CIDR sizes from the node pools' mask tags; scale sets are read by nodes already.",
			Grants: []decl.Grant{
				computeAction("availabilitySets/read", "list the availability sets, the mask tags of their VMs' pools (podcidrs.go poolTags.list)"),
			},
		},
	}}
}

// PermissionFeatures are the features s turns on, beside the always-on
// ones; the cloud allocator is a flag's (--cidr-allocator-type), and
// `multicloud-ccm permissions --features node-ipam` adds it.
func PermissionFeatures(s *Section, deleteOrphans bool) []string {
	out := []string{"nodes", "load-balancers", "drift-repair-and-orphans"}
	if s.nicPools() {
		out = append(out, "nic-backend-pools")
	} else {
		out = append(out, "ip-backend-pools")
	}
	if s.SecurityGroupName != "" {
		out = append(out, "security-rules")
	}
	if deleteOrphans {
		out = append(out, "orphan-deletion")
	}
	if s.RoutesEnabled() {
		out = append(out, "routes")
	}
	return out
}
