package openstack_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

// env is one emulator behind a server, as gophercloud sees it.
type env struct {
	emu *cloudsimopenstack.Emulator
	srv *cloudsim.Server
	fx  cloudsimopenstack.Fixture
}

func newEnv(t *testing.T, cfg cloudsimopenstack.Config) *env {
	t.Helper()
	emu := cloudsimopenstack.NewDefault(cfg)
	srv, err := cloudsim.Start(emu)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return &env{emu: emu, srv: srv, fx: emu.Fixture()}
}

// passwordOpts are the fixture user's credentials, scoped to the project
// by name, as a cloud.conf usually gives them.
func (e *env) passwordOpts() gophercloud.AuthOptions {
	return gophercloud.AuthOptions{
		IdentityEndpoint: e.fx.IdentityEndpoint(e.srv.URL()),
		Username:         e.fx.Username,
		Password:         e.fx.Password,
		DomainName:       e.fx.DomainName,
		Scope:            &gophercloud.AuthScope{ProjectName: e.fx.ProjectName, DomainID: e.fx.DomainID},
		AllowReauth:      true,
	}
}

func (e *env) provider(t *testing.T) *gophercloud.ProviderClient {
	t.Helper()
	p, err := openstack.AuthenticatedClient(t.Context(), e.passwordOpts())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// compute is a Nova client at microversion mv ("" for none).
func (e *env) compute(t *testing.T, mv string) *gophercloud.ServiceClient {
	t.Helper()
	return computeFor(t, e.provider(t), mv)
}

func computeFor(t *testing.T, p *gophercloud.ProviderClient, mv string) *gophercloud.ServiceClient {
	t.Helper()
	c, err := openstack.NewComputeV2(p, gophercloud.EndpointOpts{Region: "RegionOne"})
	if err != nil {
		t.Fatal(err)
	}
	c.Microversion = mv
	return c
}

func (e *env) launch(t *testing.T, spec cloudsimopenstack.LaunchSpec) []string {
	t.Helper()
	ids, err := e.emu.Launch(spec)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// wire is one raw answer.
type wire struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

// do sends a raw request with the headers given as name, value pairs.
func (e *env) do(t *testing.T, method, path, body string, headers ...string) wire {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, e.srv.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	w := wire{status: resp.StatusCode, header: resp.Header, raw: string(data)}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &w.body); err != nil {
			t.Fatalf("%s %s: %d, body not a JSON object: %q", method, path, resp.StatusCode, data)
		}
	}
	return w
}

// token gets a fresh project token for the fixture user.
func (e *env) token(t *testing.T) string {
	t.Helper()
	return e.provider(t).Token()
}

// codeError is the gophercloud error carrying the HTTP answer.
func codeError(t *testing.T, err error) gophercloud.ErrUnexpectedResponseCode {
	t.Helper()
	var ce gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &ce) {
		t.Fatalf("want an ErrUnexpectedResponseCode, got %T: %v", err, err)
	}
	return ce
}

// faultBody decodes an error body into its single key and value.
func faultBody(t *testing.T, body []byte) (string, map[string]any) {
	t.Helper()
	var m map[string]map[string]any
	if err := json.Unmarshal(body, &m); err != nil || len(m) != 1 {
		t.Fatalf("error body %q is not a one-key fault", body)
	}
	for k, v := range m {
		return k, v
	}
	return "", nil
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ctx(t *testing.T) context.Context { return t.Context() }
