// Package e2e runs the built multicloud-ccm binary as a subprocess against a
// real etcd + kube-apiserver, authenticated as the cloud-controller-manager
// ServiceAccount bound only by deploy/'s RBAC. The foundation's scenarios use
// the e2efake test backend (providers/fakecloud), compiled in by build tag.
package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/multicloud-ccm/multicloud-ccm/test/ccmproc"
	"github.com/multicloud-ccm/multicloud-ccm/test/controlplane"
)

// env is shared by every test in the package: starting the control plane
// and building the binaries once keeps the suite fast.
var env struct {
	// cluster is the shared control plane (see cluster).
	*cluster
	// root is the repository root.
	root string
	// tmp holds binaries, configs and logs; removed at the end.
	tmp string
	// fakeBinary is multicloud-ccm built with -tags e2efake.
	fakeBinary string
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if err := setup(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e setup: %v\n", err)
		teardown()
		return 1
	}
	code := m.Run()
	teardown()
	return code
}

func setup() error {
	var err error
	if env.root, err = controlplane.RepoRoot(); err != nil {
		return err
	}
	if env.tmp, err = os.MkdirTemp("", "mccm-e2e-"); err != nil {
		return err
	}
	env.fakeBinary = filepath.Join(env.tmp, "multicloud-ccm-e2efake")
	if err := goBuild(env.fakeBinary, "e2efake"); err != nil {
		return err
	}
	env.cluster, err = startCluster("shared")
	return err
}

func teardown() {
	if env.cluster != nil {
		if err := env.cp.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stop control plane: %v\n", err)
		}
	}
	if env.tmp != "" && os.Getenv("E2E_KEEP") == "" {
		_ = os.RemoveAll(env.tmp)
	}
}

// goBuild builds cmd/multicloud-ccm with the given build tags.
func goBuild(out, tags string) error { return ccmproc.Build(out, tags, os.Stderr) }
