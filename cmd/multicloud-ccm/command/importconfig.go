package command

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/providers"
)

// newImportConfigCommand converts an upstream CCM's config file, the first
// step of switching a running cluster
// (docs/tutorials/switching-from-upstream.md). The backends read their upstream's format; this command
// chooses the clusterID, renders and validates.
func newImportConfigCommand(registry *providers.Registry) *cobra.Command {
	var from, clusterName, environmentFile string
	cmd := &cobra.Command{
		Use:   "import-config --from aws|azure|gce|openstack FILE",
		Short: "Convert an upstream CCM's config file into a cloud-config",
		Long: `import-config reads the config file of the upstream cloud-controller-manager
of a cloud (AWS cloud.conf, Azure azure.json, GCE gce.conf, OpenStack
cloud.conf) and prints the equivalent cloud-config on stdout.

Every upstream key with no equivalent here, or with a changed meaning, is
listed on stderr with what it did upstream and what to do instead. Secrets
are carried into the output (it belongs in a Secret) but never printed on
stderr. The output is validated as validate-config would; if it does not
validate (a required value the upstream file did not hold), the problems
follow the notes and the exit status is 1.

--cluster-name takes the upstream manager's --cluster-name (default
"kubernetes"): it names load balancers on Azure, GCE and OpenStack, so the
clusterID must equal it for the switched manager to find them. An AWS
cloud.conf that names its cluster (KubernetesClusterTag/ID) sets the
clusterID itself.

--environment-file takes, for an azure.json with cloud AzureStackCloud,
the JSON file of the cloud's endpoints that the upstream Azure CCM read
from AZURE_ENVIRONMENT_FILEPATH (default: the file that variable names);
its resourceManagerEndpoint, tokenAudience and activeDirectoryEndpoint
are carried over.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			b, ok := registry.Lookup(from)
			switch {
			case from == "":
				return errors.New("--from is required: the cloud whose upstream CCM config FILE is (aws, azure, gce or openstack)")
			case !ok && slices.Contains(config.KnownProviders, from):
				return fmt.Errorf("--from %s: that backend is not compiled into this binary (compiled in: %s)", from, registry.CompiledString())
			case !ok:
				return fmt.Errorf("--from %q: want one of %v", from, config.KnownProviders)
			case b.ImportConfig == nil:
				return fmt.Errorf("--from %s: this backend has no importer", from)
			case environmentFile != "" && from != "azure":
				return fmt.Errorf("--environment-file is read only with --from azure (the file AZURE_ENVIRONMENT_FILEPATH names for the upstream Azure CCM), not --from %s", from)
			}
			data, err := os.ReadFile(args[0])
			if err != nil {
				return fmt.Errorf("reading upstream config: %w", err)
			}
			res, err := b.ImportConfig(data, providers.ImportOptions{ClusterName: clusterName, EnvironmentFile: environmentFile})
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			stderr := c.ErrOrStderr()
			clusterID := clusterName
			if res.ClusterID != "" {
				if c.Flags().Changed("cluster-name") && res.ClusterID != clusterName {
					fmt.Fprintf(stderr, "clusterID is %q, the cluster the file names, not --cluster-name %q: the cloud resources carry the file's\n", res.ClusterID, clusterName)
				}
				clusterID = res.ClusterID
			}
			out, err := config.Render(from, clusterID, res.Section)
			if err != nil {
				return err
			}
			if _, err := c.OutOrStdout().Write(out); err != nil {
				return err
			}
			if len(res.Notes) > 0 {
				fmt.Fprintf(stderr, "%d upstream keys of %s have no equivalent here or a changed meaning:\n", len(res.Notes), args[0])
				for _, n := range res.Notes {
					fmt.Fprintf(stderr, "  - %s\n", n)
				}
			}
			if _, err := config.Parse(out, registry); err != nil {
				var problems config.Problems
				if !errors.As(err, &problems) {
					return err
				}
				fmt.Fprintf(stderr, "The imported cloud-config does not validate yet; set these before using it:\n%s\n", problems.Error())
				return ErrReported
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the cloud of the upstream CCM whose config FILE is: aws, azure, gce or openstack")
	cmd.Flags().StringVar(&clusterName, "cluster-name", providers.DefaultClusterName, "the upstream manager's --cluster-name; becomes clusterID")
	cmd.Flags().StringVar(&environmentFile, "environment-file", "", "azure only: the endpoints file of an AzureStackCloud (default: the file AZURE_ENVIRONMENT_FILEPATH names)")
	return cmd
}
