// Package controllers hands the command every controller the manager runs:
// three upstream controllers from k8s.io/cloud-provider (cloud-node,
// cloud-node-lifecycle, node-route), this project's service controller
// under upstream's name (controllers/service; upstream's stays selectable
// with --use-upstream-service-controller for one release), and this
// project's own (drift repair, orphans, tagging, node IPAM).
package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	cloudcontrollerconfig "k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/controllers/lbrepair"
	"github.com/multicloud-ccm/multicloud-ccm/controllers/nodeipam"
	"github.com/multicloud-ccm/multicloud-ccm/controllers/orphans"
	"github.com/multicloud-ccm/multicloud-ccm/controllers/service"
	"github.com/multicloud-ccm/multicloud-ccm/controllers/tagging"
	"github.com/multicloud-ccm/multicloud-ccm/providers/compose"
	"github.com/multicloud-ccm/multicloud-ccm/providers/instancetags"
	"github.com/multicloud-ccm/multicloud-ccm/providers/inventory"
)

// The names of this project's controllers, for --controllers.
const (
	// LoadBalancerRepair is the drift-repair controller (lbrepair).
	LoadBalancerRepair = "load-balancer-repair"
	// LoadBalancerOrphans is the orphan controller (orphans).
	LoadBalancerOrphans = "load-balancer-orphans"
	// Tagging is upstream AWS's opt-in tagging controller (tagging).
	Tagging = tagging.ControllerName
)

// Options are the settings of this project's own controllers: flags, and
// what the cloud-config says.
type Options struct {
	// LoadBalancerRepairPeriod is how often every load balancer is checked
	// for changes made outside the manager; 0 turns the check off.
	LoadBalancerRepairPeriod time.Duration
	// OrphanScanPeriod is how often each cloud is searched for resources
	// no Service owns; 0 turns it off.
	OrphanScanPeriod time.Duration
	// OrphanGracePeriod is how long a resource must stay an orphan before
	// it is deleted (with DeleteOrphans).
	OrphanGracePeriod time.Duration
	// DeleteOrphans is the cloud-config's orphans: delete.
	DeleteOrphans bool
	// Tagging are upstream AWS's tagging controller flags.
	Tagging *tagging.Options
	// UpstreamServiceController runs k8s.io/cloud-provider's service
	// controller instead of this project's (controllers/service), for one
	// release, so a cluster can go back to it if ours misbehaves.
	UpstreamServiceController bool
	// NodeIPAM are the node-ipam controller's flags of upstream's
	// (cloud-provider-gcp cmd/cloud-controller-manager/options/
	// nodeipamcontroller.go:38-41); --cluster-cidr, --allocate-node-cidrs
	// and --cidr-allocator-type are k8s.io/cloud-provider's own.
	NodeIPAM NodeIPAMFlags
}

// NodeIPAMFlags are the node-ipam controller's own flags.
type NodeIPAMFlags struct {
	ServiceClusterIPRange string
	MaskSize              int32
	MaskSizeIPv4          int32
	MaskSizeIPv6          int32
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{LoadBalancerRepairPeriod: 5 * time.Minute, OrphanScanPeriod: 30 * time.Minute, OrphanGracePeriod: time.Hour, Tagging: tagging.NewOptions()}
}

