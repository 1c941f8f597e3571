package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance/clouds"
)

// ourServiceController is what controllers/service logs when it starts;
// upstream's logs only "Starting service controller".
const ourServiceController = "workersPerCloud"

// TestUpstreamServiceControllerStillServes: for one release the manager
// can run k8s.io/cloud-provider's service controller instead of its own
// (--use-upstream-service-controller), as a way back. The conformance
// suite runs with ours, the default; this runs the load balancer
// scenarios of every cloud with upstream's, so both stay served until
// the flag goes.
func TestUpstreamServiceControllerStillServes(t *testing.T) {
	t.Parallel() // beside TestConformance's runs
	for _, a := range clouds.All() {
		t.Run(a.Name(), func(t *testing.T) {
			t.Parallel()
			s := startSuiteCloud(t, newCluster(t, a.Name()+"-upstream-svc"), a, "ours")
			poll(t, converge, "the default service controller, this project's, started", func(context.Context) (bool, string, error) {
				return strings.Contains(s.ccm.log.String(), ourServiceController), "its log lacks " + ourServiceController, nil
			})
			s.ccm.stop()
			s.ccm = s.startCCM(t, "upstream-svc", "--use-upstream-service-controller")
			s.loadBalancers(t)
			if strings.Contains(s.ccm.log.String(), ourServiceController) {
				t.Errorf("--use-upstream-service-controller still ran this project's controller")
			}
		})
	}
}
