package gce

import (
	"net/http"

	"google.golang.org/protobuf/proto"
)

// Custom methods that change a resource (targetPools.addInstance,
// forwardingRules.setTarget, instanceGroups.addInstances, ...) share one
// shape on GCE: a POST with a request message, refused while another
// change to the resource is in progress, answered with an Operation whose
// DONE makes the change. customAction serves that shape, so each kind
// writes only what it checks and what it changes.

// planFunc checks a custom method's request against o and returns the
// change to make when the operation is DONE. A refusal that is not async
// answers the call; an async one is accepted and fails the operation.
type planFunc[R proto.Message] func(e *Emulator, o *object, req R) (apply func(), aerr *apiError)

// customAction serves a custom method whose operationType is opType and
// whose body decodes into newReq().
func customAction[R proto.Message](opType string, newReq func() R, plan planFunc[R]) actionFunc {
	return func(e *Emulator, w http.ResponseWriter, r *http.Request, o *object, op string) {
		if r.Method != http.MethodPost {
			writeError(w, errNotEmulated(op))
			return
		}
		if e.replayed(w, r) {
			return
		}
		if aerr := checkChangeable(o); aerr != nil {
			writeError(w, aerr)
			return
		}
		req := newReq()
		if aerr := readMessage(r, req); aerr != nil {
			writeError(w, aerr)
			return
		}
		apply, aerr := plan(e, o, req)
		var fail *apiError
		if aerr != nil {
			if !aerr.async {
				writeError(w, aerr)
				return
			}
			fail = aerr
		}
		change := func() {
			// The admin API may have deleted the resource meanwhile.
			if apply != nil && e.stored(o) {
				apply()
				e.generation++
			}
		}
		opObj := e.begin(r, op, o, opType, fail, change, nil)
		writeMessage(w, http.StatusOK, e.view(opObj))
	}
}

// editCopy returns a copy of o's message for a plan to change, and the
// apply that stores it.
func editCopy[M proto.Message](o *object) (M, func()) {
	m := proto.Clone(o.msg).(M)
	return m, func() { o.msg = m }
}

// newMsg makes an empty message of type T, the newReq of a customAction:
// newMsg[computepb.TargetReference].
func newMsg[T any, P interface {
	*T
	proto.Message
}]() P {
	return P(new(T))
}
