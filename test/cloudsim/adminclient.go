package cloudsim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// AdminCall calls an emulator's admin HTTP API at baseURL (e.g. a
// standalone `cloudsim` process): body is sent as is (JSON text, or ""),
// and the JSON answer (a result, or {"error": ...} on failure) is decoded
// into out when out is not nil. It returns the HTTP status.
func AdminCall(ctx context.Context, baseURL, method, path, body string, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(baseURL, "/")+path, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decode %q: %w", method, path, data, err)
		}
	}
	return resp.StatusCode, nil
}

// AdminClient drives a Server's admin API over HTTP, for tests and tools
// that run the emulator in another process (the sandbox, benchmarks).
type AdminClient struct {
	// BaseURL is the server's URL, e.g. Server.URL().
	BaseURL string
}

// NewAdminClient returns a client for the server at baseURL.
func NewAdminClient(baseURL string) *AdminClient { return &AdminClient{BaseURL: baseURL} }

// AdminError is a non-2xx answer of the admin API. It matches
// ErrInvalidRequest (400), ErrInstanceNotFound (404), ErrInstanceState
// (409) and ErrNoInstances (501) with errors.Is, so callers of the instance methods can tell
// those apart from a failure to reach the server.
type AdminError struct {
	Method, Path string
	Status       int
	Message      string
}

func (e *AdminError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Status, e.Message)
}

// Is maps the admin API's statuses back to the errors the server made
// them from.
func (e *AdminError) Is(target error) bool {
	switch target {
	case ErrInvalidRequest:
		return e.Status == http.StatusBadRequest
	case ErrInstanceNotFound:
		return e.Status == http.StatusNotFound
	case ErrInstanceState:
		return e.Status == http.StatusConflict
	case ErrNoInstances:
		return e.Status == http.StatusNotImplemented
	}
	return false
}

// call sends in as JSON (when not nil) and decodes a 2xx answer into out.
func (c *AdminClient) call(ctx context.Context, method, path string, in, out any) error {
	body := ""
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: encode request: %w", method, path, err)
		}
		body = string(b)
	}
	var answer json.RawMessage
	status, err := AdminCall(ctx, c.BaseURL, method, path, body, &answer)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if status < 200 || status > 299 {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(answer, &e)
		return &AdminError{Method: method, Path: path, Status: status, Message: e.Error}
	}
	if out != nil {
		if err := json.Unmarshal(answer, out); err != nil {
			return fmt.Errorf("%s %s: decode %q: %w", method, path, answer, err)
		}
	}
	return nil
}

// ListInstances lists every instance the cloud still lists.
func (c *AdminClient) ListInstances(ctx context.Context) ([]InstanceInfo, error) {
	var out []InstanceInfo
	return out, c.call(ctx, http.MethodGet, "/admin/instances", nil, &out)
}

// LaunchInstance launches one instance.
func (c *AdminClient) LaunchInstance(ctx context.Context, spec InstanceSpec) (InstanceInfo, error) {
	var out InstanceInfo
	return out, c.call(ctx, http.MethodPost, "/admin/instances", spec, &out)
}

// GetInstance reports one instance; an unknown ID is an error matching
// ErrInstanceNotFound.
func (c *AdminClient) GetInstance(ctx context.Context, id string) (InstanceInfo, error) {
	var out InstanceInfo
	return out, c.call(ctx, http.MethodGet, "/admin/instances/"+url.PathEscape(id), nil, &out)
}

// StopInstance stops an instance and reports it afterwards.
func (c *AdminClient) StopInstance(ctx context.Context, id string) (InstanceInfo, error) {
	return c.instanceAction(ctx, id, "stop")
}

// StartInstance starts an instance and reports it afterwards.
func (c *AdminClient) StartInstance(ctx context.Context, id string) (InstanceInfo, error) {
	return c.instanceAction(ctx, id, "start")
}

// TerminateInstance terminates an instance and reports it afterwards.
func (c *AdminClient) TerminateInstance(ctx context.Context, id string) (InstanceInfo, error) {
	return c.instanceAction(ctx, id, "terminate")
}

func (c *AdminClient) instanceAction(ctx context.Context, id, action string) (InstanceInfo, error) {
	var out InstanceInfo
	return out, c.call(ctx, http.MethodPost, "/admin/instances/"+url.PathEscape(id)+"/"+action, nil, &out)
}
