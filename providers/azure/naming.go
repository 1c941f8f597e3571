package azure

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
)

// Names of a Service's parts, as the upstream Azure CCM
// (kubernetes-sigs/cloud-provider-azure v1.36.5, the same at 7b31c76c)
// names them, so a cluster switched from it finds and keeps them:
//   - the base is cloudprovider.DefaultLoadBalancerName: "a" and the UID
//     without dashes, cut to 32 characters (provider/azure_loadbalancer.go:520-522
//     GetLoadBalancerName, azure_standard.go:316-318 getRulePrefix);
//   - the frontend is the base, or for an internal Service with the
//     internal-subnet annotation "<base>-<subnet>", cut to 75 characters
//     with a last character that is no letter or "_" made "_"
//     (azure_loadbalancer.go:4957-4976 getDefaultFrontendIPConfigName);
//   - rules, and their probes, are "<base>-<PROTOCOL>-<port>", with the
//     subnet "<base>-<subnet>-<PROTOCOL>-<port>", the subnet cut so the
//     name stays within 75 characters (azure_standard.go:286-303
//     getLoadBalancerRuleName; probes take their rule's name,
//     azure_loadbalancer_healthprobe.go:198-201);
//   - the public IP is "<cluster>-<base>", its first 75 characters
//     (azure_standard.go:320-338 getPublicIPName).
//
// These MUST NOT change: they are how every existing part is found.
//
// Versions of this manager before 2026-11-25 used the whole UID (33
// characters) and no subnet part; a Service whose frontend still has
// that name keeps it and its parts (legacyNames), so nothing it has is
// orphaned or readdressed.
const (
	// azureNameMax is ARM's 80-character limit less upstream's reserve
	// for "-IPv6" (consts.go:383-390).
	azureNameMax = 80 - 5
)

// lbNames are one Service's part names.
type lbNames struct {
	// base prefixes every rule, probe and security rule of the Service.
	base string
	// frontend names its frontend IP configuration.
	frontend string
	// subnet, when set, is the part rule names carry after base.
	subnet string
	// pip names the public IP the manager makes for it.
	pip string
	// legacy says these are this manager's names from before upstream's.
	legacy bool
	// suffix is "-IPv6" on the IPv6 half of a dual-stack Service
	// (forFamily), after every name but the base.
	suffix string
}

// ipv6Suffix marks the IPv6 parts of a dual-stack Service, as upstream's
// getResourceByIPFamily (cloud-provider-azure pkg/provider/azure_utils.go:435-440,
// consts.IPVersionIPv6String).
const ipv6Suffix = "-IPv6"

// forFamily are the names of the Service's parts of one IP family: a
// dual-stack Service's IPv6 frontend, public IP, rules and probes carry
// "-IPv6" (upstream's getFrontendIPConfigNames, getPublicIPName and
// getLoadBalancerRuleName, azure_loadbalancer.go:4948-4955,
// azure_standard.go:286-338); a single-stack Service's names are the
// same for either family.
func (n lbNames) forFamily(v6, dualStack bool) lbNames {
	if !v6 || !dualStack {
		return n
	}
	n.frontend += ipv6Suffix
	n.pip += ipv6Suffix
	n.suffix = ipv6Suffix
	return n
}

// ownsRule says a rule or probe is of these names' family: the base's,
// and with "-IPv6" exactly when the names have it, so the two halves of a
// dual-stack Service tell their rules apart.
func (n lbNames) ownsRule(part string) bool {
	return ownedBy(part, n.base) && hasSuffixFold(part, ipv6Suffix) == (n.suffix != "")
}

func hasSuffixFold(s, suffix string) bool {
	return len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix)
}

// rule is the name of the rule, and probe, of a Service port.
func (n lbNames) rule(p v1.ServicePort) string {
	name := fmt.Sprintf("%s-%s-%d", n.base, p.Protocol, p.Port)
	if n.subnet == "" {
		return name + n.suffix
	}
	seg := n.subnet
	if len(name)+len(seg)+1 > azureNameMax {
		seg = seg[:max(0, azureNameMax-len(name)-1)]
	}
	return fmt.Sprintf("%s-%s-%s-%d", n.base, seg, p.Protocol, p.Port) + n.suffix
}

// internalSubnet is upstream's getInternalSubnet (azure_loadbalancer.go:4094-4102):
// the annotation's subnet for an internal Service, else none.
func internalSubnet(svc *v1.Service) string {
	if !annotationTrue(annotationInternal, svc) {
		return ""
	}
	v, _ := annotationInternalSubnet.Lookup(svc)
	return strings.TrimSpace(v)
}

// upstreamNames are the Service's names as upstream gives them.
func upstreamNames(clusterID string, svc *v1.Service) lbNames {
	base := cloudprovider.DefaultLoadBalancerName(svc)
	n := lbNames{base: base, frontend: base, subnet: internalSubnet(svc)}
	if n.subnet != "" {
		fe := base + "-" + n.subnet
		if len(fe) > azureNameMax {
			fe = fe[:azureNameMax]
			if last := rune(fe[len(fe)-1]); !unicode.IsLetter(last) && last != '_' {
				fe = fe[:len(fe)-1] + "_"
			}
		}
		n.frontend = fe
	}
	n.pip = clusterID + "-" + base
	if len(n.pip) > azureNameMax {
		n.pip = n.pip[:azureNameMax]
	}
	return n
}

// legacyNames are the names this manager gave a Service before it used
// upstream's: "a" and the whole dashless UID for the frontend, rules and
// probes, and the last 80 characters of "<cluster>-<that>" for the
// public IP.
func legacyNames(clusterID string, svc *v1.Service) lbNames {
	base := "a" + strings.ReplaceAll(string(svc.UID), "-", "")
	pip := clusterID + "-" + base
	if len(pip) > 80 {
		pip = strings.TrimLeft(pip[len(pip)-80:], "-._")
	}
	return lbNames{base: base, frontend: base, pip: pip, legacy: true}
}

// namesFor are the names the Service's parts have: the legacy ones when
// its frontend still has its legacy name on either load balancer, else
// upstream's.
func (l *loadBalancers) namesFor(ctx context.Context, svc *v1.Service) (lbNames, error) {
	legacy := legacyNames(l.clusterID, svc)
	for _, w := range []*shared[armnetwork.LoadBalancer]{l.public, l.internal} {
		lb, found, err := w.current(ctx, false)
		if err != nil {
			return lbNames{}, err
		}
		if found && findFrontend(lb, legacy.frontend) != nil {
			return legacy, nil
		}
	}
	return upstreamNames(l.clusterID, svc), nil
}
