package openstack

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/gcfg.v1"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/providers"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/importcfg"
)

func readSample(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "import", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func importSample(t *testing.T, name string) *importcfg.Result {
	t.Helper()
	res, err := ImportConfig(readSample(t, name), importcfg.Options{ClusterName: importcfg.DefaultClusterName})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func noteKeys(res *importcfg.Result) []string {
	keys := make([]string, 0, len(res.Notes))
	for _, n := range res.Notes {
		keys = append(keys, n.Key)
	}
	return keys
}

// upstreamKeys lists every key upstreamConfig declares, as "[Section] key"
// ("[LoadBalancerClass] key" for the class sections' keys).
func upstreamKeys() []string {
	var keys []string
	cfg := reflect.TypeFor[upstreamConfig]()
	for i := range cfg.NumField() {
		sect := cfg.Field(i)
		t := sect.Type
		if t.Kind() == reflect.Map {
			t = t.Elem().Elem()
		}
		for j := range t.NumField() {
			keys = append(keys, "["+sect.Name+"] "+t.Field(j).Tag.Get("gcfg"))
		}
	}
	return keys
}

// TestImportConfigFullSample reads a cloud.conf that sets every upstream
// key and checks each one is carried into a field or reported.
func TestImportConfigFullSample(t *testing.T) {
	// The sample sets every key upstreamConfig declares.
	var up upstreamConfig
	if err := gcfg.FatalOnly(gcfg.ReadStringInto(&up, string(readSample(t, "full.conf")))); err != nil {
		t.Fatal(err)
	}
	class := up.LoadBalancerClass["full-class"]
	if class == nil {
		t.Fatal(`full.conf has no [LoadBalancerClass "full-class"]`)
	}
	for _, v := range []reflect.Value{reflect.ValueOf(up.Global), reflect.ValueOf(up.LoadBalancer), reflect.ValueOf(*class),
		reflect.ValueOf(up.Route), reflect.ValueOf(up.Metadata), reflect.ValueOf(up.Networking)} {
		for i := range v.NumField() {
			if v.Field(i).IsZero() {
				t.Errorf("full.conf does not set %s %s", v.Type().Name(), v.Type().Field(i).Tag.Get("gcfg"))
			}
		}
	}

	res := importSample(t, "full.conf")
	s := res.Section.(*Section)
	field := func(get func(*Section) any, want any) outcome { return outcome{get: get, want: want} }
	noted := outcome{noted: true}
	// Every upstream key, and where it went. With use-clouds, the
	// credential keys override the clouds.yaml entry upstream; here they
	// are reported (TestImportConfigCredentials maps them without it).
	want := map[string]outcome{
		"[Global] auth-url":                      noted,
		"[Global] user-id":                       noted,
		"[Global] username":                      noted,
		"[Global] password":                      noted,
		"[Global] tenant-id":                     noted,
		"[Global] tenant-name":                   noted,
		"[Global] trust-id":                      noted,
		"[Global] trustee-id":                    noted,
		"[Global] trustee-password":              noted,
		"[Global] domain-id":                     noted,
		"[Global] domain-name":                   noted,
		"[Global] tenant-domain-id":              noted,
		"[Global] tenant-domain-name":            noted,
		"[Global] user-domain-id":                noted,
		"[Global] user-domain-name":              noted,
		"[Global] region":                        field(func(s *Section) any { return s.Region }, "RegionFull"),
		"[Global] os-endpoint-type":              field(func(s *Section) any { return s.EndpointType }, "internal"),
		"[Global] ca-file":                       field(func(s *Section) any { return s.CAFile }, "/etc/kubernetes/openstack-ca.pem"),
		"[Global] tls-insecure":                  noted,
		"[Global] token":                         noted,
		"[Global] cert-file":                     noted,
		"[Global] key-file":                      noted,
		"[Global] cafilecontents":                {noted: true, noteKey: "[Global] CAFileContents"},
		"[Global] use-clouds":                    field(func(s *Section) any { return s.Cloud }, "full-cloud-entry"),
		"[Global] clouds-file":                   field(func(s *Section) any { return s.CloudsFile }, "/etc/kubernetes/full-clouds.yaml"),
		"[Global] cloud":                         field(func(s *Section) any { return s.Cloud }, "full-cloud-entry"),
		"[Global] application-credential-id":     noted,
		"[Global] application-credential-name":   noted,
		"[Global] application-credential-secret": noted,

		"[LoadBalancer] enabled":              noted,
		"[LoadBalancer] lb-version":           noted,
		"[LoadBalancer] subnet-id":            field(func(s *Section) any { return s.LoadBalancer.SubnetID }, "8e3d4c5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f"),
		"[LoadBalancer] member-subnet-id":     field(func(s *Section) any { return s.LoadBalancer.MemberSubnetID }, "9f4e5d6a-7b8c-4d9e-8f0a-2b3c4d5e6f7a"),
		"[LoadBalancer] network-id":           field(func(s *Section) any { return s.LoadBalancer.NetworkID }, "af5f6e7b-8c9d-4e0f-9a1b-3c4d5e6f7a8b"),
		"[LoadBalancer] floating-network-id":  field(func(s *Section) any { return s.LoadBalancer.FloatingNetworkID }, "6c1b2a3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"),
		"[LoadBalancer] floating-subnet-id":   field(func(s *Section) any { return s.LoadBalancer.FloatingSubnetID }, "7d2c3b4e-5f6a-4b7c-8d9e-0f1a2b3c4d5e"),
		"[LoadBalancer] floating-subnet":      noted,
		"[LoadBalancer] floating-subnet-tags": noted,
		"[LoadBalancer] lb-method":            field(func(s *Section) any { return s.LoadBalancer.LBMethod }, "LEAST_CONNECTIONS"),
		// f5 is not a provider here: carried over (validation names
		// it) and reported.
		"[LoadBalancer] lb-provider":              {get: func(s *Section) any { return s.LoadBalancer.Provider }, want: "f5", noted: true},
		"[LoadBalancer] create-monitor":           field(func(s *Section) any { return s.LoadBalancer.CreateMonitor }, true),
		"[LoadBalancer] monitor-delay":            field(func(s *Section) any { return s.LoadBalancer.MonitorDelay }, 7*time.Second),
		"[LoadBalancer] monitor-timeout":          field(func(s *Section) any { return s.LoadBalancer.MonitorTimeout }, 4*time.Second),
		"[LoadBalancer] monitor-max-retries":      field(func(s *Section) any { return s.LoadBalancer.MonitorMaxRetries }, 4),
		"[LoadBalancer] monitor-max-retries-down": field(func(s *Section) any { return s.LoadBalancer.MonitorMaxRetriesDown }, 5),
		"[LoadBalancer] manage-security-groups":   {get: func(s *Section) any { return s.LoadBalancer.ManageSecurityGroups }, want: true, noted: true},
		"[LoadBalancer] internal-lb":              field(func(s *Section) any { return s.LoadBalancer.InternalLB }, true),
		"[LoadBalancer] node-selector":            noted,
		"[LoadBalancer] cascade-delete":           noted,
		// Not a UUID: carried over (validation names it) and reported.
		"[LoadBalancer] flavor-id":                          {get: func(s *Section) any { return s.LoadBalancer.FlavorID }, want: "full-flavor-id-0006", noted: true},
		"[LoadBalancer] availability-zone":                  field(func(s *Section) any { return s.LoadBalancer.AvailabilityZone }, "full-az"),
		"[LoadBalancer] enable-ingress-hostname":            field(func(s *Section) any { return s.LoadBalancer.EnableIngressHostname }, true),
		"[LoadBalancer] ingress-hostname-suffix":            field(func(s *Section) any { return s.LoadBalancer.IngressHostnameSuffix }, "full.example.net"),
		"[LoadBalancer] max-shared-lb":                      field(func(s *Section) any { return s.LoadBalancer.MaxSharedLB }, 3),
		"[LoadBalancer] container-store":                    noted,
		"[LoadBalancer] provider-requires-serial-api-calls": noted,
		"[LoadBalancer] default-tls-container-ref":          noted,

		"[LoadBalancerClass] floating-network-id":  {noted: true, noteKey: `[LoadBalancerClass "full-class"]`},
		"[LoadBalancerClass] floating-subnet-id":   {noted: true, noteKey: `[LoadBalancerClass "full-class"]`},
		"[LoadBalancerClass] floating-subnet":      {noted: true, noteKey: `[LoadBalancerClass "full-class"]`},
		"[LoadBalancerClass] floating-subnet-tags": {noted: true, noteKey: `[LoadBalancerClass "full-class"]`},
		"[LoadBalancerClass] network-id":           {noted: true, noteKey: `[LoadBalancerClass "full-class"]`},
		"[LoadBalancerClass] subnet-id":            {noted: true, noteKey: `[LoadBalancerClass "full-class"]`},
		"[LoadBalancerClass] member-subnet-id":     {noted: true, noteKey: `[LoadBalancerClass "full-class"]`},

		"[Route] router-id": field(func(s *Section) any { return s.Routes.RouterID }, "5f0d1e1c-9a4b-4c43-9f57-1d5e3a7b2c10"),

		"[Metadata] search-order":    noted,
		"[Metadata] request-timeout": field(func(s *Section) any { return s.RequestTimeout }, 45*time.Second),

		"[Networking] ipv6-support-disabled": field(func(s *Section) any { return s.Networking.IPv6SupportDisabled }, true),
		"[Networking] public-network-name":   field(func(s *Section) any { return s.Networking.PublicNetworkNames }, []string{"full-public-net", "full-public-net-2"}),
		"[Networking] internal-network-name": field(func(s *Section) any { return s.Networking.InternalNetworkNames }, []string{"full-internal-net"}),
		"[Networking] address-sort-order":    field(func(s *Section) any { return s.Networking.AddressSortOrder }, []string{"10.0.0.0/8", "192.168.0.0/16"}),
	}

	keys := noteKeys(res)
	for _, key := range upstreamKeys() {
		o, ok := want[key]
		if !ok {
			t.Errorf("%s: an upstream key with no expectation in this test", key)
			continue
		}
		delete(want, key)
		if o.get != nil {
			if got := o.get(s); !reflect.DeepEqual(got, o.want) {
				t.Errorf("%s: carried over as %v, want %v", key, got, o.want)
			}
		}
		noteKey := key
		if o.noteKey != "" {
			noteKey = o.noteKey
		}
		if o.noted != slices.Contains(keys, noteKey) {
			t.Errorf("%s: reported = %v, want %v (notes: %q)", key, !o.noted, o.noted, keys)
		}
	}
	for key := range want {
		t.Errorf("%s: expected in this test but not a key of upstreamConfig", key)
	}
	// With use-clouds the credentials stay in the clouds.yaml entry.
	if s.AuthURL != "" || s.Username != "" || s.Password != "" || s.ApplicationCredentialSecret != "" || s.ProjectName != "" {
		t.Errorf("credentials carried over beside a clouds.yaml entry: %+v", s)
	}
	// Every note names a key of the file.
	for _, n := range res.Notes {
		if n.Upstream == "" || n.Instead == "" {
			t.Errorf("note %q says nothing: %+v", n.Key, n)
		}
	}
}

// outcome is where an upstream key went.
type outcome struct {
	// get reads the field the key lands in, which must equal want.
	get  func(*Section) any
	want any
	// noted is whether a Note reports the key, under noteKey if set.
	noted   bool
	noteKey string
}

// TestImportConfigTypical imports the samples people run and checks the
// whole section, the notes, and that the rendered cloud-config validates.
func TestImportConfigTypical(t *testing.T) {
	reg := providers.NewRegistry()
	reg.MustRegister(Backend())
	for _, tt := range []struct {
		file      string
		want      Section
		wantNotes []string
	}{
		{
			file: "password.conf",
			want: Section{
				AuthURL: "https://keystone.example.com:5000/v3", Region: "RegionOne",
				Username: "k8s-ccm", Password: "pw-s3cr3t-value", ProjectName: "k8s-project",
				// domain-name is the user's and the project's domain.
				UserDomainName: "Default", ProjectDomainName: "Default",
				LoadBalancer: LoadBalancerSection{
					FloatingNetworkID: "6c1b2a3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", SubnetID: "8e3d4c5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f",
					LBMethod: "ROUND_ROBIN", CreateMonitor: true, MonitorDelay: 10 * time.Second, MonitorTimeout: 5 * time.Second, MonitorMaxRetries: 3,
				},
				Routes: RoutesSection{RouterID: "5f0d1e1c-9a4b-4c43-9f57-1d5e3a7b2c10"},
			},
		},
		{
			file: "appcred.conf",
			want: Section{
				AuthURL: "https://keystone.example.com:5000/v3", Region: "RegionOne",
				ApplicationCredentialID: "1f2e3d4c5b6a4978a1b2c3d4e5f60718", ApplicationCredentialSecret: "appcred-s3cr3t-value",
				CAFile: "/etc/kubernetes/openstack-ca.pem", EndpointType: "internal",
				LoadBalancer: LoadBalancerSection{Provider: "ovn", LBMethod: "SOURCE_IP_PORT", FloatingNetworkID: "6c1b2a3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"},
			},
			wantNotes: []string{"[Global] tenant-id", "[Metadata] search-order", "[BlockStorage]"},
		},
		{
			file: "clouds.conf",
			want: Section{
				Cloud: "openstack", CloudsFile: "/etc/kubernetes/clouds.yaml", Region: "RegionTwo",
				LoadBalancer: LoadBalancerSection{SubnetID: "8e3d4c5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f"},
			},
			wantNotes: []string{"[LoadBalancer] floating-network-id"},
		},
		{
			// Multi-NIC nodes, internal load balancers by default and
			// the floating network left to detection.
			file: "networking.conf",
			want: Section{
				AuthURL: "https://keystone.example.com:5000/v3", Region: "RegionOne",
				ApplicationCredentialID: "1f2e3d4c5b6a4978a1b2c3d4e5f60718", ApplicationCredentialSecret: "appcred-s3cr3t-value",
				LoadBalancer: LoadBalancerSection{InternalLB: true, SubnetID: "8e3d4c5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f"},
				Networking: NetworkingSection{
					PublicNetworkNames:   []string{"ext-net", "provider-net"},
					InternalNetworkNames: []string{"k8s-nodes"},
					AddressSortOrder:     []string{"10.10.0.0/16", "fd00:10::/64"},
					IPv6SupportDisabled:  true,
				},
			},
			wantNotes: []string{"[Networking] address-sort-order", "[Networking] internal-network-name"},
		},
		{
			file: "unknown.conf",
			want: Section{
				AuthURL: "https://keystone.example.com:5000/v3", Region: "RegionOne",
				UserID: "0c5e1f6f8a3a4d27a1c3b7f2e9d00001", Password: "unknown-pw-s3cr3t", ProjectID: "2a3b4c5d6e7f40819a2b3c4d5e6f7081",
				LoadBalancer: LoadBalancerSection{FloatingNetworkID: "6c1b2a3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"},
			},
			wantNotes: []string{"[Global] usrname", "[LoadBalancer] use-octavia", "[LoadBalancer] node-security-group", "[BlockStorage]", "[Foo]"},
		},
	} {
		t.Run(tt.file, func(t *testing.T) {
			res := importSample(t, tt.file)
			if res.ClusterID != "" {
				t.Errorf("ClusterID %q: a cloud.conf does not name the cluster", res.ClusterID)
			}
			want := tt.want
			if tt.file == "appcred.conf" {
				want.RequestTimeout = 45 * time.Second
			}
			if got := res.Section.(*Section); !reflect.DeepEqual(*got, want) {
				t.Errorf("section\n got %+v\nwant %+v", *got, want)
			}
			if got := noteKeys(res); !slices.Equal(got, tt.wantNotes) {
				t.Errorf("notes %q, want %q", got, tt.wantNotes)
			}
			out, err := config.Render("openstack", importcfg.DefaultClusterName, res.Section)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := config.Parse(out, reg); err != nil {
				t.Errorf("rendered cloud-config does not validate: %v\n%s", err, out)
			}
		})
	}
}

// TestImportConfigCredentials maps the [Global] credential keys without a
// clouds.yaml entry, each to its field.
func TestImportConfigCredentials(t *testing.T) {
	const head = "[Global]\nauth-url = https://keystone.example.com:5000/v3\nregion = RegionOne\n"
	for _, tt := range []struct {
		name      string
		conf      string
		want      Section
		wantNotes []string
	}{
		{
			name: "IDs",
			conf: "user-id = u1\npassword = pw\ntenant-id = p1\n",
			want: Section{UserID: "u1", Password: "pw", ProjectID: "p1"},
		},
		{
			name: "names with their own domains",
			conf: "username = u\nuser-domain-id = ud\npassword = pw\ntenant-name = p\ntenant-domain-name = PD\n",
			want: Section{Username: "u", UserDomainID: "ud", Password: "pw", ProjectName: "p", ProjectDomainName: "PD"},
		},
		{
			name: "domain-id fills both domains",
			conf: "username = u\ndomain-id = d1\npassword = pw\ntenant-name = p\n",
			want: Section{Username: "u", UserDomainID: "d1", Password: "pw", ProjectName: "p", ProjectDomainID: "d1"},
		},
		{
			name: "domain-name fills only the domains left unset",
			conf: "username = u\nuser-domain-id = ud\ndomain-name = D\npassword = pw\ntenant-name = p\ntenant-domain-id = pd\n",
			want: Section{Username: "u", UserDomainID: "ud", Password: "pw", ProjectName: "p", ProjectDomainID: "pd"},
		},
		{
			name: "domain-name and domain-id fill one spelling each",
			conf: "username = u\ndomain-name = D\ndomain-id = d1\npassword = pw\ntenant-name = p\n",
			want: Section{Username: "u", UserDomainName: "D", Password: "pw", ProjectName: "p", ProjectDomainName: "D"},
		},
		{
			name: "application credential by name with its owner",
			conf: "application-credential-name = ac\napplication-credential-secret = acs\nusername = u\ndomain-name = D\n",
			want: Section{ApplicationCredentialName: "ac", ApplicationCredentialSecret: "acs", Username: "u", UserDomainName: "D"},
		},
		{
			name:      "application credential leaves password and project",
			conf:      "application-credential-id = ac1\napplication-credential-secret = acs\npassword = pw\ntenant-name = p\ntenant-domain-name = PD\n",
			want:      Section{ApplicationCredentialID: "ac1", ApplicationCredentialSecret: "acs"},
			wantNotes: []string{"[Global] password", "[Global] tenant-domain-name", "[Global] tenant-name"},
		},
		{
			name:      "cloud without use-clouds",
			conf:      "user-id = u1\npassword = pw\ntenant-id = p1\ncloud = c\nclouds-file = /x/clouds.yaml\n",
			want:      Section{UserID: "u1", Password: "pw", ProjectID: "p1"},
			wantNotes: []string{"[Global] cloud", "[Global] clouds-file"},
		},
		{
			name:      "use-clouds without cloud or clouds-file",
			conf:      "use-clouds = true\n",
			want:      Section{},
			wantNotes: []string{"[Global] auth-url", "[Global] cloud", "[Global] clouds-file"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := ImportConfig([]byte(head+tt.conf), importcfg.Options{})
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			want.Region = "RegionOne"
			if want.Cloud == "" && !strings.Contains(tt.conf, "use-clouds") {
				want.AuthURL = "https://keystone.example.com:5000/v3"
			}
			if got := res.Section.(*Section); !reflect.DeepEqual(*got, want) {
				t.Errorf("section\n got %+v\nwant %+v", *got, want)
			}
			wantNotes := append([]string{}, tt.wantNotes...)
			wantNotes = append(wantNotes, "[LoadBalancer] floating-network-id")
			if got := noteKeys(res); !slices.Equal(got, wantNotes) {
				t.Errorf("notes %q, want %q", got, wantNotes)
			}
		})
	}
}

// TestImportConfigValueDependentNotes: a key whose value is what happens
// here anyway is carried silently; another value is reported.
func TestImportConfigValueDependentNotes(t *testing.T) {
	for _, tt := range []struct {
		section, line string
		noted         bool
	}{
		{"LoadBalancer", "enabled = true", false},
		{"LoadBalancer", "enabled = false", true},
		{"LoadBalancer", "internal-lb = false", false},
		{"LoadBalancer", "internal-lb = true", false}, // carried over
		{"LoadBalancer", "cascade-delete = true", false},
		{"LoadBalancer", "cascade-delete = false", true},
		{"LoadBalancer", "enable-ingress-hostname = false", false},
		{"LoadBalancer", "enable-ingress-hostname", false}, // carried over
		{"LoadBalancer", "flavor-id = 0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9", false},
		{"LoadBalancer", "flavor-id = small", true},
		{"LoadBalancer", "provider-requires-serial-api-calls = false", false},
		{"LoadBalancer", "provider-requires-serial-api-calls = true", true},
		{"LoadBalancer", "monitor-max-retries-down = 3", false},
		{"LoadBalancer", "monitor-max-retries-down = 2", false}, // carried over
		{"LoadBalancer", "manage-security-groups = false", false},
		{"LoadBalancer", "manage-security-groups = true", true},
		{"LoadBalancer", "lb-provider = amphora", false},
		{"LoadBalancer", "lb-provider = octavia-f5", true},
		{"Global", "tls-insecure = false", false},
		{"Global", "tls-insecure = true", true},
		{"Networking", "ipv6-support-disabled = false", false},
		{"Networking", "ipv6-support-disabled = true", false}, // carried over
		{"Networking", "address-sort-order = 10.0.0.0/8,fd00::/8", false},
		{"Networking", "address-sort-order = 10.0.0.0/8, 10.1.0.1", true},
		{"Networking", "internal-network-name = nodes", false},
	} {
		t.Run(tt.line, func(t *testing.T) {
			conf := "[Global]\nregion = R\n[LoadBalancer]\nfloating-network-id = 6c1b2a3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d\n[" + tt.section + "]\n" + tt.line + "\n"
			res, err := ImportConfig([]byte(conf), importcfg.Options{})
			if err != nil {
				t.Fatal(err)
			}
			key := "[" + tt.section + "] " + strings.Fields(tt.line)[0]
			if got := slices.Contains(noteKeys(res), key); got != tt.noted {
				t.Errorf("%s reported = %v, want %v (notes %q)", key, got, tt.noted, noteKeys(res))
			}
		})
	}
}

// TestImportConfigOVNFlavorAndZone: upstream uses no flavor or
// availability zone with the ovn provider, so they are reported, not
// carried over (the section would not validate with them).
func TestImportConfigOVNFlavorAndZone(t *testing.T) {
	conf := "[Global]\nregion = R\n[LoadBalancer]\nfloating-network-id = 6c1b2a3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d\nlb-provider = ovn\n" +
		"flavor-id = 0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9\navailability-zone = az-1\n"
	res, err := ImportConfig([]byte(conf), importcfg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if lb := res.Section.(*Section).LoadBalancer; lb.FlavorID != "" || lb.AvailabilityZone != "" {
		t.Errorf("carried over flavor %q zone %q", lb.FlavorID, lb.AvailabilityZone)
	}
	for _, key := range []string{"[LoadBalancer] flavor-id", "[LoadBalancer] availability-zone"} {
		if !slices.Contains(noteKeys(res), key) {
			t.Errorf("%s not reported (notes %q)", key, noteKeys(res))
		}
	}
}

// TestImportConfigSyntaxErrors: a file gcfg refuses is an error naming the
// line, for syntax and for values alike, and never holding a secret.
func TestImportConfigSyntaxErrors(t *testing.T) {
	for _, tt := range []struct {
		name    string
		conf    string
		line    int
		mention string
	}{
		{"missing =", string(readSample(t, "syntax.conf")), 4, ""},
		{"unclosed section", "; comment\n[Global\nregion = R\n", 2, ""},
		{"key before any section", "region = R\n", 1, ""},
		{"duration without unit", "[Global]\nregion = R\n\n[LoadBalancer]\nmonitor-delay = 5\n", 5, ""},
		{"not a bool", "[LoadBalancer]\nsubnet-id = a\ncreate-monitor = maybe\n", 3, ""},
		{"not a number", "[LoadBalancer]\nmonitor-max-retries = -1\n", 2, ""},
		{"string without value", "[Global]\nregion = R\npassword\n", 3, ""},
		{"unterminated quote in a secret", "[Global]\nregion = R\npassword = \"pw-s3cr3t\nusername = u\n", 3, ""},
		{"bad escape in a secret", "[Global]\npassword = pw-s3cr3t\\q\n", 2, ""},
		{"after a continued line", "[LoadBalancer]\nsubnet-id = a\\\nb\nmonitor-timeout = 3\n", 4, ""},
		{"class value", "[LoadBalancerClass \"c\"]\nsubnet-id = s\nsubnet-id\n", 3, ""},
		// gcfg reads classes in a second pass; the line and the message
		// still go together.
		{"class value before a later error", "[LoadBalancerClass \"c\"]\nsubnet-id\n[LoadBalancer]\nmonitor-delay = 5\n", 2, "subnet-id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ImportConfig([]byte(tt.conf), importcfg.Options{})
			if err == nil {
				t.Fatal("no error")
			}
			want := "line " + strconv.Itoa(tt.line)
			if !strings.HasPrefix(err.Error(), want+":") && !strings.HasPrefix(err.Error(), want+", column ") {
				t.Errorf("error %q does not start with %q", err, want)
			}
			if !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("error %q does not name %s", err, tt.mention)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error holds a secret: %v", err)
			}
		})
	}
}

// TestImportConfigNotesHoldNoValues: no value of any sample, secrets
// above all, appears in a note.
func TestImportConfigNotesHoldNoValues(t *testing.T) {
	for _, file := range []string{"full.conf", "password.conf", "appcred.conf", "clouds.conf", "unknown.conf", "networking.conf"} {
		data := readSample(t, file)
		res := importSample(t, file)
		for _, line := range strings.Split(string(data), "\n") {
			key, value, ok := strings.Cut(line, "=")
			if !ok || strings.HasPrefix(strings.TrimSpace(line), ";") {
				continue
			}
			key, value = strings.TrimSpace(key), strings.Trim(strings.TrimSpace(value), `"`)
			secret := strings.Contains(key, "password") || strings.Contains(key, "secret") || key == "token"
			// Short values are words the notes use too ("true", "v2").
			if !secret && len(value) < 10 {
				continue
			}
			for _, n := range res.Notes {
				if strings.Contains(n.Key+n.Upstream+n.Instead, value) {
					t.Errorf("%s: the note on %s holds the value of %s", file, n.Key, key)
				}
			}
		}
	}
}
