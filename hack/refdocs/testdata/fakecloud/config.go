// Package fakecloud is a backend's package in miniature for the
// generator's tests: a config section and annotation constants.
package fakecloud

import (
	"net/netip"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/multicloud-ccm/multicloud-ccm/hack/refdocs/testdata/fakeopts"
)

// Section is the `fake:` section.
type Section struct {
	fakeopts.Options `yaml:",inline"`
	// Region is where the cluster runs.
	Region string `yaml:"region"`
	// Auth is secret as a whole.
	Auth Auth `yaml:"auth" secret:"true"`
	// Pools are load-balancer pools.
	Pools []Pool `yaml:"pools"`
	// Labels are added to every resource | including pools.
	Labels map[string]string `yaml:"labels"`
	// Limits is optional.
	Limits *Limits `yaml:"limits"`
	// Allowed are client CIDRs.
	Allowed    []netip.Prefix `yaml:"allowed"`
	Untagged   string         // no doc, no tag: the decoder calls it "untagged"
	Hidden     string         `yaml:"-"`
	unexported string
}

// Auth holds credentials.
type Auth struct {
	// User names the account.
	User string `yaml:"user"`
	// Password is secret because Auth is.
	Password string `yaml:"password"`
}

// Pool is one pool.
type Pool struct {
	// Name of the pool.
	Name string `yaml:"name"`
	// Size in members.
	Size int `yaml:"size"`
}

// Limits nests a struct below a pointer.
type Limits struct {
	// Burst allows short peaks.
	Burst int `yaml:"burst"`
	// Window is the averaging window.
	Window time.Duration `yaml:"window"`
}

// SetDefaults fills the defaults the table shows.
func (s *Section) SetDefaults() {
	if s.Region == "" {
		s.Region = "fk-1"
	}
	if s.RequestTimeout == 0 {
		s.RequestTimeout = 90 * time.Second
	}
	if s.Labels == nil {
		s.Labels = map[string]string{"b": "2", "a": "1"}
	}
	if s.Allowed == nil {
		s.Allowed = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.0/24")}
	}
	if s.Auth.Password == "" {
		s.Auth.Password = "hunter2"
	}
	_ = s.unexported
}

// Validate accepts everything; the generator never calls it.
func (s *Section) Validate(*field.Path) field.ErrorList { return nil }
