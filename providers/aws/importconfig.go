package aws

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/importcfg"
)

// upstreamConfig mirrors the upstream AWS CCM's cloud.conf key for key and
// type for type, so gcfg reads a file exactly as the upstream CCM does
// (same names, same bool and integer syntax, same errors).
// upstream: kubernetes/cloud-provider-aws pkg/providers/v1/config/config.go:42-134 (commit 63ec440c)
type upstreamConfig struct {
	Global          upstreamGlobal
	ServiceOverride map[string]*upstreamServiceOverride
}

// upstreamGlobal is the [Global] section.
// upstream: kubernetes/cloud-provider-aws pkg/providers/v1/config/config.go:43-112
type upstreamGlobal struct {
	Zone                                            string
	Region                                          string
	VPC                                             string
	SubnetID                                        string
	RouteTableID                                    string
	RoleARN                                         string
	SourceARN                                       string
	KubernetesClusterTag                            string
	KubernetesClusterID                             string
	DisableSecurityGroupIngress                     bool
	ElbSecurityGroup                                string
	NodeIPFamilies                                  []string
	ClusterServiceLoadBalancerHealthProbeMode       string
	ClusterServiceSharedLoadBalancerHealthProbePort int32
	ClusterServiceSharedLoadBalancerHealthProbePath string
	SupportedTopologyInstanceTypePattern            string
	NLBSecurityGroupMode                            string
}

// upstreamServiceOverride is one [ServiceOverride "N"] subsection.
// upstream: kubernetes/cloud-provider-aws pkg/providers/v1/config/config.go:126-133
type upstreamServiceOverride struct {
	Service       string
	Region        string
	URL           string
	SigningRegion string
	SigningMethod string
	SigningName   string
}

// Keys of [Global] as the upstream documentation spells them, for Notes.
const (
	keyZone                 = "[Global] Zone"
	keyRegion               = "[Global] Region"
	keyVPC                  = "[Global] VPC"
	keySubnetID             = "[Global] SubnetID"
	keySourceARN            = "[Global] SourceARN"
	keyClusterTag           = "[Global] KubernetesClusterTag"
	keyClusterID            = "[Global] KubernetesClusterID"
	keyDisableSGIngress     = "[Global] DisableSecurityGroupIngress"
	keyElbSecurityGroup     = "[Global] ElbSecurityGroup"
	keyNodeIPFamilies       = "[Global] NodeIPFamilies"
	keyHealthProbeMode      = "[Global] ClusterServiceLoadBalancerHealthProbeMode"
	keySharedProbePort      = "[Global] ClusterServiceSharedLoadBalancerHealthProbePort"
	keySharedProbePath      = "[Global] ClusterServiceSharedLoadBalancerHealthProbePath"
	keyTopologyPattern      = "[Global] SupportedTopologyInstanceTypePattern"
	keyNLBSecurityGroupMode = "[Global] NLBSecurityGroupMode"
	// keyDefaultLBType is not a key of the file: it carries the one
	// difference every imported cluster has, whatever its file says.
	keyDefaultLBType = "(default load balancer type)"
)

// ImportConfig reads the upstream AWS CCM's cloud.conf into an `aws:`
// section (`multicloud-ccm import-config --from aws`). Keys with no
// equivalent, or whose meaning changes here, are Notes; keys that are not
// upstream keys at all are Notes too, because gcfg reports them as
// warnings and the upstream CCM ignores them (it reads with FatalOnly,
// upstream pkg/providers/v1/aws.go:544). A file gcfg cannot read is an
// error naming the line.
func ImportConfig(data []byte, _ importcfg.Options) (*importcfg.Result, error) {
	var up upstreamConfig
	unknown, err := importcfg.ReadINI(data, &up)
	if err != nil {
		return nil, err
	}
	// Upstream gives a Service without a type annotation a Classic ELB
	// (pkg/providers/v1/aws.go:2359-2540: only nlb is an NLB); so does
	// every imported cluster. And every load balancer it makes is made as
	// upstream makes it, so the upstream CCM started again with this file
	// finds and serves it: the way back stays open.
	imp := &importer{up: &up, sec: &Section{LoadBalancer: LoadBalancerConfig{DefaultType: defaultTypeClassic, UpstreamShape: true}}, noted: map[string]bool{}}
	imp.importRegion()
	imp.importClusterID()
	imp.importNetwork()
	imp.importCredentials()
	imp.importLoadBalancing()
	imp.importNodes()
	imp.importOverrides()
	imp.reportUnknown(unknown)
	imp.note(keyDefaultLBType,
		"a Service without service.beta.kubernetes.io/aws-load-balancer-type got a Classic ELB",
		"it still does: loadBalancer.defaultType is classic, and the Classic ELB keeps upstream's name, so the existing one is found again; set defaultType to nlb (or annotate Services with aws-load-balancer-type: nlb) for Network Load Balancers. loadBalancer.upstreamShape makes new load balancers as upstream makes them (names, tags, no NLB security group), so upstream started again with this file finds them")
	return &importcfg.Result{Section: imp.sec, ClusterID: imp.clusterID, Notes: imp.notes}, nil
}

