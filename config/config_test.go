package config_test

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/multicloud-ccm/multicloud-ccm/config"
)

// shortSecret is a secret of the wrong length, so that validation reports
// it with field.Invalid (which would normally quote it).
const shortSecret = "s3cr3t-Hunter2-XYZ"

func ptr[T any](v T) *T { return &v }

// lines joins document lines; tests count lines from 1 like the messages.
func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

// header is lines 1-4 of most test documents.
var header = lines(
	"apiVersion: multicloud-ccm.io/v1alpha1",
	"kind: CloudConfig",
	"provider: aws",
	"clusterID: prod-1",
)

// awsDoc is header, then "aws:" on line 5, then section on lines 6...
func awsDoc(section ...string) string {
	return header + lines(append([]string{"aws:"}, section...)...)
}

// withoutProvider is header without its provider line: lines 1-3.
var withoutProvider = lines(
	"apiVersion: multicloud-ccm.io/v1alpha1",
	"kind: CloudConfig",
	"clusterID: prod-1",
)

func TestParseProblems(t *testing.T) {
	const notSet = `provider: Required value`
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		// The document as a whole.
		{"empty", "", []string{
			"the cloud-config is empty; it must be one YAML document holding a mapping",
		}},
		{"only comments", "# nothing here\n", []string{
			"the cloud-config is empty; it must be one YAML document holding a mapping",
		}},
		{"second document", awsDoc("  region: us-east-1") + "---\nfoo: 1\n", []string{
			"only one YAML document is allowed, but another one starts here (line 7)",
		}},
		{"empty second document", awsDoc("  region: us-east-1") + "---\n", []string{
			"only one YAML document is allowed, but another one starts here (line 7)",
		}},
		{"not a mapping", "- a\n- b\n", []string{
			"the cloud-config must be a mapping, got a list (line 1)",
		}},
		{"null document", "~\n", []string{
			"the cloud-config must be a mapping, got null (line 1)",
		}},
		{"syntax error in a flow", "apiVersion: v1\nkind: [CloudConfig\nprovider: aws\n", []string{
			"invalid YAML: did not find expected ',' or ']' (line 2)",
		}},
		{"syntax error in a block", "apiVersion: v1\naws:\n  region: x\n zone: y\n", []string{
			"invalid YAML: did not find expected key (line 4)",
		}},
		{"syntax error on line 1", "a: b: c\n", []string{
			"invalid YAML: mapping values are not allowed in this context (line 1)",
		}},
		{"syntax error on line 3", "a: 1\nb: 2\nc: d: e\n", []string{
			"invalid YAML: mapping values are not allowed in this context (line 3)",
		}},
		{"syntax error in the second document", awsDoc("  region: us-east-1") + "---\n- a\n]\n", []string{
			"invalid YAML: did not find expected '-' indicator (line 8)",
		}},
		{"unknown anchor", "a: *nope\n", []string{
			"invalid YAML: unknown anchor 'nope' referenced",
		}},

		// Unknown and duplicate keys.
		{"unknown top-level key", awsDoc("  region: us-east-1") + "colour: blue\n", []string{
			`colour: unknown field "colour" (line 7)`,
		}},
		{"unknown provider section", awsDoc("  region: us-east-1") + "azurerm:\n  x: 1\n", []string{
			`azurerm: unknown field "azurerm" (line 7)`,
		}},
		{"unknown nested keys", awsDoc(
			"  region: us-east-1",
			"  regoin: us-west-2",
			"  credentials:",
			"    secretKey: abc",
			"  subnets:",
			"  - id: subnet-1",
			"  - id: subnet-2",
			"    zon: a",
		), []string{
			`aws.regoin: unknown field "regoin" (line 7)`,
			`aws.credentials.secretKey: unknown field "secretKey" (line 9)`,
			`aws.subnets[1].zon: unknown field "zon" (line 13)`,
		}},
		{"duplicate keys", header + lines(
			"aws:",
			"  region: us-east-1",
			"  region: us-west-2",
			"provider: gce",
		), []string{
			`aws: duplicate field "region" (first set on line 6) (line 7)`,
			`duplicate field "provider" (first set on line 3) (line 8)`,
		}},
		{"non-string key", awsDoc("  region: us-east-1", "  ? [a]", "  : b"), []string{
			"aws: keys must be strings, got a list (line 7)",
		}},

		// Wrong types. A field that failed to decode is not validated as
		// well: no "aws.region: Required value" after its type problem.
		{"wrong types in section", awsDoc(
			"  region: {name: us-east-1}",
			"  vpcID: [a, b]",
			"  maxRetries: abc",
			"  useFIPS: yes",
			"  timeout: 30",
			"  subnets: {id: subnet-1}",
			"  credentials: [x]",
			"  endpoints: ec2",
			"  tags: {team: [a]}",
		), []string{
			"aws.region: must be a string, got a mapping (line 6)",
			"aws.vpcID: must be a string, got a list (line 7)",
			"aws.maxRetries: must be an integer, got a string (line 8)",
			"aws.useFIPS: must be a boolean (true or false), got a string (line 9)",
			`aws.timeout: must be a duration such as "30s" or "1h30m", got an integer (line 10)`,
			"aws.subnets: must be a list, got a mapping (line 11)",
			"aws.credentials: must be a mapping, got a list (line 12)",
			"aws.endpoints: must be a mapping, got a string (line 13)",
			"aws.tags[team]: must be a string, got a list (line 14)",
		}},
		{"wrong types in list items", awsDoc(
			"  region: us-east-1",
			"  subnets:",
			"  - subnet-1",
			"  - id: {x: 1}",
		), []string{
			"aws.subnets[0]: must be a mapping, got a string (line 8)",
			"aws.subnets[1].id: must be a string, got a mapping (line 9)",
		}},
		{"wrong top-level types", lines(
			"apiVersion: [v1]",
			"kind: {a: b}",
			"provider: [aws]",
			"clusterID: {}",
		), []string{
			"apiVersion: must be a string, got a list (line 1)",
			"kind: must be a string, got a mapping (line 2)",
			"provider: must be a string, got a list (line 3)",
			"clusterID: must be a string, got a mapping (line 4)",
		}},
		{"section not a mapping", header + "aws: [us-east-1]\n", []string{
			"aws: must be a mapping, got a list (line 5)",
		}},
		{"integer out of range", awsDoc("  region: us-east-1", "  maxRetries: 3000000000"), []string{
			"aws.maxRetries: must be an integer from -2147483648 to 2147483647 (line 7)",
		}},
		{"number for integer", awsDoc("  region: us-east-1", "  maxRetries: 1.5"), []string{
			"aws.maxRetries: must be an integer, got a number (line 7)",
		}},
		{"quoted integer", awsDoc("  region: us-east-1", `  maxRetries: "3"`), []string{
			"aws.maxRetries: must be an integer, got a string (line 7)",
		}},
		{"bad duration", awsDoc("  region: us-east-1", "  timeout: soon"), []string{
			`aws.timeout: must be a duration such as "30s" or "1h30m" (line 7)`,
		}},
		{"custom tag", awsDoc("  region: !where us-east-1"), []string{
			"aws.region: must be a string, got a value with a custom tag (line 6)",
		}},

		{"text unmarshaler error", strings.Replace(header, "provider: aws", "provider: testcloud", 1) + "testcloud:\n  address: [1]\n  apiKey: {}\n", []string{
			"testcloud.address: must be a string, got a list (line 6)",
			"testcloud.apiKey: must be a string, got a mapping (line 7)",
		}},
		{"text unmarshaler rejects", strings.Replace(header, "provider: aws", "provider: testcloud", 1) + "testcloud:\n  address: 10.0.0.300\n", []string{
			`testcloud.address: invalid value: ParseAddr("10.0.0.300"): IPv4 field has value >255 (line 6)`,
		}},

		// apiVersion and kind.
		{"apiVersion and kind missing", lines("provider: aws", "clusterID: prod-1", "aws:", "  region: us-east-1"), []string{
			"apiVersion: Required value",
			"kind: Required value",
		}},
		{"apiVersion and kind unsupported", lines(
			"apiVersion: multicloud-ccm.io/v2",
			"kind: Config",
			"provider: gce",
			"clusterID: prod-1",
		), []string{
			`apiVersion: Unsupported value: "multicloud-ccm.io/v2": supported values: "multicloud-ccm.io/v1alpha1" (line 1)`,
			`kind: Unsupported value: "Config": supported values: "CloudConfig" (line 2)`,
		}},

		// provider and provider sections.
		{"provider missing", withoutProvider, []string{notSet}},
		{"provider empty", withoutProvider + "provider: \"\"\n", []string{notSet + " (line 4)"}},
		{"provider missing, one section", withoutProvider + "aws:\n  region: us-east-1\n", []string{
			`provider: Required value: set provider: aws to use the "aws" section`,
		}},
		{"provider missing, two sections", withoutProvider + lines(
			"aws:",
			"  region: us-east-1",
			"gce:",
			"  project: p",
			"testcloud: {}",
		), []string{
			notSet,
			`gce: only one provider section may be set, but "aws" is set too (and provider is not set) (line 6)`,
			`testcloud: only one provider section may be set, but "aws" is set too (and provider is not set) (line 8)`,
		}},
		{"provider unsupported", withoutProvider + "provider: digitalocean\n", []string{
			`provider: Unsupported value: "digitalocean": supported values: "aws", "azure", "gce", "openstack", "testcloud" (line 4)`,
		}},
		{"provider not compiled in", withoutProvider + "provider: azure\nazure:\n  x: 1\n", []string{
			`provider: "azure" is not compiled into this binary (compiled in: aws,gce,testcloud); ` +
				`rebuild with make build PROVIDERS=azure or use the default build with all providers (line 4)`,
		}},
		{"section for another provider", awsDoc("  region: us-east-1") + "gce:\n  project: p\nopenstack: {}\n", []string{
			`gce: section for provider "gce" but provider is "aws"; only the selected provider's section may be set (line 7)`,
			`openstack: section for provider "openstack" but provider is "aws"; only the selected provider's section may be set (line 9)`,
		}},

		// clusterID.
		{"clusterID missing", lines("apiVersion: multicloud-ccm.io/v1alpha1", "kind: CloudConfig", "provider: gce"), []string{
			"clusterID: Required value: it names and tags every cloud resource this controller manager owns",
		}},
		{"clusterID invalid characters", strings.Replace(header, "prod-1", "Prod_1", 1) + "aws:\n  region: us-east-1\n", []string{
			`clusterID: Invalid value: "Prod_1": must consist of lowercase letters, digits and '-', and start and end with a letter or digit (it is used in cloud resource names) (line 4)`,
		}},
		{"clusterID ends with dash", strings.Replace(header, "prod-1", "prod-", 1) + "aws:\n  region: us-east-1\n", []string{
			`clusterID: Invalid value: "prod-": must consist of lowercase letters, digits and '-', and start and end with a letter or digit (it is used in cloud resource names) (line 4)`,
		}},
		{"clusterID too long", strings.Replace(header, "prod-1", strings.Repeat("a", 64), 1) + "aws:\n  region: us-east-1\n", []string{
			"clusterID: Too long: must be at most 63 characters, got 64 (it is used in cloud resource names) (line 4)",
		}},

		// Section validation, located by line, de-duplicated, and missing
		// sections validated as zero sections.
		{"missing section is validated", header, []string{
			"aws.region: Required value",
		}},
		{"empty section is validated", header + "aws:\n", []string{
			"aws.region: Required value",
		}},
		{"validation errors are located", awsDoc(
			"  region: useast1",
			"  endpoints:",
			"    s3: https://s3",
			"  tags:",
			`    team: ""`,
			"  subnets:",
			"  - id: subnet-1",
			"  - id: sn-2",
			"  maxRetries: 11",
		), []string{
			`aws.region: Invalid value: "useast1": must look like us-east-1 (line 6)`,
			`aws.endpoints[s3]: Unsupported value: "s3": supported values: "ec2", "elb" (line 8)`,
			"aws.tags[team]: Required value (line 10)",
			`aws.subnets[1].id: Invalid value: "sn-2": must start with "subnet-" (line 13)`,
			"aws.maxRetries: Invalid value: 11: must be from 0 to 10 (line 14)",
		}},

		// Secrets never appear in problems.
		{"invalid secret is redacted", awsDoc(
			"  region: us-east-1",
			"  credentials:",
			"    secretAccessKey: "+shortSecret,
		), []string{
			"aws.credentials.secretAccessKey: Invalid value: <redacted>: must be 40 characters (line 8)",
		}},
		{"secret quoted by another field is redacted", awsDoc(
			"  region: us-east-1",
			"  credentials:",
			"    accessKeyID: "+testSecret,
			"    secretAccessKey: "+testSecret,
		), []string{
			`aws.credentials.accessKeyID: Invalid value: <redacted>: must differ from secretAccessKey "<redacted>" (line 8)`,
		}},
		{"secret of the wrong type", awsDoc(
			"  region: us-east-1",
			"  credentials:",
			"    secretAccessKey: ["+testSecret+"]",
		), []string{
			"aws.credentials.secretAccessKey: must be a string, got a list (line 8)",
		}},

		// Aliases and merge keys.
		{"merge cycle", awsDoc(
			"  region: us-east-1",
			"  credentials: &c",
			"    <<: *c",
		), []string{
			"aws.credentials: alias *c refers to a value that contains it (line 8)",
		}},
		{"merge of a non-mapping", awsDoc(
			"  region: us-east-1",
			"  credentials:",
			"    <<: 5",
		), []string{
			"aws.credentials: a merge key (<<) takes a mapping or a list of mappings, got an integer (line 8)",
		}},
		{"alias to the wrong type", awsDoc(
			"  region: &r us-east-1",
			"  subnets: *r",
		), []string{
			"aws.subnets: must be a list, got a string (line 6)",
		}},
		{"alias bomb", awsDoc(
			"  region: us-east-1",
			"  endpoints:",
			"    a0: &a0 {k: v}",
			"    a1: &a1 {<<: [*a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0, *a0]}",
			"    a2: &a2 {<<: [*a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1, *a1]}",
			"    a3: &a3 {<<: [*a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2, *a2]}",
			"    a4: &a4 {<<: [*a3, *a3, *a3, *a3, *a3, *a3, *a3, *a3, *a3, *a3]}",
			"    a5: &a5 {<<: [*a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4, *a4]}",
			"    a6: &a6 {<<: [*a5, *a5, *a5, *a5, *a5, *a5, *a5, *a5, *a5, *a5]}",
			"    a7: &a7 {<<: [*a6, *a6, *a6, *a6, *a6, *a6, *a6, *a6, *a6, *a6]}",
			"    a8: &a8 {<<: [*a7, *a7, *a7, *a7, *a7, *a7, *a7, *a7, *a7, *a7]}",
			"  credentials: {<<: *a8}",
		), []string{
			// Stopping early is the point: nothing after the limit is
			// reported (the map values are problems of their own).
			"aliases expand to more than 10000 values; reuse fewer or smaller anchors (line 8)",
			"aws.endpoints[a0]: must be a string, got a mapping (line 8)",
			"aws.endpoints[a1]: must be a string, got a mapping (line 9)",
			"aws.endpoints[a2]: must be a string, got a mapping (line 10)",
			"aws.endpoints[a3]: must be a string, got a mapping (line 11)",
			"aws.endpoints[a4]: must be a string, got a mapping (line 12)",
			"aws.endpoints[a5]: must be a string, got a mapping (line 13)",
			"aws.endpoints[a6]: must be a string, got a mapping (line 14)",
			"aws.endpoints[a7]: must be a string, got a mapping (line 15)",
			"aws.endpoints[a8]: must be a string, got a mapping (line 16)",
		}},

		// Many problems at once, sorted by line then path.
		{"everything at once", lines(
			"apiVersion: v9",
			"provider: aws",
			"clusterID: Bad_ID",
			"aws:",
			"  region: [x]",
			"  bogus: 1",
			"  subnets:",
			"  - id: nope",
			"gce: {}",
		), []string{
			"kind: Required value",
			`apiVersion: Unsupported value: "v9": supported values: "multicloud-ccm.io/v1alpha1" (line 1)`,
			`clusterID: Invalid value: "Bad_ID": must consist of lowercase letters, digits and '-', and start and end with a letter or digit (it is used in cloud resource names) (line 3)`,
			"aws.region: must be a string, got a list (line 5)",
			`aws.bogus: unknown field "bogus" (line 6)`,
			`aws.subnets[0].id: Invalid value: "nope": must start with "subnet-" (line 8)`,
			`gce: section for provider "gce" but provider is "aws"; only the selected provider's section may be set (line 9)`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(tt.doc), testSections{})
			if err == nil {
				t.Fatalf("Parse succeeded, want problems; config:\n%s", cfg)
			}
			if cfg != nil {
				t.Errorf("Parse returned a config along with an error")
			}
			var problems config.Problems
			if !errors.As(err, &problems) {
				t.Fatalf("error is %T, want config.Problems: %v", err, err)
			}
			got := make([]string, len(problems))
			for i, p := range problems {
				got[i] = p.String()
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("problems:\n got: %q\nwant: %q", got, tt.want)
			}
			if err.Error() != strings.Join(tt.want, "\n") {
				t.Errorf("Error() = %q, want the problems one per line", err.Error())
			}
			for _, secret := range []string{testSecret, shortSecret} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("problems leak a secret: %s", err)
				}
			}
		})
	}
}

