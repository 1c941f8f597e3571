package gce

import decl "github.com/multicloud-ccm/multicloud-ccm/providers/permissions"

// The Compute Engine IAM permissions of each feature, declared here once:
// the custom role in docs/reference/gce.md and deploy/permissions is
// generated from it, and the conformance suite runs the emulator under
// it, denying every call it lacks (test/cloudsim/gce/authz.go). A new
// call (a method of a client in clients.go) needs its permission here,
// in the feature whose code makes it: a method needs
// compute.<collection>.<verb> (list for aggregatedList, create for
// insert, update for patch), and a call naming another resource that
// resource's use permission too (Compute Engine API reference, each
// method's "IAM Permissions"). Every change is an operation the client
// reads until it is done, which needs the operation's get.
//
// The predefined roles that would cover it, roles/compute.loadBalancerAdmin
// with roles/compute.securityAdmin (firewall rules) and
// roles/compute.networkUser (subnetworks.use), are each far wider.

// computePerm names a Compute Engine IAM permission.
func computePerm(permission, why string) decl.Grant {
	return decl.Grant{Permission: "compute." + permission, Why: why}
}

// networkProject is where the permissions on the nodes' network are
// checked: firewall rules and routes are made in networkProjectID
// (config.go), and the subnetwork an internal load balancer uses is
// there too (Shared VPC: the host project; "Shared VPC", service project
// admins need compute.subnetworks.use on the host's subnets).
const networkProject = "the network's project (networkProjectID), when it is not projectID (Shared VPC)"

// inNetwork names a permission checked in the network's project.
func inNetwork(permission, why string) decl.Grant {
	g := computePerm(permission, why)
	g.Scope = networkProject
	return g
}

