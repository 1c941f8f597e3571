package azure

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestCoreServesThroughSDK checks the generic half: TLS, the kind table,
// an empty list through a real client.
func TestCoreServesThroughSDK(t *testing.T) {
	env := newTestEnv(t, Config{})
	ctx := context.Background()

	// TLS: the endpoint is https and its certificate is the emulator's
	// own, so a client that does not trust emu.CAPEM() is refused.
	if !strings.HasPrefix(env.srv.URL(), "https://") {
		t.Fatalf("emulator served at %s, want https", env.srv.URL())
	}
	resp, err := http.Get(env.srv.URL() + env.rgPath() + "/providers/Microsoft.Network/loadBalancers?api-version=2024-05-01")
	if err == nil {
		_ = resp.Body.Close()
		t.Fatal("a client without the emulator's CA was served")
	}
	var verr *tls.CertificateVerificationError
	if !errors.As(err, &verr) {
		t.Fatalf("untrusted client: %v, want a certificate verification error", err)
	}

	// An empty list through the real SDK: one page, no items, counted
	// under the REST specification's operationId.
	pages := allPages(t, env.network.NewLoadBalancersClient().NewListPager(env.emu.Fixture().ResourceGroup, nil))
	items := 0
	for _, p := range pages {
		items += len(p.Value)
	}
	if len(pages) != 1 || items != 0 {
		t.Fatalf("empty LoadBalancers_List: %d items in %d pages, want 0 in 1", items, len(pages))
	}
	if n := env.srv.CallCount("network:LoadBalancers_List"); n != 1 {
		t.Fatalf("network:LoadBalancers_List counted %d times, want 1", n)
	}
	_, err = env.compute.NewVirtualMachinesClient().Get(ctx, env.emu.Fixture().ResourceGroup, "absent", nil)
	wantARMError(t, err, http.StatusNotFound, "ResourceNotFound")

	// The kind table: a type no kind registered is InvalidResourceType,
	// a registered type at an api-version it does not list is
	// NoRegisteredProviderFound.
	token := env.emu.IssueToken()
	code, body := env.raw(t, http.MethodGet, env.rgPath()+"/providers/Microsoft.Network/noSuchThings", url.Values{"api-version": {"2024-05-01"}}, token)
	if code != http.StatusNotFound || errorCode(body) != "InvalidResourceType" {
		t.Fatalf("unknown type: %d %v, want 404 InvalidResourceType", code, body)
	}
	code, body = env.raw(t, http.MethodGet, env.rgPath()+"/providers/Microsoft.Network/loadBalancers", url.Values{"api-version": {"1999-01-01"}}, token)
	if code != http.StatusBadRequest || errorCode(body) != "NoRegisteredProviderFound" {
		t.Fatalf("unknown api-version: %d %v, want 400 NoRegisteredProviderFound", code, body)
	}
}
