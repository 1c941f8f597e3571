package gce

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	gceemu "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/gce"
)

// TestZonesAtStart: the zones listing at start waits out a throttled
// Compute Engine and gets the zones once reads answer; it gives up with
// the error after its patience; a definitive error (no such project)
// stops it at once.
func TestZonesAtStart(t *testing.T) {
	env := newTestEnv(t, gceemu.Config{}, nil)
	want := env.cloud.zones
	quick := waitPolicy{first: 10 * time.Millisecond, max: 20 * time.Millisecond, patience: time.Minute}

	t.Run("throttled, then answering", func(t *testing.T) {
		// Three attempts of the first listing, one of the second.
		env.setFault(t, cloudsim.FaultSpec{Op: cloudsim.ReadOps, ThrottleNext: 4})
		t.Cleanup(func() { env.srv.ClearFault(cloudsim.ReadOps) })
		got, err := zonesAtStart(t.Context(), env.api, env.s, quick)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("zones %v, %v; want %v", got, err, want)
		}
	})

	t.Run("throttled past its patience", func(t *testing.T) {
		env.setFault(t, cloudsim.FaultSpec{Op: cloudsim.ReadOps, ThrottleNext: 1 << 30})
		t.Cleanup(func() { env.srv.ClearFault(cloudsim.ReadOps) })
		w := quick
		w.patience = 200 * time.Millisecond
		got, err := zonesAtStart(t.Context(), env.api, env.s, w)
		if err == nil || !retryable(err) {
			t.Errorf("zones %v, %v; want the rate limit error", got, err)
		}
	})

	t.Run("no such project", func(t *testing.T) {
		s := *env.s
		s.ProjectID = "no-such-project"
		w := waitPolicy{first: time.Minute, max: time.Minute, patience: time.Hour}
		start := time.Now()
		got, err := zonesAtStart(t.Context(), env.api, &s, w)
		if err == nil || time.Since(start) > 30*time.Second {
			t.Errorf("zones %v, %v after %v; want an error at once", got, err, time.Since(start))
		}
	})
}

// TestTransientTokenError: only the token endpoint's throttling, time-out
// and failure statuses are transient, also as the HTTP client returns
// them from a call; a refused key, or no answer, is not.
func TestTransientTokenError(t *testing.T) {
	retrieve := func(code int) error {
		return &oauth2.RetrieveError{Response: &http.Response{StatusCode: code}, ErrorCode: "x"}
	}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{retrieve(http.StatusTooManyRequests), true},
		{retrieve(http.StatusServiceUnavailable), true},
		{retrieve(http.StatusInternalServerError), true},
		{retrieve(http.StatusRequestTimeout), true},
		{fmt.Errorf("gce: getting an access token: %w", retrieve(http.StatusTooManyRequests)), true},
		{&url.Error{Op: "Get", URL: "https://compute", Err: retrieve(http.StatusServiceUnavailable)}, true},
		{retrieve(http.StatusBadRequest), false},
		{retrieve(http.StatusUnauthorized), false},
		{&oauth2.RetrieveError{}, false},
		{errors.New("dial tcp: connection refused"), false},
	} {
		if got := transientTokenError(tc.err); got != tc.want {
			t.Errorf("transientTokenError(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
