// Package clientopts holds the options every backend's config section
// repeats (per-call timeout, attempts, instance snapshot age), with one set
// of defaults and one validation, so the four clouds behave and read alike.
// A section inlines Options:
//
//	type Section struct {
//		Region string `yaml:"region"`
//		clientopts.Options `yaml:",inline"`
//	}
package clientopts

import (
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Defaults. They are part of the documented config (docs/reference).
const (
	DefaultRequestTimeout   = 30 * time.Second
	DefaultMaxAttempts      = 8
	DefaultInstanceCacheTTL = 60 * time.Second
)

// Options are the cloud API client options of a config section.
type Options struct {
	// RequestTimeout bounds every cloud API call attempt, so a hung
	// connection can never hold a controller's worker.
	RequestTimeout time.Duration `yaml:"requestTimeout"`
	// MaxAttempts is how often a throttled or failed call is tried in
	// all, with exponential backoff between attempts.
	MaxAttempts int `yaml:"maxAttempts"`
	// InstanceCacheTTL bounds the age of the instance snapshot that node
	// lookups are served from; one listing per TTL serves every Node.
	// Lifecycle checks (is the instance gone or stopped?) use data a few
	// seconds old regardless.
	InstanceCacheTTL time.Duration `yaml:"instanceCacheTTL"`
}

// SetDefaults fills unset options.
func (o *Options) SetDefaults() {
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.InstanceCacheTTL == 0 {
		o.InstanceCacheTTL = DefaultInstanceCacheTTL
	}
}

// Validate checks defaulted options; path is the section's path, since
// the options are inlined into it.
func (o *Options) Validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if o.RequestTimeout < time.Second || o.RequestTimeout > 10*time.Minute {
		errs = append(errs, field.Invalid(path.Child("requestTimeout"), o.RequestTimeout.String(), "must be between 1s and 10m"))
	}
	if o.MaxAttempts < 1 || o.MaxAttempts > 20 {
		errs = append(errs, field.Invalid(path.Child("maxAttempts"), o.MaxAttempts, "must be between 1 and 20"))
	}
	if o.InstanceCacheTTL < time.Second || o.InstanceCacheTTL > 10*time.Minute {
		errs = append(errs, field.Invalid(path.Child("instanceCacheTTL"), o.InstanceCacheTTL.String(), "must be between 1s and 10m"))
	}
	return errs
}
