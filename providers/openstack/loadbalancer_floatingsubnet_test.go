package openstack

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	osemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

func TestParseFloatingSubnetAndNodeSelector(t *testing.T) {
	s := optionsSection(nil)
	for _, tt := range []struct {
		name    string
		ann     map[string]string
		wantErr string
		check   func(t *testing.T, o *lbOptions)
	}{
		{name: "glob", ann: map[string]string{"loadbalancer.openstack.org/floating-subnet": "pub-*"}, check: func(t *testing.T, o *lbOptions) {
			m := o.floatingSubnet
			if m == nil || !m.matchName("pub-a") || m.matchName("xpub-a") || o.floatingSubnetID != "" {
				t.Errorf("matcher %+v, id %q", m, o.floatingSubnetID)
			}
		}},
		{name: "negated regexp", ann: map[string]string{"loadbalancer.openstack.org/floating-subnet": "!~pub-[ab]"}, check: func(t *testing.T, o *lbOptions) {
			if m := o.floatingSubnet; m.matchName("pub-a") || !m.matchName("pub-c") {
				t.Errorf("matcher %+v", m)
			}
		}},
		{name: "bad regexp", ann: map[string]string{"loadbalancer.openstack.org/floating-subnet": "~pub-("}, wantErr: "loadbalancer.openstack.org/floating-subnet"},
		{name: "tags any", ann: map[string]string{"loadbalancer.openstack.org/floating-subnet-tags": "a, b"}, check: func(t *testing.T, o *lbOptions) {
			if got := o.floatingSubnet.listOpts("n"); got.TagsAny != "a,b" || got.NetworkID != "n" {
				t.Errorf("list opts %+v", got)
			}
		}},
		{name: "tags not all", ann: map[string]string{"loadbalancer.openstack.org/floating-subnet-tags": "!&a,b"}, check: func(t *testing.T, o *lbOptions) {
			if got := o.floatingSubnet.listOpts("n"); got.NotTagsAny != "a,b" {
				t.Errorf("list opts %+v", got)
			}
		}},
		{name: "empty tag", ann: map[string]string{"loadbalancer.openstack.org/floating-subnet-tags": "a,,b"}, wantErr: "loadbalancer.openstack.org/floating-subnet-tags"},
		{name: "subnet id takes precedence", ann: map[string]string{
			"loadbalancer.openstack.org/floating-subnet":    "pub-*",
			"loadbalancer.openstack.org/floating-subnet-id": "5f3c1a0e-8f0b-4f1e-9d8a-2b1c3d4e5f60",
		}, check: func(t *testing.T, o *lbOptions) {
			if o.floatingSubnet != nil || o.floatingSubnetID != "5f3c1a0e-8f0b-4f1e-9d8a-2b1c3d4e5f60" {
				t.Errorf("matcher %+v, id %q", o.floatingSubnet, o.floatingSubnetID)
			}
		}},
		{name: "node selector", ann: map[string]string{"loadbalancer.openstack.org/node-selector": "env=prod, example.com/lb ,"}, check: func(t *testing.T, o *lbOptions) {
			if len(o.nodeSelector) != 2 || o.nodeSelector["env"] != "prod" || o.nodeSelector["example.com/lb"] != "" {
				t.Errorf("selector %v", o.nodeSelector)
			}
		}},
		{name: "empty node selector", ann: map[string]string{"loadbalancer.openstack.org/node-selector": " "}, check: func(t *testing.T, o *lbOptions) {
			if o.nodeSelector != nil {
				t.Errorf("selector %v", o.nodeSelector)
			}
		}},
		{name: "bad node selector key", ann: map[string]string{"loadbalancer.openstack.org/node-selector": "=prod"}, wantErr: "loadbalancer.openstack.org/node-selector"},
		{name: "bad node selector value", ann: map[string]string{"loadbalancer.openstack.org/node-selector": "env=a b"}, wantErr: "loadbalancer.openstack.org/node-selector"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			svc := service("web", 80)
			for k, v := range tt.ann {
				svc.Annotations[k] = v
			}
			o, err := parseLBOptions(svc, s)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, o)
		})
	}
}

