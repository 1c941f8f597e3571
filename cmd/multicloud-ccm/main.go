// Command multicloud-ccm is one Kubernetes cloud-controller-manager for AWS,
// Azure, GCE and OpenStack. A cloud-config file names the backend.
package main

import (
	"errors"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics on /metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric

	"github.com/multicloud-ccm/multicloud-ccm/providers"
	_ "github.com/multicloud-ccm/multicloud-ccm/providers/builtin"
)

func main() {
	cmd := newCommand(providers.Default, wait.NeverStop)
	if err := cli.RunNoErrOutput(cmd); err != nil {
		// Problems already printed (a bad cloud-config) need no second copy.
		if !errors.Is(err, errReported) {
			fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		}
		os.Exit(1)
	}
}
