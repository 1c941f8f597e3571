package openstack

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/importcfg"
)

// The upstream OpenStack CCM's cloud.conf, as read at
// kubernetes/cloud-provider-openstack c453fb7c (2026-07-15). Every key
// its Config has is declared here, so each key a file sets is either
// carried into Section or reported. Fields are pointers (or lists): "set
// to false" and "not set" differ, and only what the file sets is carried.

// upstreamConfig is the whole file.
// upstream: kubernetes/cloud-provider-openstack pkg/openstack/openstack.go:169
type upstreamConfig struct {
	Global       upstreamGlobal
	LoadBalancer upstreamLoadBalancer
	// LoadBalancerClass holds the [LoadBalancerClass "name"] sections.
	LoadBalancerClass map[string]*upstreamLBClass
	Route             upstreamRoute
	Metadata          upstreamMetadata
	Networking        upstreamNetworking
}

// upstreamGlobal is [Global]: how the upstream CCM authenticates.
// upstream: kubernetes/cloud-provider-openstack pkg/client/client.go:39
type upstreamGlobal struct {
	AuthURL          *string `gcfg:"auth-url"`
	UserID           *string `gcfg:"user-id"`
	Username         *string `gcfg:"username"`
	Password         *string `gcfg:"password"`
	TenantID         *string `gcfg:"tenant-id"`
	TenantName       *string `gcfg:"tenant-name"`
	TrustID          *string `gcfg:"trust-id"`
	TrusteeID        *string `gcfg:"trustee-id"`
	TrusteePassword  *string `gcfg:"trustee-password"`
	DomainID         *string `gcfg:"domain-id"`
	DomainName       *string `gcfg:"domain-name"`
	TenantDomainID   *string `gcfg:"tenant-domain-id"`
	TenantDomainName *string `gcfg:"tenant-domain-name"`
	UserDomainID     *string `gcfg:"user-domain-id"`
	UserDomainName   *string `gcfg:"user-domain-name"`
	Region           *string `gcfg:"region"`
	EndpointType     *string `gcfg:"os-endpoint-type"`
	CAFile           *string `gcfg:"ca-file"`
	TLSInsecure      *string `gcfg:"tls-insecure"`
	Token            *string `gcfg:"token"`
	CertFile         *string `gcfg:"cert-file"`
	KeyFile          *string `gcfg:"key-file"`
	// CAFileContents has no gcfg tag upstream (it is the manila CSI
	// plugin's flag), so gcfg matches it by its field name.
	// upstream: kubernetes/cloud-provider-openstack pkg/client/client.go:66
	CAFileContents              *string `gcfg:"cafilecontents"`
	UseClouds                   *bool   `gcfg:"use-clouds"`
	CloudsFile                  *string `gcfg:"clouds-file"`
	Cloud                       *string `gcfg:"cloud"`
	ApplicationCredentialID     *string `gcfg:"application-credential-id"`
	ApplicationCredentialName   *string `gcfg:"application-credential-name"`
	ApplicationCredentialSecret *string `gcfg:"application-credential-secret"`
}

