package openstack_test

import (
	"net/http"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"

	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

const (
	flavorSmall    = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"
	flavorHA       = "1a2b3c4d-5e6f-4071-8293-a4b5c6d7e8f9"
	flavorOff      = "2b3c4d5e-6f70-4182-93a4-b5c6d7e8f901"
	flavorOVN      = "3c4d5e6f-7081-4293-a4b5-c6d7e8f90123"
	flavorOVNTuned = "4d5e6f70-8192-43a4-b5c6-d7e8f9012345"
)

// flavorEnv is Octavia with flavors and availability zones of both
// providers, some disabled.
func flavorEnv(t *testing.T, maxVersion string) *octaviaEnv {
	return newOctaviaEnv(t, cloudsimopenstack.Config{Octavia: cloudsimopenstack.OctaviaConfig{
		ProvisioningDelay: -1, MaxVersion: maxVersion,
		Flavors: []cloudsimopenstack.OctaviaFlavor{
			{ID: flavorSmall, Name: "small", Description: "one amphora"},
			{ID: flavorHA, Name: "ha", Metadata: map[string]string{"loadbalancer_topology": "ACTIVE_STANDBY"}},
			{ID: flavorOff, Name: "retired", Disabled: true},
			{ID: flavorOVN, Name: "ovn", Provider: "ovn"},
			{ID: flavorOVNTuned, Name: "ovn-tuned", Provider: "ovn", Metadata: map[string]string{"x": "y"}},
		},
		AvailabilityZones: []cloudsimopenstack.OctaviaAvailabilityZone{
			{Name: "lb-az-1", ComputeZone: "az-1"},
			{Name: "lb-az-old", Disabled: true},
			{Name: "ovn-any", Provider: "ovn"},
		},
	}})
}

// TestOctaviaFlavorsAndZonesAPI: a member reads the flavors and zones
// (GET list and show), and may change none of them or their profiles.
func TestOctaviaFlavorsAndZonesAPI(t *testing.T) {
	e := flavorEnv(t, "")
	pages, err := flavors.List(e.lb, nil).AllPages(ctx(t))
	ok(t, err)
	list, err := flavors.ExtractFlavors(pages)
	ok(t, err)
	if len(list) != 5 {
		t.Fatalf("flavors %+v", list)
	}
	f, err := flavors.Get(ctx(t), e.lb, flavorSmall).Extract()
	ok(t, err)
	if f.Name != "small" || f.Description != "one amphora" || !f.Enabled || f.FlavorProfileId == "" {
		t.Errorf("flavor %+v", f)
	}
	_, err = flavors.Get(ctx(t), e.lb, "9e8d7c6b-5a49-4382-8716-a5b4c3d2e1f0").Extract()
	wantFault(t, err, 404, "Flavor 9e8d7c6b-5a49-4382-8716-a5b4c3d2e1f0 not found.")

	tok := e.token(t)
	for _, tc := range []struct {
		method, path, body string
		status             int
		check              func(w wire)
	}{
		{"GET", "flavors?enabled=false", "", 200, func(w wire) {
			if fl := w.body["flavors"].([]any); len(fl) != 1 || fl[0].(map[string]any)["id"] != flavorOff {
				t.Errorf("disabled flavors %v", fl)
			}
		}},
		{"GET", "availabilityzones", "", 200, func(w wire) {
			zs := w.body["availability_zones"].([]any)
			if len(zs) != 3 {
				t.Fatalf("zones %v", zs)
			}
			z := zs[0].(map[string]any)
			if z["name"] != "lb-az-1" || z["enabled"] != true || z["availability_zone_profile_id"] == "" || z["description"] != "" {
				t.Errorf("zone %v", z)
			}
		}},
		{"GET", "availabilityzones/lb-az-old", "", 200, func(w wire) {
			if z := w.body["availability_zone"].(map[string]any); z["enabled"] != false {
				t.Errorf("zone %v", z)
			}
		}},
		{"GET", "availabilityzones/lb-az-9", "", 404, func(w wire) {
			if w.body["faultstring"] != "Availability Zone lb-az-9 not found." {
				t.Errorf("fault %v", w.body)
			}
		}},
		{"POST", "flavors", `{"flavor": {"name": "mine", "flavor_profile_id": "` + flavorSmall + `"}}`, 403, nil},
		{"PUT", "flavors/" + flavorSmall, `{"flavor": {"enabled": false}}`, 403, nil},
		{"DELETE", "availabilityzones/lb-az-1", "", 403, nil},
		{"GET", "flavorprofiles", "", 403, nil},
		{"GET", "availabilityzoneprofiles", "", 403, nil},
	} {
		w := e.do(t, tc.method, "/load-balancer/v2/lbaas/"+tc.path, tc.body, "X-Auth-Token", tok)
		if w.status != tc.status {
			t.Errorf("%s %s: %d %v, want %d", tc.method, tc.path, w.status, w.body, tc.status)
			continue
		}
		if tc.status == 403 && w.body["faultstring"] != "Policy does not allow this request to be performed." {
			t.Errorf("%s %s: %v", tc.method, tc.path, w.body)
		}
		if tc.check != nil {
			tc.check(w)
		}
	}

	// Deployments older than 2.6 and 2.14 have neither API.
	old := flavorEnv(t, "v2.13")
	if w := old.do(t, "GET", "/load-balancer/v2/lbaas/availabilityzones", "", "X-Auth-Token", old.token(t)); w.status != 404 {
		t.Errorf("zones on 2.13: %d", w.status)
	}
	if w := old.do(t, "GET", "/load-balancer/v2/lbaas/flavors", "", "X-Auth-Token", old.token(t)); w.status != 200 {
		t.Errorf("flavors on 2.13: %d", w.status)
	}
}

// TestOctaviaLoadBalancerFlavorAndZone: a load balancer takes its
// provider from its flavor and shows flavor_id and availability_zone;
// Octavia's refusals, in its words; neither can change later.
func TestOctaviaLoadBalancerFlavorAndZone(t *testing.T) {
	e := flavorEnv(t, "")
	lb := e.activeLB(t, loadbalancers.CreateOpts{Name: "ha", FlavorID: flavorHA, AvailabilityZone: "lb-az-1"})
	if lb.FlavorID != flavorHA || lb.AvailabilityZone != "lb-az-1" || lb.Provider != "amphora" {
		t.Errorf("load balancer %+v", lb)
	}
	ovn := e.activeLB(t, loadbalancers.CreateOpts{Name: "ovn", FlavorID: flavorOVN})
	if ovn.Provider != "ovn" || ovn.FlavorID != flavorOVN {
		t.Errorf("a load balancer of an ovn flavor: provider %q flavor %q", ovn.Provider, ovn.FlavorID)
	}
	tok := e.token(t)
	if w := e.do(t, "GET", "/load-balancer/v2/lbaas/loadbalancers?topology=ACTIVE_STANDBY", "", "X-Auth-Token", tok); len(w.body["loadbalancers"].([]any)) != 1 {
		t.Errorf("the HA flavor's topology: %v", w.body)
	}
	if w := e.do(t, "GET", "/load-balancer/v2/lbaas/loadbalancers?availability_zone=lb-az-1", "", "X-Auth-Token", tok); len(w.body["loadbalancers"].([]any)) != 1 {
		t.Errorf("filter by zone: %v", w.body)
	}

	countPorts := func() int {
		n := 0
		for _, r := range e.srv.Resources() {
			if r.Kind == cloudsimopenstack.KindPort {
				n++
			}
		}
		return n
	}
	ports := countPorts()
	sub := e.fx.SubnetID
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		msg                      string
	}{
		{"unknown flavor", "POST", "loadbalancers", `{"loadbalancer": {"vip_subnet_id": "` + sub + `", "flavor_id": "9e8d7c6b-5a49-4382-8716-a5b4c3d2e1f0"}}`, 400,
			"Validation failure: Invalid flavor_id."},
		{"flavor not a UUID", "POST", "loadbalancers", `{"loadbalancer": {"vip_subnet_id": "` + sub + `", "flavor_id": "small"}}`, 400,
			"Invalid input for field/attribute flavor_id. Value: 'small'. Value should be UUID format"},
		{"disabled flavor", "POST", "loadbalancers", `{"loadbalancer": {"vip_subnet_id": "` + sub + `", "flavor_id": "` + flavorOff + `"}}`, 400,
			"The selected flavor is not allowed in this deployment: " + flavorOff},
		{"flavor of another provider", "POST", "loadbalancers", `{"loadbalancer": {"vip_subnet_id": "` + sub + `", "flavor_id": "` + flavorSmall + `", "provider": "ovn"}}`, 400,
			"Flavor '" + flavorSmall + "' is not compatible with provider 'ovn'"},
		{"ovn flavor with metadata", "POST", "loadbalancers", `{"loadbalancer": {"vip_subnet_id": "` + sub + `", "flavor_id": "` + flavorOVNTuned + `"}}`, 501,
			"Provider 'ovn' does not support a requested action: This provider does not support validating flavors."},
		{"unknown zone", "POST", "loadbalancers", `{"loadbalancer": {"vip_subnet_id": "` + sub + `", "availability_zone": "lb-az-9"}}`, 400,
			"Validation failure: Invalid availability zone."},
		{"disabled zone", "POST", "loadbalancers", `{"loadbalancer": {"vip_subnet_id": "` + sub + `", "availability_zone": "lb-az-old"}}`, 400,
			"The selected availability_zone is not allowed in this deployment: lb-az-old"},
		{"ovn with a compute zone", "POST", "loadbalancers", `{"loadbalancer": {"vip_subnet_id": "` + sub + `", "provider": "ovn", "availability_zone": "lb-az-1"}}`, 501,
			"Provider 'ovn' does not support a requested action: This provider does not support validating availability zones."},
		{"flavor is immutable", "PUT", "loadbalancers/" + lb.ID, `{"loadbalancer": {"flavor_id": "` + flavorSmall + `"}}`, 400,
			"Unknown attribute for argument load_balancer.loadbalancer: flavor_id"},
		{"zone is immutable", "PUT", "loadbalancers/" + lb.ID, `{"loadbalancer": {"availability_zone": "lb-az-1"}}`, 400,
			"Unknown attribute for argument load_balancer.loadbalancer: availability_zone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := e.do(t, tc.method, "/load-balancer/v2/lbaas/"+tc.path, tc.body, "X-Auth-Token", tok)
			if w.status != tc.status || w.body["faultstring"] != tc.msg {
				t.Errorf("%d %v, want %d %q", w.status, w.body["faultstring"], tc.status, tc.msg)
			}
		})
	}
	if n := countPorts() - ports; n != 0 {
		t.Errorf("refused creates left %d VIP ports", n)
	}
	// An ovn zone without a compute zone has no metadata for the driver.
	e.activeLB(t, loadbalancers.CreateOpts{Name: "ovn-az", Provider: "ovn", AvailabilityZone: "ovn-any"})

	// Before 2.6 and 2.14, the attributes are unknown.
	old := flavorEnv(t, "v2.5")
	_, err := loadbalancers.Create(ctx(t), old.lb, loadbalancers.CreateOpts{VipSubnetID: old.fx.SubnetID, FlavorID: flavorSmall}).Extract()
	wantFault(t, err, 400, "Unknown attribute for argument load_balancer.loadbalancer: flavor_id")
}

