package gce

import (
	"slices"
	"strings"
	"testing"

	"github.com/multicloud-ccm/multicloud-ccm/config"
)

// sections serves only the gce section, as a registry with the GCE
// backend compiled in does.
type sections struct{}

func (sections) NewSection(p string) (config.Section, bool) {
	if p != "gce" {
		return nil, false
	}
	return &Section{}, true
}
func (sections) Compiled() []string { return []string{"gce"} }

const docHeader = "apiVersion: multicloud-ccm.io/v1alpha1\nkind: CloudConfig\nprovider: gce\nclusterID: prod-1\ngce:\n"

func parse(t *testing.T, section ...string) (*config.CloudConfig, error) {
	t.Helper()
	return config.Parse([]byte(docHeader+"  "+strings.Join(section, "\n  ")+"\n"), sections{})
}

// testKeyMaterial stands in for a service account's private key: it must
// never be printed.
const testKeyMaterial = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC-not-a-real-key"

var base = []string{"projectID: my-project-123", "region: europe-west1"}

func with(lines []string, more ...string) []string { return append(slices.Clone(lines), more...) }

func inlineKey(fields string) string {
	return "credentialsJSON: '{" + fields + "}'"
}

func TestValidConfigs(t *testing.T) {
	for _, tt := range []struct {
		name    string
		section []string
		check   func(*Section) string
	}{
		{"minimal: ADC, default network, every zone", base, func(s *Section) string {
			if s.NetworkProjectID != "my-project-123" || s.NetworkName != "default" || len(s.Zones) != 0 || s.StackType != StackIPv4 {
				return "defaults not applied"
			}
			return ""
		}},
		{"gce.conf keys", with(base, "networkProjectID: host-project-1", "networkName: shared-vpc", "subnetworkName: nodes-ew1",
			"nodeTags: [gke-node, web]", "nodeInstancePrefix: gke-prod-", "zones: [europe-west1-b, europe-west1-c]"), func(s *Section) string {
			if s.NetworkProjectID != "host-project-1" || s.networkURL() != "projects/host-project-1/global/networks/shared-vpc" || !s.managesZone("europe-west1-c") || s.managesZone("europe-west1-d") {
				return "fields not read"
			}
			return ""
		}},
		{"inline service account key", with(base, inlineKey(`"type":"service_account","client_email":"ccm@my-project-123.iam.gserviceaccount.com","private_key":"`+testKeyMaterial+`"`)), nil},
		{"endpoint override", with(base, "endpoint: https://compute-psc.p.googleapis.com"), nil},
		{"IPv6 stack", with(base, "stackType: IPV6"), func(s *Section) string {
			if s.StackType != StackIPv6 {
				return "stackType not read"
			}
			return ""
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parse(t, tt.section...)
			if err != nil {
				t.Fatal(err)
			}
			if tt.check != nil {
				if msg := tt.check(cfg.Section.(*Section)); msg != "" {
					t.Error(msg)
				}
			}
		})
	}
}

