package command

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/providers"
)

// newPermissionsCommand prints the cloud policy a cloud-config needs:
// the backend's declared permissions (providers/<cloud>/permissions.go)
// of exactly the features the config turns on, in the cloud's own policy
// format, one document per cloud of the config.
func newPermissionsCommand(registry *providers.Registry) *cobra.Command {
	var features []string
	var all bool
	cmd := &cobra.Command{
		Use:   "permissions [--features NAME,...] [--all] CLOUD-CONFIG",
		Short: "Print the least-privilege cloud policy for a cloud-config",
		Long: `permissions prints, for every cloud of the cloud-config, the policy its
identity needs for the features the config turns on, in the cloud's own
format: an AWS IAM policy (JSON), an Azure custom role (JSON), a GCE custom
role (YAML), the OpenStack policy rules (YAML). The same declarations
generate docs/reference/<cloud>.md and deploy/permissions, and the
conformance suite runs each emulator under them. --features adds features
a flag turns on (e.g. tagging for --controllers=*,tagging); --all prints the
policy of every feature. The config is validated first; nothing is called.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := config.LoadFile(args[0], registry)
			if err != nil {
				var problems config.Problems
				if errors.As(err, &problems) {
					fmt.Fprintln(c.ErrOrStderr(), problems.Error())
					return ErrReported
				}
				return err
			}
			sections := cfg.Sections
			if cfg.Section != nil {
				sections = map[string]config.Section{cfg.Provider: cfg.Section}
			}
			names := make([]string, 0, len(sections))
			for n := range sections {
				names = append(names, n)
			}
			sort.Strings(names)
			out := c.OutOrStdout()
			for i, name := range names {
				b, ok := registry.Lookup(name)
				if !ok || b.Permissions == nil || b.Policy == nil || b.PermissionFeatures == nil {
					return fmt.Errorf("%s declares no permissions in this build", name)
				}
				decl := b.Permissions()
				want := b.PermissionFeatures(sections[name], cfg.DeleteOrphans())
				if all {
					want = decl.Names()
				}
				for _, f := range features {
					if _, ok := decl.Feature(f); ok && !slices.Contains(want, f) {
						want = append(want, f)
					} else if !ok && len(names) == 1 {
						return fmt.Errorf("--features: %s has no feature %q; it has %s", name, f, strings.Join(decl.Names(), ", "))
					}
				}
				grants, err := decl.Grants(want...)
				if err != nil {
					return err
				}
				doc, err := b.Policy(grants)
				if err != nil {
					return err
				}
				if len(names) > 1 {
					if i > 0 {
						fmt.Fprintln(out)
					}
					fmt.Fprintf(out, "# %s: features %s\n", name, strings.Join(want, ", "))
				} else {
					fmt.Fprintf(c.ErrOrStderr(), "%s: features %s\n", name, strings.Join(want, ", "))
				}
				if _, err := out.Write(doc); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&features, "features", nil, "features to add to those the config turns on (e.g. tagging)")
	cmd.Flags().BoolVar(&all, "all", false, "the policy of every feature")
	return cmd
}
