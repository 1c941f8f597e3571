package azure

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/cloudmetrics"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	azemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/azure"
)

// testEnv is the backend against the Azure emulator, through the real
// azidentity, armcompute and armnetwork clients over TLS.
type testEnv struct {
	emu   *azemu.Emulator
	srv   *cloudsim.Server
	fx    azemu.Fixture
	s     *Section
	api   *clients
	cloud *Cloud
	rec   *cloudmetrics.Recorder
	// clk is the backend's clock: step it past the snapshot's windows.
	clk *clocktesting.FakeClock
}

// startEmulator starts an Azure emulator, stopped at cleanup, writes its
// CA certificate to a file, and returns a section pointed at it with the
// fixture's subscription, group, location and network, without
// credentials.
func startEmulator(t *testing.T, cfg azemu.Config) (*azemu.Emulator, *cloudsim.Server, *Section) {
	t.Helper()
	emu := azemu.New(cfg)
	srv, err := cloudsim.Start(emu)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, emu.CAPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	fx := emu.Fixture()
	return emu, srv, &Section{
		ActiveDirectoryAuthorityHost: srv.URL() + "/", ResourceManagerEndpoint: srv.URL() + "/", CAFile: caFile,
		TenantID: fx.TenantID, SubscriptionID: fx.SubscriptionID, ResourceGroup: fx.ResourceGroup, Location: fx.Location,
		VnetName: fx.VNetName, SubnetName: fx.SubnetName,
	}
}

// newTestEnv starts an emulator and builds the cloud on it with the
// fixture's client secret, after edit has adjusted the section.
func newTestEnv(t *testing.T, cfg azemu.Config, edit func(*Section)) *testEnv {
	t.Helper()
	emu, srv, s := startEmulator(t, cfg)
	fx := emu.Fixture()
	s.AADClientID, s.AADClientSecret, s.SecurityGroupName = fx.ClientID, fx.ClientSecret, fx.SecurityGroupName
	if edit != nil {
		edit(s)
	}
	s.SetDefaults()
	s.MaxAttempts = 3
	if errs := s.Validate(nil); len(errs) > 0 {
		t.Fatalf("section: %v", errs.ToAggregate())
	}
	rec := cloudmetrics.NewRecorder()
	setup, err := newClientSetup(s, rec)
	if err != nil {
		t.Fatal(err)
	}
	setup.retry.RetryDelay = 10e6
	setup.retry.MaxRetryDelay = 50e6
	api, err := newClients(t.Context(), s, setup)
	if err != nil {
		t.Fatal(err)
	}
	srv.ResetCalls()
	clk := clocktesting.NewFakeClock(time.Now())
	return &testEnv{emu: emu, srv: srv, fx: fx, s: s, api: api, rec: rec, clk: clk, cloud: newCloud(s, "kubernetes", api, clk)}
}

func (e *testEnv) setFault(t *testing.T, f cloudsim.FaultSpec) {
	t.Helper()
	if err := e.srv.SetFault(f); err != nil {
		t.Fatal(err)
	}
}

// launch makes VMs and returns their Nodes as the kubelet registers them
// (no providerID, no addresses).
func (e *testEnv) launch(t *testing.T, specs ...azemu.VMSpec) []*v1.Node {
	t.Helper()
	var out []*v1.Node
	for _, sp := range specs {
		vm, err := e.emu.LaunchVM(sp)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: vm.ComputerName}})
	}
	return out
}

// initialized is a Node as the node controller leaves it.
func (e *testEnv) initialized(t *testing.T, n *v1.Node) *v1.Node {
	t.Helper()
	md, err := e.cloud.instances.InstanceMetadata(t.Context(), n)
	if err != nil {
		t.Fatal(err)
	}
	c := n.DeepCopy()
	c.Spec.ProviderID = md.ProviderID
	c.Status.Addresses = md.NodeAddresses
	return c
}
