// Package openstack is the OpenStack backend: Nova instances, Octavia load
// balancers with Neutron floating IPs, and pod-CIDR routes on a Neutron
// router, through gophercloud. Work in progress (the OpenStack issue): it
// serves the node controllers (InstancesV2); load balancers and routes
// follow.
package openstack

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/clientopts"
)

// Section is the `openstack:` section of the cloud-config. Field names
// follow the upstream OpenStack CCM's cloud.conf (auth-url -> authURL,
// application-credential-id -> applicationCredentialID, ...; README,
// "OpenStack") so a cloud.conf ports key by key.
type Section struct {
	// AuthURL is the Keystone v3 endpoint, e.g.
	// https://keystone.example.com:5000/v3 (required unless cloud is set).
	AuthURL string `yaml:"authURL"`
	// Region is the OpenStack region the cluster runs in (required unless
	// cloud is set and its clouds.yaml entry names one).
	Region string `yaml:"region"`

	// Username authenticates with a password; set with userDomainName or
	// userDomainID. Use userID instead to need no domain.
	Username string `yaml:"username"`
	// UserID authenticates with a password (or names the owner of an
	// application credential given by name) without a domain.
	UserID string `yaml:"userID"`
	// Password is the user's password.
	Password string `yaml:"password" secret:"true"`
	// UserDomainName is the domain of username, e.g. Default.
	UserDomainName string `yaml:"userDomainName"`
	// UserDomainID is the ID of username's domain, e.g. default.
	UserDomainID string `yaml:"userDomainID"`
	// ProjectName is the project the password token is scoped to; set with
	// projectDomainName or projectDomainID.
	ProjectName string `yaml:"projectName"`
	// ProjectID is the project the password token is scoped to.
	ProjectID string `yaml:"projectID"`
	// ProjectDomainName is the domain of projectName.
	ProjectDomainName string `yaml:"projectDomainName"`
	// ProjectDomainID is the ID of projectName's domain.
	ProjectDomainID string `yaml:"projectDomainID"`

	// ApplicationCredentialID authenticates with an application credential
	// (bound to its project), with applicationCredentialSecret.
	ApplicationCredentialID string `yaml:"applicationCredentialID"`
	// ApplicationCredentialName names the application credential instead
	// of its ID; it then needs its owner, as username (+ domain) or userID.
	ApplicationCredentialName string `yaml:"applicationCredentialName"`
	// ApplicationCredentialSecret is the application credential's secret.
	ApplicationCredentialSecret string `yaml:"applicationCredentialSecret" secret:"true"`

	// Cloud names an entry of the clouds.yaml at cloudsFile, instead of the
	// fields above: what OpenStack users already have.
	Cloud string `yaml:"cloud"`
	// CloudsFile is the clouds.yaml holding cloud (default
	// /etc/openstack/clouds.yaml when cloud is set). A secure.yaml beside
	// it is merged, as the OpenStack clients do.
	CloudsFile string `yaml:"cloudsFile"`

	// CAFile is a PEM bundle to trust for the OpenStack APIs instead of the
	// system roots.
	CAFile string `yaml:"caFile"`
	// EndpointType selects the catalog interface: public (default),
	// internal or admin. With cloud, the clouds.yaml entry's interface
	// applies unless this is set.
	EndpointType string `yaml:"endpointType"`

	// LoadBalancer configures Octavia load balancers.
	LoadBalancer LoadBalancerSection `yaml:"loadBalancer"`
	// Routes configures pod-CIDR routes.
	Routes RoutesSection `yaml:"routes"`
	// Networking chooses which of a server's addresses its Node reports,
	// as the upstream CCM's [Networking] section does.
	Networking NetworkingSection `yaml:"networking"`

	// Options are the options every backend shares: requestTimeout,
	// maxAttempts and instanceCacheTTL.
	clientopts.Options `yaml:",inline"`
}

