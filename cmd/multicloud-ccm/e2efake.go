//go:build e2efake

package main

import (
	"github.com/multicloud-ccm/multicloud-ccm/providers"
	"github.com/multicloud-ccm/multicloud-ccm/providers/fakecloud"
)

// The e2e tests build the binary with -tags e2efake to add a test backend
// configured from its cloud-config section. Release builds never set it.
func init() { fakecloud.Register(providers.Default) }
