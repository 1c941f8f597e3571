package gce

import (
	"fmt"
	"slices"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// Regional target pools, the backends of an external passthrough load
// balancer's forwarding rule: insert, get, list, aggregatedList, delete,
// and the custom methods addInstance, removeInstance, addHealthCheck and
// removeHealthCheck. There is no patch or update on GCE either.
//
// Instances and health checks may be named by full or partial URL
// ("zones/z/instances/i", as upstream's CCM sends them); they are stored
// as full links and must exist. A pool holds at most one health check, a
// legacy HTTP health check (httpHealthChecks), which cannot be deleted
// while the pool holds it; an instance can be, and leaves the pool, so
// the pool lists live instances only.
//
// Membership changes are checked as GCE checks them: removing an
// instance the pool does not hold is 400 invalid with GCE's own message
// ("Instance is not currently attached to this target pool."). Adding one
// it already holds is refused too, with the same shape; no answer of real
// GCE to that was found, and refusing keeps a backend from relying on
// duplicates being ignored.

func registerTargetPools(t *kindTable) {
	t.add(&kind{
		Resource: "TargetPools", Collection: "targetPools", Scope: scopeRegional, Kind: "compute#targetPool", Singular: "target_pool",
		New:           func() proto.Message { return &computepb.TargetPool{} },
		NewList:       func() proto.Message { return &computepb.TargetPoolList{} },
		NewAggregated: func() proto.Message { return &computepb.TargetPoolAggregatedList{} },
		Verbs:         verbsCRUD,
		Prepare:       prepareTargetPool,
		Refs: func(e *Emulator, o *object) []ref {
			tp := o.msg.(*computepb.TargetPool)
			out := e.refsTo(tp.GetInstances(), false)
			out = append(out, e.refsTo(tp.GetHealthChecks(), true)...)
			return append(out, e.refTo(tp.GetBackupPool(), true)...)
		},
		Forget: func(e *Emulator, o *object, gone string) {
			tp := o.msg.(*computepb.TargetPool)
			tp.Instances = slices.DeleteFunc(tp.Instances, func(l string) bool { return l == link(gone) })
		},
		Actions: map[string]actionFunc{
			"addInstance":       customAction("addInstance", newMsg[computepb.TargetPoolsAddInstanceRequest], planAddInstance),
			"removeInstance":    customAction("removeInstance", newMsg[computepb.TargetPoolsRemoveInstanceRequest], planRemoveInstance),
			"addHealthCheck":    customAction("addHealthCheck", newMsg[computepb.TargetPoolsAddHealthCheckRequest], planAddHealthCheck),
			"removeHealthCheck": customAction("removeHealthCheck", newMsg[computepb.TargetPoolsRemoveHealthCheckRequest], planRemoveHealthCheck),
		},
	})
}

// targetPoolAffinities are the session affinities a target pool takes.
var targetPoolAffinities = []string{"NONE", "CLIENT_IP", "CLIENT_IP_PROTO"}

func prepareTargetPool(e *Emulator, c *change) *apiError {
	tp := c.Msg.(*computepb.TargetPool)
	switch a := tp.GetSessionAffinity(); {
	case a == "":
		tp.SessionAffinity = proto.String("NONE")
	case !slices.Contains(targetPoolAffinities, a):
		return errInvalid("resource.sessionAffinity", a, "Must be NONE, CLIENT_IP or CLIENT_IP_PROTO.")
	}
	links := make([]string, 0, len(tp.GetInstances()))
	for i, ref := range tp.GetInstances() {
		l, aerr := e.requireRef(fmt.Sprintf("resource.instances[%d]", i), ref, "instances")
		if aerr != nil {
			return aerr
		}
		if slices.Contains(links, l) {
			return errInvalid(fmt.Sprintf("resource.instances[%d]", i), ref, "The instance is listed twice.")
		}
		links = append(links, l)
	}
	tp.Instances = links
	if len(tp.GetHealthChecks()) > 1 {
		return errInvalid("resource.healthChecks", fmt.Sprint(tp.GetHealthChecks()), "A target pool can have at most one health check.")
	}
	for i, ref := range tp.GetHealthChecks() {
		l, aerr := e.requireRef(fmt.Sprintf("resource.healthChecks[%d]", i), ref, "httpHealthChecks")
		if aerr != nil {
			return aerr
		}
		tp.HealthChecks[i] = l
	}
	if tp.BackupPool != nil {
		l, aerr := e.requireRef("resource.backupPool", tp.GetBackupPool(), "targetPools")
		if aerr != nil {
			return aerr
		}
		tp.BackupPool = proto.String(l)
	}
	if r := tp.FailoverRatio; r != nil && (*r < 0 || *r > 1 || tp.BackupPool == nil) {
		return errInvalid("resource.failoverRatio", fmt.Sprint(*r), "Must be between 0 and 1, with a backupPool.")
	}
	if tp.SecurityPolicy != nil {
		return errInvalid("resource.securityPolicy", tp.GetSecurityPolicy(), "cloudsim does not emulate security policies.")
	}
	return nil
}

// memberLinks normalises the instances of a membership request: full
// links, each named once.
func (e *Emulator) memberLinks(refs []*computepb.InstanceReference, mustExist bool) ([]string, *apiError) {
	if len(refs) == 0 {
		return nil, errRequired("resource.instances")
	}
	var out []string
	for i, r := range refs {
		field := fmt.Sprintf("resource.instances[%d].instance", i)
		var l string
		if mustExist {
			var aerr *apiError
			if l, aerr = e.requireRef(field, r.GetInstance(), "instances"); aerr != nil {
				return nil, aerr
			}
		} else {
			p, ok := e.refPath(r.GetInstance())
			if !ok {
				return nil, errInvalid(field, r.GetInstance(), "Must be a URL to an instance.")
			}
			l = link(p)
		}
		if slices.Contains(out, l) {
			return nil, errInvalid(field, r.GetInstance(), "The instance is listed twice.")
		}
		out = append(out, l)
	}
	return out, nil
}

func planAddInstance(e *Emulator, o *object, req *computepb.TargetPoolsAddInstanceRequest) (func(), *apiError) {
	links, aerr := e.memberLinks(req.GetInstances(), true)
	if aerr != nil {
		return nil, aerr
	}
	tp, apply := editCopy[*computepb.TargetPool](o)
	for _, l := range links {
		if slices.Contains(tp.Instances, l) {
			return nil, errInvalid("resource.instance", l, "Instance is already attached to this target pool.")
		}
		tp.Instances = append(tp.Instances, l)
	}
	return apply, nil
}

func planRemoveInstance(e *Emulator, o *object, req *computepb.TargetPoolsRemoveInstanceRequest) (func(), *apiError) {
	links, aerr := e.memberLinks(req.GetInstances(), false)
	if aerr != nil {
		return nil, aerr
	}
	tp, apply := editCopy[*computepb.TargetPool](o)
	for _, l := range links {
		i := slices.Index(tp.Instances, l)
		if i < 0 {
			// GCE's own words for this.
			return nil, errInvalid("resource.instance", l, "Instance is not currently attached to this target pool.")
		}
		tp.Instances = slices.Delete(tp.Instances, i, i+1)
	}
	return apply, nil
}

// healthCheckLinks normalises the health checks of a request.
func (e *Emulator) healthCheckLinks(refs []*computepb.HealthCheckReference, mustExist bool) ([]string, *apiError) {
	if len(refs) == 0 {
		return nil, errRequired("resource.healthChecks")
	}
	var out []string
	for i, r := range refs {
		field := fmt.Sprintf("resource.healthChecks[%d].healthCheck", i)
		if mustExist {
			l, aerr := e.requireRef(field, r.GetHealthCheck(), "httpHealthChecks")
			if aerr != nil {
				return nil, aerr
			}
			out = append(out, l)
			continue
		}
		p, ok := e.refPath(r.GetHealthCheck())
		if !ok {
			return nil, errInvalid(field, r.GetHealthCheck(), "Must be a URL to an HTTP health check.")
		}
		out = append(out, link(p))
	}
	return out, nil
}

func planAddHealthCheck(e *Emulator, o *object, req *computepb.TargetPoolsAddHealthCheckRequest) (func(), *apiError) {
	links, aerr := e.healthCheckLinks(req.GetHealthChecks(), true)
	if aerr != nil {
		return nil, aerr
	}
	tp, apply := editCopy[*computepb.TargetPool](o)
	if len(tp.HealthChecks)+len(links) > 1 {
		return nil, errInvalid("resource.healthChecks", links[0], "A target pool can have at most one health check.")
	}
	tp.HealthChecks = append(tp.HealthChecks, links...)
	return apply, nil
}

func planRemoveHealthCheck(e *Emulator, o *object, req *computepb.TargetPoolsRemoveHealthCheckRequest) (func(), *apiError) {
	links, aerr := e.healthCheckLinks(req.GetHealthChecks(), false)
	if aerr != nil {
		return nil, aerr
	}
	tp, apply := editCopy[*computepb.TargetPool](o)
	for _, l := range links {
		i := slices.Index(tp.HealthChecks, l)
		if i < 0 {
			return nil, errInvalid("resource.healthCheck", l, "Health check is not currently attached to this target pool.")
		}
		tp.HealthChecks = slices.Delete(tp.HealthChecks, i, i+1)
	}
	return apply, nil
}