// AddFlags adds the options' flags to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.LoadBalancerRepairPeriod, "load-balancer-repair-period", o.LoadBalancerRepairPeriod,
		"How often every LoadBalancer Service's cloud load balancer is compared with what its last sync made, and repaired where it was changed outside the manager (jittered by a tenth; one batched listing per cloud). 0 turns it off, as does --controllers=-"+LoadBalancerRepair+".")
	fs.DurationVar(&o.OrphanScanPeriod, "orphan-scan-period", o.OrphanScanPeriod,
		"How often each cloud is searched for resources of this cluster's load balancers that no Service owns (counted on /metrics, logged once; deleted with orphans: delete in the cloud-config). 0 turns it off, as does --controllers=-"+LoadBalancerOrphans+".")
	fs.DurationVar(&o.OrphanGracePeriod, "orphan-grace-period", o.OrphanGracePeriod,
		"How long a resource must have been an orphan at every scan before orphans: delete deletes it.")
	o.Tagging.AddFlags(fs)
	fs.BoolVar(&o.UpstreamServiceController, "use-upstream-service-controller", o.UpstreamServiceController,
		"Run k8s.io/cloud-provider's service controller instead of this project's (one queue and set of workers per cloud, retries as soon as a cloud answers again, no node list per Service). Kept for one release as a way back; it will be removed.")
	fs.StringVar(&o.NodeIPAM.ServiceClusterIPRange, "service-cluster-ip-range", o.NodeIPAM.ServiceClusterIPRange,
		"CIDR range(s) for Services (at most one per family, comma-separated), as kube-apiserver's. With --allocate-node-cidrs=true --cidr-allocator-type=CloudAllocator, never handed to Nodes, and their order is the order of each Node's pod CIDRs (else --cluster-cidr's).")
	fs.Int32Var(&o.NodeIPAM.MaskSize, "node-cidr-mask-size", o.NodeIPAM.MaskSize,
		"Mask size of the pod CIDR allocated to a Node of a single-stack cluster where the cloud names none. Default 24 for IPv4, 64 for IPv6. Not with dual-stack: use the -ipv4/-ipv6 flags.")
	fs.Int32Var(&o.NodeIPAM.MaskSizeIPv4, "node-cidr-mask-size-ipv4", o.NodeIPAM.MaskSizeIPv4,
		"Mask size of the IPv4 pod CIDR allocated to a Node where the cloud names none (Azure: the node pool's kubernetesNodeCIDRMaskIPV4 tag wins). Default 24.")
	fs.Int32Var(&o.NodeIPAM.MaskSizeIPv6, "node-cidr-mask-size-ipv6", o.NodeIPAM.MaskSizeIPv6,
		"Mask size of the IPv6 pod CIDR allocated to a Node where the cloud names none (Azure: the node pool's kubernetesNodeCIDRMaskIPV6 tag wins). Default 64.")
}

// Aliases adds the short names of this project's controllers to
// upstream's aliases: upstream GCP's "nodeipam"
// (cmd/cloud-controller-manager/main.go:158).
func Aliases(upstream map[string]string) map[string]string {
	out := make(map[string]string, len(upstream)+1)
	for k, v := range upstream {
		out[k] = v
	}
	out[nodeipam.Alias] = nodeipam.ControllerName
	return out
}

// InitFuncConstructors returns the controllers to run, keyed by name. It is
// a fresh copy each call: app.DefaultInitFuncConstructors is package-global
// and must never be mutated.
func InitFuncConstructors(o *Options) map[string]app.ControllerInitFuncConstructor {
	out := make(map[string]app.ControllerInitFuncConstructor, len(app.DefaultInitFuncConstructors)+3)
	for name, c := range app.DefaultInitFuncConstructors {
		out[name] = c
	}
	if c, ok := out[names.NodeRouteController]; ok {
		c.Constructor = guardRouteController(c.Constructor)
		out[names.NodeRouteController] = c
	}
	if c, ok := out[names.ServiceLBController]; ok {
		// Ours, under upstream's name and client identity, so
		// --controllers and RBAC read the same. Which one runs is decided
		// when it starts: the flags are parsed after this map is built.
		upstream := c.Constructor
		c.Constructor = func(initCtx app.ControllerInitContext, completed *cloudcontrollerconfig.CompletedConfig, cloud cloudprovider.Interface) app.InitFunc {
			if o.UpstreamServiceController {
				return upstream(initCtx, completed, cloud)
			}
			return func(ctx context.Context, _ genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
				return startServiceController(ctx, initCtx, completed, cloud)
			}
		}
		out[names.ServiceLBController] = c
	}
	out[LoadBalancerRepair] = app.ControllerInitFuncConstructor{
		InitContext: app.ControllerInitContext{ClientName: LoadBalancerRepair},
		Constructor: func(initCtx app.ControllerInitContext, completed *cloudcontrollerconfig.CompletedConfig, cloud cloudprovider.Interface) app.InitFunc {
			return func(ctx context.Context, _ genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
				return startLoadBalancerRepair(ctx, o, initCtx, completed, cloud)
			}
		},
	}
	out[LoadBalancerOrphans] = app.ControllerInitFuncConstructor{
		InitContext: app.ControllerInitContext{ClientName: LoadBalancerOrphans},
		Constructor: func(_ app.ControllerInitContext, completed *cloudcontrollerconfig.CompletedConfig, cloud cloudprovider.Interface) app.InitFunc {
			return func(ctx context.Context, _ genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
				return startOrphans(ctx, o, completed, cloud)
			}
		},
	}
	out[nodeipam.ControllerName] = app.ControllerInitFuncConstructor{
		InitContext: app.ControllerInitContext{ClientName: nodeipam.ClientName},
		Constructor: func(initCtx app.ControllerInitContext, completed *cloudcontrollerconfig.CompletedConfig, cloud cloudprovider.Interface) app.InitFunc {
			return func(ctx context.Context, _ genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
				return startNodeIPAM(ctx, o, initCtx, completed, cloud)
			}
		},
	}
	out[Tagging] = app.ControllerInitFuncConstructor{
		InitContext: app.ControllerInitContext{ClientName: tagging.ClientName},
		Constructor: func(initCtx app.ControllerInitContext, completed *cloudcontrollerconfig.CompletedConfig, cloud cloudprovider.Interface) app.InitFunc {
			return func(ctx context.Context, _ genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
				return startTagging(ctx, o, initCtx, completed, cloud)
			}
		},
	}
	return out
}

