//go:build tools

// Package tools pins the etcd server that the test control plane runs.
// It is its own module so etcd's dependency graph never touches the CCM's.
package tools

import _ "go.etcd.io/etcd/server/v3"