// importer carries one import: the file read, the section being filled
// and what could not be carried over.
type importer struct {
	up        *upstreamConfig
	sec       *Section
	clusterID string
	notes     []importcfg.Note
	// noted keeps one Note per key: gcfg reports an unknown section once
	// per line and per pass.
	noted map[string]bool
}

func (imp *importer) note(key, upstream, instead string) {
	if imp.noted[key] {
		return
	}
	imp.noted[key] = true
	imp.notes = append(imp.notes, importcfg.Note{Key: key, Upstream: upstream, Instead: instead})
}

// zoneRegionRE takes the region out of a zone name ("us-west-2a" and the
// local zone "us-west-2-lax-1a" are both in us-west-2), as the upstream
// CCM does.
// upstream: kubernetes/cloud-provider-aws pkg/providers/v1/aws.go:555-568 (azToRegion)
var zoneRegionRE = regexp.MustCompile(`^[a-zA-Z]+(-[a-zA-Z]+)*-[0-9]+`)

// importRegion fills region. Upstream a set Zone wins over Region, and
// without either the region comes from the instance metadata service.
// upstream: kubernetes/cloud-provider-aws pkg/providers/v1/aws.go:3740-3752 (getRegionFromMetadata)
func (imp *importer) importRegion() {
	g := &imp.up.Global
	region := strings.TrimSpace(g.Region)
	if zone := strings.TrimSpace(g.Zone); zone != "" {
		fromZone := zoneRegionRE.FindString(zone)
		switch {
		case fromZone == "":
			instead := "set region (required), e.g. eu-west-1"
			if region != "" {
				instead = "region is taken from Region; check it"
			}
			imp.note(keyZone, "gave the region, ahead of Region, but this value is not a zone name a region can be taken from, so the upstream CCM did not start", instead)
		default:
			imp.note(keyZone, "gave the region (the zone name without its zone letter), ahead of Region",
				"region is set from it; each Node's zone comes from its own instance")
			if region != "" && region != fromZone {
				imp.note(keyRegion, "was not used, because Zone was set and the zone's region won",
					"region is the zone's region, as upstream; edit region if the cluster is in the other one")
			}
			region = fromZone
		}
	}
	if region == "" && strings.TrimSpace(g.Zone) == "" {
		imp.note(keyRegion, "was not set, so the region came from the instance metadata service",
			"set region (required here), e.g. eu-west-1")
	}
	imp.sec.Region = region
}

// importClusterID sets the cluster ID, which is how AWS resources are
// found: they carry the tag kubernetes.io/cluster/<clusterID>.
// upstream: kubernetes/cloud-provider-aws pkg/providers/v1/tags.go:69-88 (init: the legacy
// tag must equal KubernetesClusterID when both are set) and :324-342 (legacy tags written too)
func (imp *importer) importClusterID() {
	g := &imp.up.Global
	legacy := strings.TrimSpace(g.KubernetesClusterTag)
	id := strings.TrimSpace(g.KubernetesClusterID)
	const legacyTags = "only kubernetes.io/cluster/<clusterID> is written and matched, so add that tag to any instance, subnet, security group or route table that carries only the legacy KubernetesCluster tag"
	switch {
	case legacy != "" && id != "" && legacy != id:
		imp.clusterID = id
		imp.note(keyClusterTag, "was the legacy cluster ID; the upstream CCM refuses to start when it differs from KubernetesClusterID",
			"clusterID is set from KubernetesClusterID; check which of the two IDs the cluster's resources are tagged with, and "+legacyTags)
	case legacy != "":
		imp.clusterID = legacy
		imp.note(keyClusterTag, "was the cluster ID, and made the upstream CCM also write and match the legacy tag KubernetesCluster=<id>",
			"clusterID is set from it; "+legacyTags)
	case id != "":
		imp.clusterID = id
	default:
		imp.note(keyClusterID, "was not set, so the cluster ID came from the kubernetes.io/cluster/<id> (or legacy KubernetesCluster) tag of the instance the upstream CCM ran on",
			"clusterID (from --cluster-name) must be that <id>, or the cluster's instances, subnets and route tables are not found; check it")
	}
}

