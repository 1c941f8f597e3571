package azure

import (
	"context"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v6"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// testEnv is an emulator served over TLS with real SDK clients pointed at
// it.
type testEnv struct {
	emu     *Emulator
	srv     *cloudsim.Server
	opts    *arm.ClientOptions
	cred    azcore.TokenCredential
	compute *armcompute.ClientFactory
	network *armnetwork.ClientFactory
}

// staticToken is a credential holding one token the emulator issued.
type staticToken struct{ token string }

func (s staticToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: s.token, ExpiresOn: time.Now().Add(time.Hour)}, nil
}

// newTestEnv starts an emulator with cfg and builds armcompute and
// armnetwork client factories that trust its CA and authenticate with a
// token it issued.
func newTestEnv(t *testing.T, cfg Config) *testEnv {
	t.Helper()
	emu := New(cfg)
	srv, err := cloudsim.Start(emu)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	opts := &arm.ClientOptions{ClientOptions: policy.ClientOptions{
		Cloud: cloud.Configuration{
			ActiveDirectoryAuthorityHost: srv.URL() + "/",
			Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
				cloud.ResourceManager: {Endpoint: srv.URL(), Audience: srv.URL()},
			},
		},
		Transport: emu.TestHTTPClient(),
		Retry:     policy.RetryOptions{MaxRetries: 2, RetryDelay: 10 * time.Millisecond, MaxRetryDelay: 50 * time.Millisecond},
	}}
	cred := staticToken{token: emu.IssueToken()}
	sub := emu.Config().SubscriptionID
	cf, err := armcompute.NewClientFactory(sub, cred, opts)
	if err != nil {
		t.Fatal(err)
	}
	nf, err := armnetwork.NewClientFactory(sub, cred, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &testEnv{emu: emu, srv: srv, opts: opts, cred: cred, compute: cf, network: nf}
}
