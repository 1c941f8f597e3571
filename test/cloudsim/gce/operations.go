package gce

import (
	"fmt"
	"net/http"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// Operations. Every mutation answers with an Operation in the target's
// scope (zonal for instances, regional for addresses, global for
// firewalls and routes) and makes its change only when the operation is
// DONE: PENDING for the first half of the operation delay, RUNNING for
// the second. Until then the target is busy (another change is refused
// with resourceNotReady) and an inserted resource is hidden. A failed
// operation is DONE with error, httpErrorStatusCode and httpErrorMessage
// set and its change undone, which the Go client's Operation.Wait turns
// into an error with that status.
//
// Clients poll GET .../operations/{name} (the Go client's Wait does, with
// backoff from 1 s) or call POST .../operations/{name}/wait, which blocks
// until the operation is DONE or Config.WaitTimeout passes and answers
// the operation as it is then.

// operation is an Operation in progress.
type operation struct {
	obj    *object
	msg    *computepb.Operation
	target *object
	runAt  time.Time
	doneAt time.Time
	// apply makes the change; rollback undoes what the call did at once
	// when the operation fails instead (nil: nothing to undo).
	apply, rollback func()
	fail            *apiError
}

// OperationFailure makes the next Count operations of an operation name
// ("compute:Addresses.Insert") fail when DONE instead of making their
// change, as quota or capacity failures do on GCE.
type OperationFailure struct {
	// Op is the operation name of the call that starts the operation.
	Op    string `json:"op"`
	Count int    `json:"count,omitempty"`
	// Code is the operation error's code, default "QUOTA_EXCEEDED".
	Code string `json:"code,omitempty"`
	// Message is the error's message.
	Message string `json:"message,omitempty"`
	// HTTPStatus is httpErrorStatusCode, default 403.
	HTTPStatus int `json:"httpStatus,omitempty"`
}

// FailOperations installs f: the next f.Count (default 1) operations
// started by f.Op fail.
func (e *Emulator) FailOperations(f OperationFailure) error {
	if f.Op == "" {
		return fmt.Errorf("operation failure: op is required")
	}
	if f.Count <= 0 {
		f.Count = 1
	}
	if f.Code == "" {
		f.Code = "QUOTA_EXCEEDED"
	}
	if f.Message == "" {
		f.Message = "Quota exceeded."
	}
	if f.HTTPStatus == 0 {
		f.HTTPStatus = http.StatusForbidden
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for range f.Count {
		e.failures[f.Op] = append(e.failures[f.Op], f)
	}
	return nil
}

func registerOperations(t *kindTable) {
	for _, s := range []struct {
		scope    scope
		resource string
	}{{scopeZonal, "ZoneOperations"}, {scopeRegional, "RegionOperations"}, {scopeGlobal, "GlobalOperations"}} {
		t.add(&kind{
			Resource: s.resource, Collection: "operations", Scope: s.scope, Kind: "compute#operation",
			New:     func() proto.Message { return &computepb.Operation{} },
			NewList: func() proto.Message { return &computepb.OperationList{} },
			// Deleting an operation only forgets it: at once, without an
			// operation of its own.
			Verbs: verbsRead | verbDelete, DeleteNow: true,
		})
	}
}

// begin starts the operation of a call (op names it) changing target:
// apply runs when it is DONE, or rollback if it fails (fail, or an
// injected failure). It returns the Operation resource.
func (e *Emulator) begin(r *http.Request, op string, target *object, opType string, fail *apiError, apply, rollback func()) *object {
	now := e.cfg.Now()
	k := e.opKind(target)
	name := e.operationName(now)
	msg := &computepb.Operation{
		Kind:          proto.String("compute#operation"),
		Id:            proto.Uint64(e.newID()),
		Name:          proto.String(name),
		OperationType: proto.String(opType),
		TargetLink:    proto.String(target.link()),
		TargetId:      proto.Uint64(getUint64(target.msg, "id")),
		Status:        computepb.Operation_PENDING.Enum(),
		Progress:      proto.Int32(0),
		InsertTime:    proto.String(e.timestamp(now)),
		User:          proto.String("cloudsim@" + e.cfg.Project + ".iam.gserviceaccount.com"),
	}
	o := &object{kind: k, location: target.location, name: name, path: e.objectPath(k, target.location, name), msg: msg}
	msg.SelfLink = proto.String(o.link())
	switch k.Scope {
	case scopeZonal:
		msg.Zone = proto.String(link(e.zonePath(o.location)))
	case scopeRegional:
		msg.Region = proto.String(link(e.regionPath(o.location)))
	}
	if injected := e.failures[op]; len(injected) > 0 {
		f := injected[0]
		e.failures[op] = injected[1:]
		fail = &apiError{Status: f.HTTPStatus, opCode: f.Code, Message: f.Message}
	}
	k.store.Put(o)
	e.pruneOperations(k)
	if id := r.URL.Query().Get("requestId"); id != "" {
		e.requestIDs[id] = o
	}
	run := &operation{obj: o, msg: msg, target: target, apply: apply, rollback: rollback, fail: fail,
		runAt: now.Add(e.opDelay / 2), doneAt: now.Add(e.opDelay)}
	target.busy = run
	if e.opDelay <= 0 {
		e.finish(run, now)
	} else {
		e.pending = append(e.pending, run)
	}
	return o
}

// opKind is where operations on target live: its zone, its region, or
// global.
func (e *Emulator) opKind(target *object) *kind {
	switch target.kind.Scope {
	case scopeZonal, scopeRegional:
		return e.kinds.get(target.kind.Scope, "operations")
	}
	return e.kinds.get(scopeGlobal, "operations")
}

// operationName is shaped like GCE's:
// operation-<unix ms>-<13 hex>-<8 hex>-<8 hex>.
func (e *Emulator) operationName(now time.Time) string {
	a, b := e.newID(), e.newID()
	return fmt.Sprintf("operation-%d-%013x-%08x-%08x", now.UnixMilli(), a>>12, uint32(b>>32), uint32(b))
}

// settle moves operations along to now: RUNNING once started, DONE (and
// applied) once due, in the order they began.
func (e *Emulator) settle(now time.Time) {
	if len(e.pending) == 0 {
		return
	}
	left := e.pending[:0]
	for _, run := range e.pending {
		switch {
		case !now.Before(run.doneAt):
			e.finish(run, now)
			continue
		case !now.Before(run.runAt) && run.msg.GetStatus() == computepb.Operation_PENDING:
			run.msg.Status = computepb.Operation_RUNNING.Enum()
			run.msg.StartTime = proto.String(e.timestamp(now))
			run.msg.Progress = proto.Int32(50)
		}
		left = append(left, run)
	}
	clear(e.pending[len(left):])
	e.pending = left
}

// finish makes run's change, or fails it, and marks it DONE.
func (e *Emulator) finish(run *operation, now time.Time) {
	run.target.busy = nil
	if run.fail != nil {
		if run.rollback != nil {
			run.rollback()
		}
		run.msg.Error = &computepb.Error{Errors: []*computepb.Errors{{
			Code: proto.String(run.fail.opCode), Message: proto.String(run.fail.Message),
		}}}
		run.msg.HttpErrorStatusCode = proto.Int32(int32(run.fail.Status))
		run.msg.HttpErrorMessage = proto.String(httpErrorMessage(run.fail.Status))
	} else if run.apply != nil {
		run.apply()
	}
	if run.msg.StartTime == nil {
		run.msg.StartTime = proto.String(e.timestamp(now))
	}
	run.msg.Status = computepb.Operation_DONE.Enum()
	run.msg.Progress = proto.Int32(100)
	run.msg.EndTime = proto.String(e.timestamp(now))
	e.generation++
}

// maxOperations bounds each scope's operation history; GCE, too, forgets
// old operations.
const maxOperations = 5000

func (e *Emulator) pruneOperations(k *kind) {
	if k.store.Len() <= maxOperations {
		return
	}
	for _, o := range k.store.All() {
		if k.store.Len() <= maxOperations*9/10 {
			break
		}
		if o.msg.(*computepb.Operation).GetStatus() == computepb.Operation_DONE {
			k.store.Delete(o.path)
		}
	}
}

// serveWait answers POST .../operations/{name}/wait: the operation once
// DONE, or as it is after Config.WaitTimeout or when the caller gives up.
func (e *Emulator) serveWait(w http.ResponseWriter, r *http.Request, p reqPath, op string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settle(e.cfg.Now())
	k, aerr := e.resolve(p, op)
	if aerr == nil && k.Collection != "operations" {
		aerr = errNotEmulated(op)
	}
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	path := e.objectPath(k, p.Location, p.Name)
	o, aerr := e.visible(k, path)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	deadline := time.Now().Add(e.cfg.WaitTimeout)
	for o.msg.(*computepb.Operation).GetStatus() != computepb.Operation_DONE && time.Now().Before(deadline) {
		// Sleep towards the operation's end in short steps: Config.Now may
		// be a test's clock that real time does not move.
		step := 100 * time.Millisecond
		for _, run := range e.pending {
			if run.obj == o {
				step = min(step, max(time.Millisecond, run.doneAt.Sub(e.cfg.Now())))
			}
		}
		step = min(step, time.Until(deadline))
		e.mu.Unlock()
		t := time.NewTimer(step)
		select {
		case <-r.Context().Done():
			t.Stop()
			e.mu.Lock()
			return
		case <-t.C:
		}
		e.mu.Lock()
		e.settle(e.cfg.Now())
	}
	writeMessage(w, http.StatusOK, e.view(o))
}
