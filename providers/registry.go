// Package providers is the registry of cloud backends compiled into this
// binary. Each backend registers itself from a file guarded by the build tag
// scheme `//go:build !providerless || <cloud>`, so a slim build names the
// backends it keeps and the registry reports exactly what is in the binary.
package providers

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/providers/compose"
	"github.com/multicloud-ccm/multicloud-ccm/providers/compose/hybrid"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/importcfg"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/upstreamann"
	"github.com/multicloud-ccm/multicloud-ccm/providers/permissions"
)

// Backend is everything the binary needs to know about one cloud.
type Backend struct {
	// Name is the cloud-config `provider` value and the section key.
	Name string
	// NewSection returns a new, zero config section owned by the backend.
	NewSection func() config.Section
	// New builds the cloud's parts from a validated cloud-config whose
	// Section is the one NewSection returned; the registry assembles them
	// (providers/compose). It must not block on the cloud: the manager
	// calls Initialize once leadership is won.
	New func(ctx context.Context, cfg *config.CloudConfig) (compose.Parts, error)
	// ImportConfig reads the upstream CCM's own config file into the
	// backend's section (`multicloud-ccm import-config`).
	ImportConfig importcfg.Func
	// UpstreamAnnotations lists the upstream CCM's Service annotations and
	// what the backend does with each; the gate of the cloud's line
	// applies it (unless the parts give a table of their own).
	UpstreamAnnotations *upstreamann.Table
	// Permissions declares the cloud permissions of each feature
	// (providers/permissions); nil while a backend declares none.
	Permissions func() permissions.Declaration
	// PermissionFeatures are the features a section of this backend turns
	// on (deleteOrphans: the config's orphans: delete).
	PermissionFeatures func(section config.Section, deleteOrphans bool) []string
	// Policy renders grants as the cloud's own policy document.
	Policy func(grants []permissions.Grant) ([]byte, error)
}

// Registry maps backend names to backends. The zero value is not usable;
// use NewRegistry. It implements config.Sections.
type Registry struct {
	mu       sync.RWMutex
	backends map[string]Backend
}

// NewRegistry returns an empty registry (tests build their own).
func NewRegistry() *Registry {
	return &Registry{backends: map[string]Backend{}}
}

// Default is the registry the binary uses; backends register into it from
// their registration files' init functions. It is the only global mutable
// state in the project.
var Default = NewRegistry()

// Register adds b. A duplicate or incomplete backend is a programming
// error, reported rather than silently replacing the first.
func (r *Registry) Register(b Backend) error {
	if b.Name == "" || b.NewSection == nil || b.New == nil {
		return fmt.Errorf("backend %q: name, NewSection and New are required", b.Name)
	}
	if b.UpstreamAnnotations != nil {
		if err := b.UpstreamAnnotations.Validate(); err != nil {
			return fmt.Errorf("backend %q: %w", b.Name, err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.backends[b.Name]; dup {
		return fmt.Errorf("backend %q registered twice", b.Name)
	}
	r.backends[b.Name] = b
	return nil
}

// MustRegister is Register for init functions, where a failure can only be
// a build mistake.
func (r *Registry) MustRegister(b Backend) {
	if err := r.Register(b); err != nil {
		panic(err)
	}
}

// Lookup returns the named backend if it is compiled in.
func (r *Registry) Lookup(name string) (Backend, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	b, ok := r.backends[name]
	return b, ok
}

// Compiled lists the registered backend names, sorted.
func (r *Registry) Compiled() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.backends))
	for n := range r.backends {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// CompiledString is Compiled for people: "aws,gce", or "none".
func (r *Registry) CompiledString() string {
	names := r.Compiled()
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}

// NewSection implements config.Sections.
func (r *Registry) NewSection(provider string) (config.Section, bool) {
	b, ok := r.Lookup(provider)
	if !ok {
		return nil, false
	}
	return b.NewSection(), true
}

// NewCloud builds the clouds a validated cloud-config names and composes
// them (hybrid): a Node is served by the cloud its providerID names, a
// Service's load balancer by the cloud it picks. A config for one cloud
// is the composite of that cloud alone, so Nodes of no configured cloud
// are left alone the same way. It is the only place the line
// (providers/compose) is put together.
func (r *Registry) NewCloud(ctx context.Context, cfg *config.CloudConfig) (*compose.Cloud, error) {
	var members []hybrid.Member
	for _, cc := range cfg.Clouds() {
		cloud, err := r.newOne(ctx, cc)
		if err != nil {
			return nil, err
		}
		members = append(members, hybrid.Member{Name: cc.Provider, Cloud: cloud})
	}
	return hybrid.New(members, cfg.LoadBalancerProvider)
}

// newOne builds one cloud's line: its load balancers behind the gate of
// its upstream annotation table and the per-Service serializer.
func (r *Registry) newOne(ctx context.Context, cfg *config.CloudConfig) (*compose.Cloud, error) {
	b, ok := r.Lookup(cfg.Provider)
	if !ok {
		// config.Parse already refuses this; reaching here means the
		// caller skipped it, so say what the binary has.
		return nil, fmt.Errorf("provider %q is not compiled into this binary (compiled in: %s)", cfg.Provider, r.CompiledString())
	}
	parts, err := b.New(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("initialize provider %q: %w", cfg.Provider, err)
	}
	if parts.Instances == nil {
		return nil, fmt.Errorf("initialize provider %q: backend returned no instances", cfg.Provider)
	}
	if parts.Name == "" {
		parts.Name = cfg.Provider
	}
	// No upstream annotation is ignored silently: the gate warns about
	// or refuses what the backend does not serve. A cloud whose table
	// depends on its config gives its own.
	if parts.UpstreamAnnotations == nil {
		parts.UpstreamAnnotations = b.UpstreamAnnotations
	}
	return compose.New(parts), nil
}

var _ config.Sections = (*Registry)(nil)

// ImportOptions are the options of a backend's ImportConfig, for the
// command (importcfg is internal to providers).
type ImportOptions = importcfg.Options

// DefaultClusterName is the upstream managers' --cluster-name default.
const DefaultClusterName = importcfg.DefaultClusterName