func TestParseAliasBombStopsEarly(t *testing.T) {
	// A classic "billion laughs": nine levels of ten aliases each, kept in
	// an unknown key (which is never walked) and used for gce.zones. The
	// walk is driven by the Go type, so the []string field looks one level
	// deep and stops; merge-key bombs are covered by TestParseProblems.
	bomb := []string{"x-bomb:", "  - &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"}
	for i := 1; i <= 8; i++ {
		refs := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 10), ", ")
		bomb = append(bomb, fmt.Sprintf("  - &l%d [%s]", i, refs))
	}
	doc := strings.Replace(header, "provider: aws", "provider: gce", 1) + lines(bomb...) + "gce:\n  zones: *l8\n"
	start := time.Now()
	_, err := config.Parse([]byte(doc), testSections{})
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Parse took %v", d)
	}
	var problems config.Problems
	if !errors.As(err, &problems) {
		t.Fatalf("Parse error = %v, want Problems", err)
	}
	// One for x-bomb, one per zones item.
	if len(problems) != 11 || problems[0].String() != `x-bomb: unknown field "x-bomb" (line 5)` ||
		problems[1].String() != "gce.zones[0]: must be a string, got a list (line 13)" {
		t.Errorf("problems:\n%v", err)
	}
}

func TestParseValid(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want config.CloudConfig
	}{
		{
			name: "full aws section with defaults",
			doc: awsDoc(
				"  region: us-east-1",
				"  vpcID: 012345 # a string field keeps the text as written",
				"  endpoints:",
				"    ec2: https://ec2.internal",
				"  tags: {team: infra}",
				"  credentials:",
				"    accessKeyID: AKIAEXAMPLE",
				"    secretAccessKey: "+testSecret,
				"  subnets:",
				"  - id: subnet-1",
				"    token: "+testSecret,
				"  - id: subnet-2",
				"    zone: us-east-1b",
				"  useFIPS: true",
				"  timeout: 1m",
			),
			want: config.CloudConfig{
				APIVersion: config.APIVersion, Kind: config.Kind, Provider: "aws", ClusterID: "prod-1",
				Section: &awsSection{
					Region:      "us-east-1",
					VPCID:       "012345",
					Endpoints:   map[string]string{"ec2": "https://ec2.internal"},
					Tags:        map[string]string{"team": "infra"},
					Credentials: &awsCredentials{AccessKeyID: "AKIAEXAMPLE", SecretAccessKey: testSecret},
					Subnets: []awsSubnet{
						{ID: "subnet-1", Zone: "auto", Token: testSecret},
						{ID: "subnet-2", Zone: "us-east-1b"},
					},
					MaxRetries: 3,
					UseFIPS:    true,
					Timeout:    time.Minute,
				},
			},
		},
		{
			name: "nulls leave fields unset",
			doc:  awsDoc("  region: us-east-1", "  vpcID:", "  credentials: ~", "  subnets: null"),
			want: config.CloudConfig{
				APIVersion: config.APIVersion, Kind: config.Kind, Provider: "aws", ClusterID: "prod-1",
				Section: &awsSection{Region: "us-east-1", MaxRetries: 3, Timeout: 30 * time.Second},
			},
		},
		{
			name: "anchors, aliases and merge keys",
			doc: awsDoc(
				"  region: &r us-east-1",
				"  subnets:",
				"  - &s {id: subnet-1, zone: *r}",
				"  - <<: *s",
				"    id: subnet-2",
				"  - *s",
			),
			want: config.CloudConfig{
				APIVersion: config.APIVersion, Kind: config.Kind, Provider: "aws", ClusterID: "prod-1",
				Section: &awsSection{
					Region: "us-east-1",
					Subnets: []awsSubnet{
						{ID: "subnet-1", Zone: "us-east-1"},
						{ID: "subnet-2", Zone: "us-east-1"},
						{ID: "subnet-1", Zone: "us-east-1"},
					},
					MaxRetries: 3, Timeout: 30 * time.Second,
				},
			},
		},
		{
			name: "missing section that is valid when empty",
			doc:  strings.Replace(header, "provider: aws", "provider: gce", 1),
			want: config.CloudConfig{
				APIVersion: config.APIVersion, Kind: config.Kind, Provider: "gce", ClusterID: "prod-1",
				Section: &gceSection{Project: "default-project"},
			},
		},
		{
			name: "compiled-in provider that is not a known provider",
			doc: strings.Replace(header, "provider: aws", "provider: testcloud", 1) + lines(
				"testcloud:",
				"  zone: z9",
				"  apiKey: "+testSecret,
				"  headers: {Authorization: Bearer "+testSecret+"}",
				"  address: 10.0.0.1",
			),
			want: config.CloudConfig{
				APIVersion: config.APIVersion, Kind: config.Kind, Provider: "testcloud", ClusterID: "prod-1",
				Section: &testcloudSection{
					TestcloudCommon: TestcloudCommon{Zone: "z9"},
					APIKey:          testSecret,
					Headers:         map[string]string{"Authorization": "Bearer " + testSecret},
					Address:         ptr(netip.MustParseAddr("10.0.0.1")),
				},
			},
		},
		{
			name: "document markers and a numeric clusterID",
			doc:  "---\n" + strings.Replace(header, "prod-1", "123", 1) + "aws: {region: eu-west-1}\n...\n",
			want: config.CloudConfig{
				APIVersion: config.APIVersion, Kind: config.Kind, Provider: "aws", ClusterID: "123",
				Section: &awsSection{Region: "eu-west-1", MaxRetries: 3, Timeout: 30 * time.Second},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(tt.doc), testSections{})
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			// A config for one cloud balances on it.
			tt.want.LoadBalancerProvider = tt.want.Provider
			if !reflect.DeepEqual(*cfg, tt.want) {
				// Print the sections with %+v on purpose: test data only.
				t.Errorf("Parse:\n got: %+v\nwant: %+v", cfg.Section, tt.want.Section)
			}
		})
	}
}

