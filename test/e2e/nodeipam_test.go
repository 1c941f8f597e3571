package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// podCIDRsFromTheCloud is the scenario "pod CIDRs come from the cloud",
// for clouds whose backend has a cloud allocator: the release binary
// runs with the flags the cloud's users run the upstream allocator with
// (GCE: kOps' set), on a fresh emulator. Nodes of each kind get the pod
// CIDRs their cloud holds or allocates; an instance without a range gets
// none and a CIDRNotAvailable Warning; Nodes registered while the
// manager is down get theirs after its restart, and no pod CIDR set
// before changes or is handed out twice.
func podCIDRsFromTheCloud(t *testing.T, cl *cluster, a conformance.Adapter) {
	c, err := a.Start(conformance.Options{ClusterID: "conf-" + a.Name() + "-ipam", Routes: a.Features().Routes, QuickErrors: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	pc, ok := c.(conformance.PodCIDRCloud)
	if !ok {
		t.Skipf("%s has no cloud allocator: kube-controller-manager's range allocator serves", a.Name())
	}
	s := &suiteCloud{cluster: cl, adapter: a, cloud: c, cfg: c.Config()}
	args := pc.PodCIDRArgs()
	s.ccm = s.startCCM(t, "ipam", args...)

	type node struct {
		inst conformance.Instance
		want conformance.PodCIDRWant
	}
	zones := c.Zones()
	launch := func(hint string, kind conformance.PodCIDRKind, zone int) (node, bool) {
		t.Helper()
		inst, want, err := pc.LaunchPodCIDRs(conformance.InstanceSpec{Zone: zones[zone%len(zones)], NameHint: hint}, kind)
		if errors.Is(err, conformance.ErrNoSuchKind) {
			return node{}, false
		}
		if err != nil {
			t.Fatal(err)
		}
		s.registerNode(t, inst.NodeName, "", "")
		return node{inst, want}, true
	}
	check := func(n node) {
		t.Helper()
		if n.want.None {
			poll(t, converge, "a CIDRNotAvailable Warning on node "+n.inst.NodeName, func(ctx context.Context) (bool, string, error) {
				return s.nodeWarning(ctx, n.inst.NodeName, "CIDRNotAvailable")
			})
			got, err := s.getNode(context.Background(), n.inst.NodeName)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Spec.PodCIDRs) != 0 {
				t.Errorf("node %s of an instance without a range got pod CIDRs %v", n.inst.NodeName, got.Spec.PodCIDRs)
			}
			return
		}
		poll(t, converge, "pod CIDRs of node "+n.inst.NodeName, func(ctx context.Context) (bool, string, error) {
			got, err := s.getNode(ctx, n.inst.NodeName)
			if err != nil {
				return false, "", err
			}
			if why := podCIDRsMiss(got, n.want); why != "" {
				return false, why, nil
			}
			return true, "", nil
		})
	}

	var nodes []node
	for i, kind := range []conformance.PodCIDRKind{conformance.PodCIDRsDefault, conformance.PodCIDRsDefault, conformance.PodCIDRsOtherPool, conformance.PodCIDRsNone} {
		if n, ok := launch(fmt.Sprintf("ipam-%d", i), kind, i); ok {
			nodes = append(nodes, n)
		}
	}
	for _, n := range nodes {
		check(n)
	}
	before := map[string][]string{}
	for _, n := range nodes {
		got, err := s.getNode(context.Background(), n.inst.NodeName)
		if err != nil {
			t.Fatal(err)
		}
		before[n.inst.NodeName] = got.Spec.PodCIDRs
	}

	// The manager goes down; Nodes join meanwhile; it comes back.
	s.ccm.stop()
	var late []node
	for i, kind := range []conformance.PodCIDRKind{conformance.PodCIDRsDefault, conformance.PodCIDRsOtherPool} {
		if n, ok := launch(fmt.Sprintf("ipam-late-%d", i), kind, i); ok {
			late = append(late, n)
		}
	}
	s.ccm = s.startCCM(t, "ipam-restarted", args...)
	defer s.ccm.stop()
	for _, n := range late {
		check(n)
	}
	all, err := cl.admin.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var held []netip.Prefix
	owner := map[netip.Prefix]string{}
	for _, n := range all.Items {
		if prev, ok := before[n.Name]; ok && !slices.Equal(prev, n.Spec.PodCIDRs) {
			t.Errorf("node %s's pod CIDRs changed across the restart: %v, then %v", n.Name, prev, n.Spec.PodCIDRs)
		}
		for _, c := range n.Spec.PodCIDRs {
			p := netip.MustParsePrefix(c)
			for _, h := range held {
				if h.Overlaps(p) {
					t.Errorf("node %s's pod CIDR %s overlaps node %s's %s", n.Name, p, owner[h], h)
				}
			}
			held = append(held, p)
			owner[p] = n.Name
		}
	}
	if s.ccm.exited() {
		t.Fatalf("the manager exited: %v", s.ccm.Err())
	}
}

// podCIDRsMiss says how a Node's pod CIDRs miss want; "" when they meet it.
func podCIDRsMiss(n *corev1.Node, want conformance.PodCIDRWant) string {
	got := n.Spec.PodCIDRs
	if len(got) == 0 || n.Spec.PodCIDR != got[0] {
		return fmt.Sprintf("podCIDR %q podCIDRs %v", n.Spec.PodCIDR, got)
	}
	if want.Exact != nil && !slices.Equal(got, want.Exact) {
		return fmt.Sprintf("podCIDRs %v, want %v", got, want.Exact)
	}
	if want.Within != nil {
		if len(got) != len(want.Within) {
			return fmt.Sprintf("podCIDRs %v, want %d within %v", got, len(want.Within), want.Within)
		}
		for i, c := range got {
			p, in := netip.MustParsePrefix(c), netip.MustParsePrefix(want.Within[i])
			if !in.Contains(p.Addr()) || p.Bits() != want.Masks[i] {
				return fmt.Sprintf("podCIDRs %v, want /%v ranges within %v", got, want.Masks, want.Within)
			}
		}
	}
	if want.NetworkAvailable {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeNetworkUnavailable && c.Status == corev1.ConditionFalse {
				return ""
			}
		}
		return fmt.Sprintf("podCIDRs %v but NetworkUnavailable not False: %v", got, n.Status.Conditions)
	}
	return ""
}

// nodeWarning says whether a Warning Event of reason names the Node.
func (s *suiteCloud) nodeWarning(ctx context.Context, name, reason string) (bool, string, error) {
	evs, err := s.admin.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return false, "", err
	}
	var seen []string
	for _, e := range evs.Items {
		if e.Reason == reason && e.Type == corev1.EventTypeWarning {
			return true, "", nil
		}
		seen = append(seen, e.Reason)
	}
	return false, "events: " + strings.Join(seen, ", "), nil
}