// LoadBalancerSection configures Octavia load balancers for Services.
type LoadBalancerSection struct {
	// FloatingNetworkID is the external network floating IPs are allocated
	// from; the annotation loadbalancer.openstack.org/floating-network-id
	// overrides it per Service. Default: the project's only external
	// (router:external) network with an IPv4 subnet, looked up once at
	// start, as the upstream CCM does; with several, or none, an external
	// Service without the annotation is an error naming them.
	FloatingNetworkID string `yaml:"floatingNetworkID"`
	// FloatingSubnetID picks the subnet of the floating network to
	// allocate from, when it has several.
	FloatingSubnetID string `yaml:"floatingSubnetID"`
	// InternalLB makes every Service's load balancer internal (no
	// floating IP; the Service's address is its VIP), as the upstream
	// CCM's internal-lb: the annotation
	// service.beta.kubernetes.io/openstack-internal-load-balancer cannot
	// make a Service external then, so no Service is exposed through a
	// floating IP.
	InternalLB bool `yaml:"internalLB"`
	// SubnetID is the subnet load balancer VIPs are placed in. Default: the
	// subnet of the nodes' addresses. Used for load balancers of its IP
	// family only: one of the other family (a Service whose first
	// spec.ipFamilies entry is IPv6, for an IPv4 subnet) goes in the
	// nodes' subnet of its own family.
	SubnetID string `yaml:"subnetID"`
	// NetworkID is the network load balancer VIPs are placed in, when
	// subnetID does not name the subnet: Octavia picks a subnet of it, as
	// with the upstream CCM's network-id (loadbalancer.go:261-266), for an
	// IPv6 load balancer its first IPv6 subnet. The annotation
	// loadbalancer.openstack.org/network-id overrides it.
	NetworkID string `yaml:"networkID"`
	// MemberSubnetID is the subnet the nodes' member addresses are in, when
	// it differs from subnetID. Like subnetID, used for load balancers of
	// its IP family only.
	MemberSubnetID string `yaml:"memberSubnetID"`
	// Provider is the Octavia provider driver: amphora (default),
	// amphorav2, octavia (the old name of amphora) or ovn.
	Provider string `yaml:"provider"`
	// LBMethod is the pools' balancing algorithm: ROUND_ROBIN,
	// LEAST_CONNECTIONS or SOURCE_IP; SOURCE_IP_PORT is the only one, and
	// the default, of the ovn provider.
	LBMethod string `yaml:"lbMethod"`
	// CreateMonitor gives each pool a health monitor: TCP on the NodePort,
	// or HTTP on the healthCheckNodePort for externalTrafficPolicy: Local.
	CreateMonitor bool `yaml:"createMonitor"`
	// MonitorDelay is the time between health checks (default 5s).
	MonitorDelay time.Duration `yaml:"monitorDelay"`
	// MonitorTimeout is how long a health check may take (default 3s; at
	// most monitorDelay).
	MonitorTimeout time.Duration `yaml:"monitorTimeout"`
	// MonitorMaxRetries is how many successful checks in a row mark a
	// member healthy (default 1; 1 to 10).
	MonitorMaxRetries int `yaml:"monitorMaxRetries"`
	// MonitorMaxRetriesDown is how many failed checks in a row mark a
	// member down (default 3, Octavia's and the upstream CCM's; 1 to 10).
	MonitorMaxRetriesDown int `yaml:"monitorMaxRetriesDown"`
	// FlavorID is the Octavia flavor new load balancers are created with
	// (the annotation loadbalancer.openstack.org/flavor-id overrides it).
	// Default: none, Octavia's default flavor. Read only when a load
	// balancer is created; not with the ovn provider, which has none.
	FlavorID string `yaml:"flavorID"`
	// AvailabilityZone is the Octavia availability zone new load
	// balancers are created in (the annotation
	// loadbalancer.openstack.org/availability-zone overrides it). Default:
	// none, where Octavia places them. Read only when a load balancer is
	// created; not with the ovn provider.
	AvailabilityZone string `yaml:"availabilityZone"`
	// EnableIngressHostname makes a Service that uses the PROXY protocol
	// report <address>.<ingressHostnameSuffix> as its status hostname
	// instead of its IP address, as the upstream CCM's
	// enable-ingress-hostname does, for clusters whose kube-proxy
	// predates status ipMode: with an IP, it would route in-cluster
	// clients past the load balancer, without the PROXY header. Without
	// it, such a Service reports its IP with ipMode Proxy.
	EnableIngressHostname bool `yaml:"enableIngressHostname"`
	// IngressHostnameSuffix is the DNS suffix of enableIngressHostname
	// (default nip.io, which resolves <address>.nip.io to the address).
	IngressHostnameSuffix string `yaml:"ingressHostnameSuffix"`
	// ManageSecurityGroups puts rules admitting each Service's NodePorts
	// from its VIP subnet and source ranges in one cluster-owned security
	// group attached to the nodes' ports.
	ManageSecurityGroups bool `yaml:"manageSecurityGroups"`
	// WaitActiveTimeout bounds how long a sync waits for a load balancer to
	// leave PENDING_* before it returns and is retried (default 5m).
	WaitActiveTimeout time.Duration `yaml:"waitActiveTimeout"`
	// MaxSharedLB caps how many Services may use one load balancer
	// through the annotation loadbalancer.openstack.org/load-balancer-id,
	// counting the Service it was made for, as the upstream CCM's
	// max-shared-lb (default 2, upstream's; 0 means the default, 1 or
	// less refuses sharing).
	MaxSharedLB int `yaml:"maxSharedLB"`

	// detected is what the start-time look-up of the floating network
	// found (loadbalancer_floatingnetwork.go); nil when floatingNetworkID
	// or internalLB is set. Not configuration: New fills it.
	detected *detectedFloatingNetwork
}

