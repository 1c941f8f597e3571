// Package aws emulates the slice of EC2, Elastic Load Balancing v2 and
// Classic Elastic Load Balancing a cloud-controller-manager uses, on the
// real wire protocols, so the real aws-sdk-go-v2 clients can talk to it.
// Import it as cloudsimaws and serve it with cloudsim.Start:
//
//	emu := cloudsimaws.NewDefault(cloudsimaws.Config{Region: "eu-west-1", ClusterID: "test"})
//	srv, _ := cloudsim.Start(emu)
//	// point ec2, elasticloadbalancingv2 and elasticloadbalancing clients'
//	// BaseEndpoint at srv.URL()
//
// The services share one endpoint; requests are told apart by their
// Version field (EC2 2016-11-15, ELBv2 2015-12-01, Classic ELB 2012-06-01).
// Operation names are "ec2:<Action>", "elbv2:<Action>" and "elb:<Action>":
// all three have a DescribeTags, and both ELB APIs a CreateLoadBalancer.
// State is in memory behind one mutex; IDs are deterministic.
package aws

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// API versions, which is how one endpoint tells the two services apart.
const (
	ec2Version = "2016-11-15"
	elbVersion = "2015-12-01"
	clbVersion = "2012-06-01"

	ec2Prefix = "ec2:"
	elbPrefix = "elbv2:"
	clbPrefix = "elb:"
)

// Config configures an Emulator. Zero values get defaults.
type Config struct {
	// Region, default "eu-west-1".
	Region string
	// AccountID appears in ARNs and owner IDs, default "123456789012".
	AccountID string
	// Zones are availability zone names ("eu-west-1a") or bare suffixes
	// ("a"), default a, b and c.
	Zones []string
	// ClusterID names the cluster tag kubernetes.io/cluster/<ClusterID>
	// that NewDefault puts on its fixtures, default "kubernetes".
	ClusterID string
	// LoadBalancerProvisioningDelay keeps new load balancers in state
	// "provisioning" this long; zero makes them active at once.
	LoadBalancerProvisioningDelay time.Duration
}

func (c *Config) setDefaults() {
	if c.Region == "" {
		c.Region = "eu-west-1"
	}
	if c.AccountID == "" {
		c.AccountID = "123456789012"
	}
	if len(c.Zones) == 0 {
		c.Zones = []string{"a", "b", "c"}
	}
	zones := make([]string, len(c.Zones))
	for i, z := range c.Zones {
		if len(z) <= 2 { // a bare suffix
			z = c.Region + z
		}
		zones[i] = z
	}
	c.Zones = zones
	if c.ClusterID == "" {
		c.ClusterID = "kubernetes"
	}
}

// Emulator is the AWS cloud. It implements cloudsim.Cloud.
type Emulator struct {
	cfg Config

	mu                sync.Mutex
	seq               uint64
	vpcs              *cloudsim.Store[*vpc]
	subnets           *cloudsim.Store[*subnet]
	routeTables       *cloudsim.Store[*routeTable]
	securityGroups    *cloudsim.Store[*securityGroup]
	instances         *cloudsim.Store[*instance]
	networkInterfaces *cloudsim.Store[*networkInterface] // instances' primary interfaces (ec2_interfaces.go)
	loadBalancers     *cloudsim.Store[*loadBalancer]     // by ARN
	targetGroups      *cloudsim.Store[*targetGroup]      // by ARN
	listeners         *cloudsim.Store[*listener]         // by ARN
	internetGateways  *cloudsim.Store[*internetGateway]
	classicLBs        *cloudsim.Store[*classicLB] // by name, which is the Classic ELB's ID
	certificates      map[string]bool             // ACM and IAM certificate ARNs both ELB APIs accept
	publicIPs         uint32                      // public addresses handed out
	ipv6Blocks        uint32                      // Amazon-provided IPv6 /56s handed out to VPCs
	eips              *elasticIPs                 // Elastic IP addresses (ec2_addresses.go)
	fixture           Fixture
	now               func() time.Time
}

var _ cloudsim.Cloud = (*Emulator)(nil)

