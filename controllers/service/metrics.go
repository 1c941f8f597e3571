package service

import (
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The metrics of upstream's service controller, under its names
// (k8s.io/cloud-provider controllers/service/metrics.go), so dashboards
// built on them keep working after the switch. Only one of the two
// controllers runs in a process.
var (
	loadBalancerSyncs = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem: "service_controller", Name: "loadbalancer_sync_total",
		Help:           "A metric counting the amount of times any load balancer has been configured, as an effect of service/node changes on the cluster",
		StabilityLevel: metrics.ALPHA,
	})
	nodeSyncErrors = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem: "service_controller", Name: "nodesync_error_total",
		Help:           "A metric counting the amount of times any load balancer has been configured and errored, as an effect of node changes on the cluster",
		StabilityLevel: metrics.ALPHA,
	})
	nodeSyncLatency = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem: "service_controller", Name: "nodesync_latency_seconds",
		Help:           "A metric measuring the latency for nodesync which updates loadbalancer hosts on cluster node updates.",
		Buckets:        metrics.ExponentialBuckets(1, 2, 15),
		StabilityLevel: metrics.ALPHA,
	})
	updateHostsLatency = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem: "service_controller", Name: "update_loadbalancer_host_latency_seconds",
		Help:           "A metric measuring the latency for updating each load balancer hosts.",
		Buckets:        metrics.ExponentialBuckets(1, 2, 15),
		StabilityLevel: metrics.ALPHA,
	})
)

// Metrics are the controller's collectors, for the metrics reference
// (hack/refdocs).
func Metrics() []metrics.Registerable {
	return []metrics.Registerable{loadBalancerSyncs, nodeSyncErrors, nodeSyncLatency, updateHostsLatency}
}

// registerMetrics registers them in the manager's /metrics. The manager
// constructs upstream's controller (which registers the same names) only
// with --use-upstream-service-controller, never with this one; the
// AlreadyRegistered error a second New in one process gets is ignored.
func registerMetrics() {
	for _, m := range Metrics() {
		_ = legacyregistry.Register(m)
	}
}
