package aws

import (
	"net/url"
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/clientopts"
)

// Section is the `aws:` section of the cloud-config.
type Section struct {
	// Region is the AWS region the cluster runs in (required).
	Region string `yaml:"region"`
	// VPCID is the cluster's VPC. Optional: when empty it is taken from the
	// cluster's instances at start.
	VPCID string `yaml:"vpcID"`
	// Subnets selects the subnets load balancers are placed in.
	Subnets SubnetSelection `yaml:"subnets"`
	// RouteTables selects the route tables that get pod-CIDR routes. Routes
	// are supported only when IDs are listed or Discover is true.
	RouteTables RouteTableSelection `yaml:"routeTables"`
	// LoadBalancer chooses what a LoadBalancer Service gets by default.
	LoadBalancer LoadBalancerConfig `yaml:"loadBalancer"`
	// NodeIPAM tunes the cloud allocator (--allocate-node-cidrs=true
	// --cidr-allocator-type=CloudAllocator), which makes the prefixes
	// delegated to each instance's primary interface its Node's pod CIDRs.
	NodeIPAM NodeIPAMConfig `yaml:"nodeIPAM"`
	// NodeIPFamilies are the address families of Node addresses, in this
	// order ("ipv4", "ipv6"; default ["ipv4"]), as the upstream AWS CCM's
	// [Global] NodeIPFamilies (pkg/providers/v1/aws.go:865-886): ipv4
	// gives the private IPv4 addresses, the public IP and the DNS names;
	// ipv6 the first IPv6 address of each in-use interface, as an
	// InternalIP. An IPv6 or dual-stack cluster whose kubelets run with
	// --node-ip=<ipv6> or a dual-stack pair needs ipv6 listed, or the
	// cloud-node controller leaves the Node tainted (the addresses it
	// checks the kubelet's against lack it).
	NodeIPFamilies []string `yaml:"nodeIPFamilies"`
	// Endpoints overrides service endpoints (VPC endpoints, AWS-compatible
	// clouds, the emulator in tests).
	Endpoints Endpoints `yaml:"endpoints"`
	// Credentials are static keys. Leave empty to use the SDK's default
	// chain: environment, shared config, web identity (IRSA), instance role.
	Credentials Credentials `yaml:"credentials"`
	// AssumeRole, if RoleARN is set, assumes that role on top of the base
	// credentials.
	AssumeRole AssumeRole `yaml:"assumeRole"`
	// Options are the options every backend shares: requestTimeout,
	// maxAttempts and instanceCacheTTL.
	clientopts.Options `yaml:",inline"`
}

// NodeIPAMConfig is the `nodeIPAM:` part of the section.
type NodeIPAMConfig struct {
	// AssignIPv6Prefix gives the primary interface of a new Node's
	// instance one /80 (AssignIpv6Addresses with Ipv6PrefixCount 1) when
	// it has none and the cluster has an IPv6 family, before its pod CIDRs
	// are written; kOps' nodeup asks for one at boot, Gardener at launch.
	// Off by default: it is a write to the instance's interface, and needs
	// ec2:AssignIpv6Addresses.
	AssignIPv6Prefix bool `yaml:"assignIPv6Prefix"`
	// IPv4Prefix makes an IPv4 /28 prefix delegated to the primary
	// interface the Node's IPv4 pod CIDR. Off by default: such prefixes
	// are usually the VPC CNI's pools of pod addresses, and a Node without
	// one gets an IPv4 range from --cluster-cidr either way.
	IPv4Prefix bool `yaml:"ipv4Prefix"`
}

// SubnetSelection chooses load-balancer subnets. By default they are
// discovered in the VPC as the upstream AWS CCM does: subnets tagged for
// the cluster or for no cluster, only public ones (routed to an internet
// gateway) for internet-facing load balancers, one per zone, the role tags
// kubernetes.io/role/elb and kubernetes.io/role/internal-elb breaking ties.
type SubnetSelection struct {
	// Public lists the subnet IDs (one per zone) internet-facing NLBs are
	// placed in, instead of discovered ones.
	Public []string `yaml:"public"`
	// Internal lists the subnet IDs (one per zone) internal NLBs are
	// placed in, instead of discovered ones.
	Internal []string `yaml:"internal"`
}

// Values of LoadBalancerConfig.DefaultType.
const (
	defaultTypeNLB     = "nlb"
	defaultTypeClassic = "classic"
)