func TestParseNilSections(t *testing.T) {
	_, err := config.Parse([]byte(awsDoc("  region: us-east-1")), nil)
	want := `provider: "aws" is not compiled into this binary (compiled in: none); ` +
		`rebuild with make build PROVIDERS=aws or use the default build with all providers (line 3)`
	if err == nil || err.Error() != want {
		t.Errorf("Parse with nil Sections: %v\nwant: %s", err, want)
	}
}

// TestRoundTrip parses the redacted output of a parsed config and expects
// the same config back (for documents without secrets, which the output
// replaces).
func TestRoundTrip(t *testing.T) {
	docs := []string{
		awsDoc(
			"  region: us-east-1",
			"  vpcID: \"true\"",
			"  endpoints: {ec2: 'https://ec2:443'}",
			"  tags: {\"a b\": \"x: y\", empty-ish: \"''\"}",
			"  credentials: {accessKeyID: AKIA}",
			"  subnets: [{id: subnet-1}, {id: subnet-2, zone: z}]",
			"  maxRetries: 0x0a",
			"  useFIPS: false",
			"  timeout: 90s",
		),
		strings.Replace(header, "provider: aws", "provider: gce", 1) + "gce: {zones: [a, b, '1']}\n",
		strings.Replace(header, "provider: aws", "provider: testcloud", 1) + "testcloud: {address: '::1'}\n",
	}
	for _, doc := range docs {
		cfg, err := config.Parse([]byte(doc), testSections{})
		if err != nil {
			t.Fatalf("Parse(%q): %v", doc, err)
		}
		out, err := cfg.Redacted()
		if err != nil {
			t.Fatalf("Redacted: %v", err)
		}
		again, err := config.Parse(out, testSections{})
		if err != nil {
			t.Fatalf("Parse(Redacted()) of\n%s: %v", out, err)
		}
		if !reflect.DeepEqual(cfg, again) {
			t.Errorf("round trip through\n%s\nchanged the config", out)
		}
	}
}

