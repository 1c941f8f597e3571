package openstack

import decl "github.com/multicloud-ccm/multicloud-ccm/providers/permissions"

// The policy rules of each feature, declared here once: the listing in
// docs/reference/openstack.md and deploy/permissions/openstack-policy.yaml
// is generated from it, and the conformance suite runs the emulator under
// it, denying every call it lacks as Nova, Neutron and Octavia do
// (test/cloudsim/openstack/authz.go). A new call needs its rule here, in
// the feature whose code makes it.
//
// OpenStack has no identity policy to attach: a call is allowed when the
// roles of the manager's user on the project satisfy the service's rule
// (oslo.policy). The rules are the services' own names: Nova's
// os_compute_api:servers:* (nova/policies/servers.py), Neutron's
// <verb>_<resource> and their attribute rules
// (neutron/conf/policies/*.py; an update naming an attribute marked
// enforce_policy also needs "update_<resource>:<attribute>" and a rule
// per key of its entries, neutron/policy.py _build_match_rule), Octavia's
// os_load-balancer_api:<object>:<action> (octavia/policies/*.py).
// Issuing the token and reading the catalog, version documents and
// Neutron's extensions check no rule.
//
// With the services' default policies the roles clouds give a CCM's
// user, "member" and (Octavia) "load-balancer_member" on the project,
// satisfy every rule below (the policy document lists the default role
// of each, providers/permissions/policy_openstack.go); a cloud with
// custom policies can grant exactly these rules.

func novaRule(action, why string) decl.Grant {
	return decl.Grant{Permission: "os_compute_api:servers:" + action, Why: why}
}

func neutronRule(rule, why string) decl.Grant { return decl.Grant{Permission: rule, Why: why} }

func octaviaRule(rule, why string) decl.Grant {
	return decl.Grant{Permission: "os_load-balancer_api:" + rule, Why: why}
}

