package cloudsim_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// toyCloud is a key-value "cloud" for exercising the framework. Its
// requests are JSON bodies {"op": "get"|"put"|"delete", "key", "value"}
// POSTed to /, so Operation has to read the body that Serve reads again.
type toyCloud struct {
	mu   sync.Mutex
	data map[string]string
}

type toyRequest struct {
	Op    string `json:"op"`
	Key   string `json:"key"`
	Value string `json:"value"`
}

func newToy() *toyCloud { return &toyCloud{data: map[string]string{}} }

func (c *toyCloud) Name() string { return "toy" }

func (c *toyCloud) Operation(r *http.Request) (string, error) {
	var req toyRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return "", err
	}
	if req.Op == "" {
		return "", errors.New("missing op")
	}
	return "toy:" + req.Op, nil
}

func (c *toyCloud) Mutating(op string) bool { return op != "toy:get" }

func (c *toyCloud) Serve(w http.ResponseWriter, r *http.Request, op string) {
	body, _ := io.ReadAll(r.Body)
	var req toyRequest
	if err := json.Unmarshal(body, &req); err != nil {
		cloudsim.WriteJSONError(w, http.StatusBadRequest, err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch op {
	case "toy:get":
		v, ok := c.data[req.Key]
		if !ok {
			cloudsim.WriteJSON(w, http.StatusNotFound, map[string]string{"error": "NotFound"})
			return
		}
		cloudsim.WriteJSON(w, http.StatusOK, map[string]string{"value": v})
	case "toy:put":
		c.data[req.Key] = req.Value
		cloudsim.WriteJSON(w, http.StatusOK, map[string]string{})
	case "toy:delete":
		delete(c.data, req.Key)
		cloudsim.WriteJSON(w, http.StatusOK, map[string]string{})
	default:
		cloudsim.WriteJSON(w, http.StatusBadRequest, map[string]string{"error": "UnknownOperation"})
	}
}

func (c *toyCloud) WriteThrottle(w http.ResponseWriter, r *http.Request, op string) {
	cloudsim.WriteJSON(w, http.StatusTooManyRequests, map[string]string{"error": "Throttled"})
}

func (c *toyCloud) WriteServerError(w http.ResponseWriter, r *http.Request, op string) {
	cloudsim.WriteJSON(w, http.StatusInternalServerError, map[string]string{"error": "Internal"})
}

func (c *toyCloud) Resources() []cloudsim.Resource {
	c.mu.Lock()
	defer c.mu.Unlock()
	var rs []cloudsim.Resource
	for k, v := range c.data {
		rs = append(rs, cloudsim.Resource{Kind: "key", ID: k, Tags: map[string]string{"value": v}})
	}
	return rs
}

func (c *toyCloud) Admin() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /seed", func(w http.ResponseWriter, r *http.Request) {
		var kv map[string]string
		if err := cloudsim.ReadJSON(r, &kv); err != nil {
			cloudsim.WriteJSONError(w, http.StatusBadRequest, err)
			return
		}
		c.mu.Lock()
		for k, v := range kv {
			c.data[k] = v
		}
		c.mu.Unlock()
		cloudsim.WriteJSON(w, http.StatusOK, map[string]int{"seeded": len(kv)})
	})
	return mux
}
