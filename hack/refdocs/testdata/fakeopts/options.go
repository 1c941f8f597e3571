// Package fakeopts is a shared options struct that a section inlines from
// another package, like providers/internal/clientopts.
package fakeopts

import "time"

// ZoneKey is an annotation name another package refers to.
const ZoneKey = "fake.example.com/zone"

// Options are inlined into a section with `yaml:",inline"`.
type Options struct {
	// RequestTimeout bounds each call.
	RequestTimeout time.Duration `yaml:"requestTimeout"`
	// Retries is optional; nil means the SDK default.
	Retries *int `yaml:"retries"`
	// Token authenticates calls.
	Token string `yaml:"token" secret:"true"`
}
