//go:build !providerless || aws

package builtin

import (
	"github.com/multicloud-ccm/multicloud-ccm/providers"
	"github.com/multicloud-ccm/multicloud-ccm/providers/aws"
)

func init() { providers.Default.MustRegister(aws.Backend()) }
