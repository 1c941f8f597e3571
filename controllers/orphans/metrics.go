package orphans

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The controller's series on /metrics, each by cloud.
var (
	scans = metrics.NewCounterVec(&metrics.CounterOpts{
		Name: "multicloud_ccm_orphan_scans_total",
		Help: "Listings of a cloud's load-balancer resources looking for orphans, by provider and result (ok, error).",
	}, []string{"provider", "result"})
	orphaned = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name: "multicloud_ccm_orphaned_resources",
		Help: "Cloud resources of this cluster's load balancers that no Service owns, at the last scan, by provider and kind.",
	}, []string{"provider", "kind"})
	deletions = metrics.NewCounterVec(&metrics.CounterOpts{
		Name: "multicloud_ccm_orphan_deletions_total",
		Help: "Orphaned cloud resources deleted (orphans: delete), by provider, kind and result (deleted, error).",
	}, []string{"provider", "kind", "result"})

	registerOnce sync.Once
)

// Metrics are the controller's series, as registered in legacyregistry
// (which the manager serves on /metrics) when the controller is made;
// hack/refdocs lists them in docs/reference/metrics.md.
func Metrics() []metrics.Registerable {
	return []metrics.Registerable{scans, orphaned, deletions}
}

func register() {
	registerOnce.Do(func() { legacyregistry.MustRegister(Metrics()...) })
}
