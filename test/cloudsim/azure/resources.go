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
		out = append(out, inlineChildren(o.kind.fullType(), o.id, o.body)...)
	}
	cloudsim.SortResources(out)
	return out
}

// inlineParts are the child collections ARM keeps inside their parent's
// body (a load balancer's frontends, rules, probes and pools): listed as
// resources of their own so inventories see a frontend or rule left
// behind, not just the load balancer that holds it.
var inlineParts = map[string][]string{
	"Microsoft.Network/loadBalancers": {"frontendIPConfigurations", "loadBalancingRules", "probes", "backendAddressPools"},
}

func inlineChildren(kind, id string, body map[string]any) []cloudsim.Resource {
	parts := inlineParts[kind]
	if len(parts) == 0 {
		return nil
	}
	props, _ := body["properties"].(map[string]any)
	var out []cloudsim.Resource
	for _, part := range parts {
		items, _ := props[part].([]any)
		for _, it := range items {
			m, _ := it.(map[string]any)
			name, _ := m["name"].(string)
			if name == "" {
				continue
			}
			out = append(out, cloudsim.Resource{Kind: kind + "/" + part, ID: id + "/" + part + "/" + name, Name: name, Parent: id})
		}
	}
	return out
}
