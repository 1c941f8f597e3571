package gce

import "slices"

// References between resources. Each kind's Refs hook lists the paths a
// resource references; a blocking reference keeps the referenced
// resource from being deleted (resourceInUseByAnotherResource), as a
// target pool a forwarding rule uses or a network with firewalls is on
// GCE. A non-blocking one does not: GCE lets a route's next-hop instance
// go and the route dangles; a deleted instance leaves its target pools
// and instance groups (kind.Forget); a forwarding rule keeps its IP when
// its address is released. An address's users are the resources that
// reference it either way.

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

// refsTo references every link of a list a resource holds.
func (e *Emulator) refsTo(targets []string, blocks bool) []ref {
	var out []ref
	for _, t := range targets {
		out = append(out, e.refTo(t, blocks)...)
	}
	return out
}

// forget tells the resources that referenced path, now deleted, to drop
// it (kind.Forget).
func (e *Emulator) forget(path string) {
	changed := false
	for _, u := range e.users(path, false) {
		o := e.objectAt(u)
		if o != nil && o.kind.Forget != nil {
			o.kind.Forget(e, o, path)
			changed = true
		}
	}
	if changed {
		e.generation++
	}
}

// objectAt is the stored resource at a relative path, hidden or not.
func (e *Emulator) objectAt(path string) *object {
	p, err := parsePath(path)
	if err != nil {
		return nil
	}
	k := e.kinds.get(p.Scope, p.Collection)
	if k == nil {
		return nil
	}
	o, _ := k.store.Get(path)
	return o
}
