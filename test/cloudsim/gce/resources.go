package gce

import (
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// Resources implements cloudsim.Cloud: every resource a caller could
// leave behind, its kind the message's ("compute#firewall"), its ID the
// relative path, its tags the labels. Zones, regions and operations are
// not resources anyone leaks and are left out. Inserts whose operations
// are not DONE yet are in: they will be there unless the operation fails.
// A global and a regional health check share the API's kind
// (compute#healthCheck) and differ by ID.
func (e *Emulator) Resources() []cloudsim.Resource {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settle(e.cfg.Now())
	var out []cloudsim.Resource
	for _, k := range e.kinds.all {
		if k.Scope == scopeProject || k.Collection == "operations" {
			continue
		}
		for _, o := range k.store.All() {
			out = append(out, cloudsim.Resource{Kind: k.Kind, ID: o.path, Name: o.name, Tags: labelsOf(o.msg)})
		}
	}
	cloudsim.SortResources(out)
	return out
}
