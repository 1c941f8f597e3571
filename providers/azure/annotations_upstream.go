package azure

import (
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/svcopts"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/upstreamann"
)

// upstreamRepo and the Refs below are kubernetes-sigs/cloud-provider-azure
// at 7b31c76ce2ff602cc2dfec988744d8d0534b448c (Aug 2026), where
// pkg/consts/consts.go:207-348 and :470-545 declare every Service
// annotation the upstream CCM reads; the per-port families are built by
// pkg/consts/helpers.go:87-95 ("service.beta.kubernetes.io/port_%d_%s").
const upstreamRepo = "kubernetes-sigs/cloud-provider-azure "

// Texts several rows share.
const (
	probeSame   = "The same here, with upstream's precedence (the port's annotation, then appProtocol for the protocol, then the Service's) and defaults (TCP on the NodePort, or HTTP /healthz on healthCheckNodePort shared by every rule for externalTrafficPolicy: Local; every 5 s; 2 failures)."
	onlyWithPLS = "it only configures the Private Link Service that azure-pls-create asks for, which is refused here; remove it"
	oneLB       = "every Service here is a frontend of the cluster's one Standard load balancer (loadBalancerName, default the clusterID, or <name>-internal)"
)

// upstreamAnnotations lists every Service annotation the upstream Azure
// CCM reads, and what this backend does with each. Supported rows are the
// ones loadbalancer_options.go reads with upstream's meaning.
//
// The rule for the rest: an annotation is Refused when ignoring it would
// change what the Service asks for in a way that matters (the address
// clients use, the IP family, who may reach the load balancer, which ports
// it exposes, a Private Link Service clients connect through); otherwise
// it is Ignored with a Warning Event (health probe tuning, tags, TCP
// reset, which of several load balancers, caching).
func upstreamAnnotations() *upstreamann.Table {
	return &upstreamann.Table{
		Upstream: "the upstream Azure CCM",
		// No Azure Service is left to another controller here.
		Elsewhere: nil,
		Annotations: []upstreamann.Annotation{
			// Supported: read by loadbalancer_options.go.
			{
				Key:      annotationInternal.String(),
				Support:  upstreamann.Supported,
				Upstream: `puts the Service on the internal load balancer "<name>-internal" with a private address when "true"`,
				Note:     `upstream treats any value but "true" as false; here a value strconv.ParseBool cannot read is an error on the Service`,
				Ref:      upstreamRepo + "pkg/consts/consts.go:253",
			},
			{
				Key:      annotationInternalSubnet.String(),
				Support:  upstreamann.Supported,
				Upstream: "names the subnet an internal Service's private address is taken from, instead of subnetName",
				Ref:      upstreamRepo + "pkg/consts/consts.go:257",
			},
			{
				Key:      annotationPIPName.String(),
				Support:  upstreamann.Supported,
				Upstream: "names the existing public IP the Service uses as its IPv4 address",
				Note:     "The same here: looked up in resourceGroup, or azure-load-balancer-resource-group's group, as upstream.",
				Ref:      upstreamRepo + "pkg/consts/consts.go:217",
			},
			{
				Key:      annotationDNSLabel.String(),
				Support:  upstreamann.Supported,
				Upstream: "sets the DNS label of the Service's public IP (<label>.<location>.cloudapp.azure.com)",
				Ref:      upstreamRepo + "pkg/consts/consts.go:276",
			},
			{
				Key:      annotationAllowedIPRanges.String(),
				Support:  upstreamann.Supported,
				Upstream: "lists the client CIDRs the network security group admits to the Service",
				Note:     "The same here: each family's CIDRs go to that family's rules.",
				Ref:      upstreamRepo + "pkg/consts/consts.go:293",
			},
			{
				Key:      annotationAllowedServiceTags.String(),
				Support:  upstreamann.Supported,
				Upstream: "lists the Azure service tags the network security group admits to the Service",
				Ref:      upstreamRepo + "pkg/consts/consts.go:288",
			},
			{
				Key:      annotationIdleTimeout.String(),
				Support:  upstreamann.Supported,
				Upstream: "sets the TCP idle timeout of the Service's load-balancing rules, 4 to 100 minutes",
				Ref:      upstreamRepo + "pkg/consts/consts.go:301",
			},
			{
				Key:      v1.AnnotationLoadBalancerSourceRangesKey,
				Support:  upstreamann.Supported,
				Upstream: "lists the client CIDRs admitted, like spec.loadBalancerSourceRanges (Kubernetes' own annotation, read with azure-allowed-ip-ranges)",
				Ref:      upstreamRepo + "pkg/provider/loadbalancer/configuration.go:68",
			},

			// The address, and the IP family.
			{
				Key:      annotationIPv4.String(),
				Support:  upstreamann.Supported,
				Upstream: "pins the Service's IPv4 address (an existing public IP's, or the private address of an internal Service), replacing spec.loadBalancerIP",
				Note:     "The same here, ahead of spec.loadBalancerIP.",
				Ref:      upstreamRepo + "pkg/consts/consts.go:212",
			},
			{
				Key:      annotationIPv6.String(),
				Support:  upstreamann.Supported,
				Upstream: "pins the Service's IPv6 address (an existing public IP's, or the private address of an internal Service)",
				Note:     "The same here, for IPv6 and dual-stack Services, ahead of an IPv6 spec.loadBalancerIP.",
				Ref:      upstreamRepo + "pkg/consts/consts.go:213",
			},
			{
				Key:      annotationPIPNameIPv6.String(),
				Support:  upstreamann.Supported,
				Upstream: "names the existing public IP the Service uses as its IPv6 address",
				Note:     "The same here: a dual-stack Service's IPv6 public IP, or an IPv6 Service's ahead of azure-pip-name.",
				Ref:      upstreamRepo + "pkg/consts/consts.go:218",
			},
			{
				Key:      "service.beta.kubernetes.io/azure-pip-prefix-id",
				Support:  upstreamann.Refused,
				Upstream: "takes the Service's IPv4 public IP from that public IP prefix",
				Note:     "the address here would not come from the prefix that clients' allow-lists expect; make a public IP from the prefix and name it with azure-pip-name instead",
				Ref:      upstreamRepo + "pkg/consts/consts.go:222",
			},
			{
				Key:      "service.beta.kubernetes.io/azure-pip-prefix-id-ipv6",
				Support:  upstreamann.Refused,
				Upstream: "takes the Service's IPv6 public IP from that public IP prefix",
				Note:     "the address here would not come from the prefix that clients' allow-lists expect; make a public IP from the prefix and name it with azure-pip-name-ipv6 instead",
				Ref:      upstreamRepo + "pkg/consts/consts.go:223",
			},
			{
				Key:      annotationPIPResourceGroup.String(),
				Support:  upstreamann.Supported,
				Upstream: "is the resource group the Service's public IP is made or looked up in, instead of resourceGroup",
				Note:     "The same here, for the public IP the manager makes and for azure-pip-name and spec.loadBalancerIP.",
				Ref:      upstreamRepo + "pkg/consts/consts.go:280",
			},
			{
				Key:      "service.beta.kubernetes.io/azure-additional-public-ips",
				Support:  upstreamann.Refused,
				Upstream: "adds more public IPs (of a cross-region load balancer) to the Service's status, so kube-proxy accepts traffic sent to them",
				Note:     "those addresses would not be in the Service's status, so traffic sent to them would be dropped by kube-proxy; keep the Service on the upstream CCM",
				Ref:      upstreamRepo + "pkg/consts/consts.go:341",
			},

			// Who may reach the load balancer, and on which ports.
			{
				Key:      annotationDenyAllExceptSourceRanges.String(),
				Support:  upstreamann.Supported,
				Upstream: `with "true", adds a security rule denying every source but the Service's source ranges, also from inside the virtual network`,
				Note:     "The same here: the shared k8s-azure-lb_deny-all_IPv4 rule, at upstream's priority.",
				Ref:      upstreamRepo + "pkg/consts/consts.go:297",
			},
			{
				Key:      annotationDisableNSGRule.String(),
				Support:  upstreamann.Supported,
				Upstream: `with "true", leaves the Service's network security group rules to the operator`,
				Note:     "The same here: no rule is added for the Service, and its addresses still leave the rules they were in.",
				Ref:      upstreamRepo + "pkg/consts/consts.go:336",
			},
			{
				Key:      "service.beta.kubernetes.io/port_" + upstreamann.PortPlaceholder + "_no_lb_rule",
				Support:  upstreamann.Supported,
				Upstream: `with "true", makes no load-balancing rule for that Service port (a port kept for health probes)`,
				Note:     "The same here.",
				Ref:      upstreamRepo + "pkg/consts/consts.go:473",
			},

			// A Private Link Service clients connect through.
			{
				Key:      "service.beta.kubernetes.io/azure-pls-create",
				Support:  upstreamann.Refused,
				ByValue:  refusedIfTrue,
				Upstream: `with "true", makes a Private Link Service in front of the internal Service, which clients in other virtual networks connect through`,
				Note:     "no Private Link Service is made here, so those clients could not connect; keep the Service on the upstream CCM",
				Ref:      upstreamRepo + "pkg/consts/consts.go:514",
			},
			{Key: "service.beta.kubernetes.io/azure-pls-resource-group", Support: upstreamann.Ignored, Upstream: "is the resource group of the Private Link Service", Note: onlyWithPLS, Ref: upstreamRepo + "pkg/consts/consts.go:517"},
			{Key: "service.beta.kubernetes.io/azure-pls-name", Support: upstreamann.Ignored, Upstream: "names the Private Link Service", Note: onlyWithPLS, Ref: upstreamRepo + "pkg/consts/consts.go:520"},
			{Key: "service.beta.kubernetes.io/azure-pls-ip-configuration-subnet", Support: upstreamann.Ignored, Upstream: "is the subnet of the Private Link Service's IP configurations", Note: onlyWithPLS, Ref: upstreamRepo + "pkg/consts/consts.go:523"},
			{Key: "service.beta.kubernetes.io/azure-pls-ip-configuration-ip-address-count", Support: upstreamann.Ignored, Upstream: "is the number of the Private Link Service's IP addresses", Note: onlyWithPLS, Ref: upstreamRepo + "pkg/consts/consts.go:526"},
			{Key: "service.beta.kubernetes.io/azure-pls-ip-configuration-ip-address", Support: upstreamann.Ignored, Upstream: "lists static IP addresses of the Private Link Service", Note: onlyWithPLS, Ref: upstreamRepo + "pkg/consts/consts.go:531"},
			{Key: "service.beta.kubernetes.io/azure-pls-fqdns", Support: upstreamann.Ignored, Upstream: "lists FQDNs of the Private Link Service", Note: onlyWithPLS, Ref: upstreamRepo + "pkg/consts/consts.go:534"},
			{Key: "service.beta.kubernetes.io/azure-pls-proxy-protocol", Support: upstreamann.Ignored, Upstream: "turns on the PROXY protocol on the Private Link Service", Note: onlyWithPLS, Ref: upstreamRepo + "pkg/consts/consts.go:537"},
			{Key: "service.beta.kubernetes.io/azure-pls-visibility", Support: upstreamann.Ignored, Upstream: "lists the subscriptions the Private Link Service is visible to", Note: onlyWithPLS, Ref: upstreamRepo + "pkg/consts/consts.go:541"},
			{Key: "service.beta.kubernetes.io/azure-pls-auto-approval", Support: upstreamann.Ignored, Upstream: "lists the subscriptions whose connections to the Private Link Service are approved automatically", Note: onlyWithPLS, Ref: upstreamRepo + "pkg/consts/consts.go:545"},

			// Health probes, built as upstream builds them
			// (loadbalancer_probes.go).
			{
				Key:      "service.beta.kubernetes.io/azure-load-balancer-health-probe-protocol",
				Support:  upstreamann.Supported,
				Upstream: "sets the health probe protocol of every port (Tcp, Http or Https)",
				Note:     probeSame,
				Ref:      upstreamRepo + "pkg/consts/consts.go:309",
			},
			{
				Key:      "service.beta.kubernetes.io/azure-load-balancer-health-probe-interval",
				Support:  upstreamann.Supported,
				Upstream: "sets the health probe interval in seconds (default 5)",
				Note:     probeSame,
				Ref:      upstreamRepo + "pkg/consts/consts.go:313",
			},
			{
				Key:      "service.beta.kubernetes.io/azure-load-balancer-health-probe-num-of-probe",
				Support:  upstreamann.Supported,
				Upstream: "sets how many failed probes mark a Node down (default 2)",
				Note:     probeSame,
				Ref:      upstreamRepo + "pkg/consts/consts.go:317",
			},
			{
				Key:      "service.beta.kubernetes.io/azure-load-balancer-health-probe-request-path",
				Support:  upstreamann.Supported,
				Upstream: "sets the path of HTTP and HTTPS health probes (default /)",
				Note:     probeSame,
				Ref:      upstreamRepo + "pkg/consts/consts.go:322",
			},
			{
				Key:      "service.beta.kubernetes.io/port_" + upstreamann.PortPlaceholder + "_health-probe_protocol",
				Support:  upstreamann.Supported,
				Upstream: "sets the health probe protocol of that Service port",
				Note:     probeSame,
				Ref:      upstreamRepo + "pkg/consts/consts.go:486",
			},
			{
				Key:      "service.beta.kubernetes.io/port_" + upstreamann.PortPlaceholder + "_health-probe_port",
				Support:  upstreamann.Supported,
				Upstream: "probes another port (a Service port's NodePort, or a port number) for that Service port",
				Note:     probeSame,
				Ref:      upstreamRepo + "pkg/consts/consts.go:490",
			},
			{
				Key:      "service.beta.kubernetes.io/port_" + upstreamann.PortPlaceholder + "_health-probe_interval",
				Support:  upstreamann.Supported,
				Upstream: "sets the health probe interval of that Service port in seconds",
				Note:     probeSame,
				Ref:      upstreamRepo + "pkg/consts/consts.go:494",
			},
			{
				Key:      "service.beta.kubernetes.io/port_" + upstreamann.PortPlaceholder + "_health-probe_num-of-probe",
				Support:  upstreamann.Supported,
				Upstream: "sets how many failed probes of that Service port mark a Node down",
				Note:     probeSame,
				Ref:      upstreamRepo + "pkg/consts/consts.go:499",
			},
			{
				Key:      "service.beta.kubernetes.io/port_" + upstreamann.PortPlaceholder + "_health-probe_request-path",
				Support:  upstreamann.Supported,
				Upstream: "sets the HTTP health probe path of that Service port",
				Note:     probeSame,
				Ref:      upstreamRepo + "pkg/consts/consts.go:505",
			},
			{
				Key:      "service.beta.kubernetes.io/port_" + upstreamann.PortPlaceholder + "_no_probe_rule",
				Support:  upstreamann.Supported,
				Upstream: `with "true", makes no health probe for that Service port`,
				Note:     probeSame,
				Ref:      upstreamRepo + "pkg/consts/consts.go:475",
			},

			// How the load balancer forwards, and what it is tagged with.
			{
				Key:      string(annotationDisableFloatingIP),
				Support:  upstreamann.Supported,
				Upstream: `with "true", turns floating IP off so the rules send traffic to the Nodes' NodePorts (floating IP is on by default)`,
				Note:     `The same here: floating IP is on unless the annotation is "true"; a change moves the security rules to the new ports before the load balancer does, and removes the old ones after.`,
				Ref:      upstreamRepo + "pkg/consts/consts.go:331",
			},
			{
				Key:      annotationDisableTCPReset.String(),
				Support:  upstreamann.Supported,
				Upstream: `with "true", turns off TCP reset on idle timeout for the Service's rules`,
				Note:     "The same here.",
				Ref:      upstreamRepo + "pkg/consts/consts.go:348",
			},
			{
				Key:      annotationHAPorts.String(),
				Support:  upstreamann.Supported,
				Upstream: `with "true", makes one HA-ports rule (every port and protocol) on the internal load balancer instead of a rule per Service port`,
				Note:     "The same here: for an internal Service, named after its first port's rule; a public Service's does nothing, as upstream's.",
				Ref:      upstreamRepo + "pkg/consts/consts.go:305",
			},
			{
				Key:      "service.beta.kubernetes.io/azure-load-balancer-mode",
				Support:  upstreamann.Ignored,
				Upstream: "picks which availability set's (or scale set's) Basic load balancer, or which of several Standard ones, gets the Service",
				Note:     oneLB + "; remove the annotation",
				Ref:      upstreamRepo + "pkg/consts/consts.go:268",
			},
			{
				Key:      "service.beta.kubernetes.io/azure-load-balancer-configurations",
				Support:  upstreamann.Ignored,
				Upstream: "lists which of multipleStandardLoadBalancerConfigurations may take the Service",
				Note:     oneLB + "; remove the annotation",
				Ref:      upstreamRepo + "pkg/consts/consts.go:345",
			},
			{
				Key:      annotationPIPTags.String(),
				Support:  upstreamann.Supported,
				Upstream: "adds tags (a=b,c=d) to the Service's public IP",
				Note:     "The same here, on the public IP the manager makes (the manager's own tag keys are refused); tags dropped from the annotation stay, as upstream.",
				Ref:      upstreamRepo + "pkg/consts/consts.go:327",
			},
			{
				Key:      "service.beta.kubernetes.io/azure-pip-ip-tags",
				Support:  upstreamann.Ignored,
				Upstream: "sets IP tags (such as RoutingPreference=Internet) on the public IP it makes",
				Note:     "the public IP here is made without IP tags, so it uses Microsoft network routing; name a public IP made with those tags in azure-pip-name instead",
				Ref:      upstreamRepo + "pkg/consts/consts.go:283",
			},
			{
				// Read by releases before May 2026 (removed by upstream
				// commit 1fb8674b9); still in the docs, so Services carry it.
				Key:      "service.beta.kubernetes.io/azure-shared-securityrule",
				Support:  upstreamann.Ignored,
				Upstream: "shared one network security group rule among Services with the same port and source (documented; current releases no longer read it)",
				Note:     "each Service here gets its own rules per port and source; remove the annotation",
				Ref:      "kubernetes-sigs/cloud-provider-azure@05aea598c site/content/en/topics/loadbalancer.md:25",
			},
		},
	}
}

