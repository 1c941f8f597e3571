//go:build tools

// Package tools pins the kube-apiserver that the test control plane runs.
// It is its own module because k8s.io/kubernetes cannot be required by the
// CCM's module without dragging in all of Kubernetes.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
