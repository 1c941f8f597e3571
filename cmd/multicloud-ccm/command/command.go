// Package command builds the multicloud-ccm command: the upstream
// cloud-controller-manager app with the cloud-config, and its subcommands.
// It is a package of its own, not part of package main, so that
// hack/refdocs documents the flags of the very command the binary runs
// (docs/reference/flags.md).
package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	cloudcontrollerconfig "k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	"k8s.io/cloud-provider/options"
	cliflag "k8s.io/component-base/cli/flag"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics on /metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/controllers"
	"github.com/multicloud-ccm/multicloud-ccm/providers"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "v0.0.0-dev"

// ErrReported marks a failure whose details were already printed.
var ErrReported = errors.New("reported")

// newCommand builds the manager command on k8s.io/cloud-provider/app, which
// brings leader election, secure serving, /healthz, /metrics, /configz, the
// standard flags and the upstream controllers. What this project adds: the
// cloud-config names the backend (so --cloud-provider is optional), the
// cloud-config is loaded and validated before anything starts, and the
// `version`, `validate-config`, `import-config` and `orphans` subcommands.
// version is what `multicloud-ccm version` prints.
func New(registry *providers.Registry, version string, stopCh <-chan struct{}) *cobra.Command {
	opts, err := options.NewCloudControllerManagerOptions()
	if err != nil {
		// Only fails if upstream defaults fail to convert: a build bug.
		panic(fmt.Sprintf("cloud-controller-manager options: %v", err))
	}

	setProductDefaults(opts)

	// loaded is set by RunE before the upstream code calls cloudInit, so the
	// file is read and validated exactly once.
	var loaded *config.CloudConfig
	cloudInit := func(c *cloudcontrollerconfig.CompletedConfig) cloudprovider.Interface {
		stripNodeManagedFields(c.SharedInformers)
		cloud, err := registry.NewCloud(context.Background(), loaded)
		if err != nil {
			klog.Fatalf("Cloud provider could not be initialized: %v", err)
		}
		return cloud
	}

	ctrlOpts := controllers.NewOptions()
	fss := cliflag.NamedFlagSets{}
	ctrlOpts.AddFlags(fss.FlagSet("multicloud-ccm controllers"))
	cmd := app.NewCloudControllerManagerCommand(opts, cloudInit, controllers.InitFuncConstructors(ctrlOpts),
		controllers.Aliases(names.CCMControllerAliases()), fss, stopCh)
	cmd.Use = "multicloud-ccm"
	cmd.Long = `multicloud-ccm is one Kubernetes cloud-controller-manager for AWS, Azure,
GCE and OpenStack. The cloud-config file (--cloud-config) names the backend
and carries its settings; see 'multicloud-ccm validate-config --help'.`

	upstreamRun := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		// --version must work without a cloud-config.
		verflag.PrintAndExitIfRequested()
		cfg, err := loadForRun(opts, registry, c.ErrOrStderr())
		if err != nil {
			return err
		}
		loaded = cfg
		ctrlOpts.DeleteOrphans = cfg.DeleteOrphans()
		return upstreamRun(c, args)
	}
	cmd.AddCommand(newVersionCommand(registry, version), newValidateConfigCommand(registry), newImportConfigCommand(registry), newOrphansCommand(registry), newPermissionsCommand(registry))
	return cmd
}

// Defaults this project picks over upstream's, measured with `make bench`
// (docs/explanation/performance.md). Upstream's 20 qps and one worker per controller
// take minutes to initialize 1000 Nodes and serialize every load balancer
// behind the slowest one; the cloud side is protected by the backends'
// batching and caching, and the apiserver by its priority and fairness.
// Every value is still a flag, so an operator can go back.
const (
	defaultKubeAPIQPS             = 200
	defaultKubeAPIBurst           = 400
	defaultConcurrentNodeSyncs    = 10
	defaultConcurrentServiceSyncs = 10
	// defaultConcurrentNodeLifecycleSyncs: with one worker, a lifecycle
	// pass waits for each Node in turn, so in a hybrid cluster a cloud
	// that does not answer would hold up every other cloud's Nodes until
	// its request timed out; a cloud's calls beyond its share then fail
	// fast (providers/compose/hybrid/share.go) while the other workers
	// go on. The backends still make one batched read per pass.
	defaultConcurrentNodeLifecycleSyncs = 10
)

