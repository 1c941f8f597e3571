package gce

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// testEnv is an emulator served over plain HTTP with the real REST
// clients' options pointed at it.
type testEnv struct {
	emu  *Emulator
	srv  *cloudsim.Server
	opts []option.ClientOption
	// project, region and zone are the emulator's, for requests.
	project, region, zone string
}

func newTestEnv(t *testing.T, cfg Config) *testEnv {
	t.Helper()
	emu := New(cfg)
	srv, err := cloudsim.Start(emu)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	c := emu.Config()
	return &testEnv{
		emu: emu, srv: srv,
		opts:    []option.ClientOption{option.WithEndpoint(srv.URL()), option.WithoutAuthentication()},
		project: c.Project, region: c.Region, zone: c.Zones[0],
	}
}

// client builds one REST client with the env's options and closes it at
// the end of the test.
func client[C interface{ Close() error }](t *testing.T, env *testEnv, newClient func(context.Context, ...option.ClientOption) (C, error)) C {
	t.Helper()
	c, err := newClient(t.Context(), env.opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func (env *testEnv) zones(t *testing.T) *compute.ZonesClient {
	return client(t, env, compute.NewZonesRESTClient)
}

func (env *testEnv) regions(t *testing.T) *compute.RegionsClient {
	return client(t, env, compute.NewRegionsRESTClient)
}

func (env *testEnv) networks(t *testing.T) *compute.NetworksClient {
	return client(t, env, compute.NewNetworksRESTClient)
}

func (env *testEnv) subnetworks(t *testing.T) *compute.SubnetworksClient {
	return client(t, env, compute.NewSubnetworksRESTClient)
}

func (env *testEnv) routes(t *testing.T) *compute.RoutesClient {
	return client(t, env, compute.NewRoutesRESTClient)
}

func (env *testEnv) globalOps(t *testing.T) *compute.GlobalOperationsClient {
	return client(t, env, compute.NewGlobalOperationsRESTClient)
}

func (env *testEnv) zoneOps(t *testing.T) *compute.ZoneOperationsClient {
	return client(t, env, compute.NewZoneOperationsRESTClient)
}

func (env *testEnv) setFault(t *testing.T, spec cloudsim.FaultSpec) {
	t.Helper()
	if err := env.srv.SetFault(spec); err != nil {
		t.Fatal(err)
	}
}

// apiCode is the HTTP status of a client error and the reason GCE gave,
// as a backend reads them: the REST clients return *apierror.APIError
// wrapping the *googleapi.Error.
func apiCode(t *testing.T, err error) (int, string) {
	t.Helper()
	var ae *apierror.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T) is not an *apierror.APIError", err, err)
	}
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		t.Fatalf("error %v does not wrap a *googleapi.Error", err)
	}
	if ae.HTTPCode() != ge.Code {
		t.Fatalf("APIError code %d, googleapi.Error code %d", ae.HTTPCode(), ge.Code)
	}
	reason := ""
	if len(ge.Errors) > 0 {
		reason = ge.Errors[0].Reason
	}
	return ge.Code, reason
}

// wantCode fails unless err is a GCE error with status and reason.
func wantCode(t *testing.T, err error, status int, reason string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want %d %s, got success", status, reason)
	}
	code, got := apiCode(t, err)
	if code != status || got != reason {
		t.Fatalf("want %d %s, got %d %s (%v)", status, reason, code, got, err)
	}
}

// adminJSON calls the emulator's HTTP admin API and decodes the answer.
func adminJSON(t *testing.T, env *testEnv, method, path string, body io.Reader, out any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, env.srv.URL()+path, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return resp.StatusCode
}
