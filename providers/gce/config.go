// Package gce is the Google Compute Engine backend: instances, external
// and internal passthrough load balancers and pod-CIDR routes, through the
// Compute Engine REST clients of cloud.google.com/go/compute.
package gce

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/clientopts"
)

// Section is the `gce:` section of the cloud-config. Field names follow
// the upstream GCE CCM's gce.conf (projectID, networkProjectID,
// networkName, subnetworkName, nodeTags, nodeInstancePrefix; README,
// "GCE"), so a gce.conf ports key by key.
type Section struct {
	// ProjectID is the project the cluster's instances run in (required).
	ProjectID string `yaml:"projectID"`
	// Region is the cluster's region, e.g. europe-west1 (required).
	Region string `yaml:"region"`
	// Zones are the zones of the region the cluster's instances are in
	// (default: every zone of the region, read at start). One listing
	// per zone serves every Node.
	Zones []string `yaml:"zones"`
	// NetworkProjectID is the project of the network (Shared VPC; default
	// projectID): firewall rules, routes and subnetworks live there.
	NetworkProjectID string `yaml:"networkProjectID"`
	// NetworkName is the VPC network of the nodes (default "default").
	NetworkName string `yaml:"networkName"`
	// SubnetworkName is the nodes' subnetwork, where internal load
	// balancers get their addresses unless a Service names another.
	SubnetworkName string `yaml:"subnetworkName"`
	// NodeTags are the network tags firewall rules for load balancers
	// target (default: the tags of the cluster's instances).
	NodeTags []string `yaml:"nodeTags"`
	// NodeInstancePrefix, when set, is the prefix of the names of the
	// instances that are the cluster's nodes; others are never looked up.
	NodeInstancePrefix string `yaml:"nodeInstancePrefix"`
	// Endpoint overrides the Compute Engine API's base URL, e.g.
	// https://compute-myendpoint.p.googleapis.com for Private Service
	// Connect or a restricted VIP (default: the public endpoint). The
	// client adds /compute/v1/projects/... itself.
	Endpoint string `yaml:"endpoint"`
	// CredentialsFile is a service account key file (JSON). Empty: the
	// Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS,
	// then the metadata server, which is how workload identity and the
	// instance's service account are used).
	CredentialsFile string `yaml:"credentialsFile"`
	// CredentialsJSON is a service account key given inline instead of
	// credentialsFile (its private key is never logged or shown).
	CredentialsJSON string `yaml:"credentialsJSON" secret:"true"`
	// KeepAddresses keeps each external Service's address reserved (a
	// static address named after the Service) for as long as the Service
	// exists, so the IP survives its forwarding rule being deleted out of
	// band. Default false, as upstream: the address is reserved only
	// while the forwarding rule is made and then released, the rule
	// keeping the IP, because every reserved address counts against the
	// region's static address quota (STATIC_ADDRESSES, which has been as
	// low as 8 per region).
	KeepAddresses bool `yaml:"keepAddresses"`
	// StackType is the cluster's IP stack, as the upstream GCE CCM's
	// [global] stack-type: IPV4 (the default), IPV4_IPV6 (dual-stack) or
	// IPV6. It only orders Node addresses: with IPV6 a Node's IPv6
	// addresses come before its IPv4 ones, otherwise after them. Every
	// interface's IPv6 address is a Node address whatever the value.
	StackType string `yaml:"stackType"`
	// UpstreamClusterName is the --cluster-name of the upstream GCE CCM
	// this cluster was switched from (import-config sets it): its pod
	// routes, "<name[:26]>-<node UID>" described k8s-node-route, are the
	// cluster's routes too, kept for their nodes and deleted with them,
	// not made again. Empty: only this manager's routes are listed.
	UpstreamClusterName string `yaml:"upstreamClusterName"`

	// Options are the options every backend shares: requestTimeout,
	// maxAttempts and instanceCacheTTL.
	clientopts.Options `yaml:",inline"`
}

// DefaultNetworkName is the VPC a project starts with.
const DefaultNetworkName = "default"

// The values of stackType, upstream's (cloud-provider-gcp
// providers/gce/gce.go:99-120; its NetworkStack* names are deprecated
// Go aliases of the same strings, not other values).
const (
	StackIPv4      = "IPV4"
	StackDualStack = "IPV4_IPV6"
	StackIPv6      = "IPV6"
)

// stackTypes are stackType's values.
var stackTypes = []string{StackIPv4, StackDualStack, StackIPv6}

// SetDefaults implements config.Section.
func (s *Section) SetDefaults() {
	if s.NetworkProjectID == "" {
		s.NetworkProjectID = s.ProjectID
	}
	if s.NetworkName == "" {
		s.NetworkName = DefaultNetworkName
	}
	if s.StackType == "" {
		s.StackType = StackIPv4
	}
	s.Options.SetDefaults()
}

var (
	// projectRE is a project ID: 6-30 lower-case letters, digits and
	// hyphens, starting with a letter; a domain-scoped one has a
	// "domain:" prefix.
	projectRE = regexp.MustCompile(`^([a-z][-a-z0-9.]*[a-z0-9]:)?[a-z][-a-z0-9]{4,28}[a-z0-9]$`)
	// regionRE is a region name, e.g. us-central1.
	regionRE = regexp.MustCompile(`^[a-z]+-[a-z]+[0-9]+$`)
	// nameRE is a Compute Engine resource name (RFC 1035 label).
	nameRE = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)
)

