// Package config is the multicloud-ccm cloud-config schema: one versioned
// YAML document that names the backend and carries that backend's section.
//
// config knows the shape of the document and how to decode, default,
// validate and redact it. It knows no cloud SDK: each backend owns the Go
// type of its own section and hands it in through Sections.
package config

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	// APIVersion is the only cloud-config version this binary reads.
	APIVersion = "multicloud-ccm.io/v1alpha1"
	// Kind is the only document kind this binary reads.
	Kind = "CloudConfig"

	// OrphansReport and OrphansDelete are the values of orphans:.
	OrphansReport = "report"
	OrphansDelete = "delete"
	// Redacted replaces every secret value in anything a person or a log sees.
	Redacted = "<redacted>"
)

// KnownProviders are the backends this project has, compiled in or not. It
// holds names only, so that a cloud-config for a backend left out of a slim
// build gets "not compiled in" rather than "unknown provider".
var KnownProviders = []string{"aws", "azure", "gce", "openstack"}

// Section is implemented by a backend's config section type (a pointer to a
// struct with yaml tags). Fields tagged `secret:"true"` are redacted.
type Section interface {
	// SetDefaults fills in every unset field that has a default.
	SetDefaults()
	// Validate returns every problem in the section. path is the section's
	// own path (e.g. "aws"); returned errors carry full field paths.
	Validate(path *field.Path) field.ErrorList
}

// Sections tells the decoder which provider sections this binary can read.
// providers.Registry implements it.
type Sections interface {
	// NewSection returns a new, zero section for a compiled-in provider.
	NewSection(provider string) (Section, bool)
	// Compiled lists the compiled-in provider names, sorted.
	Compiled() []string
}

// CloudConfig is a decoded, defaulted and validated cloud-config. The
// doc comments of its fields are the top-level table of
// docs/reference/cloud-config.md (hack/refdocs).
type CloudConfig struct {
	// APIVersion is required and must be multicloud-ccm.io/v1alpha1, the
	// only version this binary reads.
	APIVersion string `yaml:"apiVersion"`
	// Kind is required and must be CloudConfig.
	Kind string `yaml:"kind"`
	// Provider selects the backend of a config for one cloud, whose
	// section is then the only one the document may hold; "" in a hybrid
	// config.
	Provider string `yaml:"provider"`
	// Providers are the backends of a hybrid config, in the order the
	// document lists them (providers: [openstack, aws]); nil in a config
	// for one cloud.
	Providers []string `yaml:"providers,omitempty"`
	// LoadBalancerProvider is, in a hybrid config, the cloud whose load
	// balancer a LoadBalancer Service gets when it names none: the
	// document's loadBalancerProvider, default the first of Providers. In
	// a config for one cloud it is Provider.
	LoadBalancerProvider string `yaml:"loadBalancerProvider,omitempty"`
	// ClusterID names and tags every cloud resource this CCM owns; the
	// clouds of a hybrid config share it. Required: lowercase letters,
	// digits and '-', starting and ending with a letter or digit, at most
	// 63 characters.
	ClusterID string `yaml:"clusterID"`
	// Orphans is what the manager does with the cloud resources of this
	// cluster's load balancers that no Service owns any more: report
	// (OrphansReport, also when empty) counts them on /metrics and logs
	// each once; delete (OrphansDelete) also deletes those that stayed
	// orphans for the grace period (--orphan-grace-period).
	Orphans string `yaml:"orphans,omitempty"`
	// Section is the provider's section, defaults applied, in a config for
	// one cloud; nil in a hybrid config. After a successful Parse exactly
	// one of Section and Sections is set.
	Section Section `yaml:"-"`
	// Sections are a hybrid config's sections by provider, defaults
	// applied; nil in a config for one cloud.
	Sections map[string]Section `yaml:"-"`
}

// DeleteOrphans reports orphans: delete.
func (c *CloudConfig) DeleteOrphans() bool { return c.Orphans == OrphansDelete }

// Hybrid reports a config naming several clouds (providers:).
func (c *CloudConfig) Hybrid() bool { return len(c.Providers) > 0 }

// Clouds are the config's clouds, each as a config for that cloud alone
// (the shared clusterID, the cloud's section), in the document's order:
// what each backend is built from. A config for one cloud is its only
// cloud.
func (c *CloudConfig) Clouds() []*CloudConfig {
	if !c.Hybrid() {
		return []*CloudConfig{c}
	}
	out := make([]*CloudConfig, 0, len(c.Providers))
	for _, p := range c.Providers {
		out = append(out, &CloudConfig{
			APIVersion: c.APIVersion, Kind: c.Kind, Provider: p, LoadBalancerProvider: p,
			ClusterID: c.ClusterID, Orphans: c.Orphans, Section: c.Sections[p],
		})
	}
	return out
}
