package azure

import (
	"net/http"
	"net/url"
	"testing"
)

// Private Link Services: a listing is empty, as ARM answers where there
// are none (the upstream Azure CCM lists them at start), and a GET of
// one is ResourceNotFound.
func TestPrivateLinkServicesListEmpty(t *testing.T) {
	env := newTestEnv(t, Config{})
	ctx := nwCtx(t)
	rg := env.emu.Fixture().ResourceGroup
	c := env.network.NewPrivateLinkServicesClient()
	p := c.NewListPager(rg, nil)
	n := 0
	for p.More() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		n += len(page.Value)
	}
	if n != 0 {
		t.Errorf("%d private link services, want none", n)
	}
	all := c.NewListBySubscriptionPager(nil)
	for all.More() {
		if _, err := all.NextPage(ctx); err != nil {
			t.Fatalf("list in the subscription: %v", err)
		}
	}
	_, err := c.Get(ctx, rg, "pls-x", nil)
	nwWantErr(t, err, http.StatusNotFound, "ResourceNotFound")
}

// The api-version the current armnetwork generation sends is served.
func TestNetworkAPIVersionCurrent(t *testing.T) {
	env := newTestEnv(t, Config{})
	tok := env.emu.IssueToken()
	path := env.rgPath() + "/providers/Microsoft.Network/publicIPAddresses"
	if status, body := env.raw(t, http.MethodGet, path, url.Values{"api-version": {"2025-05-01"}}, tok); status != http.StatusOK {
		t.Errorf("api-version 2025-05-01: %d %v", status, body)
	}
}

// GET /subscriptions/{id}/providers/Microsoft.Compute answers the
// provider's registration and types, virtual machines with the zones.
func TestProviderGet(t *testing.T) {
	env := newTestEnv(t, Config{})
	tok := env.emu.IssueToken()
	path := "/subscriptions/" + env.emu.Config().SubscriptionID + "/providers/Microsoft.Compute"
	status, body := env.raw(t, http.MethodGet, path, url.Values{"api-version": {"2021-04-01"}}, tok)
	if status != http.StatusOK || body["namespace"] != "Microsoft.Compute" || body["registrationState"] != "Registered" {
		t.Fatalf("%d %v", status, body)
	}
	var vmZones []any
	for _, rt := range body["resourceTypes"].([]any) {
		m := rt.(map[string]any)
		if m["resourceType"] == "virtualMachines" {
			vmZones = m["zoneMappings"].([]any)[0].(map[string]any)["zones"].([]any)
		}
	}
	if len(vmZones) != 3 {
		t.Errorf("virtual machine zones %v", vmZones)
	}
	if status, body := env.raw(t, http.MethodGet, path, url.Values{"api-version": {"1999-01-01"}}, tok); status != http.StatusBadRequest || errorCode(body) != "InvalidApiVersionParameter" {
		t.Errorf("bogus api-version: %d %v", status, body)
	}
	other := "/subscriptions/" + env.emu.Config().SubscriptionID + "/providers/Microsoft.Nope"
	if status, body := env.raw(t, http.MethodGet, other, url.Values{"api-version": {"2021-04-01"}}, tok); status != http.StatusNotFound || errorCode(body) != "InvalidResourceNamespace" {
		t.Errorf("unknown namespace: %d %v", status, body)
	}
}
