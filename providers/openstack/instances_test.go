package openstack

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	osemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

func node(name, providerID string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: providerID}}
}

// TestInstanceMetadata: a server found by providerID or, without one, by
// its exact name is described with the upstream providerID, its fixed
// address as InternalIP, its floating IP as ExternalIP, its name as
// Hostname, the embedded flavor's name, its zone and our region.
func TestInstanceMetadata(t *testing.T) {
	env := newTestEnv(t, osemu.Config{}, nil)
	id := env.launch(t, osemu.LaunchSpec{Name: "worker-a", Zone: "az-1", Flavor: "m1.large", PublicIP: true})[0]
	info, _ := env.emu.Server(id)
	in := env.cloud.instances

	for name, n := range map[string]*v1.Node{
		"providerID":        node("whatever", "openstack:///"+id),
		"regional":          node("whatever", "openstack://RegionOne/"+id),
		"name":              node("worker-a", ""),
		"upper-case server": node("worker-a", "openstack:///"+strings.ToUpper(id)),
	} {
		md, err := in.InstanceMetadata(t.Context(), n)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: info.PrivateIP},
			{Type: v1.NodeExternalIP, Address: info.PublicIP},
			{Type: v1.NodeHostName, Address: "worker-a"},
		}
		if md.ProviderID != "openstack:///"+id || md.InstanceType != "m1.large" || md.Zone != "az-1" || md.Region != "RegionOne" ||
			!slices.Equal(md.NodeAddresses, want) {
			t.Errorf("%s: metadata %+v, want addresses %v", name, md, want)
		}
	}

	if _, err := in.InstanceMetadata(t.Context(), node("x", "openstack://RegionTwo/"+id)); err == nil || !strings.Contains(err.Error(), "RegionTwo") {
		t.Errorf("other region: %v, want an error naming it", err)
	}
	if _, err := in.InstanceMetadata(t.Context(), node("no-such-server", "")); err == nil || !strings.Contains(err.Error(), "no server is named") {
		t.Errorf("unknown name: %v", err)
	}
	if calls := env.srv.CallCount("nova:ListServersDetail"); calls != 2 {
		// One listing for all the lookups, one name lookup for the miss.
		t.Errorf("ListServersDetail calls %d, want 2 (%v)", calls, env.srv.Calls())
	}
}

// TestManyNodesOneListing: 300 Nodes initialised at once cost one
// paginated listing, not a call per Node.
func TestManyNodesOneListing(t *testing.T) {
	env := newTestEnv(t, osemu.Config{}, nil)
	ids := env.launch(t, osemu.LaunchSpec{Count: 300, Name: "n"})
	var wg sync.WaitGroup
	errs := make(chan error, len(ids))
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := node(fmt.Sprintf("n-%d", i), "")
			if i%2 == 0 {
				n = node("x", "openstack:///"+id)
			}
			md, err := env.cloud.instances.InstanceMetadata(t.Context(), n)
			if err == nil && md.ProviderID != "openstack:///"+id {
				err = fmt.Errorf("node %d: providerID %s, want server %s", i, md.ProviderID, id)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if calls := env.srv.Calls(); calls["nova:ListServersDetail"] != 1 || calls["nova:GetServer"] != 0 {
		t.Errorf("calls %v, want one ListServersDetail", calls)
	}
}

// TestInstanceGoneOnlyOn404: a deleted server's Node is gone; a stopped
// one is shut down; throttling, server errors and a hang are errors, never
// "gone".
func TestInstanceGoneOnlyOn404(t *testing.T) {
	env := newTestEnv(t, osemu.Config{}, func(s *Section) { s.RequestTimeout = 2e9; s.MaxAttempts = 1 })
	ids := env.launch(t, osemu.LaunchSpec{Count: 3, Name: "w"})
	in := env.cloud.instances
	live, stopped, deleted := node("w-0", "openstack:///"+ids[0]), node("w-1", "openstack:///"+ids[1]), node("w-2", "openstack:///"+ids[2])
	if err := env.emu.Stop(ids[1]); err != nil {
		t.Fatal(err)
	}
	if err := env.emu.Terminate(ids[2]); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		n                  *v1.Node
		exists, isShutdown bool
	}{{live, true, false}, {stopped, true, true}, {deleted, false, false}} {
		ok, err := in.InstanceExists(t.Context(), c.n)
		if err != nil || ok != c.exists {
			t.Errorf("%s exists %v, %v; want %v", c.n.Name, ok, err, c.exists)
		}
		down, err := in.InstanceShutdown(t.Context(), c.n)
		if err != nil || down != c.isShutdown {
			t.Errorf("%s shutdown %v, %v; want %v", c.n.Name, down, err, c.isShutdown)
		}
	}

	for _, f := range []cloudsim.FaultSpec{
		{Op: "nova:*", FailNext: 100},
		{Op: "nova:*", ThrottleNext: 100},
		{Op: "nova:*", Hang: true},
	} {
		// A fresh cloud, so no answer comes from memory.
		c := newCloud(env.s, "kubernetes", env.api, nil)
		env.setFault(t, f)
		for _, n := range []*v1.Node{live, deleted} {
			if ok, err := c.instances.InstanceExists(t.Context(), n); err == nil {
				t.Errorf("fault %+v: %s exists %v with no error", f, n.Name, ok)
			}
		}
		env.srv.ClearFaults()
	}
}

// TestLifecycleChecksBatch: lifecycle checks of many NotReady Nodes cost
// one listing plus a GET of each server the listing lacks (the deleted
// ones, whose 404 is the proof).
func TestLifecycleChecksBatch(t *testing.T) {
	env := newTestEnv(t, osemu.Config{}, nil)
	// More than a name batch (40), so a regression to chunked ID
	// lookups shows as several listings.
	ids := env.launch(t, osemu.LaunchSpec{Count: 60, Name: "w"})
	if err := env.emu.Terminate(ids[:2]...); err != nil {
		t.Fatal(err)
	}
	in := env.cloud.instances
	var wg sync.WaitGroup
	gone := make([]bool, len(ids))
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := in.InstanceExists(t.Context(), node(fmt.Sprint(i), "openstack:///"+id))
			if err != nil {
				t.Error(err)
			}
			gone[i] = !ok
		}()
	}
	wg.Wait()
	for i := range ids {
		if gone[i] != (i < 2) {
			t.Errorf("server %d gone %v", i, gone[i])
		}
	}
	if calls := env.srv.Calls(); calls["nova:ListServersDetail"] != 1 || calls["nova:GetServer"] != 2 {
		t.Errorf("calls %v: want at most a listing and a GET of each deleted server per batch", calls)
	}
}

// TestDuplicateServerNames: a Node without providerID whose name two
// servers share is an error that says to set a providerID, never the
// wrong server.
func TestDuplicateServerNames(t *testing.T) {
	env := newTestEnv(t, osemu.Config{}, nil)
	env.launch(t, osemu.LaunchSpec{Name: "twin"})
	env.launch(t, osemu.LaunchSpec{Name: "twin"})
	_, err := env.cloud.instances.InstanceMetadata(t.Context(), node("twin", ""))
	if err == nil {
		t.Fatal("no error for two servers named twin")
	}
}
