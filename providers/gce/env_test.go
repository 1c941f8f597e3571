package gce

import (
	"net/http"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/cloudmetrics"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	gceemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/gce"
)

// testEnv is the backend against the Compute Engine emulator, through the
// real REST clients over HTTP.
type testEnv struct {
	emu   *gceemu.Emulator
	srv   *cloudsim.Server
	s     *Section
	api   *clients
	cloud *Cloud
	rec   *cloudmetrics.Recorder
	// clk is the backend's clock: step it past the snapshot's windows.
	clk *clocktesting.FakeClock
}

// newTestEnv starts an emulator and builds the cloud on it, after edit
// has adjusted the section. The emulator does not check credentials, so
// the clients go without: tokens are the credentials tests' business.
func newTestEnv(t *testing.T, cfg gceemu.Config, edit func(*Section)) *testEnv {
	t.Helper()
	emu := gceemu.New(cfg)
	srv, err := cloudsim.Start(emu)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return newTestEnvOn(t, emu, srv, edit)
}

// newTestEnvOn builds the cloud on an emulator already serving at srv
// (the conformance adapter's, whose upstream-shaped parts tests adopt).
func newTestEnvOn(t *testing.T, emu *gceemu.Emulator, srv *cloudsim.Server, edit func(*Section)) *testEnv {
	t.Helper()
	ec := emu.Config()
	fx := emu.Fixture()
	s := &Section{ProjectID: ec.Project, Region: ec.Region, Endpoint: srv.URL(), NetworkName: fx.NetworkName, SubnetworkName: fx.SubnetworkName}
	if edit != nil {
		edit(s)
	}
	s.SetDefaults()
	s.MaxAttempts = 3
	if errs := s.Validate(nil); len(errs) > 0 {
		t.Fatalf("section: %v", errs.ToAggregate())
	}
	rec := cloudmetrics.NewRecorder()
	setup := &clientSetup{
		endpoint: s.Endpoint,
		http:     &http.Client{Transport: &meteredTransport{rec: rec, next: http.DefaultTransport, timeout: s.RequestTimeout}},
		retry:    newRetryPolicy(s.MaxAttempts),
	}
	setup.retry.backoff.Initial, setup.retry.backoff.Max = 10*time.Millisecond, 50*time.Millisecond
	api, err := newClients(t.Context(), setup)
	if err != nil {
		t.Fatal(err)
	}
	zones, err := managedZones(t.Context(), api, s)
	if err != nil {
		t.Fatal(err)
	}
	srv.ResetCalls()
	clk := clocktesting.NewFakeClock(time.Now())
	return &testEnv{emu: emu, srv: srv, s: s, api: api, rec: rec, clk: clk, cloud: newCloud(s, "kubernetes", api, zones, clk)}
}

func (e *testEnv) setFault(t *testing.T, f cloudsim.FaultSpec) {
	t.Helper()
	if err := e.srv.SetFault(f); err != nil {
		t.Fatal(err)
	}
}

// launch makes instances and returns their Nodes as the kubelet registers
// them (named after the instance, no providerID, no addresses).
func (e *testEnv) launch(t *testing.T, specs ...cloudsim.InstanceSpec) []*v1.Node {
	t.Helper()
	var out []*v1.Node
	for _, sp := range specs {
		info, err := e.emu.LaunchInstance(sp)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: info.Name}})
	}
	return out
}
