package azure

import (
	"strings"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// Resources implements cloudsim.Cloud: every stored resource, its kind the
// ARM type ("Microsoft.Network/loadBalancers"), its parent the enclosing
// resource's ID for nested ones (subnets, routes).
func (e *Emulator) Resources() []cloudsim.Resource {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settle(e.cfg.Now())
	out := make([]cloudsim.Resource, 0, len(e.objs))
	for _, o := range e.objs {
		r := cloudsim.Resource{Kind: o.kind.fullType(), ID: o.id, Name: o.name()}
		if len(o.names) > 1 {
			r.Parent = o.id[:strings.LastIndex(o.id[:strings.LastIndex(o.id, "/")], "/")]
		}
		if tags, ok := o.body["tags"].(map[string]any); ok && len(tags) > 0 {
			r.Tags = map[string]string{}
			for k, v := range tags {
				s, _ := v.(string)
				r.Tags[k] = s
			}
		}
		out = append(out, r)
	}
	cloudsim.SortResources(out)
	return out
}
