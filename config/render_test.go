package config

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

type renderInner struct {
	Timeout time.Duration `yaml:"timeout"`
	Tries   int           `yaml:"tries"`
}

type renderSection struct {
	Region   string            `yaml:"region"`
	Secret   string            `yaml:"secret" secret:"true"`
	Zones    []string          `yaml:"zones"`
	Empty    []string          `yaml:"empty"`
	Nested   renderInner       `yaml:"nested"`
	Unset    renderInner       `yaml:"unset"`
	Tags     map[string]string `yaml:"tags"`
	Internal bool              `yaml:"internal"`
	Skipped  string            `yaml:"-"`
	Shared   renderInner       `yaml:",inline"`
}

func (*renderSection) SetDefaults()                         {}
func (*renderSection) Validate(*field.Path) field.ErrorList { return nil }

func TestRenderKeepsOnlySetFieldsAndSecrets(t *testing.T) {
	out, err := Render("aws", "kubernetes", &renderSection{
		Region: "eu-west-1", Secret: "s3cr3t", Zones: []string{"a", "b"},
		Nested: renderInner{Timeout: 90 * time.Second}, Tags: map[string]string{"k": "v"},
		Skipped: "x", Shared: renderInner{Tries: 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `apiVersion: multicloud-ccm.io/v1alpha1
kind: CloudConfig
provider: aws
clusterID: kubernetes
aws:
  region: eu-west-1
  secret: s3cr3t
  zones:
    - a
    - b
  nested:
    timeout: 1m30s
  tags:
    k: v
  tries: 3
`
	if string(out) != want {
		t.Errorf("Render =\n%s\nwant\n%s", out, want)
	}
	empty, err := Render("gce", "c", &renderSection{})
	if err != nil || !strings.HasSuffix(string(empty), "gce: {}\n") {
		t.Errorf("empty section rendered as %q, %v", empty, err)
	}
}
