package gce

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/importcfg"
)

// upstreamConfigFile is the upstream GCE CCM's gce.conf: one [global]
// section.
//
// upstream: kubernetes/cloud-provider-gcp providers/gce/gce.go:337-339 (ConfigFile)
type upstreamConfigFile struct {
	Global upstreamGlobal `gcfg:"global"`
}

// upstreamGlobal mirrors every key of upstream's [global] section, so that
// each is either carried over or reported.
//
// upstream: kubernetes/cloud-provider-gcp providers/gce/gce.go:296-329 (ConfigGlobal)
type upstreamGlobal struct {
	TokenURL             string   `gcfg:"token-url"`
	TokenBody            string   `gcfg:"token-body"`
	ProjectID            string   `gcfg:"project-id"`
	NetworkProjectID     string   `gcfg:"network-project-id"`
	NetworkName          string   `gcfg:"network-name"`
	SubnetworkName       string   `gcfg:"subnetwork-name"`
	StackType            string   `gcfg:"stack-type"`
	SecondaryRangeName   string   `gcfg:"secondary-range-name"`
	NodeTags             []string `gcfg:"node-tags"`
	NodeInstancePrefix   string   `gcfg:"node-instance-prefix"`
	Regional             bool     `gcfg:"regional"`
	Multizone            bool     `gcfg:"multizone"`
	APIEndpoint          string   `gcfg:"api-endpoint"`
	ContainerAPIEndpoint string   `gcfg:"container-api-endpoint"`
	LocalZone            string   `gcfg:"local-zone"`
	AlphaFeatures        []string `gcfg:"alpha-features"`
}

// ImportConfig reads the upstream GCE CCM's gce.conf into the gce section
// (`multicloud-ccm import-config --from gce`). Only what the file sets is
// filled; what upstream took from the metadata server (project, zone,
// network) is reported for the user to set. gce.conf does not name the
// cluster, so the options are not needed.
func ImportConfig(data []byte, opts importcfg.Options) (*importcfg.Result, error) {
	var file upstreamConfigFile
	// upstream reads it with gcfg too and drops the warnings about
	// unknown keys (gce.go:417-424); here they become Notes.
	unknown, err := importcfg.ReadINI(data, &file)
	if err != nil {
		return nil, fmt.Errorf("gce.conf %w", err)
	}
	im := &gceImport{g: file.Global, s: &Section{}}
	im.projects()
	im.network()
	// Before zones: a subnetwork URL's region stands in for local-zone's.
	im.subnetwork()
	im.zones()
	im.endpoint()
	im.credentials()
	im.nodes()
	im.stack()
	im.unported()
	// Upstream's routes are named after its --cluster-name: they stay the
	// cluster's (routes.go).
	im.s.UpstreamClusterName = opts.ClusterName
	for _, k := range unknown {
		im.notes = append(im.notes, unknownKeyNote(k))
	}
	return &importcfg.Result{Section: im.s, Notes: im.notes}, nil
}

// gceImport carries one import: upstream's keys, the section being
// filled and the Notes so far.
type gceImport struct {
	g     upstreamGlobal
	s     *Section
	notes []importcfg.Note
}

// note reports one [global] key. Upstream and Instead never hold the
// key's value: token-body is a credential.
func (im *gceImport) note(key, upstream, instead string) {
	im.notes = append(im.notes, importcfg.Note{Key: "[global] " + key, Upstream: upstream, Instead: instead})
}

// isProjectNumber: upstream accepts a project number where a project ID
// goes and converts it with a Compute API call (gce.go:788); ours takes
// the ID only, and an import must not call the cloud.
func isProjectNumber(v string) bool {
	_, err := strconv.ParseUint(v, 10, 64)
	return err == nil
}

