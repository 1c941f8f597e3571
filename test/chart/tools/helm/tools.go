//go:build tools

// Package tools pins the Helm that the chart tests (test/chart) run. It is
// its own module because helm.sh/helm/v3 pulls in much of Kubernetes at
// versions the CCM's module must not be tied to.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
