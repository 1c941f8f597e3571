module github.com/multicloud-ccm/multicloud-ccm/test/chart/tools/crds

go 1.26.0

// Only the module's CustomResourceDefinitions are used
// (example/prometheus-operator-crd), so that the chart's ServiceMonitor is
// validated by a real kube-apiserver against the real schema (test/chart).
// Nothing imports it, so `go mod tidy` would drop the requirement: change
// the version by hand, then `go mod download github.com/prometheus-operator/prometheus-operator`
// updates go.sum.
require github.com/prometheus-operator/prometheus-operator v0.85.0
