package providers

import (
	"k8s.io/component-base/metrics"

	"github.com/multicloud-ccm/multicloud-ccm/providers/compose/hybrid"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/cloudmetrics"
)

// Metrics are the series the backends' shared internal packages register
// on /metrics, by the import path of the package: cloud API calls (a
// fresh cloudmetrics.Recorder, the same definitions as the one the
// backends record into) and the Nodes no configured cloud owns. It exists
// for hack/refdocs (docs/reference/metrics.md), which cannot import
// providers/internal; nothing is registered here.
func Metrics() map[string][]metrics.Registerable {
	return map[string][]metrics.Registerable{
		"github.com/multicloud-ccm/multicloud-ccm/providers/internal/cloudmetrics": cloudmetrics.NewRecorder().Collectors(),
		"github.com/multicloud-ccm/multicloud-ccm/providers/compose/hybrid":        hybrid.Metrics(),
	}
}
