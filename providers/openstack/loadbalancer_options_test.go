package openstack

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// optionsSection is a defaulted section with a floating network, edited.
func optionsSection(edit func(*LoadBalancerSection)) *Section {
	s := Section{}
	s.LoadBalancer.FloatingNetworkID = "5f0d1e1c-9a4b-4c43-9f57-1d5e3a7b2c10"
	if edit != nil {
		edit(&s.LoadBalancer)
	}
	return defaulted(s)
}

// TestParseIssue20Annotations: the upstream annotations' values as they
// become options, with upstream's defaults.
func TestParseIssue20Annotations(t *testing.T) {
	defaults := listenerTimeouts{clientData: 50000, memberConnect: 5000, memberData: 50000, tcpInspect: 0}
	for _, tt := range []struct {
		name  string
		ann   map[string]string
		edit  func(*LoadBalancerSection)
		ports []v1.ServicePort
		check func(t *testing.T, o *lbOptions)
	}{
		{name: "defaults", check: func(t *testing.T, o *lbOptions) {
			if o.proxyProtocol != "" || o.xForwardedFor || o.connLimit != -1 || o.timeouts == nil || *o.timeouts != defaults ||
				o.flavorID != "" || o.availabilityZone != "" || o.hostname != "" || o.monitor != nil {
				t.Errorf("options %+v", o)
			}
			if p := o.ports[0]; p.listenerProtocol != "TCP" || p.poolProtocol != "TCP" {
				t.Errorf("port %+v", p)
			}
		}},
		{name: "proxy true is v1", ann: map[string]string{"loadbalancer.openstack.org/proxy-protocol": "true"}, check: func(t *testing.T, o *lbOptions) {
			if p := o.ports[0]; o.proxyProtocol != "PROXY" || p.listenerProtocol != "TCP" || p.poolProtocol != "PROXY" {
				t.Errorf("proxy %q port %+v", o.proxyProtocol, p)
			}
		}},
		{name: "proxy v1", ann: map[string]string{"loadbalancer.openstack.org/proxy-protocol": "v1"}, check: func(t *testing.T, o *lbOptions) {
			if o.ports[0].poolProtocol != "PROXY" {
				t.Errorf("port %+v", o.ports[0])
			}
		}},
		{name: "proxy v2", ann: map[string]string{"loadbalancer.openstack.org/proxy-protocol": "v2"}, check: func(t *testing.T, o *lbOptions) {
			if o.ports[0].poolProtocol != "PROXYV2" {
				t.Errorf("port %+v", o.ports[0])
			}
		}},
		{name: "proxy false", ann: map[string]string{"loadbalancer.openstack.org/proxy-protocol": "false"}, check: func(t *testing.T, o *lbOptions) {
			if o.proxyProtocol != "" || o.ports[0].poolProtocol != "TCP" {
				t.Errorf("proxy %q port %+v", o.proxyProtocol, o.ports[0])
			}
		}},
		{name: "x-forwarded-for", ann: map[string]string{"loadbalancer.openstack.org/x-forwarded-for": "true"}, check: func(t *testing.T, o *lbOptions) {
			if p := o.ports[0]; !o.xForwardedFor || p.listenerProtocol != "HTTP" || p.poolProtocol != "HTTP" {
				t.Errorf("port %+v", p)
			}
		}},
		{name: "listener settings", ann: map[string]string{
			"loadbalancer.openstack.org/timeout-client-data":    "600000",
			"loadbalancer.openstack.org/timeout-member-connect": "0",
			"loadbalancer.openstack.org/timeout-member-data":    "2073600000",
			"loadbalancer.openstack.org/timeout-tcp-inspect":    " 10 ",
			"loadbalancer.openstack.org/connection-limit":       "10000",
		}, check: func(t *testing.T, o *lbOptions) {
			if want := (listenerTimeouts{600000, 0, 2073600000, 10}); *o.timeouts != want || o.connLimit != 10000 {
				t.Errorf("timeouts %+v conn limit %d", *o.timeouts, o.connLimit)
			}
		}},
		{name: "no timeouts for ovn", edit: func(lb *LoadBalancerSection) { lb.Provider = "ovn" }, check: func(t *testing.T, o *lbOptions) {
			if o.timeouts != nil || o.connLimit != -1 {
				t.Errorf("timeouts %+v conn limit %d", o.timeouts, o.connLimit)
			}
		}},
		{name: "flavor and zone from the config", edit: func(lb *LoadBalancerSection) {
			lb.FlavorID, lb.AvailabilityZone = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9", "az-1"
		}, check: func(t *testing.T, o *lbOptions) {
			if o.flavorID != "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9" || o.availabilityZone != "az-1" {
				t.Errorf("flavor %q zone %q", o.flavorID, o.availabilityZone)
			}
		}},
		{name: "flavor and zone annotations override", edit: func(lb *LoadBalancerSection) {
			lb.FlavorID, lb.AvailabilityZone = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9", "az-1"
		}, ann: map[string]string{
			"loadbalancer.openstack.org/flavor-id":         "A1B2C3D4-0000-4000-8000-000000000001",
			"loadbalancer.openstack.org/availability-zone": "az-2",
		}, check: func(t *testing.T, o *lbOptions) {
			if o.flavorID != "a1b2c3d4-0000-4000-8000-000000000001" || o.availabilityZone != "az-2" {
				t.Errorf("flavor %q zone %q", o.flavorID, o.availabilityZone)
			}
		}},
		{name: "monitor settings override the config", edit: func(lb *LoadBalancerSection) { lb.CreateMonitor = true }, ann: map[string]string{
			"loadbalancer.openstack.org/health-monitor-delay":            "10",
			"loadbalancer.openstack.org/health-monitor-timeout":          "4",
			"loadbalancer.openstack.org/health-monitor-max-retries":      "2",
			"loadbalancer.openstack.org/health-monitor-max-retries-down": "5",
		}, check: func(t *testing.T, o *lbOptions) {
			if m := o.monitor; m == nil || m.delay != 10 || m.timeout != 4 || m.maxRetries != 2 || m.maxRetriesDown != 5 {
				t.Errorf("monitor %+v", m)
			}
		}},
		{name: "monitor settings from the config", edit: func(lb *LoadBalancerSection) {
			lb.CreateMonitor, lb.MonitorDelay, lb.MonitorTimeout, lb.MonitorMaxRetries, lb.MonitorMaxRetriesDown = true, 7*time.Second, 2*time.Second, 3, 4
		}, check: func(t *testing.T, o *lbOptions) {
			if m := o.monitor; m == nil || m.delay != 7 || m.timeout != 2 || m.maxRetries != 3 || m.maxRetriesDown != 4 {
				t.Errorf("monitor %+v", m)
			}
		}},
		{name: "monitor max-retries-down defaults to 3", edit: func(lb *LoadBalancerSection) { lb.CreateMonitor = true }, check: func(t *testing.T, o *lbOptions) {
			if m := o.monitor; m == nil || m.maxRetriesDown != 3 {
				t.Errorf("monitor %+v", m)
			}
		}},
		{name: "hostname", ann: map[string]string{"loadbalancer.openstack.org/hostname": "lb.example.com"}, check: func(t *testing.T, o *lbOptions) {
			if o.hostname != "lb.example.com" {
				t.Errorf("hostname %q", o.hostname)
			}
		}},
		{name: "UDP beside TCP keeps its protocol without annotations", ports: []v1.ServicePort{{Port: 53, NodePort: 31053, Protocol: v1.ProtocolUDP}}, check: func(t *testing.T, o *lbOptions) {
			if p := o.ports[0]; p.listenerProtocol != "UDP" || p.poolProtocol != "UDP" || p.key() != "UDP:53" {
				t.Errorf("port %+v", p)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			svc := service("web", 80)
			if tt.ports != nil {
				svc.Spec.Ports = tt.ports
			}
			for k, v := range tt.ann {
				svc.Annotations[k] = v
			}
			o, err := parseLBOptions(svc, optionsSection(tt.edit))
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, o)
		})
	}
}