// Permissions is the backend's declaration.
func Permissions() decl.Declaration {
	return decl.Declaration{Cloud: ProviderName, Features: []decl.Feature{
		{
			Name: "nodes",
			Doc:  "Node initialization and lifecycle: providerID, addresses, flavor and zone labels; deletion of Nodes whose server is gone, the shutdown taint.",
			Grants: []decl.Grant{
				novaRule("detail", "list the project's servers (one paged listing serves every Node) and look servers up by name (instances_servers.go)"),
				novaRule("show", "look a server up by ID: only its 404 says it is gone (instances_servers.go getServer)"),
				neutronRule("get_port", "the ports of servers with several fixed addresses, whose order decides the Node's first InternalIP (instances_addresses.go)"),
			},
		},
		{
			Name: "load-balancers",
			Doc:  "Octavia load balancers for LoadBalancer Services (one per Service, or shared through loadbalancer.openstack.org/load-balancer-id), their listeners, pools, members and health monitors, and the floating IP of external Services; at a Service's deletion, the upstream CCM's security group of it.",
			Grants: []decl.Grant{
				octaviaRule("loadbalancer:get_all", "find the Service's load balancer by name (loadbalancer_octavia.go find)"),
				octaviaRule("loadbalancer:get_one", "wait for provisioning, read a shared load balancer (loadbalancer_octavia.go poll, loadbalancer_shared.go)"),
				octaviaRule("loadbalancer:post", "create the load balancer with its listeners, pools and members in one call (loadbalancer_sync.go create)"),
				octaviaRule("loadbalancer:put", "the usage tags of a shared load balancer (loadbalancer_shared.go setUsage)"),
				octaviaRule("loadbalancer:delete", "delete it with everything under it, cascade (loadbalancer_delete.go deleteWhole)"),
				octaviaRule("listener:get_all", "compare the listeners (loadbalancer_sync.go listeners)"),
				octaviaRule("listener:post", "add a port (loadbalancer_sync.go)"),
				octaviaRule("listener:put", "follow timeouts, allowed CIDRs, headers and the default pool (loadbalancer_sync.go)"),
				octaviaRule("listener:delete", "remove a port (loadbalancer_sync.go removeListener)"),
				octaviaRule("pool:get_all", "compare the pools (loadbalancer_sync.go)"),
				octaviaRule("pool:post", "a pool per port (loadbalancer_sync.go)"),
				octaviaRule("pool:put", "follow the balancing method (loadbalancer_sync.go)"),
				octaviaRule("pool:delete", "remove a port's pool (loadbalancer_sync.go)"),
				octaviaRule("member:get_all", "compare the members (loadbalancer_sync.go, pools.ListMembers)"),
				octaviaRule("member:post", "the batch member update adds nodes: Octavia checks post, put and delete for it (loadbalancer_sync.go setMembers)"),
				octaviaRule("member:put", "the batch member update changes nodes (loadbalancer_sync.go setMembers)"),
				octaviaRule("member:delete", "the batch member update removes nodes (loadbalancer_sync.go setMembers)"),
				octaviaRule("healthmonitor:get_one", "compare a pool's monitor (loadbalancer_sync.go)"),
				octaviaRule("healthmonitor:post", "createMonitor or the enable-health-monitor annotation (loadbalancer_sync.go)"),
				octaviaRule("healthmonitor:put", "follow the monitor settings (loadbalancer_sync.go)"),
				octaviaRule("healthmonitor:delete", "a monitor no longer wanted (loadbalancer_sync.go)"),
				neutronRule("get_subnet", "find the subnet of the nodes' addresses, and the floating network's subnets a floating-subnet annotation matches (loadbalancer_subnets.go, loadbalancer_floatingsubnet.go)"),
				neutronRule("get_floatingip", "the floating IP on the VIP port, the Service's own, spec.loadBalancerIP's (loadbalancer_floatingips.go)"),
				neutronRule("create_floatingip", "allocate the floating IP of an external Service (loadbalancer_floatingips.go)"),
				neutronRule("update_floatingip", "associate it with the VIP port, disassociate the user's one (loadbalancer_floatingips.go)"),
				neutronRule("delete_floatingip", "release the Service's floating IP with it (loadbalancer_delete.go, loadbalancer_floatingips.go)"),
				neutronRule("get_security_group", "look up the upstream CCM's group of a deleted Service (loadbalancer_upstreamgroups.go), whatever manageSecurityGroups says"),
				neutronRule("get_port", "the ports carrying that group (loadbalancer_securitygroups.go detachAndDelete)"),
				neutronRule("update_port", "detach the group from them, with If-Match (ports.go updatePort)"),
				neutronRule("delete_security_group", "delete the upstream CCM's group (loadbalancer_securitygroups.go detachAndDelete)"),
			},
		},
		{
			Name:     "floating-network-lookup",
			Optional: true,
			Doc:      "loadBalancer.floatingNetworkID not set (and internalLB off): the project's external network is looked up once at start, as the upstream CCM does.",
			Grants: []decl.Grant{
				neutronRule("get_network", "list the external networks (loadbalancer_floatingnetwork.go)"),
				neutronRule("get_subnet", "their subnets' IP versions, when several have subnets (loadbalancer_floatingnetwork.go)"),
			},
		},
		{
			Name:     "member-security-group",
			Optional: true,
			Doc:      "loadBalancer.manageSecurityGroups: the cluster's member security group (k8s-lb-members-<cluster>) on the node ports, a rule per Service port, and the upstream CCM's per-Service groups taken over; listed by the orphan scan.",
			Grants: []decl.Grant{
				neutronRule("get_security_group", "find the group by name, the upstream CCM's of a Service (loadbalancer_securitygroups.go, loadbalancer_upstreamgroups.go, inventory.go)"),
				neutronRule("create_security_group", "make the group with the first Service (loadbalancer_securitygroups.go)"),
				neutronRule("delete_security_group", "delete it with the last Service, and the upstream CCM's (loadbalancer_securitygroups.go detachAndDelete)"),
				neutronRule("get_security_group_rule", "compare a Service's rules (loadbalancer_securitygroups.go, inventory.go)"),
				neutronRule("create_security_group_rule", "a Service's rules, one bulk create (loadbalancer_securitygroups.go)"),
				neutronRule("delete_security_group_rule", "rules no Service port needs (loadbalancer_securitygroups.go, inventory.go)"),
				neutronRule("get_port", "the node ports of the member network, and those carrying a group (loadbalancer_securitygroups.go)"),
				neutronRule("update_port", "attach or detach the group, with If-Match (ports.go updatePort; security_groups has no attribute rule)"),
			},
		},
		{
			Name: "drift-repair-and-orphans",
			Doc:  "The drift check (--load-balancer-repair-period) and the orphan scan (--orphan-scan-period): one listing of every load balancer part; repairs use the load balancer features' rules.",
			Grants: []decl.Grant{
				octaviaRule("loadbalancer:get_all", "list load balancers (inventory.go Owned)"),
				octaviaRule("listener:get_all", "list listeners (inventory.go)"),
				octaviaRule("pool:get_all", "list pools with their members (inventory.go)"),
				octaviaRule("healthmonitor:get_all", "list health monitors (inventory.go)"),
				neutronRule("get_port", "Octavia's ports, to tell a user's VIP port (inventory.go octaviaPortsOpts)"),
				neutronRule("get_floatingip", "list floating IPs (inventory.go)"),
			},
		},
		{
			Name:     "orphan-deletion",
			Optional: true,
			Doc:      "orphans: delete in the cloud-config: parts no Service owns are deleted after the grace period (the member group's by the member-security-group feature's rules).",
			Grants: []decl.Grant{
				octaviaRule("loadbalancer:get_all", "the load balancer of a floating IP's port (inventory.go deleteFloatingIP)"),
				octaviaRule("loadbalancer:get_one", "read an orphan load balancer again before deleting it (inventory.go)"),
				octaviaRule("loadbalancer:put", "remove an orphan Service's usage tag from a shared one (inventory.go)"),
				octaviaRule("loadbalancer:delete", "delete an orphan load balancer, cascade (inventory.go)"),
				octaviaRule("listener:get_all", "the listeners of an orphan load balancer (inventory.go)"),
				octaviaRule("listener:get_one", "read an orphan listener (inventory.go)"),
				octaviaRule("listener:delete", "delete it (loadbalancer_sync.go removeListener)"),
				octaviaRule("pool:get_one", "read an orphan pool (inventory.go inPool)"),
				octaviaRule("pool:delete", "delete it (inventory.go)"),
				octaviaRule("healthmonitor:get_one", "read an orphan health monitor (inventory.go)"),
				octaviaRule("healthmonitor:delete", "delete it (inventory.go)"),
				neutronRule("get_floatingip", "read an orphan floating IP again (inventory.go)"),
				neutronRule("delete_floatingip", "release it (inventory.go)"),
			},
		},
		{
			Name:     "routes",
			Optional: true,
			Doc:      "Pod-CIDR routes (--configure-cloud-routes with routes.routerID): extra routes of the router, and the pod CIDR as an allowed address pair of the node's port.",
			Grants: []decl.Grant{
				neutronRule("get_router", "list the routes (routes.go)"),
				neutronRule("add_extraroutes", "add routes atomically, extraroute-atomic (routes.go)"),
				neutronRule("remove_extraroutes", "remove routes atomically (routes.go)"),
				neutronRule("update_router", "write the whole route list on a Neutron without extraroute-atomic (routes.go readModifyWrite)"),
				neutronRule("get_port", "the node's port holding its address (routes.go allowPodCIDR)"),
				neutronRule("update_port", "its allowed address pairs, with If-Match (ports.go updatePort)"),
				neutronRule("update_port:allowed_address_pairs", "the pod CIDR passes port security (routes.go allowPodCIDR)"),
				neutronRule("update_port:allowed_address_pairs:ip_address", "each pair's address"),
				neutronRule("update_port:allowed_address_pairs:mac_address", "each pair's MAC: Neutron shows it on the pairs the port has, which are sent back"),
			},
		},
	}}
}

// PermissionFeatures are the features s turns on, beside the always-on
// ones.
func PermissionFeatures(s *Section, deleteOrphans bool) []string {
	out := []string{"nodes", "load-balancers", "drift-repair-and-orphans"}
	lb := &s.LoadBalancer
	if lb.FloatingNetworkID == "" && !lb.InternalLB {
		out = append(out, "floating-network-lookup")
	}
	if lb.ManageSecurityGroups {
		out = append(out, "member-security-group")
	}
	if deleteOrphans {
		out = append(out, "orphan-deletion")
	}
	if s.RoutesEnabled() {
		out = append(out, "routes")
	}
	return out
}
