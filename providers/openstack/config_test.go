package openstack

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/multicloud-ccm/multicloud-ccm/config"
)

// sections serves only the openstack section, as a registry with the
// OpenStack backend compiled in does.
type sections struct{}

func (sections) NewSection(p string) (config.Section, bool) {
	if p != "openstack" {
		return nil, false
	}
	return &Section{}, true
}
func (sections) Compiled() []string { return []string{"openstack"} }

const docHeader = "apiVersion: multicloud-ccm.io/v1alpha1\nkind: CloudConfig\nprovider: openstack\nclusterID: prod-1\nopenstack:\n"

func parse(t *testing.T, section ...string) (*config.CloudConfig, error) {
	t.Helper()
	return config.Parse([]byte(docHeader+"  "+strings.Join(section, "\n  ")+"\n"), sections{})
}

var (
	passwordAuth = []string{
		"authURL: https://keystone.example.com:5000/v3",
		"region: RegionOne",
		"username: ccm",
		"userDomainName: Default",
		"password: hunter2-password",
		"projectName: k8s",
		"projectDomainName: Default",
	}
	appCredAuth = []string{
		"authURL: https://keystone.example.com:5000/v3",
		"region: RegionOne",
		"applicationCredentialID: 0a1b2c3d4e5f40718293a4b5c6d7e8f9",
		"applicationCredentialSecret: app-cred-secret-value",
	}
)

