package aws

import (
	"net/http"
	"slices"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// The admin view of Classic Load Balancers and the certificate registry.

// ClassicLoadBalancerInfo is a Classic Load Balancer as the admin API
// reports it.
type ClassicLoadBalancerInfo struct {
	Name             string                `json:"name"`
	DNSName          string                `json:"dnsName"`
	Scheme           string                `json:"scheme"`
	VPCID            string                `json:"vpcId"`
	Subnets          []string              `json:"subnets"`
	Zones            []string              `json:"zones"`
	SecurityGroupIDs []string              `json:"securityGroupIds"`
	Listeners        []ClassicListenerInfo `json:"listeners"`
	HealthCheck      ClassicHealthCheck    `json:"healthCheck"`
	// Instances are the registered instances, terminated ones left out.
	Instances []string            `json:"instances,omitempty"`
	Policies  []ClassicPolicyInfo `json:"policies,omitempty"`
	// BackendPolicies are the policy names enabled per instance port.
	BackendPolicies map[int][]string  `json:"backendPolicies,omitempty"`
	Attributes      ClassicAttributes `json:"attributes"`
	Tags            map[string]string `json:"tags,omitempty"`
}

// ClassicListenerInfo is one listener; protocols are upper case.
type ClassicListenerInfo struct {
	Protocol         string   `json:"protocol"`
	LoadBalancerPort int      `json:"loadBalancerPort"`
	InstanceProtocol string   `json:"instanceProtocol"`
	InstancePort     int      `json:"instancePort"`
	SSLCertificateID string   `json:"sslCertificateId,omitempty"`
	PolicyNames      []string `json:"policyNames,omitempty"`
}

// ClassicHealthCheck is the load balancer's health check.
type ClassicHealthCheck struct {
	Target             string `json:"target"`
	Interval           int    `json:"interval"`
	Timeout            int    `json:"timeout"`
	UnhealthyThreshold int    `json:"unhealthyThreshold"`
	HealthyThreshold   int    `json:"healthyThreshold"`
}

// ClassicPolicyInfo is one policy of a load balancer.
type ClassicPolicyInfo struct {
	Name       string            `json:"name"`
	Type       string            `json:"type"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

// ClassicAttributes are the load balancer's attributes.
type ClassicAttributes struct {
	CrossZone                 bool   `json:"crossZone"`
	IdleTimeout               int    `json:"idleTimeout"`
	ConnectionDraining        bool   `json:"connectionDraining"`
	ConnectionDrainingTimeout int    `json:"connectionDrainingTimeout"`
	AccessLog                 bool   `json:"accessLog"`
	AccessLogBucket           string `json:"accessLogBucket,omitempty"`
	AccessLogPrefix           string `json:"accessLogPrefix,omitempty"`
	AccessLogInterval         int    `json:"accessLogInterval"`
	DesyncMitigationMode      string `json:"desyncMitigationMode"`
}

// ClassicLoadBalancers lists every Classic Load Balancer in creation order.
func (e *Emulator) ClassicLoadBalancers() []ClassicLoadBalancerInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []ClassicLoadBalancerInfo
	for _, lb := range e.classicLBs.All() {
		out = append(out, e.classicInfo(lb))
	}
	return out
}

// ClassicLoadBalancer returns one Classic Load Balancer by name.
func (e *Emulator) ClassicLoadBalancer(name string) (ClassicLoadBalancerInfo, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	lb, ok := e.classicLBs.Get(name)
	if !ok {
		return ClassicLoadBalancerInfo{}, false
	}
	return e.classicInfo(lb), true
}

func (e *Emulator) classicInfo(lb *classicLB) ClassicLoadBalancerInfo {
	hc := lb.healthCheck
	a := lb.attributes
	info := ClassicLoadBalancerInfo{
		Name: lb.name, DNSName: lb.dnsName, Scheme: lb.scheme, VPCID: lb.vpcID,
		Subnets: slices.Clone(lb.subnets), Zones: e.subnetZones(lb.subnets), SecurityGroupIDs: slices.Clone(lb.securityGroups),
		HealthCheck: ClassicHealthCheck{Target: hc.target, Interval: hc.interval, Timeout: hc.timeout, UnhealthyThreshold: hc.unhealthy, HealthyThreshold: hc.healthy},
		Instances:   e.clbMembers(lb),
		Attributes: ClassicAttributes{
			CrossZone: a.crossZone, IdleTimeout: a.idleTimeout, ConnectionDraining: a.drainingEnabled, ConnectionDrainingTimeout: a.drainingTimeout,
			AccessLog: a.accessLogEnabled, AccessLogBucket: a.accessLogBucket, AccessLogPrefix: a.accessLogPrefix,
			AccessLogInterval: a.accessLogInterval, DesyncMitigationMode: a.desyncMode,
		},
		Tags: copyTags(lb.tags),
	}
	for _, l := range lb.listeners {
		info.Listeners = append(info.Listeners, ClassicListenerInfo{
			Protocol: l.protocol, LoadBalancerPort: l.port, InstanceProtocol: l.instanceProtocol, InstancePort: l.instancePort,
			SSLCertificateID: l.certificate, PolicyNames: slices.Clone(l.policies),
		})
	}
	for _, pol := range lb.policies {
		pi := ClassicPolicyInfo{Name: pol.name, Type: pol.typeName, Attributes: map[string]string{}}
		for _, attr := range pol.attributes {
			pi.Attributes[attr.name] = attr.value
		}
		info.Policies = append(info.Policies, pi)
	}
	if len(lb.backendPolicies) > 0 {
		info.BackendPolicies = map[int][]string{}
		for port, names := range lb.backendPolicies {
			info.BackendPolicies[port] = slices.Clone(names)
		}
	}
	return info
}

// classicAdminRoutes serves, under the cloud's admin prefix:
//
//	GET  /classic-load-balancers  [ClassicLoadBalancerInfo]
//	GET  /certificates            ["<arn>", ...]
//	POST /certificates            {"arn": "..."}: AddCertificate
//	POST /certificates/remove     {"arn": "..."}: RemoveCertificate
func (e *Emulator) classicAdminRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /classic-load-balancers", func(w http.ResponseWriter, r *http.Request) {
		lbs := e.ClassicLoadBalancers()
		if lbs == nil {
			lbs = []ClassicLoadBalancerInfo{}
		}
		cloudsim.WriteJSON(w, http.StatusOK, lbs)
	})
	mux.HandleFunc("GET /certificates", func(w http.ResponseWriter, r *http.Request) {
		cloudsim.WriteJSON(w, http.StatusOK, e.Certificates())
	})
	type certReq struct {
		ARN string `json:"arn"`
	}
	mux.HandleFunc("POST /certificates", cloudsim.AdminHandler(func(req certReq) (any, error) {
		return req, e.AddCertificate(req.ARN)
	}, nil))
	mux.HandleFunc("POST /certificates/remove", cloudsim.AdminHandler(func(req certReq) (any, error) {
		return req, e.RemoveCertificate(req.ARN)
	}, nil))
}
