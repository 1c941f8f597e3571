package openstack

import (
	"testing"

	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	osemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

// testEnv is the backend against the OpenStack emulator, through the real
// gophercloud clients.
type testEnv struct {
	emu   *osemu.Emulator
	srv   *cloudsim.Server
	fx    osemu.Fixture
	s     *Section
	api   *clients
	cloud *Cloud
}

// newTestEnv starts an emulator and builds the cloud on it with the
// fixture user's password, after edit has adjusted the section.
func newTestEnv(t *testing.T, cfg osemu.Config, edit func(*Section)) *testEnv {
	t.Helper()
	emu := osemu.NewDefault(cfg)
	srv, err := cloudsim.Start(emu)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	fx := emu.Fixture()
	s := Section{
		AuthURL: fx.IdentityEndpoint(srv.URL()), Region: fx.Region,
		Username: fx.Username, UserDomainName: fx.DomainName, Password: fx.Password,
		ProjectName: fx.ProjectName, ProjectDomainID: fx.DomainID,
	}
	s.LoadBalancer.FloatingNetworkID = fx.ExternalNetworkID
	if edit != nil {
		edit(&s)
	}
	sec := defaulted(s)
	api, err := newClients(t.Context(), sec)
	if err != nil {
		t.Fatal(err)
	}
	srv.ResetCalls()
	return &testEnv{emu: emu, srv: srv, fx: fx, s: sec, api: api, cloud: newCloud(sec, "kubernetes", api, clock.RealClock{})}
}

func (e *testEnv) launch(t *testing.T, spec osemu.LaunchSpec) []string {
	t.Helper()
	ids, err := e.emu.Launch(spec)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func (e *testEnv) setFault(t *testing.T, f cloudsim.FaultSpec) {
	t.Helper()
	if err := e.srv.SetFault(f); err != nil {
		t.Fatal(err)
	}
}
