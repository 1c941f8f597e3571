package azure

import (
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
)

// TestPublicIPAddresses: Standard static addresses are allocated once and
// kept across updates; Basic, dynamic Standard, a taken or malformed DNS
// label are refused with the provider's codes.
func TestPublicIPAddresses(t *testing.T) {
	env := newTestEnv(t, Config{})
	f := env.emu.Fixture()
	ctx := nwCtx(t)
	pips := env.network.NewPublicIPAddressesClient()
	pip := env.nwPublicIP(t, f.ResourceGroup, "a", "svc-a")
	p := pip.Properties
	if deref(pip.SKU.Name) != armnetwork.PublicIPAddressSKUNameStandard || deref(pip.SKU.Tier) != armnetwork.PublicIPAddressSKUTierRegional ||
		deref(p.PublicIPAllocationMethod) != armnetwork.IPAllocationMethodStatic || deref(p.IdleTimeoutInMinutes) != 4 || deref(p.ResourceGUID) == "" {
		t.Fatalf("public IP %+v %+v", pip.SKU, p)
	}
	if deref(pip.Type) != "Microsoft.Network/publicIPAddresses" || deref(pip.Location) != "eastus" || deref(pip.Tags["service"]) != "default/web" {
		t.Fatalf("type %s location %s tags %v", deref(pip.Type), deref(pip.Location), pip.Tags)
	}

	// An update (new tags, no address in the body) keeps the address.
	addr := deref(p.IPAddress)
	pip.Tags = map[string]*string{"k": to.Ptr("v")}
	pip.Properties.IPAddress = nil
	poller, err := pips.BeginCreateOrUpdate(ctx, f.ResourceGroup, "a", pip, nil)
	updated := nwDone(t, poller, err).PublicIPAddress
	if deref(updated.Properties.IPAddress) != addr || deref(updated.Tags["k"]) != "v" || deref(updated.Etag) == deref(pip.Etag) {
		t.Fatalf("update: address %s (was %s), tags %v, etag %s", deref(updated.Properties.IPAddress), addr, updated.Tags, deref(updated.Etag))
	}
	b := env.nwPublicIP(t, f.ResourceGroup, "b", "")
	if deref(b.Properties.IPAddress) == addr {
		t.Fatal("two public IPs with one address")
	}

	for _, tc := range []struct {
		name   string
		change func(*armnetwork.PublicIPAddress)
		code   string
	}{
		{"Basic", func(x *armnetwork.PublicIPAddress) { x.SKU = nil }, "IPv4BasicSkuPublicIpCountLimitReached"},
		{"Standard dynamic", func(x *armnetwork.PublicIPAddress) {
			x.Properties.PublicIPAllocationMethod = to.Ptr(armnetwork.IPAllocationMethodDynamic)
		}, "StandardSkuPublicIPAddressesMustBeStatic"},
		{"DNS label taken", func(x *armnetwork.PublicIPAddress) {
			x.Properties.DNSSettings = &armnetwork.PublicIPAddressDNSSettings{DomainNameLabel: to.Ptr("svc-a")}
		}, "DnsRecordInUse"},
		{"DNS label malformed", func(x *armnetwork.PublicIPAddress) {
			x.Properties.DNSSettings = &armnetwork.PublicIPAddressDNSSettings{DomainNameLabel: to.Ptr("Svc_A")}
		}, "InvalidDomainNameLabel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := armnetwork.PublicIPAddress{
				Location: to.Ptr(f.Location),
				SKU:      &armnetwork.PublicIPAddressSKU{Name: to.Ptr(armnetwork.PublicIPAddressSKUNameStandard)},
				Properties: &armnetwork.PublicIPAddressPropertiesFormat{
					PublicIPAllocationMethod: to.Ptr(armnetwork.IPAllocationMethodStatic),
				},
			}
			tc.change(&x)
			poller, err := pips.BeginCreateOrUpdate(ctx, f.ResourceGroup, "c", x, nil)
			nwWantErr(t, nwErr(t, poller, err), http.StatusBadRequest, tc.code)
		})
	}

	// A user's own address, made outside the API.
	id, addr, err := env.emu.CreatePublicIP(f.ResourceGroup, "user-ip", map[string]string{"owner": "me"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := pips.Get(ctx, f.ResourceGroup, "user-ip", nil)
	if err != nil || deref(got.ID) != id || deref(got.Properties.IPAddress) != addr || deref(got.Tags["owner"]) != "me" {
		t.Fatalf("user IP %v: %+v", err, got)
	}
	if _, _, err := env.emu.CreatePublicIP("no-such-rg", "x", nil); err == nil {
		t.Fatal("public IP in a missing resource group")
	}
	_, err = pips.Get(ctx, f.ResourceGroup, "nope", nil)
	nwWantErr(t, err, http.StatusNotFound, "ResourceNotFound")
}