// projects maps project-id and network-project-id.
func (im *gceImport) projects() {
	switch p := strings.TrimSpace(im.g.ProjectID); {
	case p == "":
		im.note("project-id", "unset, the project of the instance the manager ran on, from the metadata server",
			"set projectID: it is required here")
	case isProjectNumber(p):
		im.note("project-id", "a project number, converted to the project ID with a Compute API call",
			"set projectID to the project ID (gcloud projects describe prints it)")
	default:
		im.s.ProjectID = p
	}
	switch p := strings.TrimSpace(im.g.NetworkProjectID); {
	case p == "":
	case isProjectNumber(p):
		im.note("network-project-id", "a project number, converted to the project ID with a Compute API call",
			"set networkProjectID to the project ID (gcloud projects describe prints it)")
	default:
		im.s.NetworkProjectID = p
	}
}

// networkProject is the project the network is in, as ours defaults it.
func (im *gceImport) networkProject() string {
	if im.s.NetworkProjectID != "" {
		return im.s.NetworkProjectID
	}
	return im.s.ProjectID
}

var (
	// networkPathRE is a network as a resource path or URL; upstream
	// takes any value with a "/" for one (gce.go:495).
	networkPathRE = regexp.MustCompile(`(?:^|/)projects/([^/]+)/global/networks/([^/]+)/?$`)
	// subnetworkPathRE is a subnetwork as a resource path or URL
	// (gce.go:510).
	subnetworkPathRE = regexp.MustCompile(`(?:^|/)projects/([^/]+)/regions/([^/]+)/subnetworks/([^/]+)/?$`)
)

// network maps network-name, a name or a URL upstream. Ours takes the
// name and puts the network in networkProjectID, so a URL's project
// becomes networkProjectID when the file does not set one.
func (im *gceImport) network() {
	v := strings.TrimSpace(im.g.NetworkName)
	if v == "" {
		im.note("network-name", "unset, the network of the instance the manager ran on, from the metadata server",
			`networkName defaults to "default"; set it if the nodes are on another network`)
		return
	}
	if !strings.Contains(v, "/") {
		im.s.NetworkName = v
		return
	}
	m := networkPathRE.FindStringSubmatch(v)
	if m == nil {
		im.note("network-name", "a network URL", "set networkName to the network's name (and networkProjectID to its project): "+
			"the URL is not of the form projects/PROJECT/global/networks/NAME")
		return
	}
	project, name := m[1], m[2]
	im.s.NetworkName = name
	switch {
	case project == im.networkProject():
	case im.s.NetworkProjectID != "" || isProjectNumber(project):
		im.note("network-name", "a network URL naming the network's project, while firewall rules and routes went to network-project-id",
			"networkName is the URL's network, looked up in networkProjectID: set networkProjectID to the project the network is in")
	default:
		im.s.NetworkProjectID = project
		im.note("network-name", "a network URL in another project than project-id, while firewall rules and routes went to project-id",
			"networkProjectID is the URL's project: the network, its firewall rules and routes are all there")
	}
}

// subnetwork maps subnetwork-name, a name or a URL upstream. A URL's
// region serves as the region when local-zone does not give one.
func (im *gceImport) subnetwork() {
	v := strings.TrimSpace(im.g.SubnetworkName)
	if v == "" {
		im.note("subnetwork-name", "unset, internal load balancers took their address from the region's subnetwork of an auto-mode network, looked up in the API",
			"set subnetworkName for internal Services (or annotate each with networking.gke.io/internal-load-balancer-subnet)")
		return
	}
	if !strings.Contains(v, "/") {
		im.s.SubnetworkName = v
		return
	}
	m := subnetworkPathRE.FindStringSubmatch(v)
	if m == nil {
		im.note("subnetwork-name", "a subnetwork URL", "set subnetworkName to the subnetwork's name: "+
			"the URL is not of the form projects/PROJECT/regions/REGION/subnetworks/NAME")
		return
	}
	project, region, name := m[1], m[2], m[3]
	im.s.SubnetworkName = name
	if project != im.networkProject() {
		im.note("subnetwork-name", "a subnetwork URL, used as written",
			"subnetworkName is the URL's subnetwork, looked up in networkProjectID, which is another project than the URL's: set networkProjectID to the project the network is in")
	}
	if zoneRegion := regionOfZone(strings.TrimSpace(im.g.LocalZone)); zoneRegion != "" && zoneRegion != region {
		im.note("subnetwork-name", "a subnetwork URL in another region than local-zone's",
			"subnetworkName is looked up in the region of local-zone; check both name the cluster's region")
	}
	if im.s.Region == "" && regionRE.MatchString(region) {
		im.s.Region = region
	}
}

