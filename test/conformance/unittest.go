package conformance

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// StartWithNodes is an adapter's own unit tests' start: its emulator
// (closed at cleanup) and two instances, node-a and node-b where the cloud
// takes a name, in the first two zones.
func StartWithNodes(t testing.TB, a Adapter, opts Options) (Cloud, []Instance) {
	t.Helper()
	c, err := a.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	var insts []Instance
	for i, z := range c.Zones()[:2] {
		in, err := c.Launch(InstanceSpec{NameHint: []string{"node-a", "node-b"}[i], Zone: z})
		if err != nil {
			t.Fatal(err)
		}
		insts = append(insts, in)
	}
	return c, insts
}

// CheckListenerDrift is an adapter's own test of its DriftMaker on a
// Service with listeners on ports 80 and 443 and two backends: DeletePart
// takes the listener of port 80 (the other port and both backends stay),
// then DeleteLoadBalancer leaves nothing of the Service's.
func CheckListenerDrift(t testing.TB, c interface {
	Cloud
	DriftMaker
}, k types.NamespacedName) {
	t.Helper()
	part, err := c.DeletePart(k)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(part, "listener of port 80 ") {
		t.Errorf("deleted %q, want the listener of port 80", part)
	}
	if lbs := c.LoadBalancers(k); len(lbs) != 1 || !slices.Equal(lbs[0].Ports, []int32{443}) || len(lbs[0].Backends) != 2 {
		t.Errorf("after deleting %s: %+v, want one load balancer on 443 with 2 backends", part, lbs)
	}
	if err := c.DeleteLoadBalancer(k); err != nil {
		t.Fatal(err)
	}
	if lbs := c.LoadBalancers(k); len(lbs) != 0 {
		t.Errorf("load balancers left: %+v", lbs)
	}
	if rs := c.ServiceResources(k); len(rs) != 0 {
		t.Errorf("resources left: %+v", rs)
	}
}
