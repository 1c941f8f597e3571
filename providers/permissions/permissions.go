// Package permissions is how a backend declares, once and next to the
// code that makes the calls, the cloud permissions each of its features
// needs. The policy documents (docs/reference/<cloud>.md, deploy/
// permissions/, `multicloud-ccm permissions`) are generated from the
// declarations, and the emulators deny every call outside them when the
// conformance suite runs (test/cloudsim Authorizer), so a policy cannot
// drift from the code: a call the declaration lacks fails `make test`.
//
// It is its own package, outside providers/internal, because cmd/ and
// hack/ read it.
package permissions

import (
	"fmt"
	"slices"
	"strings"
)

// Grant is one permission a feature needs.
type Grant struct {
	// Permission is in the cloud's own words: an AWS IAM action
	// ("ec2:DescribeInstances"), an Azure RBAC action
	// ("Microsoft.Network/loadBalancers/write"), a GCE IAM permission
	// ("compute.instances.list"), an OpenStack policy rule
	// ("os_compute_api:servers:detail").
	Permission string
	// Scope is where it must be granted when that is not simply where the
	// cluster's resources are: Azure's linked resources ("the subnet's
	// virtual network", "a public IP in another resource group"). Empty:
	// the policy's scope.
	Scope string
	// Why is what the manager uses it for.
	Why string
}

// Feature is one thing the manager does with the cloud.
type Feature struct {
	// Name is how `multicloud-ccm permissions --features` and the
	// reference name it ("nodes", "load-balancers", "routes", ...).
	Name string
	// Doc says what the feature is, for the reference.
	Doc string
	// Grants are its permissions.
	Grants []Grant
	// Optional: the manager runs without it and only a setting turns it
	// on (the setting is named in Doc). Without Optional the feature is
	// always in the policy.
	Optional bool
	// Degrades, when set, says what the manager does without one of the
	// feature's permissions instead of failing (upstream AWS's topology
	// labels without ec2:DescribeInstanceTopology).
	Degrades string
}

// Declaration is a backend's features, in the order the reference lists
// them.
type Declaration struct {
	// Cloud is the provider name.
	Cloud string
	// Features are every feature's grants.
	Features []Feature
}

// Feature returns the named feature.
func (d Declaration) Feature(name string) (Feature, bool) {
	i := slices.IndexFunc(d.Features, func(f Feature) bool { return f.Name == name })
	if i < 0 {
		return Feature{}, false
	}
	return d.Features[i], true
}

// Names are the features' names.
func (d Declaration) Names() []string {
	var out []string
	for _, f := range d.Features {
		out = append(out, f.Name)
	}
	return out
}

// Grants are the grants of the named features (every feature when names
// is empty), one per permission and scope, sorted by permission. An
// unknown name is an error listing the known ones.
func (d Declaration) Grants(names ...string) ([]Grant, error) {
	want := names
	if len(want) == 0 {
		want = d.Names()
	}
	seen := map[string]int{}
	var out []Grant
	for _, n := range want {
		f, ok := d.Feature(n)
		if !ok {
			return nil, fmt.Errorf("%s has no feature %q; it has %s", d.Cloud, n, strings.Join(d.Names(), ", "))
		}
		for _, g := range f.Grants {
			k := g.Permission + "\x00" + g.Scope
			if i, dup := seen[k]; dup {
				if !strings.Contains(out[i].Why, g.Why) {
					out[i].Why += "; " + g.Why
				}
				continue
			}
			seen[k] = len(out)
			out = append(out, g)
		}
	}
	slices.SortStableFunc(out, func(a, b Grant) int { return strings.Compare(a.Permission+a.Scope, b.Permission+b.Scope) })
	return out, nil
}

// Permissions are the distinct permission names of grants, sorted.
func Permissions(grants []Grant) []string {
	var out []string
	for _, g := range grants {
		out = append(out, g.Permission)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Validate checks a declaration: named features, each with grants that
// name a permission and say why, no feature twice.
func (d Declaration) Validate() error {
	seen := map[string]bool{}
	for _, f := range d.Features {
		if f.Name == "" || f.Doc == "" || len(f.Grants) == 0 {
			return fmt.Errorf("%s: feature %q needs a name, a doc and grants", d.Cloud, f.Name)
		}
		if seen[f.Name] {
			return fmt.Errorf("%s: feature %q declared twice", d.Cloud, f.Name)
		}
		seen[f.Name] = true
		for _, g := range f.Grants {
			if g.Permission == "" || g.Why == "" {
				return fmt.Errorf("%s: feature %s: a grant needs a permission and a why: %+v", d.Cloud, f.Name, g)
			}
		}
	}
	return nil
}

// FeaturesOf names the features that need permission, comma-separated
// ("" when none declares it): what a denial of it stops.
func (d Declaration) FeaturesOf(permission string) string {
	var out []string
	for _, f := range d.Features {
		if slices.ContainsFunc(f.Grants, func(g Grant) bool { return g.Permission == permission }) {
			out = append(out, f.Name)
		}
	}
	return strings.Join(out, ",")
}

// DeniedError is a call the cloud refused because the identity lacks a
// permission: the cloud's error, with the permission and the features
// that need it named, so a Warning Event or log line says what to grant.
type DeniedError struct {
	Permission string
	Features   string
	Err        error
}

func (e *DeniedError) Error() string {
	f := e.Features
	if f == "" {
		f = "no declared feature"
	}
	return fmt.Sprintf("the cloud identity lacks %s, which %s needs (grant it; multicloud-ccm permissions CLOUD-CONFIG prints the policy): %v", e.Permission, f, e.Err)
}

func (e *DeniedError) Unwrap() error { return e.Err }

// byScope groups the permissions of the grants that have a Scope, by
// scope in the order first met: what a policy format without
// per-permission scopes (an Azure role, a GCE role) must tell the reader
// to grant elsewhere too.
func byScope(grants []Grant) (scopes []string, perms map[string][]string) {
	perms = map[string][]string{}
	for _, g := range grants {
		if g.Scope == "" {
			continue
		}
		if _, ok := perms[g.Scope]; !ok {
			scopes = append(scopes, g.Scope)
		}
		if !slices.Contains(perms[g.Scope], g.Permission) {
			perms[g.Scope] = append(perms[g.Scope], g.Permission)
		}
	}
	return scopes, perms
}