// startServiceController starts this project's service controller
// (controllers/service). Like upstream's (k8s.io/cloud-provider
// app/core.go startServiceController), a cloud without load balancers
// is not an error: the controller just does not run.
func startServiceController(ctx context.Context, initCtx app.ControllerInitContext, completed *cloudcontrollerconfig.CompletedConfig, cloud cloudprovider.Interface) (controller.Interface, bool, error) {
	if _, ok := cloud.LoadBalancer(); !ok {
		klog.FromContext(ctx).Info("Not starting the service controller: the cloud serves no load balancers")
		return nil, false, nil
	}
	kube := completed.ClientBuilder.ClientOrDie(initCtx.ClientName)
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartStructuredLogging(0)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	// Upstream's event source, which tools filter Events by.
	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "service-controller"})
	c, err := service.New(service.Options{
		ClusterName: completed.ComponentConfig.KubeCloudShared.ClusterName,
		Workers:     int(completed.ComponentConfig.ServiceController.ConcurrentServiceSyncs),
	}, cloud, kube, recorder, completed.SharedInformers.Core().V1().Services(), completed.SharedInformers.Core().V1().Nodes())
	if err != nil {
		broadcaster.Shutdown()
		return nil, false, fmt.Errorf("service controller: %w", err)
	}
	go func() {
		defer broadcaster.Shutdown()
		c.Run(ctx)
	}()
	return nil, true, nil
}

// startTagging starts upstream AWS's tagging controller when --controllers
// names it. It is off by default, as upstream registers it
// (cmd/aws-cloud-controller-manager/main.go:76), so "*" alone does not
// start it; that is checked here rather than in
// app.ControllersDisabledByDefault, a package-global set. Asked for
// without an AWS cloud or with bad flags, the manager stops with the
// reason (upstream logs a warning and runs without it,
// tagging_controller_wrapper.go:132-135).
func startTagging(ctx context.Context, o *Options, initCtx app.ControllerInitContext, completed *cloudcontrollerconfig.CompletedConfig, cloud cloudprovider.Interface) (controller.Interface, bool, error) {
	if !namedInControllers(completed.ComponentConfig.Generic.Controllers, Tagging) {
		klog.FromContext(ctx).V(2).Info("Not starting the tagging controller: it is off unless --controllers names it, e.g. --controllers=*,tagging")
		return nil, false, nil
	}
	if err := o.Tagging.Validate(); err != nil {
		return nil, false, fmt.Errorf("tagging controller: %w", err)
	}
	tagger, ok := awsTagger(cloud)
	if !ok {
		return nil, false, fmt.Errorf("tagging controller: it tags EC2 instances, and no configured cloud is AWS (provider %q); drop %q from --controllers", cloud.ProviderName(), Tagging)
	}
	c, err := tagging.New(*o.Tagging, tagger, completed.ClientBuilder.ClientOrDie(initCtx.ClientName), completed.SharedInformers.Core().V1().Nodes())
	if err != nil {
		return nil, false, fmt.Errorf("tagging controller: %w", err)
	}
	go c.Run(ctx, o.Tagging.Workers)
	return nil, true, nil
}

// namedInControllers says --controllers turns name on by name, as
// k8s.io/controller-manager's IsControllerEnabled reads a
// disabled-by-default controller: the first of "name" and "-name" wins.
func namedInControllers(controllers []string, name string) bool {
	i := slices.IndexFunc(controllers, func(c string) bool { return c == name || c == "-"+name })
	return i >= 0 && controllers[i] == name
}

