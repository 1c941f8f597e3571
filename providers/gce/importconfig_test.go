package gce

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/providers"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/importcfg"
)

func importSample(t *testing.T, name string) *importcfg.Result {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "import", name))
	if err != nil {
		t.Fatal(err)
	}
	res, err := ImportConfig(data, importcfg.Options{ClusterName: importcfg.DefaultClusterName})
	if err != nil {
		t.Fatalf("import %s: %v", name, err)
	}
	return res
}

func importString(t *testing.T, conf string) *importcfg.Result {
	t.Helper()
	res, err := ImportConfig([]byte(conf), importcfg.Options{})
	if err != nil {
		t.Fatalf("import %q: %v", conf, err)
	}
	return res
}

func noteKeys(res *importcfg.Result) []string {
	var keys []string
	for _, n := range res.Notes {
		keys = append(keys, n.Key)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// renderAndParse is what import-config does with a result: the rendered
// cloud-config must pass our own validation.
func renderAndParse(t *testing.T, res *importcfg.Result) {
	t.Helper()
	reg := providers.NewRegistry()
	reg.MustRegister(Backend())
	out, err := config.Render("gce", importcfg.DefaultClusterName, res.Section)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	if _, err := config.Parse(out, reg); err != nil {
		t.Errorf("rendered config does not validate: %v\n%s", err, out)
	}
}

// TestImportConfigSamples: each sample's section and the keys it reports.
func TestImportConfigSamples(t *testing.T) {
	for _, tt := range []struct {
		file  string
		want  Section
		notes []string
	}{
		{"full.conf", Section{
			ProjectID: "my-project-123", Region: "europe-west1", NetworkProjectID: "host-project-1",
			NetworkName: "shared-vpc", SubnetworkName: "nodes-ew1", NodeTags: []string{"gke-prod-node", "web"},
			NodeInstancePrefix: "gke-prod-", Endpoint: "https://www.googleapis.com", StackType: "IPV4_IPV6", UpstreamClusterName: "kubernetes",
		}, []string{
			"[global] alpha-features", "[global] container-api-endpoint", "[global] multizone", "[global] node-instance-prefix",
			"[global] regional", "[global] secondary-range-name", "[global] token-body", "[global] token-url",
		}},
		{"typical.conf", Section{
			ProjectID: "my-project-123", Region: "us-central1", NetworkName: "k8s-net", SubnetworkName: "k8s-nodes",
			NodeTags: []string{"k8s-node"}, NodeInstancePrefix: "k8s-node-", UpstreamClusterName: "kubernetes",
		}, []string{"[global] multizone", "[global] node-instance-prefix"}},
		{"unknown-key.conf", Section{
			ProjectID: "my-project-123", Region: "us-central1", NetworkName: "k8s-net", SubnetworkName: "k8s-nodes",
			NodeTags: []string{"k8s-node"}, UpstreamClusterName: "kubernetes",
		}, []string{"[Global] node-tag", "[Global] projectid", "[LoadBalancer]", "[global] multizone"}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			res := importSample(t, tt.file)
			if got := res.Section.(*Section); !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("section\n got %+v\nwant %+v", *got, tt.want)
			}
			if got := noteKeys(res); !slices.Equal(got, tt.notes) {
				t.Errorf("notes %q, want %q", got, tt.notes)
			}
			if res.ClusterID != "" {
				t.Errorf("clusterID %q: gce.conf does not name the cluster", res.ClusterID)
			}
			for _, n := range res.Notes {
				if n.Upstream == "" || n.Instead == "" {
					t.Errorf("note %s says nothing", n)
				}
			}
			renderAndParse(t, res)
		})
	}
}