func TestValidConfigs(t *testing.T) {
	for _, tt := range []struct {
		name    string
		section []string
		check   func(t *testing.T, s *Section)
	}{
		{"password by names", passwordAuth, func(t *testing.T, s *Section) {
			lb := s.LoadBalancer
			if lb.Provider != "amphora" || lb.LBMethod != "ROUND_ROBIN" || lb.MonitorDelay != 5*time.Second ||
				lb.MonitorTimeout != 3*time.Second || lb.MonitorMaxRetries != 1 || lb.WaitActiveTimeout != 5*time.Minute {
				t.Errorf("load balancer defaults %+v", lb)
			}
			if s.EndpointType != "public" || s.RequestTimeout != 30*time.Second || s.RoutesEnabled() {
				t.Errorf("defaults: endpointType %q, requestTimeout %v, routes %v", s.EndpointType, s.RequestTimeout, s.RoutesEnabled())
			}
		}},
		{"password by IDs", []string{
			"authURL: http://10.0.0.5:5000/v3", "region: RegionOne",
			"userID: 7d2f0c8e9a1b4c3d8e7f6a5b4c3d2e1f", "password: pw-by-id", "projectID: 0f9e8d7c6b5a49382716a5b4c3d2e1f0",
		}, nil},
		{"application credential by ID", appCredAuth, nil},
		{"application credential by name and owner", []string{
			"authURL: https://keystone.example.com/identity/v3", "region: RegionOne",
			"applicationCredentialName: ccm", "username: ccm", "userDomainID: default", "applicationCredentialSecret: s3cret-app",
		}, nil},
		{"clouds.yaml entry", []string{"cloud: mycloud"}, func(t *testing.T, s *Section) {
			if s.CloudsFile != DefaultCloudsFile || s.EndpointType != "" {
				t.Errorf("cloudsFile %q endpointType %q: want the default file and the entry's interface", s.CloudsFile, s.EndpointType)
			}
		}},
		{"ovn defaults to its only algorithm", append(slices.Clone(appCredAuth), "loadBalancer: {provider: ovn}"), func(t *testing.T, s *Section) {
			if s.LoadBalancer.LBMethod != "SOURCE_IP_PORT" {
				t.Errorf("lbMethod %q", s.LoadBalancer.LBMethod)
			}
		}},
		{"everything set", append(slices.Clone(passwordAuth),
			"caFile: /etc/ssl/openstack-ca.pem",
			"endpointType: internal",
			"loadBalancer:",
			"  floatingNetworkID: 5f0d1e1c-9a4b-4c43-9f57-1d5e3a7b2c10",
			"  floatingSubnetID: 6a1e2f3d-0b5c-4d54-8a68-2e6f4b8c3d21",
			"  subnetID: 7b2f3a4e-1c6d-4e65-9b79-3f7a5c9d4e32",
			"  memberSubnetID: 8c3a4b5f-2d7e-4f76-8c8a-4a8b6d0e5f43",
			"  lbMethod: LEAST_CONNECTIONS",
			"  createMonitor: true",
			"  monitorDelay: 10s",
			"  monitorTimeout: 10s",
			"  monitorMaxRetries: 3",
			"  manageSecurityGroups: true",
			"  waitActiveTimeout: 2m",
			"  monitorMaxRetriesDown: 5",
			"  flavorID: 0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9",
			"  availabilityZone: az-1",
			"  enableIngressHostname: true",
			"  ingressHostnameSuffix: lb.example.com",
			"routes: {routerID: 9d4b5c6a-3e8f-4a87-9d9b-5b9c7e1f6a54}",
		), func(t *testing.T, s *Section) {
			lb := s.LoadBalancer
			if !s.RoutesEnabled() || !lb.CreateMonitor || lb.MonitorMaxRetries != 3 || lb.MonitorMaxRetriesDown != 5 ||
				lb.FlavorID != "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9" || lb.AvailabilityZone != "az-1" ||
				!lb.EnableIngressHostname || lb.IngressHostnameSuffix != "lb.example.com" {
				t.Errorf("section %+v", s)
			}
		}},
		{"floating subnet of the detected network", append(slices.Clone(appCredAuth), "loadBalancer: {floatingSubnetID: 6a1e2f3d-0b5c-4d54-8a68-2e6f4b8c3d21}"), nil},
		{"internal load balancers and node addresses", append(slices.Clone(appCredAuth),
			"loadBalancer: {internalLB: true}",
			"networking:",
			"  publicNetworkNames: [public, ext]",
			"  internalNetworkNames: [nodes]",
			"  addressSortOrder: [10.0.0.0/8, 'fd00::/8']",
			"  ipv6SupportDisabled: true",
		), func(t *testing.T, s *Section) {
			n := s.Networking
			if !s.LoadBalancer.InternalLB || !slices.Equal(n.PublicNetworkNames, []string{"public", "ext"}) || !slices.Equal(n.InternalNetworkNames, []string{"nodes"}) ||
				!slices.Equal(n.AddressSortOrder, []string{"10.0.0.0/8", "fd00::/8"}) || !n.IPv6SupportDisabled {
				t.Errorf("section %+v", s)
			}
		}},
		{"issue 20 defaults", appCredAuth, func(t *testing.T, s *Section) {
			lb := s.LoadBalancer
			if lb.MonitorMaxRetriesDown != 3 || lb.IngressHostnameSuffix != "nip.io" || lb.EnableIngressHostname || lb.FlavorID != "" || lb.AvailabilityZone != "" {
				t.Errorf("load balancer defaults %+v", lb)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parse(t, tt.section...)
			if err != nil {
				t.Fatal(err)
			}
			if tt.check != nil {
				tt.check(t, cfg.Section.(*Section))
			}
		})
	}
}

// TestBadConfigs: each problem is reported with its field path, and every
// problem of a config at once.
func TestBadConfigs(t *testing.T) {
	without := func(base []string, drop ...string) []string {
		var out []string
		for _, l := range base {
			if !slices.ContainsFunc(drop, func(d string) bool { return strings.HasPrefix(l, d+":") }) {
				out = append(out, l)
			}
		}
		return out
	}
	for _, tt := range []struct {
		name    string
		section []string
		want    []string
	}{
		{"no credentials", []string{"authURL: https://keystone.example.com/v3", "region: RegionOne"},
			[]string{"openstack: Required value: credentials: username (or userID) with password, applicationCredentialID (or applicationCredentialName) with applicationCredentialSecret, or cloud"}},
		{"password and application credential", append(slices.Clone(passwordAuth), "applicationCredentialID: 0a1b2c3d4e5f40718293a4b5c6d7e8f9", "applicationCredentialSecret: other-secret-value"),
			[]string{"openstack: Forbidden: password and application credential: set exactly one way to authenticate"}},
		{"password and cloud", append(slices.Clone(passwordAuth), "cloud: mycloud"),
			[]string{"openstack: Forbidden: password and cloud: set exactly one way to authenticate"}},
		{"application credential without secret", without(appCredAuth, "applicationCredentialSecret"),
			[]string{"openstack.applicationCredentialSecret: Required value: the application credential's secret"}},
		{"application credential by name without owner", []string{
			"authURL: https://keystone.example.com/v3", "region: RegionOne", "applicationCredentialName: ccm", "applicationCredentialSecret: owner-less-secret"},
			[]string{"openstack.userID: Required value: applicationCredentialName needs its owner"}},
		{"password without user, project", []string{"authURL: https://keystone.example.com/v3", "region: RegionOne", "password: lonely-password"},
			[]string{"openstack.username: Required value", "openstack.projectName: Required value"}},
		{"username without domain", without(passwordAuth, "userDomainName"),
			[]string{"openstack.userDomainName: Required value: username needs its domain"}},
		{"projectName without domain", without(passwordAuth, "projectDomainName"),
			[]string{"openstack.projectDomainName: Required value: projectName needs its domain"}},
		{"both project name and ID", append(slices.Clone(passwordAuth), "projectID: 0f9e8d7c6b5a49382716a5b4c3d2e1f0"),
			[]string{"openstack.projectID: Forbidden: set projectName or projectID, not both"}},
		{"username and userID, two user domains", append(slices.Clone(passwordAuth), "userID: 7d2f0c8e9a1b4c3d8e7f6a5b4c3d2e1f", "userDomainID: default"),
			[]string{"openstack.userID: Forbidden: set username or userID, not both", "openstack.userDomainID: Forbidden: set userDomainName or userDomainID, not both"}},
		{"application credential by ID and name", append(slices.Clone(appCredAuth), "applicationCredentialName: ccm"),
			[]string{"openstack.applicationCredentialName: Forbidden: set applicationCredentialID or applicationCredentialName, not both"}},
		{"no authURL or region", without(appCredAuth, "authURL", "region"),
			[]string{"openstack.authURL: Required value", "openstack.region: Required value"}},
		{"non-URL authURL", append(without(appCredAuth, "authURL"), "authURL: keystone.example.com:5000"),
			[]string{`openstack.authURL: Invalid value: "keystone.example.com:5000": must be an http(s) URL`}},
		{"unknown provider", append(slices.Clone(appCredAuth), "loadBalancer: {provider: f5}"),
			[]string{`openstack.loadBalancer.provider: Unsupported value: "f5": supported values: "amphora", "amphorav2", "octavia", "ovn"`}},
		{"algorithm the provider lacks", append(slices.Clone(appCredAuth), "loadBalancer: {lbMethod: SOURCE_IP_PORT}"),
			[]string{`openstack.loadBalancer.lbMethod: Unsupported value: "SOURCE_IP_PORT": supported values: "ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP"`}},
		{"bad UUIDs", append(slices.Clone(appCredAuth),
			"loadBalancer: {floatingNetworkID: public, subnetID: 7b2f3a4e1c6d4e659b793f7a5c9d4e32}",
			"routes: {routerID: router1}"),
			[]string{
				`openstack.loadBalancer.floatingNetworkID: Invalid value: "public": must be a UUID`,
				`openstack.loadBalancer.subnetID: Invalid value: "7b2f3a4e1c6d4e659b793f7a5c9d4e32": must be a UUID`,
				`openstack.routes.routerID: Invalid value: "router1": must be a router UUID`,
			}},
		{"networking", append(slices.Clone(appCredAuth),
			"networking:",
			"  publicNetworkNames: [public, ' ', public]",
			"  internalNetworkNames: [public, nodes]",
			"  addressSortOrder: [10.0.0.0/8, 10.0.0.0, 'fd00::/8']"),
			[]string{
				`openstack.networking.publicNetworkNames[1]: Invalid value: " ": must be the name of a Neutron network`,
				`openstack.networking.publicNetworkNames[2]: Duplicate value: "public"`,
				`openstack.networking.internalNetworkNames[0]: Invalid value: "public": is in publicNetworkNames too`,
				`openstack.networking.addressSortOrder[1]: Invalid value: "10.0.0.0": must be a CIDR`,
			}},
		{"monitor timeout over delay", append(slices.Clone(appCredAuth), "loadBalancer: {monitorDelay: 5s, monitorTimeout: 6s, monitorMaxRetries: 11}"),
			[]string{`openstack.loadBalancer.monitorTimeout: Invalid value: "6s"`, `openstack.loadBalancer.monitorMaxRetries: Invalid value: 11`}},
		{"issue 20 settings", append(slices.Clone(appCredAuth),
			"loadBalancer: {monitorMaxRetriesDown: 11, flavorID: small, ingressHostnameSuffix: nip_io}"),
			[]string{
				`openstack.loadBalancer.monitorMaxRetriesDown: Invalid value: 11: must be between 1 and 10`,
				`openstack.loadBalancer.flavorID: Invalid value: "small": must be an Octavia flavor UUID`,
				`openstack.loadBalancer.ingressHostnameSuffix: Invalid value: "nip_io": must be a DNS suffix`,
			}},
		{"flavor and zone with ovn", append(slices.Clone(appCredAuth),
			"loadBalancer: {provider: ovn, flavorID: 0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9, availabilityZone: az-1}"),
			[]string{
				"openstack.loadBalancer.flavorID: Forbidden: the ovn provider has no Octavia flavors",
				"openstack.loadBalancer.availabilityZone: Forbidden: the ovn provider does not support Octavia availability zones",
			}},
		{"unknown endpoint type", append(slices.Clone(appCredAuth), "endpointType: private"),
			[]string{`openstack.endpointType: Unsupported value: "private"`}},
		{"misspelt key", append(slices.Clone(appCredAuth), "auth_url: https://x/v3"),
			[]string{`openstack.auth_url: unknown field "auth_url"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.section...)
			if err == nil {
				t.Fatal("no error")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
			for _, secret := range []string{"hunter2-password", "app-cred-secret-value"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error shows a secret:\n%v", err)
				}
			}
		})
	}
}

// TestSecretsRedacted: passwords and application credential secrets never
// appear in the config's printed forms.
func TestSecretsRedacted(t *testing.T) {
	for _, section := range [][]string{passwordAuth, appCredAuth} {
		cfg, err := parse(t, section...)
		if err != nil {
			t.Fatal(err)
		}
		out, err := cfg.Redacted()
		if err != nil {
			t.Fatal(err)
		}
		for _, printed := range []string{string(out), cfg.String()} {
			if strings.Contains(printed, "hunter2-password") || strings.Contains(printed, "app-cred-secret-value") {
				t.Errorf("secret printed:\n%s", printed)
			}
			if !strings.Contains(printed, config.Redacted) {
				t.Errorf("no %s in:\n%s", config.Redacted, printed)
			}
		}
	}
}
