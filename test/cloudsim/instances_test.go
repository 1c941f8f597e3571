package cloudsim_test

import (
	"errors"
	"testing"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// A cloud without Instances answers every instance route with 501, which
// the client reports as ErrNoInstances rather than as "not found".
func TestInstancesNotImplemented(t *testing.T) {
	srv := startToy(t)
	c := cloudsim.NewAdminClient(srv.URL())
	if _, err := c.ListInstances(t.Context()); !errors.Is(err, cloudsim.ErrNoInstances) {
		t.Errorf("list: %v", err)
	}
	_, err := c.StopInstance(t.Context(), "x")
	if !errors.Is(err, cloudsim.ErrNoInstances) || errors.Is(err, cloudsim.ErrInstanceNotFound) {
		t.Errorf("stop: %v", err)
	}
}