// Validate implements config.Section. It reports every problem at once.
func (s *Section) Validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, p := range []struct{ key, value string }{{"projectID", s.ProjectID}, {"networkProjectID", s.NetworkProjectID}} {
		switch {
		case p.value == "" && p.key == "projectID":
			errs = append(errs, field.Required(path.Child(p.key), "the project the cluster's instances run in, e.g. my-project-123"))
		case p.value != "" && !projectRE.MatchString(p.value):
			errs = append(errs, field.Invalid(path.Child(p.key), p.value, "must be a project ID: 6-30 lower-case letters, digits and '-', starting with a letter (not the project number)"))
		}
	}
	switch {
	case s.Region == "":
		errs = append(errs, field.Required(path.Child("region"), "the cluster's region, e.g. europe-west1"))
	case !regionRE.MatchString(s.Region):
		errs = append(errs, field.Invalid(path.Child("region"), s.Region, "must be a region such as europe-west1 (not a zone)"))
	}
	seen := map[string]bool{}
	for i, z := range s.Zones {
		p := path.Child("zones").Index(i)
		switch {
		case seen[z]:
			errs = append(errs, field.Duplicate(p, z))
		case !strings.HasPrefix(z, s.Region+"-") || !nameRE.MatchString(z):
			errs = append(errs, field.Invalid(p, z, fmt.Sprintf("must be a zone of region %s, e.g. %s-b", s.Region, s.Region)))
		}
		seen[z] = true
	}
	for _, n := range []struct{ key, value string }{{"networkName", s.NetworkName}, {"subnetworkName", s.SubnetworkName}} {
		if n.value != "" && !nameRE.MatchString(n.value) {
			errs = append(errs, field.Invalid(path.Child(n.key), n.value, "must be a resource name: 1-63 lower-case letters, digits and '-', starting with a letter"))
		}
	}
	for i, t := range s.NodeTags {
		if !nameRE.MatchString(t) {
			errs = append(errs, field.Invalid(path.Child("nodeTags").Index(i), t, "must be a network tag: 1-63 lower-case letters, digits and '-', starting with a letter"))
		}
	}
	if s.NodeInstancePrefix != "" && !regexp.MustCompile(`^[a-z][-a-z0-9]{0,62}$`).MatchString(s.NodeInstancePrefix) {
		errs = append(errs, field.Invalid(path.Child("nodeInstancePrefix"), s.NodeInstancePrefix, "must be the start of an instance name: lower-case letters, digits and '-', starting with a letter"))
	}
	// Upstream takes any string, and any but IPV6 orders IPv4 first
	// (gce.go:692, gce_instances.go:100): here a misspelt one stops the
	// manager at start instead of silently ordering IPv4 first.
	if s.StackType != "" && !slices.Contains(stackTypes, s.StackType) {
		errs = append(errs, field.NotSupported(path.Child("stackType"), s.StackType, stackTypes))
	}
	if s.Endpoint != "" {
		u, err := url.Parse(s.Endpoint)
		switch {
		case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
			errs = append(errs, field.Invalid(path.Child("endpoint"), s.Endpoint, "must be an http(s) URL such as https://compute.googleapis.com"))
		case strings.Contains(u.Path, "/compute/"):
			errs = append(errs, field.Invalid(path.Child("endpoint"), s.Endpoint, "must be the base URL without /compute/v1 (the client adds the API path), e.g. https://compute.googleapis.com"))
		}
	}
	errs = append(errs, s.validateCredentials(path)...)
	errs = append(errs, s.Options.Validate(path)...)
	return errs
}

// validateCredentials checks the explicit credentials, if any: a service
// account key, from a file or inline, never both. The file is read when
// the backend starts (it may be mounted later than the config is
// checked); inline JSON is checked here without echoing it.
func (s *Section) validateCredentials(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.CredentialsFile != "" && s.CredentialsJSON != "" {
		errs = append(errs, field.Forbidden(path.Child("credentialsJSON"), "set credentialsFile or credentialsJSON, not both"))
	}
	if s.CredentialsJSON != "" {
		if problem := keyProblem([]byte(s.CredentialsJSON)); problem != "" {
			// Never field.Invalid with the value: it is a private key.
			errs = append(errs, field.Invalid(path.Child("credentialsJSON"), "<redacted>", problem))
		}
	}
	return errs
}

// keyProblem says what is wrong with a service account key, "" if
// nothing. It names fields, never their values.
func keyProblem(b []byte) string {
	var k struct {
		Type        string `json:"type"`
		ClientEmail string `json:"client_email"`
		PrivateKey  string `json:"private_key"`
		TokenURI    string `json:"token_uri"`
	}
	if err := json.Unmarshal(b, &k); err != nil {
		return "must be a service account key in JSON (the file `gcloud iam service-accounts keys create` writes)"
	}
	var missing []string
	for _, f := range []struct{ name, value string }{{"client_email", k.ClientEmail}, {"private_key", k.PrivateKey}} {
		if f.value == "" {
			missing = append(missing, f.name)
		}
	}
	switch {
	case k.Type != "service_account":
		return fmt.Sprintf("must be a service account key (type %q; external_account and authorized_user credentials go through GOOGLE_APPLICATION_CREDENTIALS)", k.Type)
	case len(missing) > 0:
		return "service account key lacks " + strings.Join(missing, " and ")
	}
	return ""
}

// networkURL is the nodes' network as resources reference it.
func (s *Section) networkURL() string {
	return "projects/" + s.NetworkProjectID + "/global/networks/" + s.NetworkName
}

// managesZone says whether instances in zone are the cluster's to serve.
func (s *Section) managesZone(zone string) bool {
	return len(s.Zones) == 0 || slices.Contains(s.Zones, zone)
}