// RoutesSection configures pod-CIDR routes.
type RoutesSection struct {
	// RouterID is the Neutron router that gets the pod-CIDR routes as extra
	// routes. Routes are supported only when it is set.
	RouterID string `yaml:"routerID"`
}

// NetworkingSection chooses a Node's addresses among its server's, as
// the upstream CCM's [Networking] section does
// (pkg/openstack/instances_addresses.go nodeAddresses): by default every
// fixed address is an InternalIP and every floating and access address an
// ExternalIP; the interfaces' addresses come first, in Neutron's order.
type NetworkingSection struct {
	// PublicNetworkNames are networks whose fixed addresses are
	// ExternalIPs instead of InternalIPs (upstream's public-network-name,
	// which may repeat).
	PublicNetworkNames []string `yaml:"publicNetworkNames"`
	// InternalNetworkNames, when set, are the only networks whose fixed
	// addresses the Node reports as InternalIPs; fixed addresses of other
	// networks (not in publicNetworkNames) are left out (upstream's
	// internal-network-name, which may repeat). Useful on Nodes with
	// several interfaces. Default: every network's.
	InternalNetworkNames []string `yaml:"internalNetworkNames"`
	// AddressSortOrder lists CIDRs such as 10.0.0.0/8 in order of
	// preference: the Node's addresses in the first come first (in
	// ascending order among themselves), then those in the second, and so
	// on; addresses in none keep their place after them (upstream's
	// address-sort-order, a comma-separated list there). Default: no
	// sorting.
	AddressSortOrder []string `yaml:"addressSortOrder"`
	// IPv6SupportDisabled leaves IPv6 addresses out of the Node's
	// addresses (upstream's ipv6-support-disabled).
	IPv6SupportDisabled bool `yaml:"ipv6SupportDisabled"`
}

// Defaults of the load balancer section; part of the documented config.
const (
	DefaultProvider          = "amphora"
	DefaultMonitorDelay      = 5 * time.Second
	DefaultMonitorTimeout    = 3 * time.Second
	DefaultMonitorMaxRetries = 1
	// DefaultMonitorMaxRetriesDown is Octavia's default and the upstream
	// CCM's (pkg/openstack/openstack.go:222).
	DefaultMonitorMaxRetriesDown = 3
	// DefaultIngressHostnameSuffix is the upstream CCM's
	// (pkg/openstack/loadbalancer.go:96).
	DefaultIngressHostnameSuffix = "nip.io"
	DefaultWaitActiveTimeout     = 5 * time.Minute
	// DefaultCloudsFile is where cloudsFile points when cloud is set.
	DefaultCloudsFile = "/etc/openstack/clouds.yaml"
)

// lbMethods lists the algorithms each provider accepts. Octavia answers
// 501 Not Implemented for an algorithm the provider lacks, which would
// only show once a Service is synced; a config that asks for one is
// refused at start instead.
var lbMethods = map[string][]string{
	"amphora":   {"ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP"},
	"amphorav2": {"ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP"},
	"octavia":   {"ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP"},
	"ovn":       {"SOURCE_IP_PORT"},
}

// RoutesEnabled reports whether routes are configured.
func (s *Section) RoutesEnabled() bool { return s.Routes.RouterID != "" }

