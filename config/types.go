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

// CloudConfig is a decoded, defaulted and validated cloud-config.
type CloudConfig struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	// Provider selects the backend.
	Provider string `yaml:"provider"`
	// ClusterID names and tags every cloud resource this CCM owns.
	ClusterID string `yaml:"clusterID"`
	// Section is the selected provider's section, defaults applied. It is
	// never nil after a successful Parse.
	Section Section `yaml:"-"`
}