// importNetwork fills vpcID and routeTables.ids and reports SubnetID.
func (imp *importer) importNetwork() {
	g := &imp.up.Global
	if vpc := strings.TrimSpace(g.VPC); vpc != "" {
		imp.sec.VPCID = vpc
		// upstream: kubernetes/cloud-provider-aws pkg/providers/v1/aws.go:627-645
		tagged := g.KubernetesClusterTag != "" || g.KubernetesClusterID != ""
		if !tagged || (g.SubnetID == "" && g.RoleARN == "") {
			imp.note(keyVPC, "was used only together with SubnetID or RoleARN and a cluster ID; otherwise the VPC of the instance the CCM ran on was used",
				"vpcID is set from it and always used; check it is the nodes' VPC")
		}
	}
	if strings.TrimSpace(g.SubnetID) != "" {
		// upstream: kubernetes/cloud-provider-aws pkg/providers/v1/aws.go:1673-1685
		imp.note(keySubnetID, "was the subnet of the CCM's stand-in instance when it ran outside AWS, which load balancers fell back to when no subnet of the VPC was tagged for the cluster",
			"there is no fallback subnet: load balancer subnets are discovered as upstream does (tagged for the cluster or no cluster; public ones for internet-facing load balancers); to pin them, list subnet IDs (one per zone) under subnets.public and subnets.internal")
	}
	// upstream: kubernetes/cloud-provider-aws pkg/providers/v1/aws_routes.go:31-66
	// uses RouteTableID, else the route table tagged with the cluster tag
	// (and fails when there are several); routeTables.discover is that
	// (and programs each of several).
	if rtb := strings.TrimSpace(g.RouteTableID); rtb != "" {
		imp.sec.RouteTables.IDs = []string{rtb}
	} else {
		imp.sec.RouteTables.Discover = true
	}
}

// importCredentials fills assumeRole.roleARN and reports SourceARN.
func (imp *importer) importCredentials() {
	g := &imp.up.Global
	imp.sec.AssumeRole.RoleARN = strings.TrimSpace(g.RoleARN)
	if strings.TrimSpace(g.SourceARN) != "" {
		// upstream: kubernetes/cloud-provider-aws pkg/services/aws_sts.go:70-102
		imp.note(keySourceARN, "was sent with the role's account as the x-amz-source-arn and x-amz-source-account headers of AssumeRole, for the role trust policy's aws:SourceArn and aws:SourceAccount conditions",
			"AssumeRole sends no such headers; drop those conditions from the role's trust policy, or use assumeRole.externalID with an sts:ExternalId condition instead")
	}
}

// importLoadBalancing reports the load balancer keys: every NLB here has
// its own security group and fixed health checks.
func (imp *importer) importLoadBalancing() {
	g := &imp.up.Global
	if g.DisableSecurityGroupIngress {
		// upstream: kubernetes/cloud-provider-aws pkg/providers/v1/aws_loadbalancer.go:978
		imp.note(keyDisableSGIngress, "stopped the CCM from adding rules for each load balancer to the nodes' security groups; a rule made by hand let load balancers reach the NodePorts",
			"the nodes' security groups always get each load balancer's rules (an NLB's clients and health checks by CIDR, as upstream without this key); the nodes' groups need room for those rules")
	}
	if strings.TrimSpace(g.ElbSecurityGroup) != "" {
		// upstream: kubernetes/cloud-provider-aws pkg/providers/v1/aws.go:2004
		imp.note(keyElbSecurityGroup, "was attached to every Classic ELB instead of a new security group per load balancer",
			"every Classic ELB gets its own security group k8s-elb-<name>, as upstream without this key; nothing to set, but mind the VPC's security group quota")
	}
	const ownHealthCheck = "target groups of externalTrafficPolicy Cluster Services check TCP on the traffic port (Local ones HTTP /healthz on healthCheckNodePort); there is no shared health check here"
	// upstream: kubernetes/cloud-provider-aws pkg/providers/v1/aws.go:2213-2235
	switch mode := strings.TrimSpace(g.ClusterServiceLoadBalancerHealthProbeMode); mode {
	case "", "ServiceNodePort":
		// The upstream default is what every target group here does.
	default:
		imp.note(keyHealthProbeMode, "Shared made load balancers of externalTrafficPolicy Cluster Services check kube-proxy's HTTP /healthz on port 10256 instead of each NodePort", ownHealthCheck)
	}
	if g.ClusterServiceSharedLoadBalancerHealthProbePort != 0 {
		imp.note(keySharedProbePort, "was the port of the Shared health check", ownHealthCheck)
	}
	if strings.TrimSpace(g.ClusterServiceSharedLoadBalancerHealthProbePath) != "" {
		imp.note(keySharedProbePath, "was the path of the Shared health check", ownHealthCheck)
	}
	// upstream: kubernetes/cloud-provider-aws pkg/providers/v1/config/config.go:228-239
	switch mode := strings.TrimSpace(g.NLBSecurityGroupMode); mode {
	case "":
		// Upstream NLBs then have no security group; with upstreamShape
		// new ones here have none either.
	case "Managed":
		imp.note(keyNLBSecurityGroupMode, "Managed gave each NLB its own security group, admitted to the NodePorts on the nodes' security groups",
			"existing NLBs keep their security groups; new ones are made as upstream makes them without this key, with no security group (their clients admitted by CIDR on the nodes' groups), which upstream started again still serves; nothing to set")
	default:
		imp.note(keyNLBSecurityGroupMode, "accepted only Managed (any other value failed load balancer creation)",
			"new NLBs get no security group, as upstream without this key; nothing to set")
	}
}

