//go:build !providerless || azure

package builtin

import (
	"github.com/multicloud-ccm/multicloud-ccm/providers"
	"github.com/multicloud-ccm/multicloud-ccm/providers/azure"
)

func init() { providers.Default.MustRegister(azure.Backend()) }