// regionOfZone is the region of a zone name, as upstream derives it
// (gce_util.go:286-293: everything before the last "-"), or "" when zone
// is not a zone name.
func regionOfZone(zone string) string {
	i := strings.LastIndex(zone, "-")
	if i < 0 || !nameRE.MatchString(zone) || !regionRE.MatchString(zone[:i]) {
		return ""
	}
	return zone[:i]
}

// zones maps local-zone, multizone and regional. Upstream manages
// local-zone only, or with multizone or regional every zone of the
// region (gce.go:488-491); its region is local-zone's (gce.go:477).
func (im *gceImport) zones() {
	multi := im.g.Multizone || im.g.Regional
	zone := strings.TrimSpace(im.g.LocalZone)
	if region := regionOfZone(zone); region != "" {
		im.s.Region = region
		if !multi {
			im.s.Zones = []string{zone}
		}
	} else if zone != "" {
		im.note("local-zone", "the zone the manager ran in, whose region was the cluster's",
			"set region (and zones): the value is not a zone name such as europe-west1-b")
	}
	switch {
	case zone != "" || (multi && im.s.Region != ""):
	case multi:
		im.note("local-zone", "unset, the zone the manager ran in, from the metadata server; the region was that zone's",
			"set region: it is required here")
	case im.s.Region != "":
		im.note("local-zone", "unset, the zone the manager ran in, from the metadata server; as neither multizone nor regional is set, only that zone was managed",
			"set zones to the nodes' zone: without it every zone of the region is managed")
	default:
		im.note("local-zone", "unset, the zone the manager ran in, from the metadata server; the region was that zone's and, as neither multizone nor regional is set, only that zone was managed",
			"set region (required here) and zones to the nodes' zone")
	}
	const everyZone = "zones is left empty, which means every zone of the region, listed once at start (restart the manager after the region gains a zone); or list the nodes' zones in zones"
	if im.g.Multizone {
		im.note("multizone", "every zone of the region was managed, not only local-zone, and the list was refreshed as zones appeared", everyZone)
	}
	if im.g.Regional {
		im.note("regional", "a regional cluster: every zone of the region was managed, and GKE's Clusters API was asked for the region's clusters",
			everyZone+"; the Clusters interface is not served here")
	}
}

// endpoint maps api-endpoint. Upstream's value is the API's path prefix
// (https://www.googleapis.com/compute/v1/), to which it appends
// projects/... and which it rewrites for beta and alpha (gce.go:610-620);
// ours is the base URL, to which the client adds /compute/v1/projects/...
func (im *gceImport) endpoint() {
	v := strings.TrimSpace(im.g.APIEndpoint)
	if v == "" {
		return
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		im.note("api-endpoint", "the Compute API's URL prefix", "set endpoint to the API's base URL, such as https://compute.googleapis.com: the value is not an http(s) URL")
		return
	}
	p := strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/projects")
	stripped := false
	for _, version := range []string{"/compute/v1", "/compute/beta", "/compute/alpha"} {
		if strings.HasSuffix(p, version) {
			p, stripped = strings.TrimSuffix(p, version), true
			break
		}
	}
	if strings.Contains(p+"/", "/compute/") {
		im.note("api-endpoint", "the Compute API's URL prefix", "set endpoint to the API's base URL, without the /compute/... path")
		return
	}
	u.Path, u.RawPath = p, ""
	im.s.Endpoint = u.String()
	if !stripped {
		im.note("api-endpoint", "requests went to the endpoint followed by projects/...",
			"the client adds /compute/v1/projects/... to endpoint: check the endpoint serves that path")
	}
}