// TestImportConfigCoversEveryUpstreamKey: every key of upstream's
// [global] (the gcfg tags of upstreamGlobal) is either carried over into
// a field or reported, checked on full.conf, which sets each of them.
func TestImportConfigCoversEveryUpstreamKey(t *testing.T) {
	mapped := map[string]func(*Section) bool{
		"project-id":           func(s *Section) bool { return s.ProjectID == "my-project-123" },
		"network-project-id":   func(s *Section) bool { return s.NetworkProjectID == "host-project-1" },
		"network-name":         func(s *Section) bool { return s.NetworkName == "shared-vpc" },
		"subnetwork-name":      func(s *Section) bool { return s.SubnetworkName == "nodes-ew1" },
		"node-tags":            func(s *Section) bool { return slices.Equal(s.NodeTags, []string{"gke-prod-node", "web"}) },
		"node-instance-prefix": func(s *Section) bool { return s.NodeInstancePrefix == "gke-prod-" },
		"api-endpoint":         func(s *Section) bool { return s.Endpoint == "https://www.googleapis.com" },
		"local-zone":           func(s *Section) bool { return s.Region == "europe-west1" },
		"stack-type":           func(s *Section) bool { return s.StackType == "IPV4_IPV6" },
		// multizone and regional: zones left empty (every zone of the region).
		"multizone": func(s *Section) bool { return len(s.Zones) == 0 },
		"regional":  func(s *Section) bool { return len(s.Zones) == 0 },
	}
	reported := []string{
		"token-url", "token-body", "secondary-range-name", "node-instance-prefix",
		"multizone", "regional", "container-api-endpoint", "alpha-features",
	}
	res := importSample(t, "full.conf")
	s := res.Section.(*Section)
	keys := noteKeys(res)
	ty := reflect.TypeOf(upstreamGlobal{})
	for i := range ty.NumField() {
		key := ty.Field(i).Tag.Get("gcfg")
		check, isMapped := mapped[key]
		isReported := slices.Contains(reported, key)
		if !isMapped && !isReported {
			t.Errorf("upstream key %s is neither mapped nor reported in this test", key)
			continue
		}
		if isMapped && !check(s) {
			t.Errorf("upstream key %s: not carried over (section %+v)", key, *s)
		}
		if got := slices.Contains(keys, "[global] "+key); got != isReported {
			t.Errorf("upstream key %s: reported %v, want %v", key, got, isReported)
		}
	}
}

// TestImportConfigConversions: values upstream takes in forms ours does
// not (URLs, project numbers, the API path in the endpoint), and what
// upstream read from the metadata server.
func TestImportConfigConversions(t *testing.T) {
	const head = "[global]\nproject-id = my-project-123\nlocal-zone = europe-west1-c\nnetwork-name = net\nsubnetwork-name = sub\n"
	for _, tt := range []struct {
		name  string
		conf  string
		check func(*Section) bool
		notes []string
	}{
		{"single zone: local-zone is the only zone", head,
			func(s *Section) bool {
				return s.Region == "europe-west1" && slices.Equal(s.Zones, []string{"europe-west1-c"})
			}, nil},
		{"token-url nil is the Application Default Credentials", head + "token-url = nil\n",
			func(s *Section) bool { return s.CredentialsFile == "" && s.CredentialsJSON == "" }, nil},
		{"stack-type IPV4 is the default", head + "stack-type = IPV4\n", func(s *Section) bool { return s.StackType == "" }, nil},
		{"stack-type IPV6 carried over", head + "stack-type = IPV6\n", func(s *Section) bool { return s.StackType == StackIPv6 }, nil},
		// Upstream compares exactly: "ipv6" ordered IPv4 first there.
		{"stack-type in lower case is reported, IPv4 first as upstream", head + "stack-type = ipv6\n",
			func(s *Section) bool { return s.StackType == "" }, []string{"[global] stack-type"}},
		{"project numbers are reported, not carried over",
			"[global]\nproject-id = 123456789012\nnetwork-project-id = 210987654321\nlocal-zone = europe-west1-c\nnetwork-name = net\nsubnetwork-name = sub\n",
			func(s *Section) bool { return s.ProjectID == "" && s.NetworkProjectID == "" },
			[]string{"[global] network-project-id", "[global] project-id"}},
		{"network URL in another project sets networkProjectID",
			"[global]\nproject-id = my-project-123\nlocal-zone = europe-west1-c\nsubnetwork-name = sub\nnetwork-name = https://www.googleapis.com/compute/v1/projects/host-project-1/global/networks/shared\n",
			func(s *Section) bool { return s.NetworkName == "shared" && s.NetworkProjectID == "host-project-1" },
			[]string{"[global] network-name"}},
		{"network URL against network-project-id",
			head + "network-project-id = host-project-2\nnetwork-name = projects/host-project-1/global/networks/shared\n",
			func(s *Section) bool { return s.NetworkName == "shared" && s.NetworkProjectID == "host-project-2" },
			[]string{"[global] network-name"}},
		{"network URL that is not a network", head + "network-name = projects/p/networks/n\n",
			func(s *Section) bool { return s.NetworkName == "" }, []string{"[global] network-name"}},
		{"subnetwork URL gives the region without local-zone",
			"[global]\nproject-id = my-project-123\nnetwork-name = net\nmultizone = true\nsubnetwork-name = projects/my-project-123/regions/asia-east1/subnetworks/nodes\n",
			func(s *Section) bool {
				return s.SubnetworkName == "nodes" && s.Region == "asia-east1" && len(s.Zones) == 0
			}, []string{"[global] multizone"}},
		{"subnetwork URL in another region than local-zone", head + "subnetwork-name = projects/my-project-123/regions/asia-east1/subnetworks/nodes\n",
			func(s *Section) bool { return s.SubnetworkName == "nodes" && s.Region == "europe-west1" },
			[]string{"[global] subnetwork-name"}},
		{"endpoint: /compute/v1/projects/ stripped", head + "api-endpoint = https://compute.googleapis.com/compute/v1/projects/\n",
			func(s *Section) bool { return s.Endpoint == "https://compute.googleapis.com" }, nil},
		{"endpoint: /compute/beta stripped", head + "api-endpoint = https://psc.example.test/compute/beta\n",
			func(s *Section) bool { return s.Endpoint == "https://psc.example.test" }, nil},
		{"endpoint without the API path", head + "api-endpoint = http://127.0.0.1:8080/\n",
			func(s *Section) bool { return s.Endpoint == "http://127.0.0.1:8080" }, []string{"[global] api-endpoint"}},
		{"endpoint that is not a URL", head + "api-endpoint = compute.googleapis.com\n",
			func(s *Section) bool { return s.Endpoint == "" }, []string{"[global] api-endpoint"}},
		{"endpoint with another API path", head + "api-endpoint = https://x.example.test/compute/v2/\n",
			func(s *Section) bool { return s.Endpoint == "" }, []string{"[global] api-endpoint"}},
		{"nothing from the metadata server", "[global]\n",
			func(s *Section) bool { return reflect.DeepEqual(*s, Section{}) },
			[]string{"[global] local-zone", "[global] network-name", "[global] project-id", "[global] subnetwork-name"}},
		{"multizone without local-zone: set region", "[global]\nproject-id = my-project-123\nnetwork-name = net\nsubnetwork-name = sub\nmultizone = true\n",
			func(s *Section) bool { return s.Region == "" }, []string{"[global] local-zone", "[global] multizone"}},
		{"local-zone that is not a zone", "[global]\nproject-id = my-project-123\nnetwork-name = net\nsubnetwork-name = sub\nlocal-zone = europe\n",
			func(s *Section) bool { return s.Region == "" && len(s.Zones) == 0 }, []string{"[global] local-zone"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := importString(t, tt.conf)
			s := res.Section.(*Section)
			if !tt.check(s) {
				t.Errorf("section %+v", *s)
			}
			if got := noteKeys(res); !slices.Equal(got, tt.notes) {
				t.Errorf("notes %q, want %q", got, tt.notes)
			}
			if s.ProjectID != "" && s.Region != "" && len(tt.notes) == 0 {
				renderAndParse(t, res)
			}
		})
	}
}