// LoadBalancerConfig is the `loadBalancer:` part of the section.
type LoadBalancerConfig struct {
	// DefaultType is the load balancer a Service without the
	// service.beta.kubernetes.io/aws-load-balancer-type annotation gets:
	// "nlb" for a Network Load Balancer, or "classic" for a Classic ELB
	// named and shaped as the upstream AWS CCM makes it (its default), so
	// Services moved from it keep their load balancers. A Service whose
	// annotation names any type other than nlb, external or nlb-ip gets a
	// Classic ELB whatever this says, as upstream.
	DefaultType string `yaml:"defaultType"`
	// UpstreamShape makes new load balancers exactly as the upstream AWS
	// CCM makes them, so a cluster that switched from it can switch back:
	// upstream started again with its original cloud.conf finds, serves
	// and deletes them. An NLB is named cloudprovider.DefaultLoadBalancerName
	// ("a" + the Service UID), has no security group (its clients and
	// health checks are admitted by CIDR on the nodes' security groups,
	// described kubernetes.io/rule/nlb/...), its target groups are named
	// k8s-<namespace>-<name>-<hash> and tagged as upstream names and tags
	// them. Classic ELBs have upstream's names either way; a new one's
	// security group k8s-elb-<name> is tagged as upstream tags it (the
	// cluster tag and additional-resource-tags only), and the nodes admit
	// that group, new or not, with upstream's one rule for all traffic
	// instead of ours per NodePort. Load balancers made before keep their
	// names and are still served. import-config sets it. Default: false.
	UpstreamShape bool `yaml:"upstreamShape"`
}

// RouteTableSelection chooses route tables for pod-CIDR routes.
type RouteTableSelection struct {
	// IDs lists route tables explicitly.
	IDs []string `yaml:"ids"`
	// Discover finds the VPC's route tables tagged with the cluster tag.
	Discover bool `yaml:"discover"`
}

// Endpoints are optional per-service endpoint URLs.
type Endpoints struct {
	// EC2 is the EC2 endpoint URL, e.g. a VPC interface endpoint.
	EC2 string `yaml:"ec2"`
	// ELBv2 is the Elastic Load Balancing v2 endpoint URL.
	ELBv2 string `yaml:"elbv2"`
	// ELB is the Classic Elastic Load Balancing endpoint URL. Default: the
	// elbv2 endpoint, since AWS serves both ELB APIs at one endpoint
	// (elasticloadbalancing.<region>.amazonaws.com, and one VPC interface
	// endpoint), so a config that reaches NLBs reaches Classic ELBs too.
	ELB string `yaml:"elb"`
	// STS is the STS endpoint URL assumeRole uses.
	STS string `yaml:"sts"`
}

// Credentials are optional static credentials.
type Credentials struct {
	// AccessKeyID is the access key ID; set with secretAccessKey.
	AccessKeyID string `yaml:"accessKeyID"`
	// SecretAccessKey is the secret access key.
	SecretAccessKey string `yaml:"secretAccessKey" secret:"true"`
	// SessionToken is the session token of temporary credentials.
	SessionToken string `yaml:"sessionToken" secret:"true"`
}

// AssumeRole configures an STS AssumeRole on top of the base credentials.
type AssumeRole struct {
	// RoleARN is the IAM role to assume, e.g.
	// arn:aws:iam::123456789012:role/ccm.
	RoleARN string `yaml:"roleARN"`
	// ExternalID is the external ID the role's trust policy demands.
	ExternalID string `yaml:"externalID" secret:"true"`
	// SessionName names the assumed-role session in CloudTrail
	// (default multicloud-ccm when roleARN is set).
	SessionName string `yaml:"sessionName"`
}

// elbEndpoint is the Classic ELB endpoint: its own, else ELBv2's.
func (s *Section) elbEndpoint() string {
	if s.Endpoints.ELB != "" {
		return s.Endpoints.ELB
	}
	return s.Endpoints.ELBv2
}

// Routes reports whether route tables are configured.
func (s *Section) Routes() bool { return len(s.RouteTables.IDs) > 0 || s.RouteTables.Discover }

// SetDefaults implements config.Section.
func (s *Section) SetDefaults() {
	s.Options.SetDefaults()
	if s.LoadBalancer.DefaultType == "" {
		s.LoadBalancer.DefaultType = defaultTypeNLB
	}
	if s.AssumeRole.RoleARN != "" && s.AssumeRole.SessionName == "" {
		s.AssumeRole.SessionName = "multicloud-ccm"
	}
	if len(s.NodeIPFamilies) == 0 {
		// Upstream's default (aws.go:662-665).
		s.NodeIPFamilies = []string{familyIPv4}
	}
}