// importNodes reports the Node keys.
func (imp *importer) importNodes() {
	g := &imp.up.Global
	// upstream: kubernetes/cloud-provider-aws pkg/providers/v1/aws.go:662-665
	// (default ipv4), :868-883 (exact "ipv4" and "ipv6" in file order; any
	// other value is skipped, a repeated one lists its addresses twice).
	var fams []string
	dropped := false
	for _, f := range g.NodeIPFamilies {
		f = strings.TrimSpace(f)
		if (f == familyIPv4 || f == familyIPv6) && !slices.Contains(fams, f) {
			fams = append(fams, f)
		} else {
			dropped = true
		}
	}
	if dropped {
		imp.note(keyNodeIPFamilies, "skipped an unknown address family and listed a repeated one's addresses twice",
			"nodeIPFamilies keeps each of ipv4 and ipv6 once, in the order given")
	}
	if len(fams) > 0 && !slices.Equal(fams, []string{familyIPv4}) {
		imp.sec.NodeIPFamilies = fams
	}
	if strings.TrimSpace(g.SupportedTopologyInstanceTypePattern) != "" {
		// upstream: kubernetes/cloud-provider-aws pkg/providers/v1/topology.go:72-76
		imp.note(keyTopologyPattern, "chose the instance types for which Node initialization waited for EC2 instance topology (the topology.k8s.aws/network-node-layer-N labels)",
			"those labels are not set; nothing to set")
	}
}

// overrideTarget is what a ServiceOverride's Service names here.
type overrideTarget struct {
	// endpoint is the section field the URL goes to; nil if none.
	endpoint func(*Section) *string
	// field names it in Notes.
	field string
	// sdkID is the SDK v2 service ID the upstream release read compares
	// Service with, exactly; another spelling had no effect there.
	sdkID string
	// signingName is the service's default SigV4 signing name.
	signingName string
	// unused, for services this backend does not call, says why.
	unused string
}

// overrideTargets recognises the service names of ServiceOverride. The
// upstream release read compares Service exactly with the SDK v2 service
// ID ("EC2"); releases on SDK v1 compared it with the endpoint ID ("ec2",
// "elasticloadbalancing" for both ELB APIs), so both spellings are found
// in files.
// upstream: kubernetes/cloud-provider-aws pkg/providers/v1/config/config.go:201-212 (GetEC2EndpointOpts), 247-264 (EC2Resolver)
func overrideTargets(service string) overrideTarget {
	switch strings.ToLower(service) {
	case strings.ToLower(ec2.ServiceID):
		return overrideTarget{endpoint: func(s *Section) *string { return &s.Endpoints.EC2 }, field: "endpoints.ec2", sdkID: ec2.ServiceID, signingName: "ec2"}
	case strings.ToLower(elbv2.ServiceID), "elasticloadbalancing":
		return overrideTarget{endpoint: func(s *Section) *string { return &s.Endpoints.ELBv2 }, field: "endpoints.elbv2", sdkID: elbv2.ServiceID, signingName: "elasticloadbalancing"}
	case strings.ToLower(sts.ServiceID):
		return overrideTarget{endpoint: func(s *Section) *string { return &s.Endpoints.STS }, field: "endpoints.sts", sdkID: sts.ServiceID, signingName: "sts"}
	case strings.ToLower(elb.ServiceID):
		return overrideTarget{endpoint: func(s *Section) *string { return &s.Endpoints.ELB }, field: "endpoints.elb", sdkID: elb.ServiceID, signingName: "elasticloadbalancing"}
	case "kms":
		return overrideTarget{unused: "overrode the KMS endpoint of a client the CCM built but did not call; this controller calls no KMS API"}
	case "ec2imds", "ec2metadata":
		return overrideTarget{unused: "overrode the instance metadata endpoint the CCM read its region and own instance from; here the region is in the config and no metadata is read"}
	}
	return overrideTarget{unused: "named a service no client of the upstream CCM uses, so it had no effect"}
}

