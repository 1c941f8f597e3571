package cloudsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// The admin API. Everything lives under /admin/ so it can never collide
// with a cloud's API paths:
//
//	GET    /admin/health           {"cloud": "<name>", "status": "ok"}
//	GET    /admin/calls            {"<op>": <count>, ...}
//	POST   /admin/calls/reset      zero the counts
//	GET    /admin/faults           [FaultSpec, ...]
//	POST   /admin/faults           a FaultSpec or an array of them; each replaces the spec with its op
//	DELETE /admin/faults[?op=X]    remove every spec, or the one for X
//	GET    /admin/resources[?kind=K]  [Resource, ...]
//	*      /admin/instances/...    cloud-neutral instances, when the cloud implements Instances (see instancesRoutes)
//	*      /admin/<cloud>/...      the cloud's own admin API
func (s *Server) adminMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /admin/health", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]string{"cloud": s.cloud.Name(), "status": "ok"})
	})
	mux.HandleFunc("GET /admin/calls", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, s.Calls())
	})
	mux.HandleFunc("POST /admin/calls/reset", func(w http.ResponseWriter, r *http.Request) {
		s.ResetCalls()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /admin/faults", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, s.Faults())
	})
	mux.HandleFunc("POST /admin/faults", s.postFaults)
	mux.HandleFunc("DELETE /admin/faults", func(w http.ResponseWriter, r *http.Request) {
		if op := r.URL.Query().Get("op"); op != "" {
			s.ClearFault(op)
		} else {
			s.ClearFaults()
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /admin/resources", func(w http.ResponseWriter, r *http.Request) {
		rs := s.Resources()
		if kind := r.URL.Query().Get("kind"); kind != "" {
			filtered := []Resource{}
			for _, res := range rs {
				if res.Kind == kind {
					filtered = append(filtered, res)
				}
			}
			rs = filtered
		}
		if rs == nil {
			rs = []Resource{}
		}
		WriteJSON(w, http.StatusOK, rs)
	})
	s.instancesRoutes(mux)
	if h := s.cloud.Admin(); h != nil {
		prefix := "/admin/" + s.cloud.Name()
		mux.Handle(prefix+"/", http.StripPrefix(prefix, h))
	}
	return mux
}

func (s *Server) postFaults(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		WriteJSONError(w, http.StatusBadRequest, err)
		return
	}
	var specs []FaultSpec
	if trimmed := bytes.TrimSpace(body); len(trimmed) > 0 && trimmed[0] == '[' {
		err = json.Unmarshal(trimmed, &specs)
	} else {
		var spec FaultSpec
		err = json.Unmarshal(trimmed, &spec)
		specs = []FaultSpec{spec}
	}
	if err != nil {
		WriteJSONError(w, http.StatusBadRequest, fmt.Errorf("decoding fault spec: %w", err))
		return
	}
	// Validate all before installing any, so a bad batch changes nothing.
	for _, spec := range specs {
		if err := spec.Validate(); err != nil {
			WriteJSONError(w, http.StatusBadRequest, err)
			return
		}
	}
	for _, spec := range specs {
		if err := s.SetFault(spec); err != nil {
			WriteJSONError(w, http.StatusBadRequest, err)
			return
		}
	}
	WriteJSON(w, http.StatusOK, s.Faults())
}

// WriteJSON writes v as a JSON response. Cloud admin handlers use it too.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// WriteJSONError writes {"error": err} with status.
func WriteJSONError(w http.ResponseWriter, status int, err error) {
	WriteJSON(w, status, map[string]string{"error": err.Error()})
}

// ReadJSON decodes a JSON request body into v, rejecting unknown fields so
// typos in test fixtures fail loudly.
func ReadJSON(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decoding request body: %w", err)
	}
	return nil
}

// AdminHandler adapts a typed admin function to HTTP for a cloud's admin
// API: the JSON body decoded into Req (400 if it does not decode), the
// result as JSON, or {"error"} with the status status(err) gives (nil
// status: 400 for every error).
func AdminHandler[Req any](f func(Req) (any, error), status func(error) int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if err := ReadJSON(r, &req); err != nil {
			WriteJSONError(w, http.StatusBadRequest, err)
			return
		}
		resp, err := f(req)
		if err != nil {
			code := http.StatusBadRequest
			if status != nil {
				code = status(err)
			}
			WriteJSONError(w, code, err)
			return
		}
		WriteJSON(w, http.StatusOK, resp)
	}
}
