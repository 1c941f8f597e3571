package aws

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
)

// The certificates both ELB APIs accept for TLS listeners. Tests register
// them through the admin API, standing in for ACM and IAM: a controller
// never creates certificates, it is handed their ARNs.

var (
	acmCertificatePattern = regexp.MustCompile(`^arn:aws[a-z-]*:acm:([a-z0-9-]+):([0-9]{12}):certificate/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	iamCertificatePattern = regexp.MustCompile(`^arn:aws[a-z-]*:iam::([0-9]{12}):server-certificate/[\w+=,.@/-]+$`)
)

// AddCertificate registers an ACM certificate ARN
// (arn:aws:acm:<region>:<account>:certificate/<uuid>) or an IAM server
// certificate ARN (arn:aws:iam::<account>:server-certificate/<name>).
// Only one of the emulator's account, and for ACM of its region, is
// usable by a load balancer, as on AWS; others can be registered so that
// tests can show they are refused.
func (e *Emulator) AddCertificate(arn string) error {
	if !acmCertificatePattern.MatchString(arn) && !iamCertificatePattern.MatchString(arn) {
		return fmt.Errorf("certificate ARN %q is neither arn:aws:acm:<region>:<account>:certificate/<uuid> nor arn:aws:iam::<account>:server-certificate/<name>", arn)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.certificates[arn] = true
	return nil
}

// RemoveCertificate forgets a certificate, as deleting it from ACM or IAM
// does. Listeners keep using it; new uses are refused.
func (e *Emulator) RemoveCertificate(arn string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.certificates[arn] {
		return fmt.Errorf("certificate %q is not registered", arn)
	}
	delete(e.certificates, arn)
	return nil
}

// Certificates lists the registered certificate ARNs, sorted.
func (e *Emulator) Certificates() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]string, 0, len(e.certificates))
	for arn := range e.certificates {
		out = append(out, arn)
	}
	sort.Strings(out)
	return out
}

// certificateUsable reports whether a load balancer may use arn: it is
// registered, in this account, and for ACM in this region (ACM
// certificates are regional). Callers hold e.mu.
func (e *Emulator) certificateUsable(arn string) bool {
	if !e.certificates[arn] {
		return false
	}
	if m := acmCertificatePattern.FindStringSubmatch(arn); m != nil {
		return m[1] == e.cfg.Region && m[2] == e.cfg.AccountID
	}
	m := iamCertificatePattern.FindStringSubmatch(arn)
	return m != nil && m[1] == e.cfg.AccountID
}

// --- SSL security policies ---

// defaultSSLPolicy is the security policy both ELB APIs apply when a TLS
// listener is created through the API without one.
const defaultSSLPolicy = "ELBSecurityPolicy-2016-08"

// clbSSLPolicies are the predefined security policies of Classic Load
// Balancers (Predefined SSL security policies for Classic Load Balancers,
// with the two ELBSample- policies DescribeLoadBalancerPolicies also
// returns), and the TLS protocols each enables.
var clbSSLPolicies = []sslPolicy{
	{"ELBSecurityPolicy-TLS-1-2-2017-01", []string{"TLSv1.2"}},
	{"ELBSecurityPolicy-TLS-1-1-2017-01", []string{"TLSv1.1", "TLSv1.2"}},
	{"ELBSecurityPolicy-2016-08", []string{"TLSv1", "TLSv1.1", "TLSv1.2"}},
	{"ELBSecurityPolicy-2015-05", []string{"TLSv1", "TLSv1.1", "TLSv1.2"}},
	{"ELBSecurityPolicy-2015-03", []string{"TLSv1", "TLSv1.1", "TLSv1.2"}},
	{"ELBSecurityPolicy-2015-02", []string{"TLSv1", "TLSv1.1", "TLSv1.2"}},
	{"ELBSecurityPolicy-2014-10", []string{"TLSv1", "TLSv1.1", "TLSv1.2"}},
	{"ELBSecurityPolicy-2014-01", []string{"SSLv3", "TLSv1", "TLSv1.1", "TLSv1.2"}},
	{"ELBSecurityPolicy-2011-08", []string{"SSLv3", "TLSv1"}},
	{"ELBSample-ELBDefaultCipherPolicy", []string{"SSLv3", "TLSv1"}},
	{"ELBSample-OpenSSLDefaultCipherPolicy", []string{"SSLv3", "TLSv1"}},
}

type sslPolicy struct {
	name      string
	protocols []string
}

func isCLBSSLPolicy(name string) bool {
	return slices.ContainsFunc(clbSSLPolicies, func(p sslPolicy) bool { return p.name == name })
}

// elbv2SSLPolicies are the predefined policies Application and Network
// Load Balancers document for HTTPS and TLS listeners, outside the TLS13
// family.
var elbv2SSLPolicies = []string{
	"ELBSecurityPolicy-2016-08",
	"ELBSecurityPolicy-2015-05",
	"ELBSecurityPolicy-TLS-1-0-2015-04",
	"ELBSecurityPolicy-TLS-1-1-2017-01",
	"ELBSecurityPolicy-TLS-1-2-2017-01",
	"ELBSecurityPolicy-TLS-1-2-Ext-2018-06",
	"ELBSecurityPolicy-FS-2018-06",
	"ELBSecurityPolicy-FS-1-1-2019-08",
	"ELBSecurityPolicy-FS-1-2-2019-08",
	"ELBSecurityPolicy-FS-1-2-Res-2019-08",
	"ELBSecurityPolicy-FS-1-2-Res-2020-10",
}

// elbv2TLS13Policy matches the TLS13 family (ELBSecurityPolicy-TLS13-1-2-
// 2021-06, -Res-, -Ext1-, -FIPS-2023-04, -Res-PQ-2025-09, ...), which AWS
// keeps extending with FIPS and post-quantum variants: a pattern keeps a
// newly documented name from being refused, while typos and names of
// other clouds still are.
var elbv2TLS13Policy = regexp.MustCompile(`^ELBSecurityPolicy-TLS13-1-[0-3](-[A-Za-z0-9]+)*-20[0-9]{2}-[0-9]{2}$`)

func isELBv2SSLPolicy(name string) bool {
	return slices.Contains(elbv2SSLPolicies, name) || elbv2TLS13Policy.MatchString(name)
}

// checkListenerTLS checks what an ELBv2 CreateListener or ModifyListener
// request brings: every certificate usable, the security policy a
// predefined one. Certificates a listener already has are not rechecked:
// deleting a certificate in use does not break the listener.
func (e *Emulator) checkListenerTLS(certs []string, sslPolicy string) error {
	for _, c := range certs {
		if !e.certificateUsable(c) {
			return apiErr(codeCertificateMissing, "Certificate '%s' not found", c)
		}
	}
	if sslPolicy != "" && !isELBv2SSLPolicy(sslPolicy) {
		return apiErr("SSLPolicyNotFound", "SSL policy '%s' not found", sslPolicy)
	}
	return nil
}