// credentials reports upstream's token source. "nil" (gce.go:444) meant
// the Application Default Credentials, which is ours without
// credentialsFile or credentialsJSON; unset meant the metadata server's
// token, which the Application Default Credentials also fall back to.
func (im *gceImport) credentials() {
	const instead = "no equivalent: use a service account key (credentialsFile or credentialsJSON) " +
		"or the Application Default Credentials (workload identity, the instance's service account) by leaving both unset"
	if u := strings.TrimSpace(im.g.TokenURL); u != "" && u != "nil" {
		im.note("token-url", "access tokens were fetched from this URL with token-body", instead)
	}
	if im.g.TokenBody != "" {
		im.note("token-body", "the body of the token requests sent to token-url", instead+"; nothing was carried over")
	}
}

// nodes maps node-tags, and node-instance-prefix, which has a stricter
// meaning here.
func (im *gceImport) nodes() {
	for _, t := range im.g.NodeTags {
		if t = strings.TrimSpace(t); t != "" {
			im.s.NodeTags = append(im.s.NodeTags, t)
		}
	}
	if p := strings.TrimSpace(im.g.NodeInstancePrefix); p != "" {
		im.s.NodeInstancePrefix = p
		// upstream: gce_instances.go:708-714 and 860-865 drop the
		// filter when a node's instance does not conform.
		im.note("node-instance-prefix", "an advisory filter, dropped when some node's instance name did not start with it",
			"nodeInstancePrefix is strict: instances whose names do not start with it are never found, so check every node's instance name starts with it")
	}
}

// stack maps stack-type onto stackType. Upstream stores any string and
// only an exact IPV6 changes anything: it lists the Nodes' IPv6 addresses
// first (gce.go:522,692; gce_instances.go:100). So an exact value is
// carried over, and any other is left out (ours defaults to IPV4, the
// order upstream used for it) and reported, as ours refuses it.
func (im *gceImport) stack() {
	st := strings.TrimSpace(im.g.StackType)
	switch {
	case st == "" || st == StackIPv4:
	case slices.Contains(stackTypes, st):
		im.s.StackType = st
	default:
		im.note("stack-type", fmt.Sprintf("a value other than %s, which ordered the Nodes' IPv4 addresses first", strings.Join(stackTypes, ", ")),
			"stackType is left at its default IPV4, the same order; set it to IPV6 if IPv6 addresses were meant to come first (only IPV4, IPV4_IPV6 and IPV6 are accepted)")
	}
}

// unported reports the keys with no equivalent here.
func (im *gceImport) unported() {
	if strings.TrimSpace(im.g.SecondaryRangeName) != "" {
		im.note("secondary-range-name", "deprecated; the subnetwork's secondary range that node IPAM's alias IP ranges for pod CIDRs came from",
			"no equivalent: this manager sets no alias IP ranges (pod CIDRs are served with routes); remove it")
	}
	if strings.TrimSpace(im.g.ContainerAPIEndpoint) != "" {
		im.note("container-api-endpoint", "the GKE API endpoint the Clusters interface called",
			"no equivalent: the GKE API is not called here; remove it")
	}
	if len(im.g.AlphaFeatures) > 0 {
		im.note("alpha-features", "feature gates of upstream's internal load balancers (node subsets, instance groups left to another controller)",
			"no equivalent: internal load balancers here use every node through the cluster's instance groups; remove it")
	}
}

// unknownKeyNote reports a key or section gcfg could not store, as the
// file spells it.
func unknownKeyNote(k importcfg.UnknownKey) importcfg.Note {
	const instead = "nothing was carried over; remove it, or fix the spelling if it was meant to be one of [global]'s keys"
	if k.Variable != "" {
		return importcfg.Note{Key: k.String(), Upstream: "not a key of the upstream GCE CCM's gce.conf; ignored", Instead: instead}
	}
	return importcfg.Note{Key: k.String(), Upstream: "not a section of the upstream GCE CCM's gce.conf, which reads only [global] (no subsections); ignored", Instead: instead}
}