// SetDefaults implements config.Section.
func (s *Section) SetDefaults() {
	s.Options.SetDefaults()
	if s.Cloud != "" && s.CloudsFile == "" {
		s.CloudsFile = DefaultCloudsFile
	}
	if s.Cloud == "" && s.EndpointType == "" {
		s.EndpointType = "public"
	}
	lb := &s.LoadBalancer
	if lb.Provider == "" {
		lb.Provider = DefaultProvider
	}
	if lb.LBMethod == "" {
		if methods, ok := lbMethods[lb.Provider]; ok {
			lb.LBMethod = methods[0]
		}
	}
	if lb.MonitorDelay == 0 {
		lb.MonitorDelay = DefaultMonitorDelay
	}
	if lb.MonitorTimeout == 0 {
		lb.MonitorTimeout = DefaultMonitorTimeout
	}
	if lb.MonitorMaxRetries == 0 {
		lb.MonitorMaxRetries = DefaultMonitorMaxRetries
	}
	if lb.MonitorMaxRetriesDown == 0 {
		lb.MonitorMaxRetriesDown = DefaultMonitorMaxRetriesDown
	}
	if lb.IngressHostnameSuffix == "" {
		lb.IngressHostnameSuffix = DefaultIngressHostnameSuffix
	}
	if lb.WaitActiveTimeout == 0 {
		lb.WaitActiveTimeout = DefaultWaitActiveTimeout
	}
}

// uuidRE matches the IDs Neutron and Octavia give their resources.
var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// authMethods names the ways the section authenticates, in the order
// the error messages list them.
func (s *Section) authMethods() []string {
	var m []string
	appCred := s.ApplicationCredentialID != "" || s.ApplicationCredentialName != "" || s.ApplicationCredentialSecret != ""
	// A user without a password is an application credential's owner
	// when one is given by name.
	if s.Password != "" || s.ProjectName != "" || s.ProjectID != "" || (!appCred && (s.Username != "" || s.UserID != "")) {
		m = append(m, "password")
	}
	if appCred {
		m = append(m, "application credential")
	}
	if s.Cloud != "" {
		m = append(m, "cloud")
	}
	return m
}

// Validate implements config.Section. It reports every problem at once.
func (s *Section) Validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.LoadBalancer.MaxSharedLB < 0 {
		errs = append(errs, field.Invalid(path.Child("loadBalancer", "maxSharedLB"), s.LoadBalancer.MaxSharedLB, "must be 0 (the default, 2) or more"))
	}
	methods := s.authMethods()
	switch {
	case len(methods) == 0:
		errs = append(errs, field.Required(path, "credentials: username (or userID) with password, applicationCredentialID (or applicationCredentialName) with applicationCredentialSecret, or cloud naming a clouds.yaml entry"))
	case len(methods) > 1:
		errs = append(errs, field.Forbidden(path, fmt.Sprintf("%s: set exactly one way to authenticate", strings.Join(methods, " and "))))
	}
	if s.Cloud == "" {
		if s.AuthURL == "" {
			errs = append(errs, field.Required(path.Child("authURL"), "the Keystone v3 URL, e.g. https://keystone.example.com:5000/v3"))
		}
		if s.Region == "" {
			errs = append(errs, field.Required(path.Child("region"), "the OpenStack region, e.g. RegionOne"))
		}
	} else if s.CloudsFile == "" {
		errs = append(errs, field.Required(path.Child("cloudsFile"), "the clouds.yaml holding cloud"))
	}
	if s.AuthURL != "" {
		if u, err := url.Parse(s.AuthURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, field.Invalid(path.Child("authURL"), s.AuthURL, "must be an http(s) URL such as https://keystone.example.com:5000/v3"))
		}
	}
	if len(methods) == 1 {
		switch methods[0] {
		case "password":
			errs = append(errs, s.validatePassword(path)...)
		case "application credential":
			errs = append(errs, s.validateAppCredential(path)...)
		}
	}
	switch s.EndpointType {
	case "", "public", "internal", "admin":
	default:
		errs = append(errs, field.NotSupported(path.Child("endpointType"), s.EndpointType, []string{"public", "internal", "admin"}))
	}
	errs = append(errs, s.LoadBalancer.validate(path.Child("loadBalancer"))...)
	if id := s.Routes.RouterID; id != "" && !uuidRE.MatchString(id) {
		errs = append(errs, field.Invalid(path.Child("routes", "routerID"), id, "must be a router UUID such as 5f0d1e1c-9a4b-4c43-9f57-1d5e3a7b2c10"))
	}
	errs = append(errs, s.Networking.validate(path.Child("networking"))...)
	errs = append(errs, s.Options.Validate(path)...)
	return errs
}

