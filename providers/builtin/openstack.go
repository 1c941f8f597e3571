//go:build !providerless || openstack

package builtin

import (
	"github.com/multicloud-ccm/multicloud-ccm/providers"
	"github.com/multicloud-ccm/multicloud-ccm/providers/openstack"
)

func init() { providers.Default.MustRegister(openstack.Backend()) }
