package lbrepair

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The controller's series on /metrics, each by cloud.
var (
	checks = metrics.NewCounterVec(&metrics.CounterOpts{
		Name: "multicloud_ccm_lb_drift_checks_total",
		Help: "Listings of a cloud's load balancers for drift repair, by provider and result (ok, error).",
	}, []string{"provider", "result"})
	repairs = metrics.NewCounterVec(&metrics.CounterOpts{
		Name: "multicloud_ccm_lb_repairs_total",
		Help: "Load balancers found changed outside the manager, by provider and outcome (repaired, error, superseded: the Service synced meanwhile).",
	}, []string{"provider", "result"})
	watched = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name: "multicloud_ccm_lb_repair_watched",
		Help: "LoadBalancer Services whose parts drift repair compares with a listing after their last sync, by provider.",
	}, []string{"provider"})

	registerOnce sync.Once
)

// Metrics are the controller's series, as registered in legacyregistry
// (which the manager serves on /metrics) when the controller is made;
// hack/refdocs lists them in docs/reference/metrics.md.
func Metrics() []metrics.Registerable {
	return []metrics.Registerable{checks, repairs, watched}
}

func register() {
	registerOnce.Do(func() { legacyregistry.MustRegister(Metrics()...) })
}
