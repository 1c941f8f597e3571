package gce

import "slices"

// References between resources. Each kind's Refs hook lists the paths a
// resource references; a blocking reference keeps the referenced
// resource from being deleted (resourceInUseByAnotherResource), as an
// address in use by a forwarding rule or a network with firewalls is on
// GCE. A non-blocking one (a route's next-hop instance) does not: GCE
// lets the instance go and the route dangles. An address's users are the
// resources that reference it.

// ref is one reference from a resource to another.
type ref struct {
	Path   string
	Blocks bool
}

// refIndex maps a resource's path to the resources referencing it. It
// is rebuilt lazily when the generation has moved, so a burst of reads
// costs one pass over the resources.
type refIndex struct {
	built      bool
	generation uint64
	by         map[string][]ref // target -> referrers (Path is the referrer's)
}

// users lists the resources referencing path, blocking ones only when
// blocking is set, in a stable order.
func (e *Emulator) users(path string, blocking bool) []string {
	if !e.refs.built || e.refs.generation != e.generation {
		e.refs = refIndex{built: true, generation: e.generation, by: map[string][]ref{}}
		for _, k := range e.kinds.all {
			if k.Refs == nil {
				continue
			}
			for _, o := range k.store.All() {
				for _, r := range k.Refs(e, o) {
					e.refs.by[r.Path] = append(e.refs.by[r.Path], ref{Path: o.path, Blocks: r.Blocks})
				}
			}
		}
	}
	var out []string
	for _, r := range e.refs.by[path] {
		if r.Blocks || !blocking {
			out = append(out, r.Path)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// refTo references a link or path a resource holds, if it names one.
func (e *Emulator) refTo(target string, blocks bool) []ref {
	if target == "" {
		return nil
	}
	if p, ok := e.refPath(target); ok {
		return []ref{{Path: p, Blocks: blocks}}
	}
	return nil
}
