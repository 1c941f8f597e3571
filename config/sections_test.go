package config_test

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/multicloud-ccm/multicloud-ccm/config"
)

// The test providers below stand in for real backends. They are shaped to
// exercise the decoder: strings, an int32, a bool, a duration, maps, a
// pointer to a nested struct and a list of structs, with secrets both in
// the nested struct and in list items, plus an ,inline struct.

// testSecret is the secret used throughout; no output may ever contain it.
const testSecret = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"

// testSections compiles in aws and gce from KnownProviders (leaving azure
// and openstack out, as a slim build would) plus testcloud, which is not a
// known provider at all.
type testSections struct{}

func (testSections) NewSection(provider string) (config.Section, bool) {
	switch provider {
	case "aws":
		return &awsSection{}, true
	case "gce":
		return &gceSection{}, true
	case "testcloud":
		return &testcloudSection{}, true
	}
	return nil, false
}

func (testSections) Compiled() []string { return []string{"aws", "gce", "testcloud"} }

type awsSection struct {
	Region      string            `yaml:"region"`
	VPCID       string            `yaml:"vpcID,omitempty"`
	Endpoints   map[string]string `yaml:"endpoints,omitempty"`
	Tags        map[string]string `yaml:"tags,omitempty"`
	Credentials *awsCredentials   `yaml:"credentials,omitempty"`
	Subnets     []awsSubnet       `yaml:"subnets,omitempty"`
	MaxRetries  int32             `yaml:"maxRetries"`
	UseFIPS     bool              `yaml:"useFIPS"`
	Timeout     time.Duration     `yaml:"timeout"`
}

type awsCredentials struct {
	AccessKeyID     string `yaml:"accessKeyID"`
	SecretAccessKey string `yaml:"secretAccessKey" secret:"true"`
}

type awsSubnet struct {
	ID    string `yaml:"id"`
	Zone  string `yaml:"zone,omitempty"`
	Token string `yaml:"token,omitempty" secret:"true"`
}

var regionPattern = regexp.MustCompile(`^[a-z]{2}-[a-z]+-[0-9]$`)

func (s *awsSection) SetDefaults() {
	if s.MaxRetries == 0 {
		s.MaxRetries = 3
	}
	if s.Timeout == 0 {
		s.Timeout = 30 * time.Second
	}
	for i := range s.Subnets {
		if s.Subnets[i].Zone == "" {
			s.Subnets[i].Zone = "auto"
		}
	}
}

func (s *awsSection) Validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case s.Region == "":
		errs = append(errs, field.Required(p.Child("region"), ""))
	case !regionPattern.MatchString(s.Region):
		// Reported twice on purpose, as backends sharing validation helpers
		// sometimes do, so the tests see Parse de-duplicate.
		for range 2 {
			errs = append(errs, field.Invalid(p.Child("region"), s.Region, "must look like us-east-1"))
		}
	}
	for _, k := range sortedKeys(s.Endpoints) {
		if k != "ec2" && k != "elb" {
			errs = append(errs, field.NotSupported(p.Child("endpoints").Key(k), k, []string{"ec2", "elb"}))
		}
	}
	for _, k := range sortedKeys(s.Tags) {
		if s.Tags[k] == "" {
			errs = append(errs, field.Required(p.Child("tags").Key(k), ""))
		}
	}
	if c := s.Credentials; c != nil {
		cp := p.Child("credentials")
		if c.SecretAccessKey != "" && len(c.SecretAccessKey) != 40 {
			// field.Invalid quotes the value: Parse must redact it.
			errs = append(errs, field.Invalid(cp.Child("secretAccessKey"), c.SecretAccessKey, "must be 40 characters"))
		}
		if c.AccessKeyID != "" && c.AccessKeyID == c.SecretAccessKey {
			// A careless message that quotes the secret in its detail.
			errs = append(errs, field.Invalid(cp.Child("accessKeyID"), c.AccessKeyID,
				fmt.Sprintf("must differ from secretAccessKey %q", c.SecretAccessKey)))
		}
	}
	for i, sn := range s.Subnets {
		if !strings.HasPrefix(sn.ID, "subnet-") {
			errs = append(errs, field.Invalid(p.Child("subnets").Index(i).Child("id"), sn.ID, `must start with "subnet-"`))
		}
	}
	if s.MaxRetries < 0 || s.MaxRetries > 10 {
		errs = append(errs, field.Invalid(p.Child("maxRetries"), int64(s.MaxRetries), "must be from 0 to 10"))
	}
	return errs
}

// gceSection is valid when empty, so its section may be left out.
type gceSection struct {
	Project string   `yaml:"project"`
	Zones   []string `yaml:"zones,omitempty"`
}

func (s *gceSection) SetDefaults() {
	if s.Project == "" {
		s.Project = "default-project"
	}
}

func (s *gceSection) Validate(*field.Path) field.ErrorList { return nil }

// testcloudSection embeds its common fields with ,inline and keeps a
// secret string and a secret map.
type testcloudSection struct {
	TestcloudCommon `yaml:",inline"`
	APIKey          string            `yaml:"apiKey" secret:"true"`
	Headers         map[string]string `yaml:"headers,omitempty" secret:"true"`
	// Address exercises encoding.TextUnmarshaler.
	Address *netip.Addr `yaml:"address,omitempty"`
}

// TestcloudCommon is embedded (it must be exported for reflection to set
// its fields).
type TestcloudCommon struct {
	Zone string `yaml:"zone"`
}

func (s *testcloudSection) SetDefaults() {
	if s.Zone == "" {
		s.Zone = "zone-1"
	}
}

func (s *testcloudSection) Validate(*field.Path) field.ErrorList { return nil }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
