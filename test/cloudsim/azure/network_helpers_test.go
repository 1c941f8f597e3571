package azure

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
)

// nwPoll polls long-running operations once a second (the first poll is
// immediate).
var nwPoll = &runtime.PollUntilDoneOptions{Frequency: time.Second}

func nwCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// nwDone waits for a long-running operation begun with (p, err).
func nwDone[T any](t *testing.T, p *runtime.Poller[T], err error) T {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.PollUntilDone(context.Background(), nwPoll)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// nwErr waits for a long-running operation begun with (p, err) and
// returns its error, failing if it succeeds.
func nwErr[T any](t *testing.T, p *runtime.Poller[T], err error) error {
	t.Helper()
	if err == nil {
		_, err = p.PollUntilDone(context.Background(), nwPoll)
	}
	if err == nil {
		t.Fatal("operation succeeded, want an error")
	}
	return err
}

// nwWantErr asserts err is an ARM error with status and code.
func nwWantErr(t *testing.T, err error, status int, code string) *azcore.ResponseError {
	t.Helper()
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		t.Fatalf("error %v is not an *azcore.ResponseError", err)
	}
	if re.StatusCode != status || re.ErrorCode != code {
		t.Fatalf("got %d %s, want %d %s: %v", re.StatusCode, re.ErrorCode, status, code, err)
	}
	return re
}

// nwPublicIP creates a Standard static public IP through the SDK.
func (env *testEnv) nwPublicIP(t *testing.T, rg, name, dnsLabel string) armnetwork.PublicIPAddress {
	t.Helper()
	pip := armnetwork.PublicIPAddress{
		Location: to.Ptr(env.emu.Config().Location),
		SKU:      &armnetwork.PublicIPAddressSKU{Name: to.Ptr(armnetwork.PublicIPAddressSKUNameStandard), Tier: to.Ptr(armnetwork.PublicIPAddressSKUTierRegional)},
		Properties: &armnetwork.PublicIPAddressPropertiesFormat{
			PublicIPAllocationMethod: to.Ptr(armnetwork.IPAllocationMethodStatic),
			PublicIPAddressVersion:   to.Ptr(armnetwork.IPVersionIPv4),
		},
		Tags: map[string]*string{"service": to.Ptr("default/web")},
	}
	if dnsLabel != "" {
		pip.Properties.DNSSettings = &armnetwork.PublicIPAddressDNSSettings{DomainNameLabel: to.Ptr(dnsLabel)}
	}
	p, err := env.network.NewPublicIPAddressesClient().BeginCreateOrUpdate(nwCtx(t), rg, name, pip, nil)
	return nwDone(t, p, err).PublicIPAddress
}

// nwPutLB creates or replaces a load balancer and waits for it.
func (env *testEnv) nwPutLB(t *testing.T, rg, name string, lb armnetwork.LoadBalancer) armnetwork.LoadBalancer {
	t.Helper()
	p, err := env.network.NewLoadBalancersClient().BeginCreateOrUpdate(nwCtx(t), rg, name, lb, nil)
	return nwDone(t, p, err).LoadBalancer
}

// nwLBErr puts a load balancer expecting the put to fail.
func (env *testEnv) nwLBErr(t *testing.T, rg, name string, lb armnetwork.LoadBalancer) error {
	t.Helper()
	p, err := env.network.NewLoadBalancersClient().BeginCreateOrUpdate(nwCtx(t), rg, name, lb, nil)
	return nwErr(t, p, err)
}

// nwLB is a Standard public load balancer as a cloud-controller-manager
// builds one: frontend "fe" on the public IP pipID, an IP-based pool
// "pool" with nodeIPs in the fixture's virtual network, a TCP probe and
// a TCP rule on port 80.
func nwLB(f Fixture, lbID, pipID string, nodeIPs ...string) armnetwork.LoadBalancer {
	var addrs []*armnetwork.LoadBalancerBackendAddress
	for i, ip := range nodeIPs {
		addrs = append(addrs, &armnetwork.LoadBalancerBackendAddress{
			Name: to.Ptr("node-" + string(rune('a'+i))),
			Properties: &armnetwork.LoadBalancerBackendAddressPropertiesFormat{
				IPAddress:      to.Ptr(ip),
				VirtualNetwork: &armnetwork.SubResource{ID: to.Ptr(f.VNetID)},
			},
		})
	}
	return armnetwork.LoadBalancer{
		Location: to.Ptr(f.Location),
		SKU:      &armnetwork.LoadBalancerSKU{Name: to.Ptr(armnetwork.LoadBalancerSKUNameStandard)},
		Properties: &armnetwork.LoadBalancerPropertiesFormat{
			FrontendIPConfigurations: []*armnetwork.FrontendIPConfiguration{{
				Name: to.Ptr("fe"),
				Properties: &armnetwork.FrontendIPConfigurationPropertiesFormat{
					PublicIPAddress: &armnetwork.PublicIPAddress{ID: to.Ptr(pipID)},
				},
			}},
			BackendAddressPools: []*armnetwork.BackendAddressPool{{
				Name:       to.Ptr("pool"),
				Properties: &armnetwork.BackendAddressPoolPropertiesFormat{LoadBalancerBackendAddresses: addrs},
			}},
			Probes: []*armnetwork.Probe{{
				Name: to.Ptr("probe-80"),
				Properties: &armnetwork.ProbePropertiesFormat{
					Protocol: to.Ptr(armnetwork.ProbeProtocolTCP), Port: to.Ptr[int32](30080), IntervalInSeconds: to.Ptr[int32](5),
				},
			}},
			LoadBalancingRules: []*armnetwork.LoadBalancingRule{{
				Name: to.Ptr("rule-80"),
				Properties: &armnetwork.LoadBalancingRulePropertiesFormat{
					Protocol:                to.Ptr(armnetwork.TransportProtocolTCP),
					FrontendPort:            to.Ptr[int32](80),
					BackendPort:             to.Ptr[int32](30080),
					FrontendIPConfiguration: &armnetwork.SubResource{ID: to.Ptr(lbID + "/frontendIPConfigurations/fe")},
					BackendAddressPool:      &armnetwork.SubResource{ID: to.Ptr(lbID + "/backendAddressPools/pool")},
					Probe:                   &armnetwork.SubResource{ID: to.Ptr(lbID + "/probes/probe-80")},
					EnableTCPReset:          to.Ptr(true),
				},
			}},
		},
	}
}

// nwLBID is the ID of a load balancer in the fixture's resource group.
func nwLBID(f Fixture, name string) string {
	return "/subscriptions/" + f.SubscriptionID + "/resourceGroups/" + f.ResourceGroup + "/providers/Microsoft.Network/loadBalancers/" + name
}

// nwIDs reads the IDs of sub-resource references.
func nwIDs(refs []*armnetwork.SubResource) []string {
	var out []string
	for _, r := range refs {
		out = append(out, deref(r.ID))
	}
	return out
}

// nwNIC creates a network interface in the fixture's subnet through the
// emulator (as the compute half does for the VMs it launches).
func (env *testEnv) nwNIC(t *testing.T, name, pipID, vmID string) *object {
	t.Helper()
	f := env.emu.Fixture()
	env.emu.mu.Lock()
	defer env.emu.mu.Unlock()
	o, err := env.emu.newNIC(f.ResourceGroup, name, f.SubnetID, pipID, vmID)
	if err != nil {
		t.Fatal(err)
	}
	return o
}