// TestImportConfigErrorsNameTheLine: a file gcfg cannot read is an error
// naming the line, for syntax errors and for values of the wrong type.
func TestImportConfigErrorsNameTheLine(t *testing.T) {
	syntax, err := os.ReadFile(filepath.Join("testdata", "import", "syntax-error.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, conf, want string
	}{
		{"missing =", string(syntax), "line 4"},
		{"unterminated quote", "[global]\nproject-id = my-project-123\ntoken-body = \"{secret-7f3a\n", "line 3"},
		{"no section", "project-id = my-project-123\n", "line 1"},
		{"bool that is not one", "[global]\nproject-id = my-project-123\nmultizone = true\n\nregional = maybe\nlocal-zone = europe-west1-b\n", "line 5"},
		{"bool set twice, the second wrong", "[global]\nregional = true\nregional = maybe\n", "line 3"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := ImportConfig([]byte(tt.conf), importcfg.Options{})
			if err == nil {
				t.Fatalf("no error; result %+v", res)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not name %s", err, tt.want)
			}
			if strings.Contains(err.Error(), "secret-7f3a") {
				t.Errorf("error %q holds the token body", err)
			}
		})
	}
}

// TestImportConfigNotesHoldNoValues: Notes name keys, never their values;
// token-url and token-body are credentials.
func TestImportConfigNotesHoldNoValues(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "import", "full.conf"))
	if err != nil {
		t.Fatal(err)
	}
	res := importSample(t, "full.conf")
	for _, line := range strings.Split(string(data), "\n") {
		key, value, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		value = strings.Trim(strings.TrimSpace(value), `"`)
		if value == "true" || value == "IPV4_IPV6" {
			continue // words that also occur in the prose
		}
		for _, n := range res.Notes {
			if strings.Contains(n.String(), value) || strings.Contains(n.String(), "not-a-real-token-body") {
				t.Errorf("note %q holds the value of %s", n, strings.TrimSpace(key))
			}
		}
	}
}