// awsTagger is the AWS cloud's instance tagger, when AWS is configured.
func awsTagger(cloud cloudprovider.Interface) (instancetags.Tagger, bool) {
	in, ok := cloud.InstancesV2()
	if !ok {
		return nil, false
	}
	src, ok := in.(instancetags.Source)
	if !ok {
		return nil, false
	}
	return src.InstanceTagger("aws")
}

// inventorySource is the cloud's inventory source when some configured
// cloud lists its load balancers' parts. The cloud is the registry's
// line (*compose.Cloud); the app framework hands it over as the
// interface.
func inventorySource(cloud cloudprovider.Interface) (inventory.Source, bool) {
	c, ok := cloud.(*compose.Cloud)
	if !ok {
		return nil, false
	}
	src := c.InventorySource()
	if src == nil || len(src.Inventories()) == 0 {
		return nil, false
	}
	return src, true
}

// startOrphans starts the orphan controller when it is on and some
// backend lists its load balancers' parts.
func startOrphans(ctx context.Context, o *Options, completed *cloudcontrollerconfig.CompletedConfig, cloud cloudprovider.Interface) (controller.Interface, bool, error) {
	logger := klog.FromContext(ctx)
	if o.OrphanScanPeriod <= 0 {
		logger.Info("Not looking for orphaned cloud resources: --orphan-scan-period is 0")
		return nil, false, nil
	}
	src, ok := inventorySource(cloud)
	if !ok {
		logger.Info("Not looking for orphaned cloud resources: no configured cloud lists its load balancers' parts yet")
		return nil, false, nil
	}
	c := orphans.New(orphans.Options{Period: o.OrphanScanPeriod, Grace: o.OrphanGracePeriod, Delete: o.DeleteOrphans},
		src, completed.SharedInformers.Core().V1().Services())
	go c.Run(ctx)
	return nil, true, nil
}

// startLoadBalancerRepair starts lbrepair when it is on and some backend
// lists its load balancers' parts.
func startLoadBalancerRepair(ctx context.Context, o *Options, initCtx app.ControllerInitContext, completed *cloudcontrollerconfig.CompletedConfig, cloud cloudprovider.Interface) (controller.Interface, bool, error) {
	logger := klog.FromContext(ctx)
	if o.LoadBalancerRepairPeriod <= 0 {
		logger.Info("Not starting load-balancer repair: --load-balancer-repair-period is 0")
		return nil, false, nil
	}
	src, ok := inventorySource(cloud)
	if !ok {
		logger.Info("Not starting load-balancer repair: no configured cloud lists its load balancers' parts yet")
		return nil, false, nil
	}
	kube := completed.ClientBuilder.ClientOrDie(initCtx.ClientName)
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: LoadBalancerRepair})
	c := lbrepair.New(lbrepair.Options{
		Period:      o.LoadBalancerRepairPeriod,
		ClusterName: completed.ComponentConfig.KubeCloudShared.ClusterName,
	}, src, kube, completed.SharedInformers.Core().V1().Services(), recorder)
	go func() {
		defer broadcaster.Shutdown()
		c.Run(ctx)
	}()
	return nil, true, nil
}

// guardRouteController keeps an empty --cluster-cidr from taking the whole
// manager down. Upstream's node-route controller parses the CIDR list and
// returns an error for "" whenever --configure-cloud-routes is true (its
// default) and the cloud supports routes, and any controller start error is
// fatal. With no cluster CIDR there are no routes to program, so the right
// behaviour is to skip the controller and say why.
func guardRouteController(inner app.InitFuncConstructor) app.InitFuncConstructor {
	return func(initCtx app.ControllerInitContext, completed *cloudcontrollerconfig.CompletedConfig, cloud cloudprovider.Interface) app.InitFunc {
		start := inner(initCtx, completed, cloud)
		return func(ctx context.Context, cctx genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
			shared := completed.ComponentConfig.KubeCloudShared
			if shared.ConfigureCloudRoutes && strings.TrimSpace(shared.ClusterCIDR) == "" {
				if _, ok := cloud.Routes(); ok {
					klog.FromContext(ctx).Info("Not starting the node-route controller: --configure-cloud-routes is set but --cluster-cidr is empty; set --cluster-cidr to program routes for pod CIDRs")
					return nil, false, nil
				}
			}
			return start(ctx, cctx)
		}
	}
}
