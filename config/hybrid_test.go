package config_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/multicloud-ccm/multicloud-ccm/config"
)

// hybridHead is lines 1-3 of a hybrid document, before its providers line.
var hybridHead = lines(
	"apiVersion: multicloud-ccm.io/v1alpha1",
	"kind: CloudConfig",
	"clusterID: prod-1",
)

// TestParseHybrid: a config naming several clouds, each with its section
// decoded, defaulted and validated as alone; the default load-balancer
// cloud is the first listed; Clouds splits it for the backends.
func TestParseHybrid(t *testing.T) {
	doc := hybridHead + lines(
		"providers: [gce, aws]",
		"aws:",
		"  region: eu-west-1",
		"gce:",
		"  project: p1",
	)
	cfg, err := config.Parse([]byte(doc), testSections{})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Hybrid() || cfg.Provider != "" || cfg.Section != nil || cfg.LoadBalancerProvider != "gce" || !slices.Equal(cfg.Providers, []string{"gce", "aws"}) {
		t.Errorf("config %+v", cfg)
	}
	// Each section is decoded and defaulted as alone.
	aws, _ := cfg.Sections["aws"].(*awsSection)
	gce, _ := cfg.Sections["gce"].(*gceSection)
	if aws == nil || aws.Region != "eu-west-1" || aws.MaxRetries != 3 || aws.Timeout != 30*time.Second || gce == nil || gce.Project != "p1" {
		t.Errorf("sections %+v %+v", cfg.Sections["aws"], cfg.Sections["gce"])
	}
	clouds := cfg.Clouds()
	if len(clouds) != 2 || clouds[0].Provider != "gce" || clouds[1].Provider != "aws" || clouds[1].ClusterID != "prod-1" ||
		clouds[1].Section != cfg.Sections["aws"] || clouds[1].Hybrid() {
		t.Errorf("clouds %+v", clouds)
	}
	out, err := cfg.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"providers:\n  - gce\n  - aws\n", "loadBalancerProvider: gce\n", "gce:\n  project: p1", "aws:\n  region: eu-west-1"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("redacted config lacks %q:\n%s", want, out)
		}
	}

	lb, err := config.Parse([]byte(hybridHead+lines("providers: [gce, aws]", "loadBalancerProvider: aws", "aws: {region: eu-west-1}")), testSections{})
	if err != nil {
		t.Fatal(err)
	}
	if lb.LoadBalancerProvider != "aws" {
		t.Errorf("loadBalancerProvider %q", lb.LoadBalancerProvider)
	}

	single, err := config.Parse([]byte(awsDoc("  region: eu-west-1")), testSections{})
	if err != nil {
		t.Fatal(err)
	}
	if single.Hybrid() || single.LoadBalancerProvider != "aws" || len(single.Clouds()) != 1 || single.Clouds()[0] != single {
		t.Errorf("one cloud: %+v", single)
	}
}

func TestParseHybridProblems(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"provider and providers", hybridHead + lines("provider: aws", "providers: [aws, gce]", "aws: {region: eu-west-1}"), []string{
			"provider: set provider (one cloud) or providers (several clouds), not both (line 4)",
		}},
		{"empty list", hybridHead + lines("providers: []"), []string{
			"providers: Required value: list the clouds of this cluster, e.g. providers: [openstack, aws] (line 4)",
		}},
		{"not a list", hybridHead + lines("providers: aws"), []string{
			"providers: must be a list, got a string (line 4)",
		}},
		{"listed twice", hybridHead + lines("providers:", "- aws", "- aws", "aws: {region: eu-west-1}"), []string{
			`providers[1]: Duplicate value: "aws"; each cloud is listed once, with one section (line 6)`,
		}},
		{"unknown and not compiled in", hybridHead + lines("providers: [aws, digitalocean, azure]", "aws: {region: eu-west-1}"), []string{
			`providers[1]: Unsupported value: "digitalocean": supported values: "aws", "azure", "gce", "openstack", "testcloud" (line 4)`,
			`providers[2]: "azure" is not compiled into this binary (compiled in: aws,gce,testcloud); rebuild with make build PROVIDERS=aws,digitalocean,azure or use the default build with all providers (line 4)`,
		}},
		{"section of an unlisted provider", hybridHead + lines("providers: [aws, testcloud]", "aws: {region: eu-west-1}", "gce:", "  project: p"), []string{
			`gce: section for provider "gce", which providers does not list (aws, testcloud); only the listed providers' sections may be set (line 6)`,
		}},
		{"each section validated with its path", hybridHead + lines("providers: [aws, gce]", "aws: {regoin: eu-west-1}"), []string{
			"aws.region: Required value",
			`aws.regoin: unknown field "regoin" (line 5)`,
		}},
		{"load balancer provider not listed", hybridHead + lines("providers: [aws, gce]", "loadBalancerProvider: testcloud", "aws: {region: eu-west-1}", "gce: {project: p}"), []string{
			`loadBalancerProvider: Unsupported value: "testcloud": supported values: "aws", "gce" (the listed providers) (line 5)`,
		}},
		{"load balancer provider in a config for one cloud", awsDoc("  region: eu-west-1") + "loadBalancerProvider: aws\n", []string{
			"loadBalancerProvider: loadBalancerProvider is for a config of several clouds (providers:); with provider: aws every load balancer is its (line 7)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tt.doc), testSections{})
			var problems config.Problems
			if !errors.As(err, &problems) {
				t.Fatalf("Parse: %v, want problems", err)
			}
			var got []string
			for _, p := range problems {
				got = append(got, p.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n got: %q\nwant: %q", got, tt.want)
			}
		})
	}
}