// isTrue is upstream's reading of a boolean annotation: "true" in any case
// (upstream: pkg/consts/helpers.go:144-149, pkg/provider/azure_utils.go:219-224).
func isTrue(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "true") }

// annotationTrue is how upstream reads its boolean annotations: "true" in
// any case is true, anything else (or nothing) false.
func annotationTrue(a svcopts.Annotation, svc *v1.Service) bool {
	v, _ := a.Lookup(svc)
	return isTrue(v)
}

func refusedIfTrue(v string) upstreamann.Support {
	if isTrue(v) {
		return upstreamann.Refused
	}
	return upstreamann.Supported
}

func ignoredIfTrue(v string) upstreamann.Support {
	if isTrue(v) {
		return upstreamann.Ignored
	}
	return upstreamann.Supported
}

func supportedIfTrue(v string) upstreamann.Support {
	if isTrue(v) {
		return upstreamann.Supported
	}
	return upstreamann.Ignored
}

// supportedIf is Supported for values that ask for what this backend does
// anyway, Ignored for the rest.
func supportedIf(same func(string) bool) func(string) upstreamann.Support {
	return func(v string) upstreamann.Support {
		if same(v) {
			return upstreamann.Supported
		}
		return upstreamann.Ignored
	}
}

// isTCP matches upstream's TCP probe protocol, compared case-insensitively
// (upstream: pkg/provider/azure_loadbalancer_healthprobe.go:157-160).
func isTCP(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "tcp") }

func isInt(want int) func(string) bool {
	return func(v string) bool {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		return err == nil && n == want
	}
}