// floatingSubnets adds two subnets to the fixture's external network:
// pub-a (tag blue) and pub-b (tag green).
func floatingSubnets(t *testing.T, e *lbEnv) map[string]netip.Prefix {
	t.Helper()
	out := map[string]netip.Prefix{}
	for _, sp := range []osemu.SubnetSpec{
		{NetworkID: e.fx.ExternalNetworkID, Name: "pub-a", CIDR: "198.51.100.0/24", Tags: []string{"blue"}},
		{NetworkID: e.fx.ExternalNetworkID, Name: "pub-b", CIDR: "192.0.2.0/24", Tags: []string{"green"}},
	} {
		if _, err := e.emu.AddSubnet(sp); err != nil {
			t.Fatal(err)
		}
		out[sp.Name] = netip.MustParsePrefix(sp.CIDR)
	}
	return out
}

// TestFloatingSubnetAnnotations: the floating IP comes from the subnet
// the name pattern or the tags select, through Neutron's subnet listing.
func TestFloatingSubnetAnnotations(t *testing.T) {
	e := newLBEnv(t, 1, nil)
	cidrs := floatingSubnets(t, e)
	for _, tt := range []struct {
		name, key, value, want string
	}{
		{"by-name", "loadbalancer.openstack.org/floating-subnet", "pub-b", "pub-b"},
		{"by-glob", "loadbalancer.openstack.org/floating-subnet", "*-a", "pub-a"},
		{"by-tag", "loadbalancer.openstack.org/floating-subnet-tags", "green", "pub-b"},
		{"by-all-tags", "loadbalancer.openstack.org/floating-subnet-tags", "&blue", "pub-a"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			svc := service(tt.name, 80)
			svc.Annotations[tt.key] = tt.value
			st, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes)
			if err != nil {
				t.Fatal(err)
			}
			if ip := netip.MustParseAddr(st.Ingress[0].IP); !cidrs[tt.want].Contains(ip) {
				t.Errorf("floating IP %s, want one from %s %s", ip, tt.want, cidrs[tt.want])
			}
		})
	}
	// No match: a clear error naming the annotation, and no floating IP.
	svc := service("nomatch", 80)
	svc.Annotations["loadbalancer.openstack.org/floating-subnet"] = "dmz-*"
	before := len(e.emu.FloatingIPs())
	_, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes)
	if err == nil || !strings.Contains(err.Error(), `loadbalancer.openstack.org/floating-subnet="dmz-*"`) {
		t.Errorf("error %v", err)
	}
	if n := len(e.emu.FloatingIPs()); n != before {
		t.Errorf("floating IPs %d, want %d", n, before)
	}
}

// TestNodeSelector: only the labelled Nodes become members, and a
// changed selector changes the members on the next sync.
func TestNodeSelector(t *testing.T) {
	e := newLBEnv(t, 3, nil)
	e.nodes[0].Labels = map[string]string{"env": "prod", "lb": "yes"}
	e.nodes[1].Labels = map[string]string{"env": "dev", "lb": ""}
	svc := service("web", 80)
	svc.Annotations["loadbalancer.openstack.org/node-selector"] = "env=prod"
	if _, err := e.lb.EnsureLoadBalancer(t.Context(), "", svc, e.nodes); err != nil {
		t.Fatal(err)
	}
	members := func() []string { return memberAddrs(e.lbOf(t, svc).Pools[0]) }
	port := svc.Spec.Ports[0].NodePort
	if got, want := members(), e.wantMembers(e.nodes[:1], port); !slices.Equal(got, want) {
		t.Errorf("members %v, want %v", got, want)
	}
	svc.Annotations["loadbalancer.openstack.org/node-selector"] = "lb"
	if err := e.lb.UpdateLoadBalancer(t.Context(), "", svc, e.nodes); err != nil {
		t.Fatal(err)
	}
	if got, want := members(), e.wantMembers(e.nodes[:2], port); !slices.Equal(got, want) {
		t.Errorf("members %v, want %v", got, want)
	}
	delete(svc.Annotations, "loadbalancer.openstack.org/node-selector")
	if err := e.lb.UpdateLoadBalancer(t.Context(), "", svc, e.nodes); err != nil {
		t.Fatal(err)
	}
	if got, want := members(), e.wantMembers(e.nodes, port); !slices.Equal(got, want) {
		t.Errorf("members %v, want %v", got, want)
	}
}
