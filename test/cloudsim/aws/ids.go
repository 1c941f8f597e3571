package aws

import (
	"fmt"
	"regexp"
	"strings"
)

// nextSeq returns the next creation sequence number. Sequence numbers
// order listings (so pagination is stable) and make IDs deterministic:
// the same setup always yields the same IDs, which keeps test failures
// reproducible. Callers hold e.mu.
func (e *Emulator) nextSeq() uint64 {
	e.seq++
	return e.seq
}

// newID returns a well-formed EC2 ID: prefix, dash, 17 hex digits.
func (e *Emulator) newID(prefix string) (string, uint64) {
	seq := e.nextSeq()
	return fmt.Sprintf("%s-%017x", prefix, seq), seq
}

var (
	instanceIDPattern = regexp.MustCompile(`^i-([0-9a-f]{8}|[0-9a-f]{17})$`)
	groupIDPattern    = regexp.MustCompile(`^sg-([0-9a-f]{8}|[0-9a-f]{17})$`)
)

// regionCode shortens a region the way AZ IDs do: eu-west-1 -> euw1,
// ap-southeast-2 -> apse2.
func regionCode(region string) string {
	parts := strings.Split(region, "-")
	if len(parts) != 3 {
		return strings.ReplaceAll(region, "-", "")
	}
	dir := parts[1]
	for _, word := range []string{"north", "south", "east", "west", "central"} {
		dir = strings.ReplaceAll(dir, word, word[:1])
	}
	return parts[0] + dir + parts[2]
}

// privateDNSDomain is where EC2 puts private host names; us-east-1 kept
// its historical ec2.internal.
func privateDNSDomain(region string) string {
	if region == "us-east-1" {
		return "ec2.internal"
	}
	return region + ".compute.internal"
}

func publicDNSName(region, ip string) string {
	host := "ec2-" + strings.ReplaceAll(ip, ".", "-")
	if region == "us-east-1" {
		return host + ".compute-1.amazonaws.com"
	}
	return host + "." + region + ".compute.amazonaws.com"
}

func privateDNSName(region, ip string) string {
	if ip == "" {
		return ""
	}
	return "ip-" + strings.ReplaceAll(ip, ".", "-") + "." + privateDNSDomain(region)
}

// elbv2 ARN resource kinds.
const (
	arnLoadBalancer = "loadbalancer"
	arnTargetGroup  = "targetgroup"
	arnListener     = "listener"
)

func (e *Emulator) arn(resource string) string {
	return fmt.Sprintf("arn:aws:elasticloadbalancing:%s:%s:%s", e.cfg.Region, e.cfg.AccountID, resource)
}

// elbARNPattern matches any elasticloadbalancing ARN and captures its kind.
var elbARNPattern = regexp.MustCompile(`^arn:aws[a-z-]*:elasticloadbalancing:[a-z0-9-]+:[0-9]{12}:(loadbalancer|targetgroup|listener)/.+$`)

// arnKind returns the ARN's resource kind, or "" when it is not an ELBv2 ARN.
func arnKind(arn string) string {
	m := elbARNPattern.FindStringSubmatch(arn)
	if m == nil {
		return ""
	}
	return m[1]
}

// lbTypeSegment is the ARN/DNS segment of a load balancer type.
func lbTypeSegment(lbType string) string {
	if lbType == lbTypeApplication {
		return "app"
	}
	return "net"
}

// canonicalHostedZoneID is the Route 53 zone of load balancer DNS names.
// The real values for the common regions, a stable fake elsewhere.
func canonicalHostedZoneID(region, lbType string) string {
	known := map[string][2]string{ // region -> {network, application}
		"us-east-1":    {"Z26RNL4JYFTOTI", "Z35SXDOTRQ7X7K"},
		"us-west-2":    {"Z18D5FSROUN65G", "Z1H1FL5HABSF5"},
		"eu-west-1":    {"Z2IFOLAFXWLO4F", "Z32O12XQLNTSW2"},
		"eu-central-1": {"Z3F0SRJ5LGBH90", "Z215JYRZR1TBD5"},
	}
	ids, ok := known[region]
	if !ok {
		return "ZCLOUDSIM" + strings.ToUpper(regionCode(region))
	}
	if lbType == lbTypeApplication {
		return ids[1]
	}
	return ids[0]
}
