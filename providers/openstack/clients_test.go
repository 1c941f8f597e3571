package openstack

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	osemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

// emulator starts the OpenStack emulator with its default fixture.
func emulator(t *testing.T) (*osemu.Emulator, *cloudsim.Server) {
	t.Helper()
	emu := osemu.NewDefault(osemu.Config{})
	srv, err := cloudsim.Start(emu)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return emu, srv
}

// TestNewClientsAgainstEmulator: both kinds of credentials authenticate,
// the catalog's endpoints are found, Nova is spoken at the microversion
// that embeds flavors, and wrong credentials stop the start with a 401.
func TestNewClientsAgainstEmulator(t *testing.T) {
	emu, srv := emulator(t)
	fx := emu.Fixture()
	if _, err := emu.Launch(osemu.LaunchSpec{Count: 1, Flavor: "m1.large"}); err != nil {
		t.Fatal(err)
	}
	base := Section{AuthURL: fx.IdentityEndpoint(srv.URL()), Region: fx.Region}
	password := base
	password.Username, password.UserDomainName, password.Password = fx.Username, fx.DomainName, fx.Password
	password.ProjectName, password.ProjectDomainID = fx.ProjectName, fx.DomainID
	appCred := base
	appCred.ApplicationCredentialID, appCred.ApplicationCredentialSecret = fx.AppCredID, fx.AppCredSecret

	for name, s := range map[string]Section{"password": password, "application credential": appCred} {
		c, err := newClients(t.Context(), defaulted(s))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.HasPrefix(c.compute.Endpoint, srv.URL()) || !strings.HasPrefix(c.network.Endpoint, srv.URL()) || !strings.HasPrefix(c.lb.Endpoint, srv.URL()) {
			t.Errorf("%s: endpoints %s %s %s", name, c.compute.Endpoint, c.network.Endpoint, c.lb.Endpoint)
		}
		pages, err := servers.List(c.compute, servers.ListOpts{}).AllPages(t.Context())
		if err != nil {
			t.Fatalf("%s: list servers: %v", name, err)
		}
		list, err := servers.ExtractServers(pages)
		if err != nil || len(list) != 1 || list[0].Flavor["original_name"] != "m1.large" {
			t.Errorf("%s: servers %+v, %v: want one with the embedded flavor m1.large", name, list, err)
		}
	}

	wrong := password
	wrong.Password = "not-the-password"
	_, err := newClients(t.Context(), defaulted(wrong))
	if statusOf(err) != http.StatusUnauthorized || strings.Contains(err.Error(), "not-the-password") {
		t.Errorf("wrong password: %v, want a 401 without the password in it", err)
	}
}
