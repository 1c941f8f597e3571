package command

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/controllers/orphans"
	"github.com/multicloud-ccm/multicloud-ccm/providers"
)

// newOrphansCommand is the orphan controller's dry run: the same list it
// would count (and, with orphans: delete, delete after the grace period),
// printed from a kubeconfig and a cloud-config, deleting nothing.
func newOrphansCommand(registry *providers.Registry) *cobra.Command {
	var kubeconfig string
	cmd := &cobra.Command{
		Use:   "orphans --kubeconfig FILE CLOUD-CONFIG",
		Short: "List the cloud resources of this cluster's load balancers that no Service owns (deletes nothing)",
		Long: `orphans lists, for every cloud of the cloud-config, the resources carrying
this cluster's ownership marks whose Service no longer exists, is no longer
of type LoadBalancer, was made again (another UID) or is served by another
cloud: what the running manager counts on /metrics as
multicloud_ccm_orphaned_resources and, with orphans: delete, deletes after
--orphan-grace-period. KEPT resources (user-supplied) are never deleted.
It reads the cloud and the cluster; it changes neither.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			ctx := c.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			if kubeconfig == "" {
				return errors.New("--kubeconfig is required: the Services say which resources are owned")
			}
			cfg, err := config.LoadFile(args[0], registry)
			if err != nil {
				var problems config.Problems
				if errors.As(err, &problems) {
					fmt.Fprintln(c.ErrOrStderr(), problems.Error())
					return ErrReported
				}
				return err
			}
			restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
			}
			kube, err := kubernetes.NewForConfig(restCfg)
			if err != nil {
				return err
			}
			return listOrphans(ctx, c, registry, cfg, kube)
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster whose Services own the resources")
	return cmd
}

func listOrphans(ctx context.Context, c *cobra.Command, registry *providers.Registry, cfg *config.CloudConfig, kube kubernetes.Interface) error {
	cloud, err := registry.NewCloud(ctx, cfg)
	if err != nil {
		return err
	}
	src := cloud.InventorySource()
	if src == nil {
		return errors.New("this cloud lists no load-balancer resources")
	}
	// A backend that reads Services from the shared informers (Azure
	// finds the Service of a part named by UID alone through them) gets
	// them here as in the manager, or it would call such parts nobody's.
	factory := informers.NewSharedInformerFactory(kube, 0)
	cloud.SetInformers(factory)
	ictx, cancel := context.WithCancel(ctx)
	defer cancel()
	factory.Start(ictx.Done())
	for typ, ok := range factory.WaitForCacheSync(ictx.Done()) {
		if !ok {
			return fmt.Errorf("list %v from the cluster: not synced", typ)
		}
	}
	list, err := kube.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list Services: %w", err)
	}
	services := make(map[types.NamespacedName]*v1.Service, len(list.Items))
	for i := range list.Items {
		s := &list.Items[i]
		services[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}] = s
	}
	w := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CLOUD\tKIND\tID\tNAME\tSERVICE\tKEPT\tREASON")
	listed := map[string]bool{}
	var failed []error
	for _, cl := range src.Inventories() {
		listed[cl.Name] = true
		owned, err := cl.Owned(ctx)
		if err != nil {
			failed = append(failed, fmt.Errorf("cloud %s: %w", cl.Name, err))
			continue
		}
		for _, o := range orphans.Find(cl.Name, owned, services, src.ServingCloud) {
			kept := ""
			if o.Kept {
				kept = "kept"
			}
			svc := o.Service.String()
			if o.Service == (types.NamespacedName{}) && o.UID != "" {
				// The cloud recorded the Service's UID alone.
				svc = "uid " + string(o.UID)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.Cloud, o.Kind, o.ID, o.Name, svc, kept, o.Reason)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, cc := range cfg.Clouds() {
		if !listed[cc.Provider] {
			fmt.Fprintf(c.ErrOrStderr(), "# cloud %s does not list its load balancers' parts yet: its orphans are not known\n", cc.Provider)
		}
	}
	return errors.Join(failed...)
}
