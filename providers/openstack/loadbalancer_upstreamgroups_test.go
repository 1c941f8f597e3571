package openstack

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	v1 "k8s.io/api/core/v1"

	osemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

// upstreamGroup makes the group the upstream CCM makes for svc with
// manage-security-groups (its name and description, a rule per NodePort
// from the member subnet, plus the extra rules given as "port cidr"),
// and adds it to every node's port, as upstream does.
func (e *lbEnv) upstreamGroup(t *testing.T, svc *v1.Service, desc string, extra ...string) string {
	t.Helper()
	ctx := t.Context()
	g, err := groups.Create(ctx, e.api.network, groups.CreateOpts{Name: upstreamGroupName(svc), Description: desc}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	add := func(port int, cidr string) {
		if err := rules.Create(ctx, e.api.network, rules.CreateOpts{
			Direction: rules.DirIngress, EtherType: rules.EtherType4, SecGroupID: g.ID, Protocol: rules.ProtocolTCP,
			PortRangeMin: port, PortRangeMax: port, RemoteIPPrefix: cidr,
		}).Err; err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range svc.Spec.Ports {
		add(int(p.NodePort), e.fx.SubnetCIDR)
	}
	for _, x := range extra {
		var port int
		var cidr string
		if _, err := fmt.Sscanf(x, "%d %s", &port, &cidr); err != nil {
			t.Fatal(err)
		}
		add(port, cidr)
	}
	for _, n := range e.nodes {
		p := e.nodePort(t, n)
		sgs := append(slices.Clone(p.SecurityGroups), g.ID)
		if err := ports.Update(ctx, e.api.network, p.ID, ports.UpdateOpts{SecurityGroups: &sgs}).Err; err != nil {
			t.Fatal(err)
		}
	}
	return g.ID
}

// nodePort is the node's port on the nodes' network.
func (e *lbEnv) nodePort(t *testing.T, n *v1.Node) osemu.PortInfo {
	t.Helper()
	for _, p := range e.emu.Ports() {
		if p.FixedIP == n.Status.Addresses[0].Address && strings.HasPrefix(p.DeviceOwner, "compute:") {
			return p
		}
	}
	t.Fatalf("no port for %s", n.Name)
	return osemu.PortInfo{}
}

func (e *lbEnv) groupExists(id string) bool {
	_, ok := e.emu.SecurityGroup(id)
	return ok
}

// wantPortGroups checks that every node port carries exactly the groups.
func (e *lbEnv) wantPortGroups(t *testing.T, want ...string) {
	t.Helper()
	for _, n := range e.nodes {
		got := slices.Sorted(slices.Values(e.nodePort(t, n).SecurityGroups))
		if w := slices.Sorted(slices.Values(want)); !slices.Equal(got, w) {
			t.Errorf("port of %s has groups %v, want %v", n.Name, got, w)
		}
	}
}

func (e *lbEnv) memberGroupID() string {
	for _, g := range e.emu.SecurityGroups() {
		if g.Name == memberGroupName("kubernetes") {
			return g.ID
		}
	}
	return ""
}

// TestUpstreamGroupTakenOver: ensuring a Service whose upstream CCM group
// exists makes the manager's rules first, then detaches upstream's group
// from every node port and deletes it (its rule for an old NodePort needs
// no cover); the group is looked for once, not on every sync. A group with
// upstream's name but another cluster's description is left, and so is an
// upstream group admitting traffic the manager's rules do not, until its
// Service is deleted. A Service adopted and deleted with no ensure in
// between loses its group too, and so does one whose group was made
// again after the takeover. The last deletion takes the member group.
func TestUpstreamGroupTakenOver(t *testing.T) {
	e := newLBEnv(t, 3, func(s *Section) { s.LoadBalancer.ManageSecurityGroups = true })
	ctx := t.Context()
	def := e.fx.DefaultSecurityGroupID
	before := e.emu.Resources()

	adopted := service("adopted", 80)
	foreign := service("foreign", 81)
	wider := service("wider", 82)
	unsynced := service("unsynced", 83)
	upAdopted := e.upstreamGroup(t, adopted, upstreamGroupDescription("kubernetes", adopted), "31999 "+e.fx.SubnetCIDR)
	upForeign := e.upstreamGroup(t, foreign, upstreamGroupDescription("other-cluster", foreign))
	upWider := e.upstreamGroup(t, wider, upstreamGroupDescription("kubernetes", wider), fmt.Sprintf("%d 192.0.2.0/24", wider.Spec.Ports[0].NodePort))
	upUnsynced := e.upstreamGroup(t, unsynced, upstreamGroupDescription("kubernetes", unsynced))
	e.srv.ResetCalls()

	if _, err := e.lb.EnsureLoadBalancer(ctx, "", adopted, e.nodes); err != nil {
		t.Fatal(err)
	}
	if e.groupExists(upAdopted) {
		t.Errorf("the adopted Service's upstream group is still there")
	}
	member := e.memberGroupID()
	if member == "" {
		t.Fatal("no member group")
	}
	e.wantPortGroups(t, def, member, upForeign, upWider, upUnsynced)
	calls := e.srv.Calls()
	// One port write per node attaches the member group, one detaches
	// upstream's.
	if got, want := calls["neutron:UpdatePort"], 2*len(e.nodes); got != want {
		t.Errorf("%d port updates, want %d", got, want)
	}
	if got := calls["neutron:DeleteSecurityGroup"]; got != 1 {
		t.Errorf("%d security group deletions, want 1", got)
	}

	e.srv.ResetCalls()
	if _, err := e.lb.EnsureLoadBalancer(ctx, "", adopted, e.nodes); err != nil {
		t.Fatal(err)
	}
	if got := e.srv.Calls()["neutron:ListSecurityGroups"]; got != 0 {
		t.Errorf("a second ensure listed security groups %d times, want 0 (the upstream group is known gone)", got)
	}

	for _, svc := range []*v1.Service{foreign, wider} {
		if _, err := e.lb.EnsureLoadBalancer(ctx, "", svc, e.nodes); err != nil {
			t.Fatal(err)
		}
	}
	if !e.groupExists(upForeign) {
		t.Errorf("a group of another cluster's description was deleted")
	}
	if !e.groupExists(upWider) {
		t.Errorf("an upstream group admitting more than the manager's rules was deleted at an ensure")
	}

	// Adopted, then deleted with no ensure by the manager in between.
	if err := e.lb.EnsureLoadBalancerDeleted(ctx, "", unsynced); err != nil {
		t.Fatal(err)
	}
	if e.groupExists(upUnsynced) {
		t.Errorf("the upstream group of a Service deleted without an ensure is still there")
	}
	// An upstream CCM still running beside this one makes the adopted
	// Service's group again: the Service's deletion removes it anyway.
	reUp := e.upstreamGroup(t, adopted, upstreamGroupDescription("kubernetes", adopted))
	for _, svc := range []*v1.Service{adopted, wider} {
		if err := e.lb.EnsureLoadBalancerDeleted(ctx, "", svc); err != nil {
			t.Fatal(err)
		}
		if e.memberGroupID() == "" {
			t.Fatalf("the member group went while %s still needed it", foreign.Name)
		}
	}
	if e.groupExists(upWider) || e.groupExists(reUp) {
		t.Errorf("an upstream group outlived its Service")
	}
	if err := e.lb.EnsureLoadBalancerDeleted(ctx, "", foreign); err != nil {
		t.Fatal(err)
	}
	if e.memberGroupID() != "" {
		t.Errorf("the member group outlived the last Service")
	}
	if !e.groupExists(upForeign) {
		t.Errorf("a group of another cluster's description was deleted with a Service of the same name")
	}
	e.wantPortGroups(t, def, upForeign)

	// Nothing else is left: only the group made for another cluster.
	if err := detachAndDelete(ctx, e.api.network, upForeign); err != nil {
		t.Fatal(err)
	}
	if after := e.emu.Resources(); !reflect.DeepEqual(after, before) {
		t.Errorf("the cloud changed:\nbefore %v\nafter  %v", before, after)
	}
}

// TestMemberGroupLastDeletionsConcurrent: six Services deleted at once by
// six workers, each with its upstream group still attached, leave exactly
// the cloud as it was before any was made: no member group, no upstream
// group, no rule, ports with only their own groups. No deletion fails.
func TestMemberGroupLastDeletionsConcurrent(t *testing.T) {
	e := newLBEnv(t, 4, func(s *Section) { s.LoadBalancer.ManageSecurityGroups = true })
	ctx := t.Context()
	before := e.emu.Resources()
	var svcs []*v1.Service
	for i := range 6 {
		svc := service(fmt.Sprintf("s%d", i), 80)
		svc.Spec.Ports[0].NodePort = int32(30200 + i)
		e.upstreamGroup(t, svc, upstreamGroupDescription("kubernetes", svc))
		svcs = append(svcs, svc)
	}
	run := func(f func(*v1.Service) error) {
		t.Helper()
		var wg sync.WaitGroup
		for _, svc := range svcs {
			wg.Go(func() {
				retryWhileAsked(t, svc, f)
			})
		}
		wg.Wait()
	}
	// Half are ensured (taking over their upstream group), half are
	// deleted as adopted.
	run(func(svc *v1.Service) error {
		if svc.Name > "s2" {
			return nil
		}
		_, err := e.lb.EnsureLoadBalancer(ctx, "", svc, e.nodes)
		return err
	})
	e.srv.ResetCalls()
	run(func(svc *v1.Service) error { return e.lb.EnsureLoadBalancerDeleted(ctx, "", svc) })
	if after := e.emu.Resources(); !reflect.DeepEqual(after, before) {
		t.Errorf("the cloud changed:\nbefore %v\nafter  %v", before, after)
	}
	e.wantPortGroups(t, e.fx.DefaultSecurityGroupID)
	if got := e.srv.Calls()["neutron:DeleteSecurityGroup"]; got != 4 {
		// The member group once, and the three upstream groups not
		// taken over at an ensure.
		t.Errorf("%d security group deletions, want 4", got)
	}
}