// New returns an emulator with availability zones but no VPC. Most tests
// want NewDefault.
func New(cfg Config) *Emulator {
	cfg.setDefaults()
	return &Emulator{
		cfg:               cfg,
		vpcs:              cloudsim.NewStore(ec2Prefix+"vpc", func(v *vpc) string { return v.id }),
		subnets:           cloudsim.NewStore(ec2Prefix+"subnet", func(s *subnet) string { return s.id }),
		routeTables:       cloudsim.NewStore(ec2Prefix+"route-table", func(rt *routeTable) string { return rt.id }),
		securityGroups:    cloudsim.NewStore(ec2Prefix+"security-group", func(sg *securityGroup) string { return sg.id }),
		instances:         cloudsim.NewStore(ec2Prefix+"instance", func(i *instance) string { return i.id }),
		networkInterfaces: cloudsim.NewStore(ec2Prefix+"network-interface", func(n *networkInterface) string { return n.id }),
		loadBalancers:     cloudsim.NewStore(elbPrefix+"load-balancer", func(lb *loadBalancer) string { return lb.arn }),
		targetGroups:      cloudsim.NewStore(elbPrefix+"target-group", func(tg *targetGroup) string { return tg.arn }),
		listeners:         cloudsim.NewStore(elbPrefix+"listener", func(l *listener) string { return l.arn }),
		internetGateways:  cloudsim.NewStore(ec2Prefix+"internet-gateway", func(g *internetGateway) string { return g.id }),
		classicLBs:        cloudsim.NewStore(clbPrefix+"load-balancer", func(lb *classicLB) string { return lb.name }),
		certificates:      map[string]bool{},
		eips:              newElasticIPs(),
		now:               time.Now,
	}
}

// Region is the emulated region.
func (e *Emulator) Region() string { return e.cfg.Region }

// Zones are the emulated availability zone names.
func (e *Emulator) Zones() []string { return append([]string(nil), e.cfg.Zones...) }

// ClusterTagKey is "kubernetes.io/cluster/<ClusterID>".
func (e *Emulator) ClusterTagKey() string { return "kubernetes.io/cluster/" + e.cfg.ClusterID }

// Name implements cloudsim.Cloud.
func (e *Emulator) Name() string { return "aws" }

// Operation implements cloudsim.Cloud: "ec2:<Action>", "elbv2:<Action>" or
// "elb:<Action>".
func (e *Emulator) Operation(r *http.Request) (string, error) {
	if err := r.ParseForm(); err != nil {
		return "", fmt.Errorf("aws: parsing query request: %w", err)
	}
	action := r.Form.Get("Action")
	if action == "" {
		return "", errors.New("aws: request has no Action")
	}
	switch v := r.Form.Get("Version"); v {
	case ec2Version:
		return ec2Prefix + action, nil
	case elbVersion:
		return elbPrefix + action, nil
	case clbVersion:
		return clbPrefix + action, nil
	default:
		return "", fmt.Errorf("aws: unsupported API version %q", v)
	}
}

// Mutating implements cloudsim.Cloud: everything but Describe* changes state.
func (e *Emulator) Mutating(op string) bool {
	_, action, _ := strings.Cut(op, ":")
	return !strings.HasPrefix(action, "Describe")
}

// handler serves one action. It runs with e.mu held and returns the
// response body struct, whose fields become the response's elements.
type handler func(e *Emulator, p params) (any, error)

var ec2Handlers = map[string]handler{
	"DescribeInstances":             (*Emulator).describeInstances,
	"DescribeInstanceTopology":      (*Emulator).describeInstanceTopology,
	"ModifyInstanceAttribute":       (*Emulator).modifyInstanceAttribute,
	"DescribeAvailabilityZones":     (*Emulator).describeAvailabilityZones,
	"DescribeVpcs":                  (*Emulator).describeVpcs,
	"DescribeSubnets":               (*Emulator).describeSubnets,
	"DescribeRouteTables":           (*Emulator).describeRouteTables,
	"DescribeInternetGateways":      (*Emulator).describeInternetGateways,
	"CreateRoute":                   (*Emulator).createRoute,
	"DeleteRoute":                   (*Emulator).deleteRoute,
	"CreateSecurityGroup":           (*Emulator).createSecurityGroup,
	"DescribeSecurityGroups":        (*Emulator).describeSecurityGroups,
	"DeleteSecurityGroup":           (*Emulator).deleteSecurityGroup,
	"AuthorizeSecurityGroupIngress": (*Emulator).authorizeSecurityGroupIngress,
	"RevokeSecurityGroupIngress":    (*Emulator).revokeSecurityGroupIngress,
	"CreateTags":                    (*Emulator).createTags,
	"DeleteTags":                    (*Emulator).deleteTags,
	"AllocateAddress":               (*Emulator).allocateAddressAction,
	"DescribeAddresses":             (*Emulator).describeAddresses,
	"ReleaseAddress":                (*Emulator).releaseAddress,
	"DescribeNetworkInterfaces":     (*Emulator).describeNetworkInterfaces,
	"AssignIpv6Addresses":           (*Emulator).assignIPv6Addresses,
	"UnassignIpv6Addresses":         (*Emulator).unassignIPv6Addresses,
	"AssignPrivateIpAddresses":      (*Emulator).assignPrivateIPAddresses,
	"UnassignPrivateIpAddresses":    (*Emulator).unassignPrivateIPAddresses,
}

