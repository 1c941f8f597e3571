package openstack

import (
	"slices"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	osemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

// TestUpdatePortRetriesOn412: an edit made from a port read before
// someone else changed it is refused with 412 (If-Match), re-read and
// applied again.
func TestUpdatePortRetriesOn412(t *testing.T) {
	env := newTestEnv(t, osemu.Config{}, nil)
	id := env.launch(t, osemu.LaunchSpec{Name: "w"})[0]
	info, _ := env.emu.Server(id)
	stale, err := ports.Get(t.Context(), env.api.network, info.PortID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.emu.BumpRevision("ports", info.PortID); err != nil {
		t.Fatal(err)
	}
	env.srv.ResetCalls()
	wrote, err := updatePort(t.Context(), env.api.network, stale, func(p *ports.Port) (ports.UpdateOpts, bool) {
		pairs := append(slices.Clone(p.AllowedAddressPairs), ports.AddressPair{IPAddress: "10.244.0.0/24"})
		return ports.UpdateOpts{AllowedAddressPairs: &pairs}, true
	})
	if err != nil || !wrote {
		t.Fatalf("updatePort: %v, %v", wrote, err)
	}
	if calls := env.srv.Calls(); calls["neutron:UpdatePort"] != 2 || calls["neutron:GetPort"] != 1 {
		t.Errorf("calls %v: want a 412, a re-read and a second update", calls)
	}
	p, _ := env.emu.Port(info.PortID)
	if len(p.AllowedAddressPairs) != 1 {
		t.Errorf("pairs %+v", p.AllowedAddressPairs)
	}
}
