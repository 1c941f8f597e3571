//go:build !providerless || gce

package builtin

import (
	"github.com/multicloud-ccm/multicloud-ccm/providers"
	"github.com/multicloud-ccm/multicloud-ccm/providers/gce"
)

func init() { providers.Default.MustRegister(gce.Backend()) }
