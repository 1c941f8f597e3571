package permissions

import (
	"bytes"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// OpenStackPolicy lists, per service, the policy rules the grants name,
// with the project role that satisfies each under the service's default
// policy. OpenStack has no identity policy document to attach to a user:
// every service checks each call against its own oslo.policy rules
// (policy.yaml), which the roles of the token's user on the project
// satisfy or not. So the document says which roles to give the user on
// the cluster's project (roles) and, for a cloud whose operator writes
// custom policies, which rules of which service a custom role needs
// (services). A grant's Scope, when set, is listed with its rule.
//
// The default roles are the services' "secure RBAC" project personas:
//   - Nova (nova/policies/servers.py): reading servers needs reader,
//     changing them member, every project's servers (get_all_tenants)
//     admin.
//   - Neutron (neutron/conf/policies/*.py): get_* needs reader, the other
//     actions member; an attribute rule of a port's addresses
//     (fixed_ips, mac_address, allowed_address_pairs,
//     port_security_enabled, device_owner) member on a network the
//     project owns, else admin; a floating IP's own address
//     (create_floatingip:floating_ip_address) manager or admin.
//   - Octavia (octavia/policies/base.py, advanced_rbac.py): reading needs
//     load-balancer_observer, writing load-balancer_member (with the
//     keystone_default_roles policy Octavia ships, reader and member);
//     flavors, availability zones and their profiles are written by
//     admins only.
//   - Keystone: the token rules allow a user its own tokens.
//
// member implies reader, load-balancer_member implies
// load-balancer_observer (Octavia's read rule takes either), so roles
// lists the strongest of each.
func OpenStackPolicy(grants []Grant) ([]byte, error) {
	type rule struct {
		Rule  string `yaml:"rule"`
		Role  string `yaml:"role"`
		Note  string `yaml:"note,omitempty"`
		Scope string `yaml:"scope,omitempty"`
		Why   string `yaml:"why"`
	}
	type service struct {
		Service    string `yaml:"service"`
		Name       string `yaml:"name"`
		PolicyFile string `yaml:"policyFile"`
		Rules      []rule `yaml:"rules"`
	}
	var services []*service
	var roles []string
	for _, g := range grants {
		typ, name := openstackService(g.Permission)
		i := slices.IndexFunc(services, func(s *service) bool { return s.Service == typ })
		if i < 0 {
			services = append(services, &service{Service: typ, Name: name, PolicyFile: "/etc/" + name + "/policy.yaml"})
			i = len(services) - 1
		}
		role, note := openstackDefaultRole(g.Permission)
		services[i].Rules = append(services[i].Rules, rule{Rule: g.Permission, Role: role, Note: note, Scope: g.Scope, Why: g.Why})
		if role != "" && !slices.Contains(roles, role) {
			roles = append(roles, role)
		}
	}
	order := []string{"compute", "network", "load-balancer", "identity"}
	slices.SortStableFunc(services, func(a, b *service) int {
		return slices.Index(order, a.Service) - slices.Index(order, b.Service)
	})
	// The implied roles go: their rules are satisfied by the stronger one.
	for weak, strong := range map[string]string{"reader": "member", "load-balancer_observer": "load-balancer_member"} {
		if slices.Contains(roles, strong) {
			roles = slices.DeleteFunc(roles, func(r string) bool { return r == weak })
		}
	}
	slices.Sort(roles)
	doc := struct {
		Roles    []string   `yaml:"roles"`
		Services []*service `yaml:"services"`
	}{Roles: roles, Services: services}
	if doc.Roles == nil {
		doc.Roles = []string{}
	}
	var b bytes.Buffer
	b.WriteString(`# The OpenStack policy rules multicloud-ccm's calls are checked against.
# OpenStack has no identity policy to attach: each service checks every call
# against its own policy rules (oslo.policy), which the roles of the user on
# the cluster's project satisfy or not. With the services' default policies,
# the roles below on the project grant every rule (openstack role add
# --user <user> --project <project> <role>); each rule's role is its default.
# With custom policies, allow these rules in each service's policy.yaml.
`)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// openstackService is the catalog type and name of the service whose
// rule it is, by the rule's prefix.
func openstackService(rule string) (typ, name string) {
	switch {
	case strings.HasPrefix(rule, "os_compute_api:"):
		return "compute", "nova"
	case strings.HasPrefix(rule, "os_load-balancer_api:"):
		return "load-balancer", "octavia"
	case strings.HasPrefix(rule, "identity:"):
		return "identity", "keystone"
	}
	return "network", "neutron"
}

// openstackDefaultRole is the project role that satisfies rule under its
// service's default policy, and what more it takes when something does.
func openstackDefaultRole(rule string) (role, note string) {
	switch typ, _ := openstackService(rule); typ {
	case "compute":
		action := strings.TrimPrefix(rule, "os_compute_api:")
		switch {
		case strings.HasSuffix(action, ":get_all_tenants"):
			return "admin", ""
		case action == "servers:index" || action == "servers:detail" || action == "servers:show" || strings.HasSuffix(action, ":list"):
			return "reader", ""
		}
		return "member", ""
	case "load-balancer":
		object, verb, _ := strings.Cut(strings.TrimPrefix(rule, "os_load-balancer_api:"), ":")
		read := strings.HasPrefix(verb, "get_")
		switch {
		case read:
			return "load-balancer_observer", "or load-balancer_member; reader with Octavia's keystone_default_roles policy"
		case object == "flavor" || object == "flavor-profile" || object == "availability-zone" || object == "availability-zone-profile" || object == "amphora" || object == "quota":
			return "admin", ""
		}
		return "load-balancer_member", "member with Octavia's keystone_default_roles policy"
	case "identity":
		return "", "any user, for its own token"
	}
	action, attr, _ := strings.Cut(rule, ":")
	switch {
	case rule == "create_floatingip:floating_ip_address":
		return "manager", "or admin (admin only before the manager persona)"
	case attr != "" && strings.HasSuffix(action, "_port") && slices.ContainsFunc([]string{"fixed_ips", "mac_address", "allowed_address_pairs", "port_security_enabled", "device_owner"}, func(a string) bool { return strings.HasPrefix(attr, a) }):
		return "member", "when the project owns the port's network; else admin"
	case strings.HasPrefix(action, "get_"):
		return "reader", ""
	}
	return "member", ""
}
