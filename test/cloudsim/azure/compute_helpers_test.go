package azure

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// wantARMError asserts err is ARM's error with status and code.
func wantARMError(t *testing.T, err error, status int, code string) *azcore.ResponseError {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("error %v is not an *azcore.ResponseError", err)
	}
	if re.StatusCode != status || re.ErrorCode != code {
		t.Fatalf("got %d %s, want %d %s: %v", re.StatusCode, re.ErrorCode, status, code, err)
	}
	return re
}

// allPages reads every page of a pager.
func allPages[R any](t *testing.T, p *runtime.Pager[R]) []R {
	t.Helper()
	var out []R
	for p.More() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page)
	}
	return out
}

// val dereferences p, zero for nil.
func val[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// raw sends a request to the emulator with token as the bearer token
// ("" for none) and decodes the JSON answer.
func (env *testEnv) raw(t *testing.T, method, path string, query url.Values, token string) (int, map[string]any) {
	t.Helper()
	u := env.srv.URL() + path
	if query != nil {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := env.emu.TestHTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if len(strings.TrimSpace(string(b))) > 0 {
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode, out
}

// errorCode is the code of ARM's error envelope.
func errorCode(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// rgPath is the ARM path of the fixture's resource group.
func (env *testEnv) rgPath() string {
	return "/subscriptions/" + env.emu.Config().SubscriptionID + "/resourceGroups/" + env.emu.Fixture().ResourceGroup
}

// admin calls the Azure admin API (/admin/azure/...) over the emulator's
// TLS, sending in as JSON (unless nil) and decoding the answer into out
// (unless nil); it returns the status.
func (env *testEnv) admin(t *testing.T, method, path string, in, out any) int {
	t.Helper()
	return env.adminAt(t, method, "/admin/azure"+path, in, out)
}

// adminAt is admin for any admin path ("/admin/instances", ...).
func (env *testEnv) adminAt(t *testing.T, method, path string, in, out any) int {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		body = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, env.srv.URL()+path, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := env.emu.TestHTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode < 300 {
		if err := jsonDecode(resp.Body, out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return resp.StatusCode
}

func jsonDecode(r io.Reader, out any) error { return json.NewDecoder(r).Decode(out) }