func setProductDefaults(opts *options.CloudControllerManagerOptions) {
	opts.Generic.ClientConnection.QPS = defaultKubeAPIQPS
	opts.Generic.ClientConnection.Burst = defaultKubeAPIBurst
	opts.NodeController.ConcurrentNodeSyncs = defaultConcurrentNodeSyncs
	opts.ServiceController.ConcurrentServiceSyncs = defaultConcurrentServiceSyncs
	opts.NodeLifecycleController.ConcurrentNodeLifecycleSyncs = defaultConcurrentNodeLifecycleSyncs
}

// loadForRun reads and validates --cloud-config and reconciles it with
// --cloud-provider, which becomes optional: the file is the one place that
// names the backend, and a disagreement is a mistake worth stopping for.
func loadForRun(opts *options.CloudControllerManagerOptions, registry *providers.Registry, stderr io.Writer) (*config.CloudConfig, error) {
	provider := opts.KubeCloudShared.CloudProvider
	if provider.CloudConfigFile == "" {
		return nil, errors.New("--cloud-config is required: it names the cloud provider and carries its settings")
	}
	cfg, err := config.LoadFile(provider.CloudConfigFile, registry)
	if err != nil {
		var problems config.Problems
		if errors.As(err, &problems) {
			fmt.Fprintf(stderr, "Error: invalid cloud-config %s:\n", provider.CloudConfigFile)
			for _, p := range problems {
				fmt.Fprintf(stderr, "  %s\n", p)
			}
			return nil, fmt.Errorf("invalid cloud-config %s: %w", provider.CloudConfigFile, ErrReported)
		}
		return nil, err
	}
	name := cfg.Provider
	if cfg.Hybrid() {
		// The composite's name, as its ProviderName says.
		name = strings.Join(cfg.Providers, ",")
	}
	if provider.Name != "" && provider.Name != name {
		return nil, fmt.Errorf("--cloud-provider=%q does not match provider %q in cloud-config %s; drop the flag or make them agree",
			provider.Name, name, provider.CloudConfigFile)
	}
	provider.Name = name
	return cfg, nil
}

func newVersionCommand(registry *providers.Registry, version string) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and the cloud providers compiled into this binary",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			fmt.Fprintf(c.OutOrStdout(), "multicloud-ccm %s (%s, %s/%s)\nproviders: %s\n",
				version, runtime.Version(), runtime.GOOS, runtime.GOARCH, registry.CompiledString())
			return nil
		},
	}
}

func newValidateConfigCommand(registry *providers.Registry) *cobra.Command {
	return &cobra.Command{
		Use:   "validate-config FILE",
		Short: "Check a cloud-config offline and print the effective config",
		Long: `validate-config decodes and validates a cloud-config without contacting any
cloud. On success it prints the effective config (defaults applied, secrets
shown as <redacted>) and exits 0. Otherwise it prints one line per problem,
"<field.path>: <problem> (line N)", and exits 1.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := config.LoadFile(args[0], registry)
			if err != nil {
				var problems config.Problems
				if !errors.As(err, &problems) {
					return err
				}
				// One "<field.path>: <problem> (line N)" line each.
				fmt.Fprintln(c.ErrOrStderr(), problems.Error())
				return ErrReported
			}
			out, err := cfg.Redacted()
			if err != nil {
				return err
			}
			_, err = c.OutOrStdout().Write(out)
			return err
		},
	}
}

// stripNodeManagedFields drops managedFields from the Nodes the manager's
// informer caches hold for its whole life. No controller here reads them,
// and writes without them leave the server's copy alone; at 5000 Nodes
// they are a tenth of the manager's live memory. It runs before any
// informer starts (SetTransform refuses afterwards); every controller
// uses the Node informer, so asking for it starts nothing extra.
func stripNodeManagedFields(f informers.SharedInformerFactory) {
	strip := func(obj any) (any, error) {
		// Tombstones (cache.DeletedFinalStateUnknown) pass unchanged.
		if m, err := meta.Accessor(obj); err == nil {
			m.SetManagedFields(nil)
		}
		return obj, nil
	}
	if err := f.Core().V1().Nodes().Informer().SetTransform(strip); err != nil {
		klog.ErrorS(err, "Keeping managedFields in the Node cache")
	}
}