// The address families of nodeIPFamilies.
const (
	familyIPv4 = "ipv4"
	familyIPv6 = "ipv6"
)

var (
	regionRE     = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-\d+$`)
	vpcRE        = regexp.MustCompile(`^vpc-[0-9a-f]{8}([0-9a-f]{9})?$`)
	subnetRE     = regexp.MustCompile(`^subnet-[0-9a-f]{8}([0-9a-f]{9})?$`)
	routeTableRE = regexp.MustCompile(`^rtb-[0-9a-f]{8}([0-9a-f]{9})?$`)
	roleARNRE    = regexp.MustCompile(`^arn:aws[a-z-]*:iam::\d{12}:role/.+$`)
)

// Validate implements config.Section.
func (s *Section) Validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Region == "" {
		errs = append(errs, field.Required(path.Child("region"), "the AWS region, e.g. eu-west-1"))
	} else if !regionRE.MatchString(s.Region) {
		errs = append(errs, field.Invalid(path.Child("region"), s.Region, "must be an AWS region name such as eu-west-1"))
	}
	if s.VPCID != "" && !vpcRE.MatchString(s.VPCID) {
		errs = append(errs, field.Invalid(path.Child("vpcID"), s.VPCID, "must be a VPC ID such as vpc-0abc1234"))
	}
	for name, ids := range map[string][]string{"public": s.Subnets.Public, "internal": s.Subnets.Internal} {
		for i, id := range ids {
			if !subnetRE.MatchString(id) {
				errs = append(errs, field.Invalid(path.Child("subnets", name).Index(i), id, "must be a subnet ID such as subnet-0abc1234"))
			}
		}
	}
	for i, id := range s.RouteTables.IDs {
		if !routeTableRE.MatchString(id) {
			errs = append(errs, field.Invalid(path.Child("routeTables", "ids").Index(i), id, "must be a route table ID such as rtb-0abc1234"))
		}
	}
	switch s.LoadBalancer.DefaultType {
	case "", defaultTypeNLB, defaultTypeClassic:
	default:
		errs = append(errs, field.NotSupported(path.Child("loadBalancer", "defaultType"), s.LoadBalancer.DefaultType, []string{defaultTypeNLB, defaultTypeClassic}))
	}
	for name, u := range map[string]string{"ec2": s.Endpoints.EC2, "elbv2": s.Endpoints.ELBv2, "elb": s.Endpoints.ELB, "sts": s.Endpoints.STS} {
		if u == "" {
			continue
		}
		if parsed, err := url.Parse(u); err != nil || (parsed.Scheme != "https" && parsed.Scheme != "http") || parsed.Host == "" {
			errs = append(errs, field.Invalid(path.Child("endpoints", name), u, "must be an http(s) URL"))
		}
	}
	c := s.Credentials
	if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
		errs = append(errs, field.Required(path.Child("credentials"), "accessKeyID and secretAccessKey must be set together"))
	}
	if c.SessionToken != "" && c.AccessKeyID == "" {
		errs = append(errs, field.Invalid(path.Child("credentials", "sessionToken"), "", "needs accessKeyID and secretAccessKey"))
	}
	if s.AssumeRole.RoleARN != "" && !roleARNRE.MatchString(s.AssumeRole.RoleARN) {
		errs = append(errs, field.Invalid(path.Child("assumeRole", "roleARN"), s.AssumeRole.RoleARN, "must be an IAM role ARN"))
	}
	if s.AssumeRole.RoleARN == "" && s.AssumeRole.ExternalID != "" {
		errs = append(errs, field.Required(path.Child("assumeRole", "roleARN"), "externalID needs roleARN"))
	}
	// Upstream ignores an unknown family and lists a repeated one twice
	// (aws.go:868-883); here either is an error at start.
	seen := map[string]bool{}
	for i, f := range s.NodeIPFamilies {
		fp := path.Child("nodeIPFamilies").Index(i)
		switch {
		case f != familyIPv4 && f != familyIPv6:
			errs = append(errs, field.NotSupported(fp, f, []string{familyIPv4, familyIPv6}))
		case seen[f]:
			errs = append(errs, field.Duplicate(fp, f))
		}
		seen[f] = true
	}
	errs = append(errs, s.Options.Validate(path)...)
	return errs
}
