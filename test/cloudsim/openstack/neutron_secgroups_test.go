package openstack_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

func TestNeutronSecurityGroups(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	c := e.networkClient(t)
	before := e.srv.Resources()

	// The project's default group, with Neutron's four default rules.
	def, err := groups.Get(ctx(t), c, e.fx.DefaultSecurityGroupID).Extract()
	ok(t, err)
	if def.Name != "default" || def.Description != "Default security group" || len(def.Rules) != 4 || !def.Stateful {
		t.Fatalf("default group %+v", def)
	}
	var shape []string
	for _, r := range def.Rules {
		shape = append(shape, r.Direction+" "+r.EtherType+" "+r.RemoteGroupID)
	}
	if !slices.Equal(shape, []string{"egress IPv4 ", "egress IPv6 ", "ingress IPv4 " + def.ID, "ingress IPv6 " + def.ID}) {
		t.Errorf("default rules %v", shape)
	}
	_, err = groups.Create(ctx(t), c, groups.CreateOpts{Name: "Default"}).Extract()
	wantNeutronErr(t, err, http.StatusConflict, "SecurityGroupDefaultAlreadyExists", "=Default security group already exists.")
	err = groups.Delete(ctx(t), c, def.ID).ExtractErr()
	wantNeutronErr(t, err, http.StatusConflict, "SecurityGroupCannotRemoveDefault", "=Insufficient rights for removing default security group.")

	// A new group gets the two egress rules.
	stateless := false
	g, err := groups.Create(ctx(t), c, groups.CreateOpts{Name: "lb-web", Description: "web", Stateful: &stateless}).Extract()
	ok(t, err)
	if g.Name != "lb-web" || g.Description != "web" || g.Stateful || len(g.Rules) != 2 || g.ProjectID != e.fx.ProjectID ||
		g.Rules[0].Direction != "egress" || g.Rules[1].EtherType != "IPv6" {
		t.Fatalf("created %+v", g)
	}
	// Tags come afterwards: Neutron takes none in a group's POST.
	w := e.do(t, "POST", "/network/v2.0/security-groups", `{"security_group": {"name": "x", "tags": ["a"]}}`, "X-Auth-Token", e.token(t))
	if ne, _ := w.body["NeutronError"].(map[string]any); w.status != 400 || ne["message"] != "Attribute 'tags' not allowed in POST" {
		t.Errorf("tags in POST: %d %s", w.status, w.raw)
	}

	for _, tc := range []struct {
		name string
		opts groups.ListOpts
		want []string
	}{
		{"all", groups.ListOpts{}, []string{def.ID, g.ID}},
		{"by name", groups.ListOpts{Name: "lb-web"}, []string{g.ID}},
		{"by description", groups.ListOpts{Description: "web"}, []string{g.ID}},
		{"by id", groups.ListOpts{ID: def.ID}, []string{def.ID}},
		{"stateless", groups.ListOpts{Stateful: &stateless}, []string{g.ID}},
		{"by project, sorted", groups.ListOpts{ProjectID: e.fx.ProjectID, SortKey: "name", SortDir: "desc"}, []string{g.ID, def.ID}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pages, err := groups.List(c, tc.opts).AllPages(ctx(t))
			ok(t, err)
			gs, err := groups.ExtractGroups(pages)
			ok(t, err)
			var got []string
			for _, g := range gs {
				got = append(got, g.ID)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}

	name, desc := "lb-web-2", "web, renamed"
	up, err := groups.Update(ctx(t), c, g.ID, groups.UpdateOpts{Name: name, Description: &desc}).Extract()
	ok(t, err)
	if up.Name != name || up.Description != desc || up.RevisionNumber != g.RevisionNumber+1 {
		t.Errorf("updated %+v (from revision %d)", up, g.RevisionNumber)
	}
	_, err = groups.Update(ctx(t), c, def.ID, groups.UpdateOpts{Name: "other"}).Extract()
	wantNeutronErr(t, err, http.StatusConflict, "SecurityGroupCannotUpdateDefault", "=Updating default security group not allowed.")

	// A group a port uses cannot go, nor change statefulness.
	sgs := []string{g.ID}
	p, err := ports.Create(ctx(t), c, ports.CreateOpts{NetworkID: e.fx.NetworkID, SecurityGroups: &sgs}).Extract()
	ok(t, err)
	err = groups.Delete(ctx(t), c, g.ID).ExtractErr()
	wantNeutronErr(t, err, http.StatusConflict, "SecurityGroupInUse", "=Security Group "+g.ID+" in use.")
	stateful := true
	_, err = groups.Update(ctx(t), c, g.ID, groups.UpdateOpts{Stateful: &stateful}).Extract()
	wantNeutronErr(t, err, http.StatusConflict, "SecurityGroupInUse", "in use")
	info, _ := e.emu.SecurityGroup(g.ID)
	if !slices.Equal(info.PortIDs, []string{p.ID}) {
		t.Errorf("admin: group on ports %v", info.PortIDs)
	}
	// A stateless and a stateful group do not mix on a port.
	mixed := []string{g.ID, def.ID}
	_, err = ports.Update(ctx(t), c, p.ID, ports.UpdateOpts{SecurityGroups: &mixed}).Extract()
	wantNeutronErr(t, err, http.StatusConflict, "SecurityGroupConflict", "stateful and stateless")

	ok(t, ports.Delete(ctx(t), c, p.ID).ExtractErr())
	_, err = rules.Create(ctx(t), c, rules.CreateOpts{Direction: rules.DirIngress, EtherType: rules.EtherType4, SecGroupID: g.ID, Protocol: rules.ProtocolTCP, PortRangeMin: 80, PortRangeMax: 80}).Extract()
	ok(t, err)
	ok(t, groups.Delete(ctx(t), c, g.ID).ExtractErr())
	_, err = groups.Get(ctx(t), c, g.ID).Extract()
	wantNeutronErr(t, err, http.StatusNotFound, "SecurityGroupNotFound", "=Security group "+g.ID+" does not exist")
	err = groups.Delete(ctx(t), c, g.ID).ExtractErr()
	wantNeutronErr(t, err, http.StatusNotFound, "SecurityGroupNotFound", "does not exist")
	// Nothing of the group is left: its rules went with it.
	if added, removed := cloudsim.DiffResources(before, e.srv.Resources()); len(added)+len(removed) != 0 {
		t.Errorf("left behind %v, removed %v", added, removed)
	}
}

// The default group comes with the project's first need of one, as in
// Neutron: a project without it gets it on its first list.
func TestNeutronDefaultGroupIsLazy(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	// The fixture's network made the fixture project's.
	if n := len(e.emu.SecurityGroups()); n != 1 {
		t.Fatalf("%d groups", n)
	}
	ids := e.launch(t, cloudsimopenstack.LaunchSpec{})
	s, _ := e.emu.Server(ids[0])
	if p, _ := e.emu.Port(s.PortID); !slices.Equal(p.SecurityGroups, []string{e.fx.DefaultSecurityGroupID}) {
		t.Errorf("server port groups %v", p.SecurityGroups)
	}
}

func TestNeutronSecurityGroupRules(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	c := e.networkClient(t)
	g, err := groups.Create(ctx(t), c, groups.CreateOpts{Name: "svc"}).Extract()
	ok(t, err)
	other, err := groups.Create(ctx(t), c, groups.CreateOpts{Name: "other"}).Extract()
	ok(t, err)
	rev := g.RevisionNumber

	r, err := rules.Create(ctx(t), c, rules.CreateOpts{
		Direction: rules.DirIngress, EtherType: rules.EtherType4, SecGroupID: g.ID, Protocol: rules.ProtocolTCP,
		PortRangeMin: 80, PortRangeMax: 80, RemoteIPPrefix: "10.1.2.3/8", Description: "http",
	}).Extract()
	ok(t, err)
	if r.Protocol != "tcp" || r.PortRangeMin != 80 || r.RemoteIPPrefix != "10.1.2.3/8" || r.Description != "http" ||
		r.SecGroupID != g.ID || r.ProjectID != e.fx.ProjectID {
		t.Errorf("rule %+v", r)
	}
	got, err := groups.Get(ctx(t), c, g.ID).Extract()
	ok(t, err)
	if got.RevisionNumber != rev+1 || len(got.Rules) != 3 {
		t.Errorf("group after a rule: revision %d (was %d), %d rules", got.RevisionNumber, rev, len(got.Rules))
	}
	// The same rule again, even spelled differently, is a conflict naming
	// the existing rule.
	_, err = rules.Create(ctx(t), c, rules.CreateOpts{
		Direction: rules.DirIngress, EtherType: rules.EtherType4, SecGroupID: g.ID, Protocol: "6",
		PortRangeMin: 80, PortRangeMax: 80, RemoteIPPrefix: "10.1.2.3/8",
	}).Extract()
	wantNeutronErr(t, err, http.StatusConflict, "SecurityGroupRuleExists", "=Security group rule already exists. Rule id is "+r.ID+".")

	// Bulk: all or nothing.
	bulk := []rules.CreateOpts{
		{Direction: rules.DirIngress, EtherType: rules.EtherType4, SecGroupID: g.ID, Protocol: rules.ProtocolUDP, PortRangeMin: 53, PortRangeMax: 53},
		{Direction: rules.DirIngress, EtherType: rules.EtherType6, SecGroupID: g.ID, Protocol: rules.ProtocolTCP, PortRangeMin: 443, PortRangeMax: 443, RemoteIPPrefix: "::/0"},
	}
	e.srv.ResetCalls()
	made, err := rules.CreateBulk(ctx(t), c, bulk).Extract()
	ok(t, err)
	if len(made) != 2 || made[1].EtherType != "IPv6" || e.srv.CallCount("neutron:BulkCreateSecurityGroupRules") != 1 {
		t.Errorf("bulk %+v", made)
	}
	n := len(e.emu.SecurityGroups()[1].Rules)
	for _, tc := range []struct {
		name     string
		opts     []rules.CreateOpts
		status   int
		typ, msg string
	}{
		{"duplicate in the request", []rules.CreateOpts{bulk[0], bulk[0]}, 409, "DuplicateSecurityGroupRuleInPost", "=Duplicate Security Group Rule in POST."},
		{"one of them exists", []rules.CreateOpts{
			{Direction: rules.DirIngress, EtherType: rules.EtherType4, SecGroupID: g.ID, Protocol: rules.ProtocolTCP, PortRangeMin: 22, PortRangeMax: 22},
			bulk[1],
		}, 409, "SecurityGroupRuleExists", "Rule id is " + made[1].ID},
		{"two groups", []rules.CreateOpts{
			{Direction: rules.DirIngress, EtherType: rules.EtherType4, SecGroupID: g.ID, Protocol: rules.ProtocolTCP, PortRangeMin: 22, PortRangeMax: 22},
			{Direction: rules.DirIngress, EtherType: rules.EtherType4, SecGroupID: other.ID, Protocol: rules.ProtocolTCP, PortRangeMin: 22, PortRangeMax: 22},
		}, 400, "SecurityGroupNotSingleGroupRules", "=Only allowed to update rules for one security profile at a time"},
		{"one invalid", []rules.CreateOpts{
			{Direction: rules.DirIngress, EtherType: rules.EtherType4, SecGroupID: g.ID, Protocol: rules.ProtocolTCP, PortRangeMin: 22, PortRangeMax: 22},
			{Direction: rules.DirIngress, EtherType: rules.EtherType4, SecGroupID: g.ID, Protocol: rules.ProtocolTCP, PortRangeMin: 30, PortRangeMax: 20},
		}, 400, "SecurityGroupInvalidPortRange", "=For TCP/UDP protocols, port_range_min must be <= port_range_max"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rules.CreateBulk(ctx(t), c, tc.opts).Extract()
			wantNeutronErr(t, err, tc.status, tc.typ, tc.msg)
			if m := len(e.emu.SecurityGroups()[1].Rules); m != n {
				t.Errorf("%d rules, was %d", m, n)
			}
		})
	}

	pages, err := rules.List(c, rules.ListOpts{SecGroupID: g.ID, Direction: "ingress", Protocol: "tcp"}).AllPages(ctx(t))
	ok(t, err)
	ingress, err := rules.ExtractRules(pages)
	ok(t, err)
	if len(ingress) != 2 || ingress[0].ID != r.ID {
		t.Errorf("ingress tcp rules %+v", ingress)
	}
	for _, tc := range []struct {
		opts rules.ListOpts
		want int
	}{
		{rules.ListOpts{SecGroupID: g.ID}, 5},
		{rules.ListOpts{SecGroupID: g.ID, EtherType: "ipv6"}, 2},
		{rules.ListOpts{PortRangeMin: 53}, 1},
		{rules.ListOpts{RemoteIPPrefix: "::/0"}, 1},
		{rules.ListOpts{Description: "http"}, 1},
		{rules.ListOpts{RemoteGroupID: e.fx.DefaultSecurityGroupID}, 2},
		{rules.ListOpts{Limit: 2}, 4 + 2 + 2 + 3},
	} {
		pages, err := rules.List(c, tc.opts).AllPages(ctx(t))
		ok(t, err)
		rs, err := rules.ExtractRules(pages)
		ok(t, err)
		if len(rs) != tc.want {
			t.Errorf("%+v: %d rules, want %d", tc.opts, len(rs), tc.want)
		}
	}

	rev = e.emu.SecurityGroups()[1].RevisionNumber
	ok(t, rules.Delete(ctx(t), c, r.ID).ExtractErr())
	if info, _ := e.emu.SecurityGroup(g.ID); info.RevisionNumber != rev+1 || len(info.Rules) != 4 {
		t.Errorf("after delete: revision %d (was %d), %d rules", info.RevisionNumber, rev, len(info.Rules))
	}
	_, err = rules.Get(ctx(t), c, r.ID).Extract()
	wantNeutronErr(t, err, http.StatusNotFound, "SecurityGroupRuleNotFound", "=Security group rule "+r.ID+" does not exist")
	err = rules.Delete(ctx(t), c, r.ID).ExtractErr()
	wantNeutronErr(t, err, http.StatusNotFound, "SecurityGroupRuleNotFound", "does not exist")

	// Rules naming a group as remote go when it goes.
	_, err = rules.Create(ctx(t), c, rules.CreateOpts{Direction: rules.DirIngress, EtherType: rules.EtherType4, SecGroupID: g.ID, RemoteGroupID: other.ID}).Extract()
	ok(t, err)
	ok(t, groups.Delete(ctx(t), c, other.ID).ExtractErr())
	if info, _ := e.emu.SecurityGroup(g.ID); len(info.Rules) != 4 {
		t.Errorf("after the remote group went: %d rules", len(info.Rules))
	}
}

func TestNeutronSecurityGroupRuleValidation(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{Neutron: cloudsimopenstack.NeutronConfig{SecurityGroupRuleQuota: 8}})
	c := e.networkClient(t)
	g, err := groups.Create(ctx(t), c, groups.CreateOpts{Name: "svc"}).Extract()
	ok(t, err)
	tok := e.token(t)
	rule := func(fields string) string {
		return `{"security_group_rule": {"security_group_id": "` + g.ID + `", "direction": "ingress"` + fields + `}}`
	}
	for _, tc := range []struct {
		name, body string
		status     int
		typ, msg   string
	}{
		{"no direction", `{"security_group_rule": {"security_group_id": "` + g.ID + `"}}`, 400, "HTTPBadRequest", "=Failed to parse request. Required attribute 'direction' not specified"},
		{"bad direction", rule(`, "direction": "sideways"`), 400, "HTTPBadRequest", "=Invalid input for direction. Reason: sideways is not in ['ingress', 'egress']."},
		{"ports without protocol", rule(`, "port_range_min": 80, "port_range_max": 80`), 400, "SecurityGroupProtocolRequiredWithPorts", "=Must also specify protocol if port range is given."},
		{"min above max", rule(`, "protocol": "tcp", "port_range_min": 90, "port_range_max": 80`), 400, "SecurityGroupInvalidPortRange", "=For TCP/UDP protocols, port_range_min must be <= port_range_max"},
		{"only min", rule(`, "protocol": "udp", "port_range_min": 90`), 400, "SecurityGroupInvalidPortRange", "port_range_min must be <= port_range_max"},
		{"port 0", rule(`, "protocol": "tcp", "port_range_min": 0, "port_range_max": 80`), 400, "SecurityGroupInvalidPortValue", "=Invalid value for port 0"},
		{"port too big", rule(`, "protocol": "tcp", "port_range_min": 1, "port_range_max": 70000`), 400, "SecurityGroupInvalidPortValue", "=Invalid value for port 70000"},
		{"ports for gre", rule(`, "protocol": "gre", "port_range_min": 1, "port_range_max": 2`), 400, "SecurityGroupInvalidProtocolForPort", "=Ports cannot be specified for protocol 47. Ports are only supported for DCCP, SCTP, TCP, UDP, UDPLITE."},
		{"icmp type too big", rule(`, "protocol": "icmp", "port_range_min": 256`), 400, "SecurityGroupInvalidIcmpValue", "=Invalid value for ICMP type (port_range_min) 256. It must be 0 to 255."},
		{"icmp code without type", rule(`, "protocol": "icmp", "port_range_max": 3`), 400, "SecurityGroupMissingIcmpType", "=ICMP code (port-range-max) 3 is provided but ICMP type (port-range-min) is missing."},
		{"unknown protocol", rule(`, "protocol": "tcpp"`), 400, "SecurityGroupRuleInvalidProtocol", "Security group rule protocol tcpp not supported. Only protocol values (None, 'any', 'ah',"},
		{"protocol 300", rule(`, "protocol": 300`), 400, "SecurityGroupRuleInvalidProtocol", "protocol 300 not supported"},
		{"prefix of the other family", rule(`, "ethertype": "IPv6", "remote_ip_prefix": "10.0.0.0/8"`), 400, "SecurityGroupRuleParameterConflict", "=Conflicting value ethertype IPv6 for CIDR 10.0.0.0/8"},
		{"bad prefix", rule(`, "remote_ip_prefix": "10.0.0.0/40"`), 400, "InvalidCIDR", "=Invalid CIDR 10.0.0.0/40 given as IP prefix."},
		{"bad ethertype", rule(`, "ethertype": "IPv5"`), 400, "SecurityGroupRuleInvalidEtherType", "=Security group rule for ethertype 'IPv5' not supported. Allowed values are ['IPv4', 'IPv6']."},
		{"IPv6 protocol on IPv4", rule(`, "protocol": "ipv6-icmp"`), 400, "SecurityGroupEthertypeConflictWithProtocol", "=Invalid ethertype IPv4 for protocol ipv6-icmp."},
		{"prefix and group", rule(`, "remote_ip_prefix": "10.0.0.0/8", "remote_group_id": "` + g.ID + `"`), 400, "SecurityGroupMultipleRemoteEntites", "=Only one of remote_ip_prefix or remote_group_id or remote_address_group_id may be provided."},
		{"unknown remote group", rule(`, "remote_group_id": "nope"`), 404, "SecurityGroupNotFound", "=Security group nope does not exist"},
		{"unknown group", `{"security_group_rule": {"security_group_id": "nope", "direction": "egress"}}`, 404, "SecurityGroupNotFound", "=Security group nope does not exist"},
		{"the default egress rule", `{"security_group_rule": {"security_group_id": "` + g.ID + `", "direction": "egress", "remote_ip_prefix": "0.0.0.0/0"}}`, 409, "SecurityGroupRuleExists", "Rule id is"},
		{"tags", rule(`, "tags": ["x"]`), 400, "HTTPBadRequest", "=Unrecognized attribute(s) 'tags'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := e.do(t, "POST", "/network/v2.0/security-group-rules", tc.body, "X-Auth-Token", tok)
			ne, _ := w.body["NeutronError"].(map[string]any)
			msg, _ := ne["message"].(string)
			exact, isExact := strings.CutPrefix(tc.msg, "=")
			if w.status != tc.status || ne["type"] != tc.typ || (isExact && msg != exact) || (!isExact && !strings.Contains(msg, tc.msg)) {
				t.Errorf("%d %s", w.status, w.raw)
			}
		})
	}
	// Canonical forms: 1-65535 is no range, icmp on IPv6 is ipv6-icmp, an
	// address is a host prefix.
	w := e.do(t, "POST", "/network/v2.0/security-group-rules", rule(`, "protocol": "TCP", "port_range_min": 1, "port_range_max": 65535, "remote_ip_prefix": "192.0.2.7"`), "X-Auth-Token", tok)
	r := w.body["security_group_rule"].(map[string]any)
	if w.status != 201 || r["protocol"] != "tcp" || r["port_range_min"] != nil || r["remote_ip_prefix"] != "192.0.2.7/32" || r["normalized_cidr"] != "192.0.2.7/32" {
		t.Errorf("canonical: %d %s", w.status, w.raw)
	}
	w = e.do(t, "POST", "/network/v2.0/security-group-rules", rule(`, "ethertype": "ipv6", "protocol": "icmp"`), "X-Auth-Token", tok)
	if r := w.body["security_group_rule"].(map[string]any); w.status != 201 || r["protocol"] != "ipv6-icmp" || r["ethertype"] != "IPv6" {
		t.Errorf("icmp on IPv6: %d %s", w.status, w.raw)
	}
	// The project has 4 + 2 + 2 rules now: the quota of 8 is full.
	w = e.do(t, "POST", "/network/v2.0/security-group-rules", rule(`, "protocol": "udp"`), "X-Auth-Token", tok)
	if ne, _ := w.body["NeutronError"].(map[string]any); w.status != 409 || ne["message"] != "Quota exceeded for resources: ['security_group_rule']." {
		t.Errorf("over quota: %d %s", w.status, w.raw)
	}
}