// TestOctaviaListenerAndPoolOptions: what the upstream CCM's PROXY
// protocol, X-Forwarded-For, timeout and connection limit options ask of
// Octavia, and what it refuses, in its words.
func TestOctaviaListenerAndPoolOptions(t *testing.T) {
	e := newOctaviaEnv(t, cloudsimopenstack.Config{Octavia: cloudsimopenstack.OctaviaConfig{ProvisioningDelay: -1}})
	timeout, limit := 600000, 100
	lb := e.activeLB(t, loadbalancers.CreateOpts{Name: "opts", Listeners: []listeners.CreateOpts{
		{Name: "proxy", Protocol: "TCP", ProtocolPort: 80, TimeoutClientData: &timeout, ConnLimit: &limit,
			DefaultPool: &pools.CreateOpts{Name: "proxy", Protocol: pools.ProtocolPROXYV2, LBMethod: pools.LBMethodRoundRobin}},
		{Name: "xff", Protocol: "HTTP", ProtocolPort: 8080, InsertHeaders: map[string]string{"X-Forwarded-For": "true"},
			DefaultPool: &pools.CreateOpts{Name: "http", Protocol: pools.ProtocolHTTP, LBMethod: pools.LBMethodRoundRobin}},
		{Name: "dns", Protocol: "UDP", ProtocolPort: 53},
	}})
	got := map[string]listeners.Listener{}
	for _, id := range lb.Listeners {
		l, err := listeners.Get(ctx(t), e.lb, id.ID).Extract()
		ok(t, err)
		got[l.Name] = *l
	}
	if l := got["proxy"]; l.TimeoutClientData != 600000 || l.TimeoutMemberConnect != 5000 || l.TimeoutMemberData != 50000 || l.TimeoutTCPInspect != 0 || l.ConnLimit != 100 {
		t.Errorf("proxy listener %+v", l)
	}
	if l := got["xff"]; l.InsertHeaders["X-Forwarded-For"] != "true" || l.ConnLimit != -1 {
		t.Errorf("xff listener %+v", l)
	}
	tok := e.token(t)
	proxy, xff, dns := got["proxy"], got["xff"], got["dns"]
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		msg                      string
	}{
		{"PROXY pool on a UDP listener", "POST", "pools", `{"pool": {"listener_id": "` + dns.ID + `", "protocol": "PROXY", "lb_algorithm": "ROUND_ROBIN"}}`, 400,
			"Validation failure: The pool protocol 'PROXY' is invalid while the listener protocol is 'UDP'."},
		{"TCP pool on an HTTP listener", "POST", "loadbalancers", `{"loadbalancer": {"vip_subnet_id": "` + e.fx.SubnetID + `", "listeners": [{"protocol": "HTTP", "protocol_port": 80, "default_pool": {"name": "p", "protocol": "TCP", "lb_algorithm": "ROUND_ROBIN"}}]}}`, 400,
			"Validation failure: The pool protocol 'TCP' is invalid while the listener protocol is 'HTTP'."},
		{"insert_headers on a TCP listener", "POST", "listeners", `{"listener": {"loadbalancer_id": "` + lb.ID + `", "protocol": "TCP", "protocol_port": 81, "insert_headers": {"X-Forwarded-For": "true"}}}`, 400,
			"insert-headers is not a valid option for a TCP protocol listener."},
		{"insert_headers on a TCP listener, PUT", "PUT", "listeners/" + proxy.ID, `{"listener": {"insert_headers": {"X-Forwarded-For": "true"}}}`, 400,
			"insert-headers is not a valid option for a TCP protocol listener."},
		{"unknown header", "PUT", "listeners/" + xff.ID, `{"listener": {"insert_headers": {"X-Forwarded-For": "true", "X-Real-IP": "true"}}}`, 400,
			"['X-Forwarded-For', 'X-Real-IP'] is not a valid option for insert_headers"},
		{"unknown header, POST", "POST", "listeners", `{"listener": {"loadbalancer_id": "` + lb.ID + `", "protocol": "HTTP", "protocol_port": 83, "insert_headers": {"X-Real-IP": "true"}}}`, 400,
			"dict_keys(['X-Real-IP']) is not a valid option for insert_headers"},
		{"timeout over the maximum", "PUT", "listeners/" + proxy.ID, `{"listener": {"timeout_client_data": 2073600001}}`, 400,
			"Invalid input for field/attribute timeout_client_data. Value: '2073600001'. Value should be lower or equal to 2073600000"},
		{"negative timeout", "POST", "listeners", `{"listener": {"loadbalancer_id": "` + lb.ID + `", "protocol": "TCP", "protocol_port": 82, "timeout_member_connect": -1}}`, 400,
			"Invalid input for field/attribute timeout_member_connect. Value: '-1'. Value should be greater or equal to 0"},
		{"connection limit under -1", "PUT", "listeners/" + proxy.ID, `{"listener": {"connection_limit": -2}}`, 400,
			"Invalid input for field/attribute connection_limit. Value: '-2'. Value should be greater or equal to -1"},
		{"listener protocol is immutable", "PUT", "listeners/" + xff.ID, `{"listener": {"protocol": "TCP"}}`, 400,
			"Unknown attribute for argument listener_.listener: protocol"},
		{"pool protocol is immutable", "PUT", "pools/" + proxy.DefaultPoolID, `{"pool": {"protocol": "TCP"}}`, 400,
			"Unknown attribute for argument pool_.pool: protocol"},
		{"monitor retries down", "POST", "healthmonitors", `{"healthmonitor": {"pool_id": "` + proxy.DefaultPoolID + `", "type": "TCP", "delay": 5, "timeout": 3, "max_retries": 1, "max_retries_down": 0}}`, 400,
			"Invalid input for field/attribute max_retries_down. Value: '0'. Value should be greater or equal to 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := e.do(t, tc.method, "/load-balancer/v2/lbaas/"+tc.path, tc.body, "X-Auth-Token", tok)
			if w.status != tc.status || w.body["faultstring"] != tc.msg {
				t.Errorf("%d %v, want %d %q", w.status, w.body["faultstring"], tc.status, tc.msg)
			}
		})
	}

	// PUT updates in place; null restores Octavia's default.
	w := e.do(t, "PUT", "/load-balancer/v2/lbaas/listeners/"+proxy.ID,
		`{"listener": {"timeout_client_data": null, "timeout_member_data": 3600000, "connection_limit": null}}`, "X-Auth-Token", tok)
	if l := w.body["listener"].(map[string]any); w.status != http.StatusOK || l["timeout_client_data"] != 50000.0 || l["timeout_member_data"] != 3600000.0 || l["connection_limit"] != -1.0 {
		t.Errorf("PUT %d %v", w.status, w.body)
	}
	e.settle()
	w = e.do(t, "PUT", "/load-balancer/v2/lbaas/listeners/"+xff.ID, `{"listener": {"insert_headers": {}}}`, "X-Auth-Token", tok)
	if h := w.body["listener"].(map[string]any)["insert_headers"]; w.status != http.StatusOK || len(h.(map[string]any)) != 0 {
		t.Errorf("clearing headers: %d %v", w.status, w.body)
	}

	// PROXYV2 pools came with Octavia 2.22, and OVN has no PROXY pools.
	old := newOctaviaEnv(t, cloudsimopenstack.Config{Octavia: cloudsimopenstack.OctaviaConfig{ProvisioningDelay: -1, MaxVersion: "v2.21"}})
	oldLB := old.activeLB(t, loadbalancers.CreateOpts{Name: "old"})
	_, err := pools.Create(ctx(t), old.lb, pools.CreateOpts{LoadbalancerID: oldLB.ID, Protocol: pools.ProtocolPROXYV2, LBMethod: pools.LBMethodRoundRobin}).Extract()
	wantFault(t, err, 400, "Invalid input for field/attribute protocol. Value: 'PROXYV2'. Value should be one of: HTTP, HTTPS, PROXY, TCP, UDP")
	ovn := e.activeLB(t, loadbalancers.CreateOpts{Name: "ovn", Provider: "ovn"})
	_, err = pools.Create(ctx(t), e.lb, pools.CreateOpts{LoadbalancerID: ovn.ID, Protocol: pools.ProtocolPROXY, LBMethod: pools.LBMethodSourceIpPort}).Extract()
	wantFault(t, err, 501, "Provider 'ovn' does not support a requested option: OVN provider does not support PROXY protocol")
}