// upstreamLoadBalancer is [LoadBalancer]. Upstream's LBClasses field is
// not a key (it is filled from [LoadBalancerClass] sections), so it is
// left out.
// upstream: kubernetes/cloud-provider-openstack pkg/openstack/openstack.go:94
type upstreamLoadBalancer struct {
	Enabled                        *bool             `gcfg:"enabled"`
	LBVersion                      *string           `gcfg:"lb-version"`
	SubnetID                       *string           `gcfg:"subnet-id"`
	MemberSubnetID                 *string           `gcfg:"member-subnet-id"`
	NetworkID                      *string           `gcfg:"network-id"`
	FloatingNetworkID              *string           `gcfg:"floating-network-id"`
	FloatingSubnetID               *string           `gcfg:"floating-subnet-id"`
	FloatingSubnet                 *string           `gcfg:"floating-subnet"`
	FloatingSubnetTags             *string           `gcfg:"floating-subnet-tags"`
	LBMethod                       *string           `gcfg:"lb-method"`
	LBProvider                     *string           `gcfg:"lb-provider"`
	CreateMonitor                  *bool             `gcfg:"create-monitor"`
	MonitorDelay                   *upstreamDuration `gcfg:"monitor-delay"`
	MonitorTimeout                 *upstreamDuration `gcfg:"monitor-timeout"`
	MonitorMaxRetries              *uint             `gcfg:"monitor-max-retries"`
	MonitorMaxRetriesDown          *uint             `gcfg:"monitor-max-retries-down"`
	ManageSecurityGroups           *bool             `gcfg:"manage-security-groups"`
	InternalLB                     *bool             `gcfg:"internal-lb"`
	NodeSelector                   *string           `gcfg:"node-selector"`
	CascadeDelete                  *bool             `gcfg:"cascade-delete"`
	FlavorID                       *string           `gcfg:"flavor-id"`
	AvailabilityZone               *string           `gcfg:"availability-zone"`
	EnableIngressHostname          *bool             `gcfg:"enable-ingress-hostname"`
	IngressHostnameSuffix          *string           `gcfg:"ingress-hostname-suffix"`
	MaxSharedLB                    *int              `gcfg:"max-shared-lb"`
	ContainerStore                 *string           `gcfg:"container-store"`
	ProviderRequiresSerialAPICalls *bool             `gcfg:"provider-requires-serial-api-calls"`
	TLSContainerRef                *string           `gcfg:"default-tls-container-ref"`
}

// upstreamLBClass is one [LoadBalancerClass "name"] section.
// upstream: kubernetes/cloud-provider-openstack pkg/openstack/openstack.go:129
type upstreamLBClass struct {
	FloatingNetworkID  *string `gcfg:"floating-network-id"`
	FloatingSubnetID   *string `gcfg:"floating-subnet-id"`
	FloatingSubnet     *string `gcfg:"floating-subnet"`
	FloatingSubnetTags *string `gcfg:"floating-subnet-tags"`
	NetworkID          *string `gcfg:"network-id"`
	SubnetID           *string `gcfg:"subnet-id"`
	MemberSubnetID     *string `gcfg:"member-subnet-id"`
}

// upstreamRoute is [Route].
// upstream: kubernetes/cloud-provider-openstack pkg/openstack/openstack.go:148
type upstreamRoute struct {
	RouterID *string `gcfg:"router-id"`
}

// upstreamMetadata is [Metadata].
// upstream: kubernetes/cloud-provider-openstack pkg/util/metadata/metadata.go:72
type upstreamMetadata struct {
	SearchOrder    *string           `gcfg:"search-order"`
	RequestTimeout *upstreamDuration `gcfg:"request-timeout"`
}

// upstreamNetworking is [Networking]; the two network names may repeat.
// upstream: kubernetes/cloud-provider-openstack pkg/openstack/openstack.go:140
type upstreamNetworking struct {
	IPv6SupportDisabled *bool    `gcfg:"ipv6-support-disabled"`
	PublicNetworkName   []string `gcfg:"public-network-name"`
	InternalNetworkName []string `gcfg:"internal-network-name"`
	AddressSortOrder    *string  `gcfg:"address-sort-order"`
}

// upstreamDuration reads a duration as upstream's MyDuration does, with
// time.ParseDuration: "5s" is five seconds and a bare "5" is refused (the
// upstream docs say "in seconds", but its parser wants a unit), so a file
// the upstream CCM could not start with is not imported either.
// upstream: kubernetes/cloud-provider-openstack pkg/util/util.go:36
type upstreamDuration struct{ time.Duration }

