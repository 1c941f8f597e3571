// Package clouds lists the conformance adapters, so the suite, the sandbox
// and the benchmarks pick a cloud by name (CLOUD=<name>). A new backend adds
// its adapter here and nothing else changes.
package clouds

import (
	"fmt"
	"sort"
	"strings"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance/aws"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance/azure"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance/gce"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance/openstack"
)

// all holds every adapter by name.
var all = map[string]conformance.Adapter{
	"aws":       aws.Adapter{},
	"azure":     azure.Adapter{},
	"gce":       gce.Adapter{},
	"openstack": openstack.Adapter{},
}

// Default is the cloud used when none is named.
const Default = "aws"

// All returns every adapter, sorted by name.
func All() []conformance.Adapter {
	out := make([]conformance.Adapter, 0, len(all))
	for _, a := range all {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Get returns the adapter for name ("" means Default).
func Get(name string) (conformance.Adapter, error) {
	if name == "" {
		name = Default
	}
	if a, ok := all[name]; ok {
		return a, nil
	}
	var names []string
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("no conformance adapter for cloud %q (have: %s)", name, strings.Join(names, ", "))
}