func (s *Section) validatePassword(path *field.Path) field.ErrorList {
	errs := field.ErrorList{}
	errs = append(errs, exclusive(path, "username", s.Username, "userID", s.UserID)...)
	errs = append(errs, exclusive(path, "userDomainName", s.UserDomainName, "userDomainID", s.UserDomainID)...)
	errs = append(errs, exclusive(path, "projectName", s.ProjectName, "projectID", s.ProjectID)...)
	errs = append(errs, exclusive(path, "projectDomainName", s.ProjectDomainName, "projectDomainID", s.ProjectDomainID)...)
	switch {
	case s.Username == "" && s.UserID == "":
		errs = append(errs, field.Required(path.Child("username"), "the user the password belongs to (or userID)"))
	case s.UserID == "" && s.UserDomainName == "" && s.UserDomainID == "":
		errs = append(errs, field.Required(path.Child("userDomainName"), "username needs its domain: userDomainName (e.g. Default) or userDomainID (e.g. default)"))
	}
	if s.Password == "" {
		errs = append(errs, field.Required(path.Child("password"), "the user's password"))
	}
	switch {
	case s.ProjectName == "" && s.ProjectID == "":
		errs = append(errs, field.Required(path.Child("projectName"), "the project to work in (or projectID)"))
	case s.ProjectID == "" && s.ProjectDomainName == "" && s.ProjectDomainID == "":
		errs = append(errs, field.Required(path.Child("projectDomainName"), "projectName needs its domain: projectDomainName or projectDomainID"))
	}
	return errs
}

func (s *Section) validateAppCredential(path *field.Path) field.ErrorList {
	errs := exclusive(path, "applicationCredentialID", s.ApplicationCredentialID, "applicationCredentialName", s.ApplicationCredentialName)
	errs = append(errs, exclusive(path, "username", s.Username, "userID", s.UserID)...)
	errs = append(errs, exclusive(path, "userDomainName", s.UserDomainName, "userDomainID", s.UserDomainID)...)
	switch {
	case s.ApplicationCredentialID == "" && s.ApplicationCredentialName == "":
		errs = append(errs, field.Required(path.Child("applicationCredentialID"), "the application credential's ID (or applicationCredentialName with its owner)"))
	case s.ApplicationCredentialID != "":
	case s.Username == "" && s.UserID == "":
		errs = append(errs, field.Required(path.Child("userID"), "applicationCredentialName needs its owner: userID, or username with userDomainName or userDomainID"))
	case s.UserID == "" && s.UserDomainName == "" && s.UserDomainID == "":
		errs = append(errs, field.Required(path.Child("userDomainName"), "username needs its domain: userDomainName or userDomainID"))
	}
	if s.ApplicationCredentialSecret == "" {
		errs = append(errs, field.Required(path.Child("applicationCredentialSecret"), "the application credential's secret"))
	}
	return errs
}

// exclusive refuses two keys that say the same thing two ways (a name
// and an ID) when both are set.
func exclusive(path *field.Path, aKey, a, bKey, b string) field.ErrorList {
	if a != "" && b != "" {
		return field.ErrorList{field.Forbidden(path.Child(bKey), fmt.Sprintf("set %s or %s, not both", aKey, bKey))}
	}
	return nil
}