// Permissions is the backend's declaration.
func Permissions() decl.Declaration {
	return decl.Declaration{Cloud: ProviderName, Features: []decl.Feature{
		{
			Name: "nodes",
			Doc:  "Node initialization and lifecycle: providerID, addresses, machine type, zone and region labels, pod CIDRs from alias IP ranges (the cloud allocator); deletion of Nodes whose instance is gone, the shutdown taint.",
			Grants: []decl.Grant{
				computePerm("zones.list", "the region's zones at start, when the config names none (cloud.go managedZones)"),
				computePerm("instances.list", "list the nodes' instances, per zone or aggregated (instances_read.go)"),
				computePerm("instances.get", "read one instance (instances_read.go)"),
			},
		},
		{
			Name: "external-load-balancers",
			Doc:  "External passthrough Network Load Balancers for LoadBalancer Services (the default): a forwarding rule per protocol to a target pool of the nodes' instances, its legacy HTTP health check, the Service's address, the firewall rules admitting clients and health checks. A Service's deletion looks for the parts of both kinds (it may have changed kind), so this feature and internal-load-balancers are granted together.",
			Grants: []decl.Grant{
				computePerm("forwardingRules.list", "find the Service's forwarding rules (loadbalancer.go serviceRules)"),
				computePerm("forwardingRules.create", "a forwarding rule per protocol (loadbalancer_external.go)"),
				computePerm("forwardingRules.setTarget", "point a rule at the Service's target pool (loadbalancer_external.go)"),
				computePerm("forwardingRules.delete", "delete the rules with the Service or when a protocol goes (loadbalancer_external.go)"),
				computePerm("targetPools.get", "compare the target pool (loadbalancer_external.go) and find what is left of a Service (loadbalancer.go anyPartLeft)"),
				computePerm("targetPools.create", "the Service's target pool (loadbalancer_external.go)"),
				computePerm("targetPools.delete", "delete it with the Service (loadbalancer_external.go)"),
				computePerm("targetPools.addInstance", "add nodes (loadbalancer_external.go)"),
				computePerm("targetPools.removeInstance", "remove nodes (loadbalancer_external.go)"),
				computePerm("targetPools.addHealthCheck", "attach the health check (loadbalancer_external.go)"),
				computePerm("targetPools.removeHealthCheck", "detach a health check the Service no longer uses (loadbalancer_external.go)"),
				computePerm("targetPools.use", "the forwarding rule's target (loadbalancer_external.go)"),
				computePerm("instances.use", "the nodes' instances a target pool takes (loadbalancer_external.go)"),
				computePerm("httpHealthChecks.get", "compare the health check (loadbalancer_parts.go)"),
				computePerm("httpHealthChecks.create", "the shared kube-proxy check, or the Service's on healthCheckNodePort (loadbalancer_parts.go)"),
				computePerm("httpHealthChecks.update", "follow the Service's health check port and path (loadbalancer_parts.go)"),
				computePerm("httpHealthChecks.delete", "delete the Service's check, or the shared one with the last Service (loadbalancer_parts.go)"),
				computePerm("httpHealthChecks.useReadOnly", "the check a target pool uses (loadbalancer_external.go)"),
				computePerm("addresses.get", "read the Service's address (loadbalancer_parts.go)"),
				computePerm("addresses.create", "reserve the Service's external IP while its rules are made, or for as long as it exists with keepAddresses (loadbalancer_parts.go)"),
				computePerm("addresses.delete", "release it (loadbalancer_parts.go)"),
				computePerm("addresses.use", "a forwarding rule takes the reserved IP, the Service's or the one loadBalancerIP names (loadbalancer_external.go)"),
				inNetwork("firewalls.get", "compare the firewall rules (loadbalancer_parts.go)"),
				inNetwork("firewalls.create", "admit the Service's clients, and health checks, to the nodes (loadbalancer_parts.go)"),
				inNetwork("firewalls.update", "follow ports and loadBalancerSourceRanges (loadbalancer_parts.go)"),
				inNetwork("firewalls.delete", "delete them with the Service (loadbalancer_parts.go)"),
				inNetwork("networks.updatePolicy", "every firewall rule change in the nodes' network (loadbalancer_parts.go)"),
				computePerm("regionBackendServices.get", "find what is left of a Service that was internal (loadbalancer.go anyPartLeft)"),
				computePerm("regionBackendServices.list", "a Service's deletion, whichever its kind, finds its backend services (loadbalancer.go deleteParts)"),
				computePerm("regionBackendServices.delete", "and deletes them (loadbalancer.go deleteParts)"),
				computePerm("healthChecks.get", "a Service's deletion reads its global check and the cluster's shared one (loadbalancer.go deleteParts, releaseShared)"),
				computePerm("healthChecks.delete", "and deletes them once no backend service uses them (loadbalancer.go releaseShared)"),
				computePerm("regionHealthChecks.get", "the same for the regional checks versions before 2026-11-26 made (loadbalancer.go releaseShared)"),
				computePerm("regionHealthChecks.delete", "the same (loadbalancer.go releaseShared)"),
				computePerm("instanceGroups.list", "a Service's deletion finds the cluster's instance groups (instancegroups.go deleteUnused)"),
				computePerm("instanceGroups.delete", "and deletes those no backend service uses (instancegroups.go deleteUnused)"),
				computePerm("regionOperations.get", "wait for regional changes (loadbalancer_parts.go waitOp, loadbalancer_batch.go waitRegional)"),
				computePerm("zoneOperations.get", "wait for an instance group's deletion (instancegroups.go deleteUnused)"),
				computePerm("globalOperations.get", "wait for health check changes (loadbalancer_parts.go waitGlobal)"),
				inNetwork("globalOperations.get", "wait for firewall rule changes (loadbalancer_parts.go waitOp)"),
			},
		},
		{
			Name: "internal-load-balancers",
			Doc:  "Internal passthrough Network Load Balancers (networking.gke.io/load-balancer-type: Internal): a forwarding rule per protocol in the nodes' subnetwork to a regional backend service over the cluster's instance groups, its health check, the Service's internal address, the firewall rules. Granted with external-load-balancers (a Service's deletion looks for the parts of both kinds).",
			Grants: []decl.Grant{
				computePerm("forwardingRules.list", "find the Service's forwarding rules (loadbalancer.go serviceRules)"),
				computePerm("forwardingRules.create", "a forwarding rule per protocol (loadbalancer_internal.go)"),
				computePerm("forwardingRules.get", "read the IPv6 address GCE gave a new rule (loadbalancer_internal.go)"),
				computePerm("forwardingRules.delete", "delete the rules with the Service (loadbalancer_internal.go)"),
				computePerm("regionBackendServices.get", "compare the backend service (loadbalancer_internal.go)"),
				computePerm("regionBackendServices.list", "find backend services still using the cluster's groups (loadbalancer_internal.go)"),
				computePerm("regionBackendServices.create", "the Service's backend service (loadbalancer_internal.go)"),
				computePerm("regionBackendServices.update", "follow backends and the health check (loadbalancer_internal.go, a patch)"),
				computePerm("regionBackendServices.delete", "delete it with the Service (loadbalancer_internal.go)"),
				computePerm("regionBackendServices.use", "the forwarding rule's backend service (loadbalancer_internal.go)"),
				computePerm("healthChecks.get", "compare the health check (loadbalancer_internal.go)"),
				computePerm("healthChecks.create", "the shared kube-proxy check, or the Service's on healthCheckNodePort (loadbalancer_internal.go)"),
				computePerm("healthChecks.update", "follow the Service's health check port and path (loadbalancer_internal.go)"),
				computePerm("healthChecks.delete", "delete the Service's check, or the shared one with the last Service (loadbalancer_internal.go)"),
				computePerm("healthChecks.useReadOnly", "the check a backend service uses (loadbalancer_internal.go)"),
				computePerm("regionHealthChecks.get", "find a regional check versions before 2026-11-26 made (loadbalancer_internal.go deleteRegionHealthCheck)"),
				computePerm("regionHealthChecks.delete", "delete it (loadbalancer_internal.go deleteRegionHealthCheck)"),
				computePerm("instanceGroups.list", "the cluster's groups, one aggregated listing, and their members (instancegroups.go)"),
				computePerm("instanceGroups.create", "a group of the nodes per zone (instancegroups.go)"),
				computePerm("instanceGroups.update", "add and remove nodes (instancegroups.go)"),
				computePerm("instanceGroups.delete", "delete the groups with the last internal Service (instancegroups.go)"),
				computePerm("instanceGroups.use", "the groups a backend service balances over (loadbalancer_internal.go)"),
				computePerm("instances.use", "the nodes' instances a group takes (instancegroups.go)"),
				computePerm("addresses.get", "read the Service's address (loadbalancer_parts.go)"),
				computePerm("addresses.createInternal", "reserve the Service's internal IP (loadbalancer_parts.go)"),
				computePerm("addresses.deleteInternal", "release it (loadbalancer_parts.go)"),
				computePerm("addresses.useInternal", "a forwarding rule takes the reserved IP (loadbalancer_internal.go)"),
				inNetwork("subnetworks.use", "the internal address and forwarding rules are in the nodes' subnetwork, or the one the Service names (loadbalancer_internal.go)"),
				inNetwork("subnetworks.get", "check an IPv6 Service's subnetwork has an internal IPv6 range (loadbalancer_families.go internalIPv6)"),
				inNetwork("firewalls.get", "compare the firewall rules (loadbalancer_parts.go)"),
				inNetwork("firewalls.create", "admit the Service's clients, and health checks, to the nodes (loadbalancer_parts.go)"),
				inNetwork("firewalls.update", "follow ports and loadBalancerSourceRanges (loadbalancer_parts.go)"),
				inNetwork("firewalls.delete", "delete them with the Service (loadbalancer_parts.go)"),
				inNetwork("networks.updatePolicy", "every firewall rule change in the nodes' network (loadbalancer_parts.go)"),
				computePerm("targetPools.get", "find what is left of a Service that was external (loadbalancer.go anyPartLeft), and its pool at its deletion, whichever its kind (loadbalancer.go deleteParts)"),
				computePerm("targetPools.delete", "delete it (loadbalancer.go deleteParts)"),
				computePerm("httpHealthChecks.get", "a Service's deletion reads its legacy check and the cluster's shared one (loadbalancer.go deleteParts, releaseShared)"),
				computePerm("httpHealthChecks.delete", "and deletes them once no target pool uses them (loadbalancer.go releaseShared)"),
				computePerm("addresses.delete", "release an external address the Service held before it was internal (loadbalancer_parts.go releaseAddress)"),
				computePerm("regionOperations.get", "wait for regional changes (loadbalancer_parts.go waitOp, loadbalancer_batch.go waitRegional)"),
				computePerm("zoneOperations.get", "wait for instance group changes (loadbalancer_parts.go waitOp)"),
				computePerm("globalOperations.get", "wait for health check changes (loadbalancer_internal.go waitOp)"),
				inNetwork("globalOperations.get", "wait for firewall rule changes (loadbalancer_parts.go waitOp)"),
			},
		},
		{
			Name: "drift-repair-and-orphans",
			Doc:  "The drift check (--load-balancer-repair-period) and the orphan scan (--orphan-scan-period): one listing of every load balancer part kind; repairs use the load balancer features' permissions.",
			Grants: []decl.Grant{
				computePerm("forwardingRules.list", "list forwarding rules (inventory.go)"),
				computePerm("targetPools.list", "list target pools (inventory.go)"),
				computePerm("regionBackendServices.list", "list backend services (inventory.go)"),
				computePerm("httpHealthChecks.list", "list legacy HTTP health checks (inventory.go)"),
				computePerm("healthChecks.list", "list health checks (inventory.go)"),
				computePerm("regionHealthChecks.list", "list regional health checks (inventory.go)"),
				inNetwork("firewalls.list", "list firewall rules (inventory.go)"),
				computePerm("addresses.list", "list addresses (inventory.go)"),
				computePerm("instanceGroups.list", "list the instance groups (inventory.go)"),
			},
		},
		{
			Name:     "orphan-deletion",
			Optional: true,
			Doc:      "orphans: delete in the cloud-config: parts no Service owns are read again and deleted after the grace period.",
			Grants: []decl.Grant{
				computePerm("forwardingRules.get", "read an orphaned rule again (inventory.go readPart)"),
				computePerm("forwardingRules.delete", "delete it (inventory.go deletePart)"),
				computePerm("targetPools.get", "read an orphaned pool again (inventory.go readPart)"),
				computePerm("targetPools.delete", "delete it (inventory.go deletePart)"),
				computePerm("regionBackendServices.get", "read an orphaned backend service again (inventory.go readPart)"),
				computePerm("regionBackendServices.delete", "delete it (inventory.go deletePart)"),
				computePerm("httpHealthChecks.get", "read an orphaned check again (inventory.go readPart)"),
				computePerm("httpHealthChecks.delete", "delete it (inventory.go deletePart)"),
				computePerm("healthChecks.get", "read an orphaned check again (inventory.go readPart)"),
				computePerm("healthChecks.delete", "delete it (inventory.go deletePart)"),
				computePerm("regionHealthChecks.get", "read an orphaned check again (inventory.go readPart)"),
				computePerm("regionHealthChecks.delete", "delete it (inventory.go deletePart)"),
				inNetwork("firewalls.get", "read an orphaned rule again (inventory.go readPart)"),
				inNetwork("firewalls.delete", "delete it (inventory.go deletePart)"),
				inNetwork("networks.updatePolicy", "a firewall rule's deletion (inventory.go deletePart)"),
				computePerm("addresses.get", "read an orphaned address again (inventory.go readPart)"),
				computePerm("addresses.delete", "release an external one (inventory.go deletePart)"),
				computePerm("addresses.deleteInternal", "release an internal one (inventory.go deletePart)"),
				computePerm("instanceGroups.get", "read an orphaned group again (inventory.go readPart)"),
				computePerm("instanceGroups.delete", "delete it (inventory.go deletePart)"),
				computePerm("regionOperations.get", "wait for regional deletions (inventory.go deletePart)"),
				computePerm("zoneOperations.get", "wait for instance group deletions (inventory.go deletePart)"),
				computePerm("globalOperations.get", "wait for health check deletions (inventory.go deletePart)"),
				inNetwork("globalOperations.get", "wait for firewall rule deletions (inventory.go deletePart)"),
			},
		},
		{
			Name: "routes",
			Doc:  "Pod-CIDR routes in the nodes' network, next hop the node's instance (--configure-cloud-routes, on by default). A cluster running with --configure-cloud-routes=false (IP aliases, as kOps' clusters are made) calls none of these and may leave them out of the role.",
			Grants: []decl.Grant{
				inNetwork("routes.list", "list the cluster's routes (routes.go)"),
				inNetwork("routes.create", "a Node's pod-CIDR route (routes.go)"),
				inNetwork("routes.delete", "the route of a Node that is gone (routes.go)"),
				inNetwork("networks.updatePolicy", "every route change in the nodes' network (routes.go)"),
				computePerm("instances.use", "the route's next-hop instance (routes.go)"),
				inNetwork("globalOperations.get", "wait for route changes (routes.go)"),
			},
		},
	}}
}

// PermissionFeatures are the features s turns on, beside the always-on
// ones: the orphans' deletion. Every other feature is always on: both
// load balancer kinds (a Service's annotation picks one), and routes,
// which a flag (--configure-cloud-routes) rather than the config turns
// off.
func PermissionFeatures(_ *Section, deleteOrphans bool) []string {
	out := []string{"nodes", "external-load-balancers", "internal-load-balancers", "drift-repair-and-orphans", "routes"}
	if deleteOrphans {
		out = append(out, "orphan-deletion")
	}
	return out
}
