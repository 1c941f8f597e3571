package openstack

import (
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

// Provider drivers. Octavia checks a request itself, then hands it to
// the load balancer's provider driver, whose UnsupportedOptionError
// becomes a 501 ProviderUnsupportedOptionError. What each driver refuses
// is what its source refuses: octavia's amphora driver
// (api/drivers/amphora_driver/v2/driver.py) and ovn-octavia-provider
// (driver.py, common/constants.py).

// providerDescriptions are the devstack descriptions of the drivers
// ([api_settings] enabled_provider_drivers).
var providerDescriptions = map[string]string{
	"amphora": "The Octavia Amphora driver.",
	"octavia": "Deprecated alias of the Octavia Amphora driver.",
	"ovn":     "Octavia OVN driver.",
}

func isOVN(provider string) bool { return provider == "ovn" }

// listProviders is GET /v2/lbaas/providers: the enabled drivers, in
// configuration order.
func (e *Emulator) listProviders(c *octaviaCall) (int, any, *apiError) {
	fields := c.query.all("fields")
	list := []any{}
	for _, name := range e.cfg.Octavia.Providers {
		p := map[string]any{"name": name, "description": providerDescriptions[name]}
		if len(fields) > 0 {
			for k := range p {
				if !slices.Contains(fields, k) {
					delete(p, k)
				}
			}
		}
		list = append(list, p)
	}
	return http.StatusOK, map[string]any{"providers": list}, nil
}

// providerFor is driver_factory.get_driver: the requested provider, the
// default one when none was asked for, refused unless enabled.
func (e *Emulator) providerFor(requested *string) (string, *apiError) {
	if requested == nil {
		return e.cfg.Octavia.DefaultProvider, nil
	}
	p := *requested
	if p == "" {
		p = "amphora"
	}
	if !slices.Contains(e.cfg.Octavia.Providers, p) {
		return "", octaviaErr(http.StatusBadRequest, "Provider '%s' is not enabled.", p)
	}
	return p, nil
}

var (
	ovnProtocols      = []string{"TCP", "UDP", "SCTP"}
	ovnAlgorithms     = []string{"SOURCE_IP_PORT"}
	ovnMonitorTypes   = []string{"UDP-CONNECT", "TCP"}
	amphoraAlgorithms = []string{"ROUND_ROBIN", "SOURCE_IP", "LEAST_CONNECTIONS"}
	lvsProtocols      = []string{"UDP", "SCTP"}
)

// driverCheckListener is the driver's listener_create/update checks.
func driverCheckListener(provider, protocol string, allowedCIDRs []string) *apiError {
	if !isOVN(provider) {
		return nil
	}
	if protocol != "" && !slices.Contains(ovnProtocols, protocol) {
		return errOctaviaUnsupported(provider, "OVN provider does not support %s protocol", protocol)
	}
	if len(allowedCIDRs) > 0 {
		return errOctaviaUnsupported(provider, "OVN provider does not support allowed_cidrs option")
	}
	return nil
}

// driverCheckPool is the driver's pool_create/update checks; empty
// values are attributes the request does not set.
func driverCheckPool(provider, protocol, algorithm string, sp ovObj) *apiError {
	if !isOVN(provider) {
		if algorithm != "" && !slices.Contains(amphoraAlgorithms, algorithm) {
			return errOctaviaUnsupported(provider, "Amphora provider does not support %s algorithm.", algorithm)
		}
		return nil
	}
	if protocol != "" && !slices.Contains(ovnProtocols, protocol) {
		return errOctaviaUnsupported(provider, "OVN provider does not support %s protocol", protocol)
	}
	if algorithm != "" && !slices.Contains(ovnAlgorithms, algorithm) {
		return errOctaviaUnsupported(provider, "OVN provider does not support %s algorithm", algorithm)
	}
	if sp != nil && sp.str("type") != "SOURCE_IP" {
		return errOctaviaUnsupported(provider,
			"OVN provider does not support %s session persistence. Only SOURCE_IP type is supported.", sp.str("type"))
	}
	return nil
}

// driverCheckMonitor is the driver's health monitor checks.
func driverCheckMonitor(provider, typ string) *apiError {
	if isOVN(provider) && !slices.Contains(ovnMonitorTypes, typ) {
		return errOctaviaUnsupported(provider, "OVN provider does not support %s health monitor type. Supported types: %s",
			typ, strings.Join(ovnMonitorTypes, ", "))
	}
	return nil
}

// driverCheckMember is the driver's member create checks. batch selects
// the OVN driver's batch wording for monitor options.
func (e *Emulator) driverCheckMember(lb *octaviaLB, p *octaviaPool, m ovObj, batch bool) *apiError {
	provider := lb.provider
	addr, _ := netip.ParseAddr(m.str("address"))
	vip, _ := netip.ParseAddr(lb.vipAddress)
	if !isOVN(provider) {
		// The amphora driver's _validate_members
		// (octavia/api/drivers/amphora_driver/v2/driver.py:343-367): a
		// member of an LVS (UDP, SCTP) pool needs a VIP (primary or
		// additional) of its family.
		sameFamily := false
		for _, v := range lb.vipAddresses() {
			if a, err := netip.ParseAddr(v); err == nil && a.Is4() == addr.Is4() {
				sameFamily = true
			}
		}
		if slices.Contains(lvsProtocols, p.protocol) && len(p.listenersOf()) > 0 && !sameFamily {
			return errOctaviaUnsupported(provider, "This provider doesn't support mixing IPv4 and IPv6 addresses for "+
				"its VIP and members in %s load balancers.", p.protocol)
		}
		return nil
	}
	if m.set("monitor_address") || m.set("monitor_port") {
		if batch {
			return errOctaviaUnsupported(provider, "OVN provider does not support monitor options")
		}
		return errOctaviaUnsupported(provider, "OVN Load Balancer does not support different member monitor address or port.")
	}
	if addr.Is4() != vip.Is4() {
		return errOctaviaUnsupported(provider, "OVN provider does not support mixing IPv4/IPv6 configuration within the same Load Balancer.")
	}
	if !m.set("subnet_id") {
		s, ok := e.subnets.Get(lb.vipSubnetID)
		if !ok || !s.cidr.Contains(addr) {
			return errOctaviaUnsupported(provider, "Subnet is required, or Loadbalancer associated with Pool must have "+
				"a subnet, for Member creation with OVN Provider Driver if it is not the same as LB VIP subnet")
		}
	}
	return nil
}

// driverCheckFailover: the OVN driver has no amphorae to fail over.
func driverCheckFailover(provider string) *apiError {
	if isOVN(provider) {
		return errOctaviaUnsupported(provider, "OVN provider does not support loadbalancer failover")
	}
	return nil
}
