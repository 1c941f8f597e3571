package azure

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

var _ conformance.UserAddresser = (*Cloud)(nil)

// annotationPIPName names an existing public IP, in the cloud-config's
// resourceGroup, as a Service's address (upstream's azure-pip-name).
const annotationPIPName = "service.beta.kubernetes.io/azure-pip-name"

// userAddresses numbers the public IPs ReserveUserAddress names, so that
// every one a process reserves has a name of its own.
var userAddresses atomic.Int64

// ReserveUserAddress creates a Standard static IPv4 public IP in the
// cloud-config's resourceGroup as `az network public-ip create --sku
// Standard --allocation-method Static` does: a PUT through ARM with a name
// alone and no tags, so neither k8s-azure-service nor
// k8s-azure-cluster-name marks it as a Service's or a cluster's (what
// would make it the manager's to delete). A Service names it in the
// azure-pip-name annotation rather than spec.loadBalancerIP: the backend
// takes either (loadbalancer_options.go readFamilies), but the name is
// what the upstream CCM's and AKS's documentation recommend now that
// Kubernetes deprecates spec.loadBalancerIP, and the backend reads the
// public IP by name with a GET instead of listing the group for the
// address on every sync.
func (c *Cloud) ReserveUserAddress() (conformance.UserAddress, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f, err := c.clients()
	if err != nil {
		return conformance.UserAddress{}, err
	}
	rg, name := c.fx.ResourceGroup, fmt.Sprintf("user-address-%d", userAddresses.Add(1))
	p, err := f.NewPublicIPAddressesClient().BeginCreateOrUpdate(ctx, rg, name, armnetwork.PublicIPAddress{
		Location: to.Ptr(c.fx.Location),
		SKU:      &armnetwork.PublicIPAddressSKU{Name: to.Ptr(armnetwork.PublicIPAddressSKUNameStandard), Tier: to.Ptr(armnetwork.PublicIPAddressSKUTierRegional)},
		Properties: &armnetwork.PublicIPAddressPropertiesFormat{
			PublicIPAllocationMethod: to.Ptr(armnetwork.IPAllocationMethodStatic),
			PublicIPAddressVersion:   to.Ptr(armnetwork.IPVersionIPv4),
		},
	}, nil)
	if err != nil {
		return conformance.UserAddress{}, fmt.Errorf("create public IP %s/%s: %w", rg, name, err)
	}
	pip, err := p.PollUntilDone(ctx, &runtime.PollUntilDoneOptions{Frequency: time.Second})
	if err != nil {
		return conformance.UserAddress{}, fmt.Errorf("create public IP %s/%s: %w", rg, name, err)
	}
	ip := addressOf(pip.Properties)
	if ip == "" {
		return conformance.UserAddress{}, fmt.Errorf("public IP %s/%s has no address", rg, name)
	}
	id := deref(pip.ID)
	return conformance.UserAddress{IP: ip, Use: func(svc *corev1.Service) {
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		svc.Annotations[annotationPIPName] = name
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.userPIPs == nil {
			c.userPIPs = map[types.NamespacedName]string{}
		}
		c.userPIPs[types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}] = id
	}}, nil
}