// UnmarshalText implements encoding.TextUnmarshaler for gcfg.
func (d *upstreamDuration) UnmarshalText(text []byte) error {
	v, err := time.ParseDuration(string(text))
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// ImportConfig reads the upstream OpenStack CCM's cloud.conf into the
// openstack section (README, "OpenStack", lists the mapping). gcfg reads it
// as upstream does; keys gcfg has no field for are Notes, where upstream
// ignored them silently (gcfg.FatalOnly).
// upstream: kubernetes/cloud-provider-openstack pkg/openstack/openstack.go:231
func ImportConfig(data []byte, _ importcfg.Options) (*importcfg.Result, error) {
	var up upstreamConfig
	unknown, err := importcfg.ReadINI(data, &up)
	if err != nil {
		return nil, err
	}
	im := &importer{up: &up, s: &Section{}}
	im.global()
	im.loadBalancer()
	im.loadBalancerClasses()
	im.route()
	im.metadata()
	im.networking()
	im.unknownKeys(unknown)
	return &importcfg.Result{Section: im.s, Notes: im.notes}, nil
}

// importer fills a Section from an upstreamConfig and collects the notes.
type importer struct {
	up    *upstreamConfig
	s     *Section
	notes []importcfg.Note
}

func (im *importer) note(key, upstream, instead string) {
	im.notes = append(im.notes, importcfg.Note{Key: key, Upstream: upstream, Instead: instead})
}

// copyString sets *dst when the file set the key.
func copyString(dst *string, v *string) {
	if v != nil {
		*dst = *v
	}
}

func isTrue(b *bool) bool  { return b != nil && *b }
func isFalse(b *bool) bool { return b != nil && !*b }

// credential is a [Global] key that authenticates.
type credential struct {
	key string
	val *string
	// dst is the Section field it lands in; nil for the keys that fill
	// two fields (domain-name, domain-id).
	dst *string
	// passwordOnly marks the keys only password authentication uses (the
	// password and the project scope); an application credential ignores
	// them.
	passwordOnly bool
}

func (im *importer) global() {
	g, s := &im.up.Global, im.s
	const sect = "[Global] "

	// Beside a clouds.yaml entry these override the entry's, upstream
	// and here (resolveAuth) alike.
	// upstream: kubernetes/cloud-provider-openstack pkg/client/client.go:228-230
	copyString(&s.Region, g.Region)
	copyString(&s.EndpointType, g.EndpointType)
	copyString(&s.CAFile, g.CAFile)

	creds := []credential{
		{key: "auth-url", val: g.AuthURL, dst: &s.AuthURL},
		{key: "username", val: g.Username, dst: &s.Username},
		{key: "user-id", val: g.UserID, dst: &s.UserID},
		{key: "password", val: g.Password, dst: &s.Password, passwordOnly: true},
		{key: "user-domain-name", val: g.UserDomainName, dst: &s.UserDomainName},
		{key: "user-domain-id", val: g.UserDomainID, dst: &s.UserDomainID},
		{key: "tenant-name", val: g.TenantName, dst: &s.ProjectName, passwordOnly: true},
		{key: "tenant-id", val: g.TenantID, dst: &s.ProjectID, passwordOnly: true},
		{key: "tenant-domain-name", val: g.TenantDomainName, dst: &s.ProjectDomainName, passwordOnly: true},
		{key: "tenant-domain-id", val: g.TenantDomainID, dst: &s.ProjectDomainID, passwordOnly: true},
		{key: "domain-name", val: g.DomainName},
		{key: "domain-id", val: g.DomainID},
		{key: "application-credential-id", val: g.ApplicationCredentialID, dst: &s.ApplicationCredentialID},
		{key: "application-credential-name", val: g.ApplicationCredentialName, dst: &s.ApplicationCredentialName},
		{key: "application-credential-secret", val: g.ApplicationCredentialSecret, dst: &s.ApplicationCredentialSecret},
	}

	if isTrue(g.UseClouds) {
		// upstream: kubernetes/cloud-provider-openstack pkg/openstack/openstack.go:239-249
		copyString(&s.Cloud, g.Cloud)
		copyString(&s.CloudsFile, g.CloudsFile)
		if g.Cloud == nil {
			im.note(sect+"cloud", "with use-clouds and no cloud, used the clouds.yaml entry named by $OS_CLOUD, or the file's only entry",
				"cloud is required: set it to the name of the clouds.yaml entry")
		}
		if g.CloudsFile == nil {
			im.note(sect+"clouds-file", "with use-clouds and no clouds-file, searched $OS_CLIENT_CONFIG_FILE, the working directory, ~/.config/openstack and /etc/openstack for clouds.yaml",
				"cloudsFile defaults to "+DefaultCloudsFile+": set it if the file is elsewhere")
		}
		// Upstream let each [Global] key override the entry's value;
		// here the entry is used as written.
		// upstream: kubernetes/cloud-provider-openstack pkg/client/client.go:216-236
		for _, c := range creds {
			if c.val != nil {
				im.note(sect+c.key, "overrode the same setting of the clouds.yaml entry",
					"with cloud, the clouds.yaml entry is used as written: move this setting into the entry's auth section (not carried over)")
			}
		}
	} else {
		for key, v := range map[string]*string{"cloud": g.Cloud, "clouds-file": g.CloudsFile} {
			if v != nil {
				im.note(sect+key, "was ignored because use-clouds was not true",
					"not carried over: the [Global] credentials are used, as upstream")
			}
		}
		im.credentials(creds)
		if g.Region == nil {
			im.note(sect+"region", "when unset, endpoints of any region in the service catalog were used",
				"region is required: set it to the region the cluster runs in, e.g. RegionOne")
		}
	}

	// upstream: kubernetes/cloud-provider-openstack pkg/client/client.go:296-307
	for key, v := range map[string]*string{"trust-id": g.TrustID, "trustee-id": g.TrusteeID, "trustee-password": g.TrusteePassword} {
		if v != nil {
			im.note(sect+key, "authenticated as a trustee with a trust-scoped token",
				"trusts are not supported: create an application credential in the project and set applicationCredentialID and applicationCredentialSecret")
		}
	}
	if g.Token != nil {
		im.note(sect+"token", "authenticated with this fixed Keystone token instead of a password",
			"a token expires and cannot be renewed: authenticate with an application credential (applicationCredentialID and applicationCredentialSecret) or a password")
	}
	for key, v := range map[string]*string{"cert-file": g.CertFile, "key-file": g.KeyFile} {
		if v != nil {
			im.note(sect+key, "presented a TLS client certificate to the OpenStack APIs",
				"client certificates are read only from a clouds.yaml entry (its cert and key): use cloud and cloudsFile, or authenticate with a password or application credential")
		}
	}
	// Verification is skipped only for exactly "true".
	// upstream: kubernetes/cloud-provider-openstack pkg/client/client.go:272
	if g.TLSInsecure != nil && *g.TLSInsecure == "true" {
		im.note(sect+"tls-insecure", "skipped verifying the OpenStack APIs' TLS certificates",
			"certificates are always verified: set caFile to the CA bundle that signed them")
	}
	if g.CAFileContents != nil {
		im.note(sect+"CAFileContents", "held the PEM CA bundle inline, used when ca-file was unset",
			"write the bundle to a file and set caFile to its path")
	}
	sortNotesFrom(im.notes, 0)
}

// credentials carries the [Global] credentials over when no clouds.yaml
// entry is used. Upstream hands them to gophercloud/utils' clientconfig
// (client.go:133-158), where an application credential takes no scope and
// domain-name / domain-id fill the user and project domains left unset, as
// README "OpenStack" documents.
// upstream: gophercloud/utils openstack/clientconfig/requests.go (AuthOptions, setDomainIfNeeded)
func (im *importer) credentials(creds []credential) {
	g, s := &im.up.Global, im.s
	appCred := g.ApplicationCredentialID != nil || g.ApplicationCredentialName != nil || g.ApplicationCredentialSecret != nil
	for _, c := range creds {
		switch {
		case c.val == nil || c.dst == nil:
		case appCred && c.passwordOnly:
			im.note("[Global] "+c.key, "was not used beside an application credential, which is bound to its own project",
				"not carried over: the application credential authenticates alone")
		default:
			*c.dst = *c.val
		}
	}
	for _, d := range []struct {
		v *string
		// user and proj are the fields to fill; their peers are the
		// other spelling (name or ID) of the same domain.
		user, userPeer, proj, projPeer *string
	}{
		{g.DomainName, &s.UserDomainName, &s.UserDomainID, &s.ProjectDomainName, &s.ProjectDomainID},
		{g.DomainID, &s.UserDomainID, &s.UserDomainName, &s.ProjectDomainID, &s.ProjectDomainName},
	} {
		if d.v == nil {
			continue
		}
		// Only a domain neither named nor given by ID yet: a name and an
		// ID of one domain together are refused by Validate.
		if *d.user == "" && *d.userPeer == "" {
			*d.user = *d.v
		}
		if !appCred && *d.proj == "" && *d.projPeer == "" {
			*d.proj = *d.v
		}
	}
}

func (im *importer) loadBalancer() {
	u, lb := &im.up.LoadBalancer, &im.s.LoadBalancer
	const sect = "[LoadBalancer] "
	first := len(im.notes)

	copyString(&lb.FloatingNetworkID, u.FloatingNetworkID)
	copyString(&lb.FloatingSubnetID, u.FloatingSubnetID)
	copyString(&lb.SubnetID, u.SubnetID)
	copyString(&lb.NetworkID, u.NetworkID)
	copyString(&lb.MemberSubnetID, u.MemberSubnetID)
	copyString(&lb.Provider, u.LBProvider)
	copyString(&lb.LBMethod, u.LBMethod)
	if u.CreateMonitor != nil {
		lb.CreateMonitor = *u.CreateMonitor
	}
	if u.MonitorDelay != nil {
		lb.MonitorDelay = u.MonitorDelay.Duration
	}
	if u.MonitorTimeout != nil {
		lb.MonitorTimeout = u.MonitorTimeout.Duration
	}
	if u.MonitorMaxRetries != nil {
		lb.MonitorMaxRetries = int(*u.MonitorMaxRetries)
	}
	if u.MonitorMaxRetriesDown != nil {
		lb.MonitorMaxRetriesDown = int(*u.MonitorMaxRetriesDown)
	}
	if u.EnableIngressHostname != nil {
		lb.EnableIngressHostname = *u.EnableIngressHostname
	}
	copyString(&lb.IngressHostnameSuffix, u.IngressHostnameSuffix)
	if u.LBProvider == nil || *u.LBProvider != "ovn" {
		copyString(&lb.FlavorID, u.FlavorID)
		copyString(&lb.AvailabilityZone, u.AvailabilityZone)
	}
	if u.ManageSecurityGroups != nil {
		lb.ManageSecurityGroups = *u.ManageSecurityGroups
	}
	if u.InternalLB != nil {
		lb.InternalLB = *u.InternalLB
	}

	if u.LBProvider != nil {
		if _, ok := lbMethods[*u.LBProvider]; !ok {
			im.note(sect+"lb-provider", "chose the Octavia provider driver, including ones other than amphora, octavia and ovn (such as f5)",
				"provider must be amphora, amphorav2, octavia or ovn, and the file names another: the cloud-config does not validate until it is changed")
		}
	}
	if isTrue(u.ManageSecurityGroups) {
		// upstream: kubernetes/cloud-provider-openstack pkg/openstack/loadbalancer_sg.go:42-50
		// (name), :53-103 (attached to member ports); taken over in
		// loadbalancer_upstreamgroups.go.
		im.note(sect+"manage-security-groups", "made one security group per Service (lb-sg-<Service UID>-<namespace>-<name>) and added it to every member port",
			"one cluster-owned group (k8s-lb-members-<clusterID>) holds every Service's rules and goes with the last Service; each upstream per-Service group is detached from the node ports and deleted once the cluster group admits its Service's traffic (or at the Service's deletion): nothing to remove by hand")
	}
	if u.FloatingNetworkID == nil && !isTrue(u.InternalLB) && !isFalse(u.Enabled) {
		// upstream: kubernetes/cloud-provider-openstack pkg/openstack/loadbalancer.go:1486-1493, :759-762
		im.note(sect+"floating-network-id", "when unset, the first external network with an IPv4 subnet that Neutron listed was used; with none, external Services got only their VIP",
			"the project's only external network with an IPv4 subnet is used, found at start; if it sees several, or none, external Services without loadbalancer.openstack.org/floating-network-id get an error naming them: then set loadBalancer.floatingNetworkID (openstack network list --external)")
	}
	if isFalse(u.Enabled) {
		// upstream: kubernetes/cloud-provider-openstack pkg/openstack/openstack.go:342
		im.note(sect+"enabled", "turned load balancers off: LoadBalancer Services got none from this CCM",
			"load balancers are always served; to keep them off, run the manager with --controllers=*,-service-lb-controller")
	}
	if u.LBVersion != nil {
		im.note(sect+"lb-version", "could only be v2 (Octavia's API)",
			"Octavia v2 is the only API used: remove it")
	}
	for key, v := range map[string]*string{"floating-subnet": u.FloatingSubnet, "floating-subnet-tags": u.FloatingSubnetTags} {
		if v != nil {
			im.note(sect+key, "chose the floating IPs' subnet of the floating network by name pattern or by tags",
				"set loadBalancer.floatingSubnetID to that subnet's UUID; otherwise floating IPs come from any subnet of the network")
		}
	}
	if u.NodeSelector != nil {
		im.note(sect+"node-selector", "made only the Nodes with these labels load balancer members",
			"every Node the service controller passes is a member: label the others node.kubernetes.io/exclude-from-external-load-balancers=true")
	}
	if isFalse(u.CascadeDelete) {
		im.note(sect+"cascade-delete", "deleted a load balancer's parts one by one",
			"a load balancer is always deleted with its parts in one cascade delete")
	}
	for key, v := range map[string]*string{"flavor-id": u.FlavorID, "availability-zone": u.AvailabilityZone} {
		switch {
		case v == nil:
		case u.LBProvider != nil && *u.LBProvider == "ovn":
			// upstream: kubernetes/cloud-provider-openstack pkg/util/openstack/loadbalancer.go:116-139
			im.note(sect+key, "was not used with the ovn provider",
				"not carried over: the ovn provider has none")
		case key == "flavor-id" && !uuidRE.MatchString(*v):
			im.note(sect+key, "created load balancers with this Octavia flavor",
				"carried over as loadBalancer.flavorID, which must be the flavor's UUID: the cloud-config does not validate until it is changed")
		}
	}
	if u.MaxSharedLB != nil {
		im.s.LoadBalancer.MaxSharedLB = *u.MaxSharedLB
	}
	if u.ContainerStore != nil {
		im.note(sect+"container-store", "said where the TLS certificates of TERMINATED_HTTPS listeners are kept (Barbican or external)",
			"TLS termination is not supported: remove it")
	}
	if isTrue(u.ProviderRequiresSerialAPICalls) {
		im.note(sect+"provider-requires-serial-api-calls", "created load balancers in several calls, for providers that refuse a fully populated create",
			"a load balancer is always created in one fully populated call: such a provider is not supported")
	}
	if u.TLSContainerRef != nil {
		// upstream: kubernetes/cloud-provider-openstack pkg/openstack/loadbalancer.go:1384
		im.note(sect+"default-tls-container-ref", "made every Service's listeners TERMINATED_HTTPS with this Barbican certificate, unless the Service said otherwise",
			"listeners are plain TCP and terminate no TLS: Services that relied on it would pass TLS through to backends expecting HTTP; terminate TLS in the cluster (e.g. an Ingress controller) before the switch")
	}
	sortNotesFrom(im.notes, first)
}

func (im *importer) loadBalancerClasses() {
	names := make([]string, 0, len(im.up.LoadBalancerClass))
	for name := range im.up.LoadBalancerClass {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		im.note(fmt.Sprintf("[LoadBalancerClass %q]", name),
			"named a set of floating network, floating subnet, VIP network and subnet, and member subnet that Services chose with loadbalancer.openstack.org/class",
			"there are no classes: annotate the Services of this class with loadbalancer.openstack.org/floating-network-id, floating-subnet-id, network-id, subnet-id and member-subnet-id instead (Services still annotated with the class are refused)")
	}
}

func (im *importer) route() {
	copyString(&im.s.Routes.RouterID, im.up.Route.RouterID)
}

func (im *importer) metadata() {
	m := &im.up.Metadata
	// upstream: kubernetes/cloud-provider-openstack pkg/openstack/openstack.go:290-293
	// sets it as the timeout of every OpenStack API request.
	if m.RequestTimeout != nil {
		im.s.RequestTimeout = m.RequestTimeout.Duration
	}
	if m.SearchOrder != nil {
		im.note("[Metadata] search-order", "chose between the config drive and the metadata service for the node's own instance data",
			"neither is read: every Node's data comes from the Nova API")
	}
}

// networking carries [Networking] over. The two name keys may repeat
// and are kept in order, without duplicates or empty names (which match
// no network); address-sort-order's comma-separated CIDRs become a list.
// upstream: kubernetes/cloud-provider-openstack pkg/openstack/instances_addresses.go:41-57, :142-293
func (im *importer) networking() {
	n, out := &im.up.Networking, &im.s.Networking
	const sect = "[Networking] "
	first := len(im.notes)
	names := func(list []string) []string {
		var kept []string
		for _, name := range list {
			if name != "" && !slices.Contains(kept, name) {
				kept = append(kept, name)
			}
		}
		return kept
	}
	out.PublicNetworkNames = names(n.PublicNetworkName)
	for _, name := range names(n.InternalNetworkName) {
		if slices.Contains(out.PublicNetworkNames, name) {
			// Upstream looks at the public names first.
			im.note(sect+"internal-network-name", "named a network that public-network-name named too, whose fixed addresses were then ExternalIPs",
				"left out of networking.internalNetworkNames, as the network is in publicNetworkNames")
			continue
		}
		out.InternalNetworkNames = append(out.InternalNetworkNames, name)
	}
	if n.AddressSortOrder != nil {
		// util.SplitTrim: commas and blanks separate the CIDRs.
		for _, c := range strings.FieldsFunc(*n.AddressSortOrder, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
			if _, _, err := net.ParseCIDR(c); err != nil {
				im.note(sect+"address-sort-order", "skipped the items that are not CIDRs, with a warning",
					"left out of networking.addressSortOrder, which takes CIDRs only")
				continue
			}
			out.AddressSortOrder = append(out.AddressSortOrder, c)
		}
	}
	if n.IPv6SupportDisabled != nil {
		out.IPv6SupportDisabled = *n.IPv6SupportDisabled
	}
	sortNotesFrom(im.notes, first)
}

// unknownKeys reports the keys that are not the upstream CCM's: typos, and
// keys of other programs or of older upstream versions, which upstream
// ignored silently.
func (im *importer) unknownKeys(unknown []importcfg.UnknownKey) {
	blockStorage := false
	for _, k := range unknown {
		section, variable := k.Section, k.Variable
		key := k.String()
		if strings.EqualFold(section, "BlockStorage") {
			// One note for the whole section; gcfg warns once per key.
			if blockStorage {
				continue
			}
			blockStorage = true
			key = "[" + section + "]"
		}
		switch {
		case strings.EqualFold(section, "BlockStorage"):
			// upstream: kubernetes/cloud-provider-openstack commit 583b6e449 (#1815)
			im.note(key, "no longer read by the CCM; the Cinder CSI plugin, which may share this file, reads it",
				"not carried over: only the CSI plugin needs it")
		case strings.EqualFold(section, "LoadBalancer") && strings.EqualFold(variable, "use-octavia"):
			// upstream: kubernetes/cloud-provider-openstack commit 1117fa29c (#1882)
			im.note(key, "no longer read (old releases chose between Octavia and Neutron LBaaS with it)",
				"Octavia is always used: remove it")
		case strings.EqualFold(section, "LoadBalancer") && strings.EqualFold(variable, "node-security-group"):
			im.note(key, "no longer read (old releases named the nodes' security group with it)",
				"with loadBalancer.manageSecurityGroups one cluster-owned group is attached to the nodes' ports: remove it")
		default:
			im.note(key, "not a key of the upstream OpenStack CCM's cloud.conf, which ignored it",
				"ignored; check the spelling")
		}
	}
}

// sortNotesFrom orders notes[from:] by key, so that notes built from map
// iteration come out the same every run.
func sortNotesFrom(notes []importcfg.Note, from int) {
	slices.SortStableFunc(notes[from:], func(a, b importcfg.Note) int { return strings.Compare(a.Key, b.Key) })
}