func TestBadConfigs(t *testing.T) {
	for _, tt := range []struct {
		name    string
		section []string
		want    []string
	}{
		{"required fields missing", []string{"networkName: default"},
			[]string{"gce.projectID: Required value", "gce.region: Required value"}},
		{"project number instead of ID", []string{"projectID: 123456789012", "region: europe-west1"},
			[]string{`gce.projectID: Invalid value: "123456789012": must be a project ID`}},
		{"zone given as region", []string{"projectID: my-project-123", "region: europe-west1-b"},
			[]string{`gce.region: Invalid value: "europe-west1-b": must be a region such as europe-west1 (not a zone)`}},
		{"zone of another region, duplicate zone", with(base, "zones: [us-central1-a, europe-west1-b, europe-west1-b]"),
			[]string{`gce.zones[0]: Invalid value: "us-central1-a": must be a zone of region europe-west1`, `gce.zones[2]: Duplicate value: "europe-west1-b"`}},
		{"bad network, subnetwork and tag names", with(base, "networkName: My_VPC", "subnetworkName: -nodes", "nodeTags: [Web]", "nodeInstancePrefix: 9nodes"),
			[]string{`gce.networkName: Invalid value: "My_VPC"`, `gce.subnetworkName: Invalid value: "-nodes"`, `gce.nodeTags[0]: Invalid value: "Web"`, `gce.nodeInstancePrefix: Invalid value: "9nodes"`}},
		{"endpoint not a URL", with(base, "endpoint: compute.googleapis.com"),
			[]string{`gce.endpoint: Invalid value: "compute.googleapis.com": must be an http(s) URL`}},
		{"endpoint with the API path", with(base, "endpoint: https://compute.googleapis.com/compute/v1/"),
			[]string{`gce.endpoint: Invalid value: "https://compute.googleapis.com/compute/v1/": must be the base URL without /compute/v1`}},
		{"both credential forms", with(base, "credentialsFile: /etc/gce/key.json",
			inlineKey(`"type":"service_account","client_email":"a@b.iam.gserviceaccount.com","private_key":"`+testKeyMaterial+`"`)),
			[]string{"gce.credentialsJSON: Forbidden: set credentialsFile or credentialsJSON, not both"}},
		{"inline key that is not a service account", with(base, inlineKey(`"type":"authorized_user","client_secret":"`+testKeyMaterial+`"`)),
			[]string{`gce.credentialsJSON: Invalid value: <redacted>: must be a service account key (type "authorized_user"`}},
		{"inline key without its private key", with(base, inlineKey(`"type":"service_account","client_email":"a@b.iam.gserviceaccount.com"`)),
			[]string{`gce.credentialsJSON: Invalid value: <redacted>: service account key lacks private_key`}},
		{"inline key not JSON", with(base, "credentialsJSON: "+testKeyMaterial),
			[]string{`gce.credentialsJSON: Invalid value: <redacted>: must be a service account key in JSON`}},
		{"timeouts out of range", with(base, "requestTimeout: 100ms"),
			[]string{`gce.requestTimeout: Invalid value: "100ms"`}},
		// Upstream's values only, spelt as upstream's (which compares
		// exactly: "ipv6" ordered IPv4 first there).
		{"unknown stack type", with(base, "stackType: ipv6"),
			[]string{`gce.stackType: Unsupported value: "ipv6": supported values: "IPV4", "IPV4_IPV6", "IPV6"`}},
		{"a gce.conf key we do not read", with(base, "multizone: true"),
			[]string{`gce.multizone: unknown field "multizone"`}},
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
			if strings.Contains(err.Error(), testKeyMaterial) {
				t.Errorf("error shows the key:\n%v", err)
			}
		})
	}
}

// TestSecretsRedacted: an inline service account key never appears in
// the config's printed forms.
func TestSecretsRedacted(t *testing.T) {
	cfg, err := parse(t, with(base, inlineKey(`"type":"service_account","client_email":"ccm@my-project-123.iam.gserviceaccount.com","private_key":"`+testKeyMaterial+`"`))...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cfg.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	for _, printed := range []string{string(out), cfg.String()} {
		if strings.Contains(printed, testKeyMaterial) {
			t.Errorf("key printed:\n%s", printed)
		}
		if !strings.Contains(printed, config.Redacted) {
			t.Errorf("no %s in:\n%s", config.Redacted, printed)
		}
	}
}

func TestProviderIDs(t *testing.T) {
	r, err := parseProviderID("gce://service-project-1/europe-west1-b/gke-prod-pool-1-abcd")
	if err != nil || r != (instanceRef{project: "service-project-1", zone: "europe-west1-b", name: "gke-prod-pool-1-abcd"}) {
		t.Fatalf("parse: %+v, %v", r, err)
	}
	if got := r.providerID(); got != "gce://service-project-1/europe-west1-b/gke-prod-pool-1-abcd" {
		t.Errorf("providerID %s", got)
	}
	for _, bad := range []string{"aws:///eu-west-1a/i-0123", "gce://p/z", "gce:///europe-west1-b/node", "gce://my-project-123/europe-west1-b/Node_1"} {
		if _, err := parseProviderID(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestComputeOperationNames(t *testing.T) {
	for _, tt := range []struct{ method, path, want string }{
		{"GET", "/compute/v1/projects/p/zones/europe-west1-b/instances", "instances.list"},
		{"GET", "/compute/v1/projects/p/zones/europe-west1-b/instances/node-1", "instances.get"},
		{"GET", "/compute/v1/projects/p/aggregated/instances", "instances.aggregatedList"},
		{"POST", "/compute/v1/projects/p/regions/europe-west1/forwardingRules", "forwardingRules.insert"},
		{"DELETE", "/compute/v1/projects/p/regions/europe-west1/addresses/a-1", "addresses.delete"},
		{"POST", "/compute/v1/projects/p/regions/europe-west1/targetPools/tp/addInstance", "targetPools.addInstance"},
		{"POST", "/compute/v1/projects/p/zones/europe-west1-b/operations/op-1/wait", "zoneOperations.wait"},
		{"GET", "/compute/v1/projects/p/global/operations/op-1", "globalOperations.get"},
		{"POST", "/compute/v1/projects/p/global/firewalls", "firewalls.insert"},
		{"GET", "/compute/v1/projects/p/zones", "zones.list"},
	} {
		if _, got := computeOperation(tt.method, tt.path); got != tt.want {
			t.Errorf("%s %s = %s, want %s", tt.method, tt.path, got, tt.want)
		}
	}
}
