// Command multicloud-ccm is one Kubernetes cloud-controller-manager for AWS,
// Azure, GCE and OpenStack. A cloud-config file names the backend.
package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-base/cli"

	"github.com/multicloud-ccm/multicloud-ccm/cmd/multicloud-ccm/command"
	"github.com/multicloud-ccm/multicloud-ccm/providers"
	_ "github.com/multicloud-ccm/multicloud-ccm/providers/builtin"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "v0.0.0-dev"

func main() {
	setMemoryLimit()
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
	cmd := command.New(providers.Default, version, wait.NeverStop)
	if err := cli.RunNoErrOutput(cmd); err != nil {
		// Problems already printed (a bad cloud-config) need no second copy.
		if !errors.Is(err, command.ErrReported) {
			fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		}
		os.Exit(1)
	}
}

// setMemoryLimit gives the Go runtime a soft memory limit of 90% of the
// container's memory limit (cgroup v1 or v2), so that the garbage
// collector works harder as the limit nears instead of the container being
// OOM-killed: at 5000 Nodes and 1000 Services most of what the heap holds
// between collections is the garbage of short-lived sync work, which the
// default GOGC=100 lets grow to about twice the live set
// (docs/explanation/performance.md measures both). An explicit GOMEMLIMIT, or AUTOMEMLIMIT=off,
// wins; without a cgroup memory limit nothing changes.
func setMemoryLimit() {
	// The only error is "no cgroup limit found": then the runtime's
	// defaults apply, which is what a process outside a container wants.
	_, _ = memlimit.SetGoMemLimitWithOpts(
		memlimit.WithRatio(0.9),
		memlimit.WithProvider(memlimit.FromCgroup),
		memlimit.WithLogger(slog.New(slog.DiscardHandler)),
	)
}

// defaultGCPercent is the collector's GOGC unless the GOGC variable sets
// it (the runtime has read that one already). At 5000 Nodes and 1000
// Services the live heap is about 50 MB, and most of what the process
// allocates is the short-lived garbage of sync work (request bodies,
// Node copies), so the default GOGC=100 lets the heap grow to twice the
// live set between collections. 75 holds it at 1.75 times for a little
// more collector CPU, the trade Prometheus made for the same reason
// (prometheus/prometheus#14288, v2.53). docs/explanation/performance.md
// measures both.
const defaultGCPercent = 75