var elbHandlers = map[string]handler{
	"CreateLoadBalancer":             (*Emulator).createLoadBalancer,
	"DescribeLoadBalancers":          (*Emulator).describeLoadBalancers,
	"DeleteLoadBalancer":             (*Emulator).deleteLoadBalancer,
	"SetSecurityGroups":              (*Emulator).setSecurityGroups,
	"SetSubnets":                     (*Emulator).setSubnets,
	"SetIpAddressType":               (*Emulator).setIPAddressType,
	"ModifyLoadBalancerAttributes":   (*Emulator).modifyLoadBalancerAttributes,
	"DescribeLoadBalancerAttributes": (*Emulator).describeLoadBalancerAttributes,
	"CreateTargetGroup":              (*Emulator).createTargetGroup,
	"DescribeTargetGroups":           (*Emulator).describeTargetGroups,
	"ModifyTargetGroup":              (*Emulator).modifyTargetGroup,
	"ModifyTargetGroupAttributes":    (*Emulator).modifyTargetGroupAttributes,
	"DescribeTargetGroupAttributes":  (*Emulator).describeTargetGroupAttributes,
	"DeleteTargetGroup":              (*Emulator).deleteTargetGroup,
	"CreateListener":                 (*Emulator).createListener,
	"DescribeListeners":              (*Emulator).describeListeners,
	"ModifyListener":                 (*Emulator).modifyListener,
	"DeleteListener":                 (*Emulator).deleteListener,
	"RegisterTargets":                (*Emulator).registerTargets,
	"DeregisterTargets":              (*Emulator).deregisterTargets,
	"DescribeTargetHealth":           (*Emulator).describeTargetHealth,
	"AddTags":                        (*Emulator).addTags,
	"RemoveTags":                     (*Emulator).removeTags,
	"DescribeTags":                   (*Emulator).describeTags,
}

// Serve implements cloudsim.Cloud.
func (e *Emulator) Serve(w http.ResponseWriter, r *http.Request, op string) {
	requestID := newRequestID()
	service, action, _ := strings.Cut(op, ":")
	p := params{r.Form}

	handlers, writeOK, writeErr := ec2Handlers, writeEC2Response, writeEC2Error
	switch service + ":" {
	case elbPrefix:
		handlers, writeOK, writeErr = elbHandlers, writeELBResponse, writeELBError
	case clbPrefix:
		handlers, writeOK, writeErr = clbHandlers, writeCLBResponse, writeCLBError
	}
	h, ok := handlers[action]
	if !ok {
		writeErr(w, requestID, apiErr("InvalidAction", "The action %s is not valid for this web service.", action))
		return
	}

	e.mu.Lock()
	body, err := h(e, p)
	e.mu.Unlock()

	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			ae = apiErr("InternalError", "%v", err)
		}
		writeErr(w, requestID, ae)
		return
	}
	writeOK(w, action, requestID, body)
}

// WriteThrottle implements cloudsim.Cloud with each service's real
// throttling error: EC2 answers 503 RequestLimitExceeded, both ELB APIs a
// 400 Throttling. The SDK retries all of them.
func (e *Emulator) WriteThrottle(w http.ResponseWriter, r *http.Request, op string) {
	switch {
	case strings.HasPrefix(op, elbPrefix):
		writeELBError(w, newRequestID(), apiErr("Throttling", "Rate exceeded"))
		return
	case strings.HasPrefix(op, clbPrefix):
		writeCLBError(w, newRequestID(), apiErr("Throttling", "Rate exceeded"))
		return
	}
	writeEC2Error(w, newRequestID(), apiErr("RequestLimitExceeded", "Request limit exceeded."))
}

// WriteServerError implements cloudsim.Cloud: EC2's 500 InternalError,
// the ELB APIs' 503 ServiceUnavailable.
func (e *Emulator) WriteServerError(w http.ResponseWriter, r *http.Request, op string) {
	switch {
	case strings.HasPrefix(op, elbPrefix):
		writeELBError(w, newRequestID(), apiErr("ServiceUnavailable", "Service is unavailable. Please try again later."))
		return
	case strings.HasPrefix(op, clbPrefix):
		writeCLBError(w, newRequestID(), apiErr("ServiceUnavailable", "Service is unavailable. Please try again later."))
		return
	}
	writeEC2Error(w, newRequestID(), apiErr("InternalError", "An internal error has occurred."))
}
