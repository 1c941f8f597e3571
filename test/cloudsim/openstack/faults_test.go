package openstack_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

func setFault(t *testing.T, e *env, spec cloudsim.FaultSpec) {
	t.Helper()
	if err := e.srv.SetFault(spec); err != nil {
		t.Fatal(err)
	}
}

// A throttled Nova call is a 429 with Retry-After and an overLimit body.
// gophercloud does not retry it by itself: it hands it to the
// ProviderClient's RetryBackoffFunc when one is set (for 429 and 498
// only), and otherwise returns it.
func TestThrottling(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{RetryAfter: 2})
	e.launch(t, cloudsimopenstack.LaunchSpec{})
	c := e.compute(t, "2.47")

	setFault(t, e, cloudsim.FaultSpec{Op: "nova:ListServersDetail", ThrottleNext: 1})
	_, err := servers.List(c, nil).AllPages(t.Context())
	if !gophercloud.ResponseCodeIs(err, http.StatusTooManyRequests) {
		t.Fatalf("want 429, got %v", err)
	}
	ce := codeError(t, err)
	if ce.ResponseHeader.Get("Retry-After") != "2" || ce.ResponseHeader.Get("X-OpenStack-Nova-API-Version") != "2.47" {
		t.Errorf("headers %v", ce.ResponseHeader)
	}
	key, fault := faultBody(t, ce.Body)
	if key != "overLimit" || fault["code"] != float64(429) || fault["retryAfter"] != "2" || fault["message"] == "" {
		t.Errorf("body %s", ce.Body)
	}

	// With a RetryBackoffFunc honouring Retry-After (scaled down here),
	// two throttles are ridden out on the third attempt.
	var waits []string
	c.ProviderClient.RetryBackoffFunc = func(ctx context.Context, respErr *gophercloud.ErrUnexpectedResponseCode, err error, failCount uint) error {
		ra := respErr.ResponseHeader.Get("Retry-After")
		waits = append(waits, ra)
		secs, perr := strconv.Atoi(ra)
		if perr != nil {
			return err
		}
		select {
		case <-time.After(time.Duration(secs) * time.Millisecond):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c.ProviderClient.MaxBackoffRetries = 3
	e.srv.ResetCalls()
	setFault(t, e, cloudsim.FaultSpec{Op: "nova:*", ThrottleNext: 2})
	list := listAll(t, c, nil)
	if len(list) != 1 || e.srv.CallCount("nova:ListServersDetail") != 3 || len(waits) != 2 || waits[0] != "2" {
		t.Fatalf("%d servers after %d calls, waits %v", len(list), e.srv.CallCount("nova:ListServersDetail"), waits)
	}
	// More throttles than MaxBackoffRetries: the 429 comes back.
	setFault(t, e, cloudsim.FaultSpec{Op: "nova:GetServer", ThrottleNext: 5})
	_, err = servers.Get(t.Context(), c, list[0].ID).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusTooManyRequests) {
		t.Fatalf("after exhausting retries: %v", err)
	}

	// A rate limit on reads throttles them and leaves writes alone.
	e.srv.ClearFaults()
	c.ProviderClient.RetryBackoffFunc = nil
	setFault(t, e, cloudsim.FaultSpec{Op: cloudsim.ReadOps, RatePerSecond: 0.001, Burst: 1})
	_, err = servers.Get(t.Context(), c, list[0].ID).Extract()
	ok(t, err)
	_, err = servers.Get(t.Context(), c, list[0].ID).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusTooManyRequests) {
		t.Fatalf("second read: %v", err)
	}
	ok(t, servers.Stop(t.Context(), c, list[0].ID).ExtractErr())
}

// The legacy over-limit answer is a 413, which gophercloud's backoff
// hook never sees.
func TestLegacyOverLimit(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{LegacyOverLimit: true})
	c := e.compute(t, "")
	called := false
	c.ProviderClient.RetryBackoffFunc = func(context.Context, *gophercloud.ErrUnexpectedResponseCode, error, uint) error {
		called = true
		return nil
	}
	setFault(t, e, cloudsim.FaultSpec{Op: "nova:ListFlavorsDetail", ThrottleNext: 1})
	w := e.do(t, "GET", "/compute/v2.1/flavors/detail", "", "X-Auth-Token", c.Token())
	if w.status != http.StatusRequestEntityTooLarge || w.header.Get("Retry-After") != "1" ||
		w.body["overLimit"].(map[string]any)["code"] != float64(413) {
		t.Fatalf("legacy over-limit: %d %v %s", w.status, w.header, w.raw)
	}
	setFault(t, e, cloudsim.FaultSpec{Op: "nova:ListServersDetail", ThrottleNext: 1})
	_, err := servers.List(c, nil).AllPages(t.Context())
	if !gophercloud.ResponseCodeIs(err, http.StatusRequestEntityTooLarge) || called {
		t.Fatalf("413: %v, backoff called %v", err, called)
	}
}

func TestServerErrors(t *testing.T) {
	e := newEnv(t, cloudsimopenstack.Config{})
	c := e.compute(t, "2.60")
	setFault(t, e, cloudsim.FaultSpec{Op: "nova:ListServersDetail", FailNext: 1})
	_, err := servers.List(c, nil).AllPages(t.Context())
	if !gophercloud.ResponseCodeIs(err, http.StatusInternalServerError) {
		t.Fatalf("want 500, got %v", err)
	}
	ce := codeError(t, err)
	key, fault := faultBody(t, ce.Body)
	if key != "computeFault" || fault["code"] != float64(500) ||
		fault["message"] != "The server has either erred or is incapable of performing the requested operation." ||
		ce.ResponseHeader.Get("OpenStack-API-Version") != "compute 2.60" {
		t.Errorf("500: %s %v", ce.Body, ce.ResponseHeader)
	}
	_, err = servers.List(c, nil).AllPages(t.Context())
	ok(t, err)

	// Keystone fails in its own format, and authentication with it.
	setFault(t, e, cloudsim.FaultSpec{Op: "keystone:CreateToken", FailNext: 1})
	_, err = openstack.AuthenticatedClient(t.Context(), e.passwordOpts())
	if !gophercloud.ResponseCodeIs(err, http.StatusInternalServerError) {
		t.Fatalf("keystone 500: %v", err)
	}
	if key, fault := faultBody(t, codeError(t, err).Body); key != "error" || fault["title"] != "Internal Server Error" {
		t.Errorf("keystone 500 body %v", fault)
	}
	setFault(t, e, cloudsim.FaultSpec{Op: "keystone:*", ThrottleNext: 1})
	_, err = openstack.AuthenticatedClient(t.Context(), e.passwordOpts())
	if !gophercloud.ResponseCodeIs(err, http.StatusTooManyRequests) {
		t.Fatalf("keystone 429: %v", err)
	}

	// A hung call ends with the client's deadline.
	setFault(t, e, cloudsim.FaultSpec{Op: "nova:GetFlavor", HangNext: 1})
	hctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := flavors.Get(hctx, c, "1").Extract(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hung call: %v", err)
	}
	_, err = flavors.Get(t.Context(), c, "1").Extract()
	ok(t, err)
	if !e.emu.Mutating("keystone:CreateToken") || e.emu.Mutating("keystone:ValidateToken") || e.emu.Mutating("nova:ListServersDetail") {
		t.Error("mutating classification")
	}
}