func TestRedacted(t *testing.T) {
	doc := awsDoc(
		"  region: us-east-1",
		"  vpcID: 012345",
		"  tags: {team: infra}",
		"  credentials:",
		"    accessKeyID: AKIAEXAMPLE",
		"    secretAccessKey: "+testSecret,
		"  subnets:",
		"  - id: subnet-1",
		"    token: "+testSecret,
		"  - id: subnet-2",
	)
	cfg, err := config.Parse([]byte(doc), testSections{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	out, err := cfg.Redacted()
	if err != nil {
		t.Fatalf("Redacted: %v", err)
	}
	want := lines(
		"apiVersion: multicloud-ccm.io/v1alpha1",
		"kind: CloudConfig",
		"provider: aws",
		"clusterID: prod-1",
		"aws:",
		"  region: us-east-1",
		`  vpcID: "012345"`,
		"  tags:",
		"    team: infra",
		"  credentials:",
		"    accessKeyID: AKIAEXAMPLE",
		"    secretAccessKey: <redacted>",
		"  subnets:",
		"    - id: subnet-1",
		"      zone: auto",
		"      token: <redacted>",
		"    - id: subnet-2",
		"      zone: auto",
		"  maxRetries: 3",
		"  useFIPS: false",
		"  timeout: 30s",
	)
	if string(out) != want {
		t.Errorf("Redacted:\n%s\nwant:\n%s", out, want)
	}

	// Redacting must not touch the config the controllers use.
	s := cfg.Section.(*awsSection)
	if s.Credentials.SecretAccessKey != testSecret || s.Subnets[0].Token != testSecret {
		t.Errorf("Redacted modified the config: %+v %+v", s.Credentials, s.Subnets)
	}

	// Every way of printing a config is redacted.
	for name, text := range map[string]string{
		"String": cfg.String(),
		"%v":     fmt.Sprintf("%v", cfg),
		"%+v":    fmt.Sprintf("%+v", cfg),
		"%#v":    fmt.Sprintf("%#v", cfg),
		"%s":     fmt.Sprintf("%s", *cfg),
		"%v val": fmt.Sprintf("%v", *cfg),
	} {
		if strings.Contains(text, testSecret) {
			t.Errorf("%s leaks the secret:\n%s", name, text)
		}
		if text != want {
			t.Errorf("%s = %q, want the redacted YAML", name, text)
		}
	}
}

func TestRedactedSecretMap(t *testing.T) {
	doc := strings.Replace(header, "provider: aws", "provider: testcloud", 1) + lines(
		"testcloud:",
		"  apiKey: "+testSecret,
		"  headers: {Authorization: Bearer "+testSecret+", X-Empty: ''}",
	)
	cfg, err := config.Parse([]byte(doc), testSections{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := strings.Replace(header, "provider: aws", "provider: testcloud", 1) + lines(
		"testcloud:",
		"  zone: zone-1",
		"  apiKey: <redacted>",
		"  headers:",
		"    Authorization: <redacted>",
		`    X-Empty: ""`,
	)
	if got := cfg.String(); got != want {
		t.Errorf("String:\n%s\nwant:\n%s", got, want)
	}
}

func TestProblemString(t *testing.T) {
	tests := []struct {
		p    config.Problem
		want string
	}{
		{config.Problem{Path: "aws.subnets[0].id", Detail: "Required value", Line: 12}, "aws.subnets[0].id: Required value (line 12)"},
		{config.Problem{Path: "aws.region", Detail: "Required value"}, "aws.region: Required value"},
		{config.Problem{Detail: `document is empty`, Line: 3}, `document is empty (line 3)`},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
	ps := config.Problems{tests[0].p, tests[1].p}
	if got, want := ps.Error(), tests[0].want+"\n"+tests[1].want; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()

	missing := filepath.Join(dir, "missing.yaml")
	if _, err := config.LoadFile(missing, testSections{}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("LoadFile(missing) error = %v, want one naming %s", err, missing)
	}

	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte(awsDoc("  region: us-east-1")), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadFile(good, testSections{})
	if err != nil || cfg.Section.(*awsSection).Region != "us-east-1" {
		t.Errorf("LoadFile(good) = %v, %v", cfg, err)
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(header), 0o600); err != nil {
		t.Fatal(err)
	}
	var problems config.Problems
	if _, err := config.LoadFile(bad, testSections{}); !errors.As(err, &problems) || len(problems) != 1 {
		t.Errorf("LoadFile(bad) error = %v, want one Problem", err)
	}
}
