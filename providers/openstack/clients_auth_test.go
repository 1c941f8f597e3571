package openstack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func defaulted(s Section) *Section {
	s.SetDefaults()
	return &s
}

func TestResolveAuthFromSection(t *testing.T) {
	a, err := resolveAuth(defaulted(Section{
		AuthURL: "https://keystone.example.com/v3", Region: "RegionOne",
		Username: "ccm", UserDomainName: "Default", Password: "pw-value",
		ProjectName: "k8s", ProjectDomainID: "default", EndpointType: "internal",
	}))
	if err != nil {
		t.Fatal(err)
	}
	o := a.opts
	if o.IdentityEndpoint != "https://keystone.example.com/v3" || o.Username != "ccm" || o.DomainName != "Default" || o.Password != "pw-value" {
		t.Errorf("auth options %+v", o)
	}
	if o.Scope == nil || *o.Scope != (gophercloud.AuthScope{ProjectName: "k8s", DomainID: "default"}) {
		t.Errorf("scope %+v, want project k8s in domain default", o.Scope)
	}
	if a.endpoint.Region != "RegionOne" || a.endpoint.Availability != gophercloud.AvailabilityInternal {
		t.Errorf("endpoint options %+v", a.endpoint)
	}

	a, err = resolveAuth(defaulted(Section{
		AuthURL: "https://keystone.example.com/v3", Region: "RegionOne",
		ApplicationCredentialID: "0a1b2c3d", ApplicationCredentialSecret: "app-secret",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if a.opts.Scope != nil || a.opts.ApplicationCredentialID != "0a1b2c3d" || a.endpoint.Availability != gophercloud.AvailabilityPublic {
		t.Errorf("application credential: %+v %+v: want no scope, public interface", a.opts, a.endpoint)
	}
}

const cloudsYAML = `clouds:
  mycloud:
    auth:
      auth_url: https://keystone.example.com:5000/v3
      username: ccm
      project_name: k8s
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionTwo
    interface: internal
  appcred:
    auth_type: v3applicationcredential
    auth:
      auth_url: https://keystone.example.com:5000/v3
      application_credential_id: 0a1b2c3d
      application_credential_secret: app-secret-from-clouds
    region_name: RegionOne
  noregion:
    auth:
      auth_url: https://keystone.example.com:5000/v3
      application_credential_id: 0a1b2c3d
      application_credential_secret: s3
`

// TestResolveAuthFromCloudsYAML: a clouds.yaml entry with its password in
// secure.yaml beside it, as OpenStack users keep them; section fields
// override the entry; every problem names the field to fix.
func TestResolveAuthFromCloudsYAML(t *testing.T) {
	// The process environment must not leak into the result.
	t.Setenv("OS_CLOUD", "")
	t.Setenv("OS_REGION_NAME", "")
	t.Setenv("OS_INTERFACE", "")
	dir := t.TempDir()
	file := writeFile(t, dir, "clouds.yaml", cloudsYAML)
	writeFile(t, dir, "secure.yaml", "clouds:\n  mycloud:\n    auth:\n      password: pw-from-secure-yaml\n")

	a, err := resolveAuth(defaulted(Section{Cloud: "mycloud", CloudsFile: file}))
	if err != nil {
		t.Fatal(err)
	}
	o := a.opts
	if o.IdentityEndpoint != "https://keystone.example.com:5000/v3" || o.Username != "ccm" || o.Password != "pw-from-secure-yaml" || o.DomainName != "Default" {
		t.Errorf("auth options %+v", o)
	}
	if o.Scope == nil || o.Scope.ProjectName != "k8s" || o.Scope.DomainName != "Default" || o.TenantName != "" {
		t.Errorf("scope %+v tenant %q", o.Scope, o.TenantName)
	}
	if a.endpoint.Region != "RegionTwo" || a.endpoint.Availability != gophercloud.AvailabilityInternal {
		t.Errorf("endpoint options %+v: want the entry's region and interface", a.endpoint)
	}

	a, err = resolveAuth(defaulted(Section{Cloud: "mycloud", CloudsFile: file, Region: "RegionThree", EndpointType: "public"}))
	if err != nil {
		t.Fatal(err)
	}
	if a.endpoint.Region != "RegionThree" || a.endpoint.Availability != gophercloud.AvailabilityPublic {
		t.Errorf("section did not override the entry: %+v", a.endpoint)
	}

	a, err = resolveAuth(defaulted(Section{Cloud: "appcred", CloudsFile: file}))
	if err != nil {
		t.Fatal(err)
	}
	if a.opts.ApplicationCredentialID != "0a1b2c3d" || a.opts.ApplicationCredentialSecret != "app-secret-from-clouds" {
		t.Errorf("application credential entry: %+v", a.opts)
	}

	for _, tt := range []struct {
		name string
		s    Section
		want string
	}{
		{"missing file", Section{Cloud: "mycloud", CloudsFile: filepath.Join(dir, "nope.yaml")}, "openstack.cloudsFile: "},
		{"unknown entry", Section{Cloud: "other", CloudsFile: file}, `openstack.cloud: entry "other" of ` + file + `: cloud "other" not found`},
		{"entry without region", Section{Cloud: "noregion", CloudsFile: file}, "has no region_name; set it there or as openstack.region"},
		{"unreadable CA file", Section{Cloud: "mycloud", CloudsFile: file, CAFile: filepath.Join(dir, "ca.pem")}, "openstack.cloud: "},
	} {
		_, err := resolveAuth(defaulted(tt.s))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want it to contain %q", tt.name, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "pw-from-secure-yaml") {
			t.Errorf("%s: error shows the password: %v", tt.name, err)
		}
	}
}

func TestResolveAuthCAFile(t *testing.T) {
	dir := t.TempDir()
	base := Section{AuthURL: "https://k/v3", Region: "R", ApplicationCredentialID: "a", ApplicationCredentialSecret: "b"}
	s := base
	s.CAFile = writeFile(t, dir, "bad.pem", "not a certificate")
	if _, err := resolveAuth(defaulted(s)); err == nil || !strings.Contains(err.Error(), "openstack.caFile: ") {
		t.Errorf("bad CA file: %v", err)
	}
	s.CAFile = filepath.Join(dir, "missing.pem")
	if _, err := resolveAuth(defaulted(s)); err == nil || !strings.Contains(err.Error(), "openstack.caFile: ") {
		t.Errorf("missing CA file: %v", err)
	}
	a, err := resolveAuth(defaulted(base))
	if err != nil || a.tls == nil || a.tls.RootCAs != nil {
		t.Errorf("no CA file: %+v, %v: want the system roots", a.tls, err)
	}
}