func (lb *LoadBalancerSection) validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for name, id := range map[string]string{
		"floatingNetworkID": lb.FloatingNetworkID,
		"floatingSubnetID":  lb.FloatingSubnetID,
		"subnetID":          lb.SubnetID,
		"networkID":         lb.NetworkID,
		"memberSubnetID":    lb.MemberSubnetID,
	} {
		if id != "" && !uuidRE.MatchString(id) {
			errs = append(errs, field.Invalid(path.Child(name), id, "must be a UUID such as 5f0d1e1c-9a4b-4c43-9f57-1d5e3a7b2c10"))
		}
	}
	methods, known := lbMethods[lb.Provider]
	if !known {
		errs = append(errs, field.NotSupported(path.Child("provider"), lb.Provider, []string{"amphora", "amphorav2", "octavia", "ovn"}))
	} else if !slices.Contains(methods, lb.LBMethod) {
		errs = append(errs, field.NotSupported(path.Child("lbMethod"), lb.LBMethod, methods))
	}
	if lb.MonitorDelay < time.Second || lb.MonitorDelay > time.Hour {
		errs = append(errs, field.Invalid(path.Child("monitorDelay"), lb.MonitorDelay.String(), "must be between 1s and 1h"))
	}
	if lb.MonitorTimeout < time.Second || lb.MonitorTimeout > lb.MonitorDelay {
		errs = append(errs, field.Invalid(path.Child("monitorTimeout"), lb.MonitorTimeout.String(), "must be at least 1s and at most monitorDelay (Octavia refuses a longer one)"))
	}
	if lb.MonitorMaxRetries < 1 || lb.MonitorMaxRetries > 10 {
		errs = append(errs, field.Invalid(path.Child("monitorMaxRetries"), lb.MonitorMaxRetries, "must be between 1 and 10"))
	}
	if lb.MonitorMaxRetriesDown < 1 || lb.MonitorMaxRetriesDown > 10 {
		errs = append(errs, field.Invalid(path.Child("monitorMaxRetriesDown"), lb.MonitorMaxRetriesDown, "must be between 1 and 10"))
	}
	if lb.FlavorID != "" && !uuidRE.MatchString(lb.FlavorID) {
		errs = append(errs, field.Invalid(path.Child("flavorID"), lb.FlavorID, "must be an Octavia flavor UUID (openstack loadbalancer flavor list)"))
	}
	if len(lb.AvailabilityZone) > 255 {
		errs = append(errs, field.TooLong(path.Child("availabilityZone"), lb.AvailabilityZone, 255))
	}
	if lb.Provider == "ovn" {
		// The upstream CCM skips both for ovn (openstackutil
		// IsOctaviaFeatureSupported); the ovn driver has no flavors.
		if lb.FlavorID != "" {
			errs = append(errs, field.Forbidden(path.Child("flavorID"), "the ovn provider has no Octavia flavors; remove it or use the amphora provider"))
		}
		if lb.AvailabilityZone != "" {
			errs = append(errs, field.Forbidden(path.Child("availabilityZone"), "the ovn provider does not support Octavia availability zones; remove it or use the amphora provider"))
		}
	}
	if msgs := validation.IsDNS1123Subdomain(lb.IngressHostnameSuffix); len(msgs) > 0 {
		errs = append(errs, field.Invalid(path.Child("ingressHostnameSuffix"), lb.IngressHostnameSuffix, "must be a DNS suffix such as nip.io: "+strings.Join(msgs, "; ")))
	}
	if lb.WaitActiveTimeout < 10*time.Second || lb.WaitActiveTimeout > time.Hour {
		errs = append(errs, field.Invalid(path.Child("waitActiveTimeout"), lb.WaitActiveTimeout.String(), "must be between 10s and 1h"))
	}
	return errs
}

func (n *NetworkingSection) validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := func(key string, list []string) {
		seen := map[string]bool{}
		for i, name := range list {
			p := path.Child(key).Index(i)
			switch {
			case strings.TrimSpace(name) == "":
				errs = append(errs, field.Invalid(p, name, "must be the name of a Neutron network, such as public"))
			case seen[name]:
				errs = append(errs, field.Duplicate(p, name))
			}
			seen[name] = true
		}
	}
	names("publicNetworkNames", n.PublicNetworkNames)
	names("internalNetworkNames", n.InternalNetworkNames)
	for i, name := range n.InternalNetworkNames {
		if slices.Contains(n.PublicNetworkNames, name) {
			// Upstream checks the public names first, so such a
			// network's addresses are ExternalIPs there.
			errs = append(errs, field.Invalid(path.Child("internalNetworkNames").Index(i), name,
				"is in publicNetworkNames too, which wins (its fixed addresses are ExternalIPs): remove it from one of them"))
		}
	}
	for i, c := range n.AddressSortOrder {
		if _, _, err := net.ParseCIDR(c); err != nil {
			errs = append(errs, field.Invalid(path.Child("addressSortOrder").Index(i), c, "must be a CIDR such as 10.0.0.0/8 or 2001:db8::/32"))
		}
	}
	return errs
}