// importOverrides maps [ServiceOverride "N"] URLs onto endpoints.
// Upstream an override applied only to clients of the region it names.
// upstream: kubernetes/cloud-provider-aws pkg/providers/v1/config/config.go:161-197 (ValidateOverrides), 247-264 (EC2Resolver)
func (imp *importer) importOverrides() {
	names := make([]string, 0, len(imp.up.ServiceOverride))
	for name, o := range imp.up.ServiceOverride {
		if o != nil {
			names = append(names, name)
		}
	}
	// Overrides the upstream release read honoured (Service spelled as the
	// SDK's service ID) go first, so they win over legacy spellings of the
	// same service; otherwise they go by subsection name.
	honoured := func(name string) bool {
		o := imp.up.ServiceOverride[name]
		return strings.TrimSpace(o.Service) == overrideTargets(strings.TrimSpace(o.Service)).sdkID
	}
	slices.SortFunc(names, func(a, b string) int {
		switch ha, hb := honoured(a), honoured(b); {
		case ha && !hb:
			return -1
		case hb && !ha:
			return 1
		}
		return strings.Compare(a, b)
	})
	for _, name := range names {
		imp.importOverride(fmt.Sprintf("[ServiceOverride %q]", name), imp.up.ServiceOverride[name])
	}
}

func (imp *importer) importOverride(key string, o *upstreamServiceOverride) {
	service := strings.TrimSpace(o.Service)
	region := strings.TrimSpace(o.Region)
	t := overrideTargets(service)
	if t.endpoint == nil {
		imp.note(key, t.unused, "nothing to set")
		return
	}
	if imp.sec.Region != "" && region != imp.sec.Region {
		imp.note(key, "applied only to clients of the region it names, which is not the cluster's region, so it had no effect", "ignored")
		return
	}
	field := t.endpoint(imp.sec)
	if *field != "" {
		imp.note(key, "overrode the same service's endpoint as another override", "ignored: "+t.field+" is already set from the other one")
		return
	}
	*field = strings.TrimSpace(o.URL)
	if service != t.sdkID && t.sdkID != sts.ServiceID {
		imp.note(key+" Service", "is compared exactly with the SDK service ID ("+t.sdkID+") by the upstream release read, so this spelling had no effect there (older releases honoured it)",
			t.field+" is set from the override's URL; remove it if the override was not meant to apply")
	}
	if t.sdkID == sts.ServiceID {
		imp.note(key, "had no effect: the upstream CCM applies no endpoint override to its STS client",
			"endpoints.sts is set from the override's URL, and assumeRole uses it; remove it if that endpoint was not meant to be used")
	}
	if imp.sec.Region == "" {
		imp.note(key+" Region", "limited the override to clients of the region it names",
			"the file sets no region: set region to the one this override names, or remove "+t.field)
	}
	if sr := strings.TrimSpace(o.SigningRegion); sr != "" && sr != region {
		imp.note(key+" SigningRegion", "signed requests to this endpoint for another region than the override's",
			"requests are signed for the cluster's region (region); there is no separate signing region")
	}
	if sn := strings.TrimSpace(o.SigningName); sn != "" && !strings.EqualFold(sn, t.signingName) {
		imp.note(key+" SigningName", "changed the SigV4 signing name of requests to this endpoint",
			"requests are signed with the service's own signing name; there is no override")
	}
	if strings.TrimSpace(o.SigningMethod) != "" {
		imp.note(key+" SigningMethod", "was parsed but never used (the SDK signs with SigV4)", "nothing to set")
	}
}

// reportUnknown makes a Note of each key that is not an upstream key:
// the upstream CCM ignores them too (a typo there went unnoticed).
func (imp *importer) reportUnknown(unknown []importcfg.UnknownKey) {
	for _, k := range unknown {
		key := k.String()
		if k.Subsection == "" && k.Variable == "" && strings.EqualFold(k.Section, "Global") {
			// A subsection of [Global], which has none: gcfg leaves
			// the subsection's name out of the warning.
			key = `[` + k.Section + ` "…"]`
		}
		imp.note(key, "is not a key of the upstream AWS CCM's cloud.conf, so it was ignored", "ignored too; check its spelling")
	}
}
