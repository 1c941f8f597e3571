package permissions

import "testing"

// TestOpenStackPolicy: the rules by service in the catalog's order, each
// with its default role; the roles to give are the strongest ones
// (member covers reader), and a rule beyond them (an admin's) adds its
// role.
func TestOpenStackPolicy(t *testing.T) {
	d := Declaration{Cloud: "openstack", Features: []Feature{
		{Name: "nodes", Doc: "d", Grants: []Grant{
			{Permission: "os_compute_api:servers:detail", Why: "list servers"},
			{Permission: "get_port", Why: "ports: of servers"},
		}},
		{Name: "lbs", Doc: "d", Grants: []Grant{
			{Permission: "os_load-balancer_api:loadbalancer:get_all", Why: "find"},
			{Permission: "os_load-balancer_api:loadbalancer:post", Why: "create"},
			{Permission: "update_port:allowed_address_pairs", Why: "pairs"},
			{Permission: "update_port", Why: "ports"},
			{Permission: "create_floatingip:floating_ip_address", Scope: "the external network", Why: "an address"},
		}},
	}}
	grants, err := d.Grants()
	if err != nil {
		t.Fatal(err)
	}
	got, err := OpenStackPolicy(grants)
	if err != nil {
		t.Fatal(err)
	}
	const want = `# The OpenStack policy rules multicloud-ccm's calls are checked against.
# OpenStack has no identity policy to attach: each service checks every call
# against its own policy rules (oslo.policy), which the roles of the user on
# the cluster's project satisfy or not. With the services' default policies,
# the roles below on the project grant every rule (openstack role add
# --user <user> --project <project> <role>); each rule's role is its default.
# With custom policies, allow these rules in each service's policy.yaml.
roles:
  - load-balancer_member
  - manager
  - member
services:
  - service: compute
    name: nova
    policyFile: /etc/nova/policy.yaml
    rules:
      - rule: os_compute_api:servers:detail
        role: reader
        why: list servers
  - service: network
    name: neutron
    policyFile: /etc/neutron/policy.yaml
    rules:
      - rule: create_floatingip:floating_ip_address
        role: manager
        note: or admin (admin only before the manager persona)
        scope: the external network
        why: an address
      - rule: get_port
        role: reader
        why: 'ports: of servers'
      - rule: update_port
        role: member
        why: ports
      - rule: update_port:allowed_address_pairs
        role: member
        note: when the project owns the port's network; else admin
        why: pairs
  - service: load-balancer
    name: octavia
    policyFile: /etc/octavia/policy.yaml
    rules:
      - rule: os_load-balancer_api:loadbalancer:get_all
        role: load-balancer_observer
        note: or load-balancer_member; reader with Octavia's keystone_default_roles policy
        why: find
      - rule: os_load-balancer_api:loadbalancer:post
        role: load-balancer_member
        note: member with Octavia's keystone_default_roles policy
        why: create
`
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got, err := OpenStackPolicy(nil); err != nil || string(got[len(got)-len("roles: []\nservices: []\n"):]) != "roles: []\nservices: []\n" {
		t.Errorf("no grants: %q, %v", got, err)
	}
}