// TestParseIssue20AnnotationErrors: a bad value is an error naming the
// annotation and what is valid; so are combinations Octavia or the
// provider would refuse.
func TestParseIssue20AnnotationErrors(t *testing.T) {
	for _, tt := range []struct {
		name  string
		ann   map[string]string
		edit  func(*LoadBalancerSection)
		ports []v1.ServicePort
		want  []string
	}{
		{name: "proxy typo", ann: map[string]string{"loadbalancer.openstack.org/proxy-protocol": "yes"},
			want: []string{`annotation loadbalancer.openstack.org/proxy-protocol="yes": want "true" or "v1"`, `"v2"`}},
		{name: "proxy upper case", ann: map[string]string{"loadbalancer.openstack.org/proxy-protocol": "V2"},
			want: []string{"loadbalancer.openstack.org/proxy-protocol", `"v2" (version 2)`}},
		{name: "proxy with x-forwarded-for", ann: map[string]string{"loadbalancer.openstack.org/proxy-protocol": "v1", "loadbalancer.openstack.org/x-forwarded-for": "true"},
			want: []string{"annotation loadbalancer.openstack.org/proxy-protocol and loadbalancer.openstack.org/x-forwarded-for cannot be used together"}},
		{name: "x-forwarded-for not a bool", ann: map[string]string{"loadbalancer.openstack.org/x-forwarded-for": "sure"},
			want: []string{`annotation loadbalancer.openstack.org/x-forwarded-for="sure": want "true" or "false"`}},
		{name: "proxy on a UDP port", ann: map[string]string{"loadbalancer.openstack.org/proxy-protocol": "true"},
			ports: []v1.ServicePort{{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}, {Port: 53, NodePort: 31053, Protocol: v1.ProtocolUDP}},
			want:  []string{"annotation loadbalancer.openstack.org/proxy-protocol applies to TCP ports only, and service port 53 is UDP"}},
		{name: "x-forwarded-for on an SCTP port", ann: map[string]string{"loadbalancer.openstack.org/x-forwarded-for": "true"},
			ports: []v1.ServicePort{{Port: 9, NodePort: 30009, Protocol: v1.ProtocolSCTP}},
			want:  []string{"annotation loadbalancer.openstack.org/x-forwarded-for applies to TCP ports only, and service port 9 is SCTP"}},
		{name: "proxy with ovn", edit: func(lb *LoadBalancerSection) { lb.Provider = "ovn" }, ann: map[string]string{"loadbalancer.openstack.org/proxy-protocol": "v2"},
			want: []string{"annotation loadbalancer.openstack.org/proxy-protocol: the ovn provider has no PROXY protocol pools"}},
		{name: "x-forwarded-for with ovn", edit: func(lb *LoadBalancerSection) { lb.Provider = "ovn" }, ann: map[string]string{"loadbalancer.openstack.org/x-forwarded-for": "true"},
			want: []string{"annotation loadbalancer.openstack.org/x-forwarded-for: the ovn provider has no HTTP listeners"}},
		{name: "timeout not a number", ann: map[string]string{"loadbalancer.openstack.org/timeout-client-data": "10m"},
			want: []string{`annotation loadbalancer.openstack.org/timeout-client-data="10m": want milliseconds from 0 to 2073600000`}},
		{name: "timeout negative", ann: map[string]string{"loadbalancer.openstack.org/timeout-member-connect": "-1"},
			want: []string{`loadbalancer.openstack.org/timeout-member-connect="-1"`}},
		{name: "timeout over Octavia's maximum", ann: map[string]string{"loadbalancer.openstack.org/timeout-member-data": "2073600001"},
			want: []string{`loadbalancer.openstack.org/timeout-member-data="2073600001"`}},
		{name: "timeout with ovn", edit: func(lb *LoadBalancerSection) { lb.Provider = "ovn" }, ann: map[string]string{"loadbalancer.openstack.org/timeout-tcp-inspect": "5"},
			want: []string{"annotations loadbalancer.openstack.org/timeout-*: the ovn provider has no listener timeouts"}},
		{name: "connection limit zero", ann: map[string]string{"loadbalancer.openstack.org/connection-limit": "0"},
			want: []string{`annotation loadbalancer.openstack.org/connection-limit="0": want -1 (unlimited) or a positive number`}},
		{name: "connection limit below -1", ann: map[string]string{"loadbalancer.openstack.org/connection-limit": "-5"},
			want: []string{`loadbalancer.openstack.org/connection-limit="-5"`}},
		{name: "flavor not a UUID", ann: map[string]string{"loadbalancer.openstack.org/flavor-id": "m1.amphora"},
			want: []string{`annotation loadbalancer.openstack.org/flavor-id="m1.amphora": want an Octavia flavor UUID`}},
		{name: "empty zone", ann: map[string]string{"loadbalancer.openstack.org/availability-zone": " "},
			want: []string{`annotation loadbalancer.openstack.org/availability-zone=" ": want the name of an Octavia availability zone`}},
		{name: "flavor with ovn", edit: func(lb *LoadBalancerSection) { lb.Provider = "ovn" }, ann: map[string]string{"loadbalancer.openstack.org/flavor-id": "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"},
			want: []string{"annotation loadbalancer.openstack.org/flavor-id: the ovn provider supports no Octavia flavors"}},
		{name: "zone with ovn", edit: func(lb *LoadBalancerSection) { lb.Provider = "ovn" }, ann: map[string]string{"loadbalancer.openstack.org/availability-zone": "az-1"},
			want: []string{"annotation loadbalancer.openstack.org/availability-zone: the ovn provider supports no Octavia flavors or availability zones"}},
		{name: "monitor delay zero", ann: map[string]string{"loadbalancer.openstack.org/health-monitor-delay": "0"},
			want: []string{`annotation loadbalancer.openstack.org/health-monitor-delay="0": want seconds from 1 to 3600`}},
		{name: "monitor timeout over the delay", ann: map[string]string{"loadbalancer.openstack.org/health-monitor-timeout": "9"},
			want: []string{"health monitor timeout 9s is longer than its delay 5s", "loadbalancer.openstack.org/health-monitor-timeout"}},
		{name: "monitor retries over 10", ann: map[string]string{"loadbalancer.openstack.org/health-monitor-max-retries": "11"},
			want: []string{`annotation loadbalancer.openstack.org/health-monitor-max-retries="11": want a number from 1 to 10`}},
		{name: "monitor retries down zero", ann: map[string]string{"loadbalancer.openstack.org/health-monitor-max-retries-down": "0"},
			want: []string{`annotation loadbalancer.openstack.org/health-monitor-max-retries-down="0": want a number from 1 to 10`}},
		{name: "UDP monitor delay under Octavia's minimum", edit: func(lb *LoadBalancerSection) { lb.CreateMonitor = true },
			ann:   map[string]string{"loadbalancer.openstack.org/health-monitor-delay": "2", "loadbalancer.openstack.org/health-monitor-timeout": "1"},
			ports: []v1.ServicePort{{Port: 53, NodePort: 31053, Protocol: v1.ProtocolUDP}},
			want:  []string{"health monitor delay 2s is too short for UDP port 53", "loadbalancer.openstack.org/health-monitor-delay"}},
		{name: "hostname an IP", ann: map[string]string{"loadbalancer.openstack.org/hostname": "203.0.113.7"},
			want: []string{`annotation loadbalancer.openstack.org/hostname="203.0.113.7": want a DNS name such as lb.example.com, not an IP address`}},
		{name: "hostname not DNS", ann: map[string]string{"loadbalancer.openstack.org/hostname": "Web_LB.example.com"},
			want: []string{`annotation loadbalancer.openstack.org/hostname="Web_LB.example.com": want a DNS name`}},
		{name: "hostname empty", ann: map[string]string{"loadbalancer.openstack.org/hostname": ""},
			want: []string{`annotation loadbalancer.openstack.org/hostname="": want a DNS name`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			svc := service("web", 80)
			if tt.ports != nil {
				svc.Spec.Ports = tt.ports
			}
			for k, v := range tt.ann {
				svc.Annotations[k] = v
			}
			_, err := parseLBOptions(svc, optionsSection(tt.edit))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestIngressStatus: the status for each combination, as upstream's
// createLoadBalancerStatus makes it.
func TestIngressStatus(t *testing.T) {
	proxyMode := v1.LoadBalancerIPModeProxy
	for _, tt := range []struct {
		name     string
		hostname string
		proxy    bool
		suffix   bool
		want     v1.LoadBalancerIngress
	}{
		{name: "address", want: v1.LoadBalancerIngress{IP: "203.0.113.7"}},
		{name: "PROXY protocol: ipMode Proxy", proxy: true, want: v1.LoadBalancerIngress{IP: "203.0.113.7", IPMode: &proxyMode}},
		{name: "PROXY protocol with enableIngressHostname", proxy: true, suffix: true, want: v1.LoadBalancerIngress{Hostname: "203.0.113.7.nip.io"}},
		{name: "enableIngressHostname without PROXY protocol", suffix: true, want: v1.LoadBalancerIngress{IP: "203.0.113.7"}},
		{name: "hostname wins", hostname: "lb.example.com", proxy: true, suffix: true, want: v1.LoadBalancerIngress{Hostname: "lb.example.com"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := &loadBalancers{cfg: optionsSection(func(lb *LoadBalancerSection) { lb.EnableIngressHostname = tt.suffix })}
			st := l.ingress(tt.hostname, tt.proxy, "203.0.113.7")
			if len(st.Ingress) != 1 {
				t.Fatalf("status %+v", st)
			}
			got := st.Ingress[0]
			if got.IP != tt.want.IP || got.Hostname != tt.want.Hostname || (got.IPMode == nil) != (tt.want.IPMode == nil) ||
				(got.IPMode != nil && *got.IPMode != *tt.want.IPMode) {
				t.Errorf("ingress %+v, want %+v", got, tt.want)
			}
		})
	}
}
