// Package controllers hands the command every controller the manager runs:
// the four upstream controllers from k8s.io/cloud-provider (cloud-node,
// cloud-node-lifecycle, service-lb, node-route) and, as they arrive, this
// project's own.
package controllers

import (
	"context"
	"strings"

	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	cloudcontrollerconfig "k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
	"k8s.io/klog/v2"
)

// InitFuncConstructors returns the controllers to run, keyed by name. It is
// a fresh copy each call: app.DefaultInitFuncConstructors is package-global
// and must never be mutated.
func InitFuncConstructors() map[string]app.ControllerInitFuncConstructor {
	out := make(map[string]app.ControllerInitFuncConstructor, len(app.DefaultInitFuncConstructors))
	for name, c := range app.DefaultInitFuncConstructors {
		out[name] = c
	}
	if c, ok := out[names.NodeRouteController]; ok {
		c.Constructor = guardRouteController(c.Constructor)
		out[names.NodeRouteController] = c
	}
	return out
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
