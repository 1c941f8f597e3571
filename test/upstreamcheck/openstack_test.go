//go:build upstreamcheck

package upstreamcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
	confopenstack "github.com/multicloud-ccm/multicloud-ccm/test/conformance/openstack"
)

// The upstream OpenStack CCM's Service annotation, spelled out.
const osAnnInternal = "service.beta.kubernetes.io/openstack-internal-load-balancer"

// openstackUpstream runs k8s.io/cloud-provider-openstack's
// cmd/openstack-cloud-controller-manager (the version pinned in
// tools/openstack/go.mod) against test/cloudsim/openstack, configured as a
// cluster on OpenStack has it: Keystone password auth, the node subnet, the
// external network for floating IPs, and manage-security-groups on (its
// per-Service groups are what the switch takes over).
type openstackUpstream struct{}

func (openstackUpstream) adapter() conformance.Adapter { return confopenstack.Adapter{} }

// shapes are the kinds of load balancer upstream makes that our tables
// (docs/reference/openstack.md) serve: external (a floating IP) or
// internal, with the variants that change what upstream writes (source
// ranges: the listeners' allowed CIDRs and the group's rules; ETP Local:
// the health monitor on the health check NodePort).
func (openstackUpstream) shapes() []shape {
	local := func(s *corev1.Service) {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}
	src := func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"203.0.113.0/24"} }
	internal := map[string]string{osAnnInternal: "true"}
	return []shape{
		{name: "external"},
		{name: "external-src", mutate: src},
		{name: "external-local", mutate: local},
		{name: "internal", annotations: internal},
	}
}

// duplicateKinds: a second load balancer, listener, pool or floating IP
// for a Service. Security groups are not among them: the switch replaces
// upstream's per-Service groups by the cluster's one member group, and
// upstream makes its own again when it comes back (expectedChange).
func (openstackUpstream) duplicateKinds() []string {
	return []string{cloudsimopenstack.KindLoadBalancer, cloudsimopenstack.KindListener, cloudsimopenstack.KindPool, cloudsimopenstack.KindFloatingIP}
}

// prepare writes upstream's cloud.conf.
func (openstackUpstream) prepare(t *testing.T, c conformance.Cloud, dir string) upstreamSetup {
	t.Helper()
	fx := c.(*confopenstack.Cloud).Fixture()
	var b strings.Builder
	fmt.Fprintf(&b, "[Global]\nauth-url = %s\nregion = %s\nusername = %s\npassword = %s\nuser-domain-name = %s\ntenant-name = %s\ntenant-domain-id = %s\n",
		fx.IdentityEndpoint(c.Server().URL()), fx.Region, fx.Username, fx.Password, fx.DomainName, fx.ProjectName, fx.DomainID)
	fmt.Fprintf(&b, "\n[LoadBalancer]\nsubnet-id = %s\nfloating-network-id = %s\nmanage-security-groups = true\ncreate-monitor = true\n",
		fx.SubnetID, fx.ExternalNetworkID)
	conf := filepath.Join(dir, "cloud.conf")
	if err := os.WriteFile(conf, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return upstreamSetup{
		configFile: conf,
		args:       []string{"--cloud-provider=openstack", "--cluster-name=" + clusterID},
		secrets:    []string{fx.Password},
		importArgs: []string{"--cluster-name=" + clusterID},
		// Upstream's own install grants it more than deploy/'s role
		// (manifests/controller-manager/cloud-controller-manager-roles.yaml).
		widerRBAC: true,
	}
}

// memberGroup is the cluster's member security group this manager makes
// (providers/openstack), by name.
const memberGroup = "k8s-lb-members-" + clusterID

// expectedRemoval: the switch takes over upstream's per-Service groups
// ("lb-sg-<uid>-<namespace>-<name>"): their rules move into the member
// group, then they are detached from the node ports and deleted
// (docs/tutorials/switching-from-upstream.md, "What the switch writes");
// the way back deletes the member group (stepBack).
func (openstackUpstream) expectedRemoval(r cloudsim.Resource, before []cloudsim.Resource) string {
	why := func(group string) string {
		switch {
		case strings.HasPrefix(group, "lb-sg-"):
			return "upstream's per-Service group, taken over into the member group"
		case group == memberGroup:
			return "the member group, deleted by the way back's last step"
		}
		return ""
	}
	switch r.Kind {
	case cloudsimopenstack.KindSecurityGroup:
		return why(r.Name)
	case cloudsimopenstack.KindSecurityGroupRule:
		for _, g := range before {
			if g.Kind == cloudsimopenstack.KindSecurityGroup && g.ID == r.Parent {
				if w := why(g.Name); w != "" {
					return "a rule of " + w
				}
			}
		}
	}
	return ""
}

// stepBack is the guide's last step of the way back, as an operator runs
// it with the openstack CLI once upstream serves every Service again with
// its own per-Service groups: the member group is taken off every port
// (`openstack port unset --security-group k8s-lb-members-<cluster> <port>`)
// and deleted (`openstack security group delete ...`). Upstream never
// knew the group, so it would stay otherwise.
func (openstackUpstream) stepBack(t *testing.T, c conformance.Cloud) {
	t.Helper()
	ctx := t.Context()
	_, netc, err := c.(*confopenstack.Cloud).Clients(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pages, err := groups.List(netc, groups.ListOpts{Name: memberGroup}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := groups.ExtractGroups(pages)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gs {
		pp, err := ports.List(netc, ports.ListOpts{SecurityGroups: []string{g.ID}}).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ps, err := ports.ExtractPorts(pp)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			keep := slices.DeleteFunc(slices.Clone(p.SecurityGroups), func(id string) bool { return id == g.ID })
			if _, err := ports.Update(ctx, netc, p.ID, ports.UpdateOpts{SecurityGroups: &keep}).Extract(); err != nil {
				t.Fatalf("port %s: %v", p.ID, err)
			}
		}
		if err := groups.Delete(ctx, netc, g.ID).ExtractErr(); err != nil {
			t.Fatalf("delete %s: %v", memberGroup, err)
		}
		t.Logf("the way back's last step: %s taken off %d ports and deleted", memberGroup, len(ps))
	}
}
