// Package gce plugs the GCE backend and its emulator (test/cloudsim/gce)
// into the conformance suite, the sandbox and the benchmarks. It is the
// only place outside providers/gce that knows how the backend names and
// describes what it creates.
package gce

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/option"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimgce "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/gce"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// What providers/gce writes into the descriptions of what it creates
// (upstream's keys), and how it names them.
const (
	descService = "kubernetes.io/service-name"
	descCluster = "kubernetes.io/cluster-id"
	// nodeRouteDescription marks the backend's pod routes.
	nodeRouteDescription = "k8s-node-route"
	firewallPrefix       = "k8s-fw-"
)

// serviceAccount is the service account whose key the manager uses;
// the policy the suite sets (test/e2e enforcePolicy) is this account's.
const serviceAccount = "multicloud-ccm@%s.iam.gserviceaccount.com"

// adminAccount is the harness's own service account: the user at the
// console or in a script (drift, reserved addresses), the upstream CCM
// and the load balancers it made. Its calls are never held to the
// manager's policy, as on Google Cloud another principal's roles are its
// own.
const adminAccount = "conformance-admin@%s.iam.gserviceaccount.com"

// computeScope is the OAuth scope the harness's clients ask for, as the
// backend's do.
const computeScope = "https://www.googleapis.com/auth/compute"

// Options tune the emulator beyond conformance.Options; the benchmarks
// set slower operations.
type Options struct {
	// OperationDelay is how long operations stay PENDING/RUNNING
	// (default 0: DONE when returned).
	OperationDelay time.Duration
}

// Adapter is the GCE adapter.
type Adapter struct {
	Options Options
}

var _ conformance.Adapter = Adapter{}

// Name implements conformance.Adapter.
func (Adapter) Name() string { return "gce" }

// Features implements conformance.Adapter: pod routes are network
// routes; the upstream CCM makes an external load balancer (target pool)
// by default and an internal one (backend service) when asked.
func (Adapter) Features() conformance.Features {
	return conformance.Features{Routes: true, AdoptionShapes: map[string]map[string]string{
		"external": nil,
		"internal": {annotationLBType: "Internal"},
	}, DualStack: true}
}

// Start implements conformance.Adapter.
func (a Adapter) Start(opts conformance.Options) (conformance.Cloud, error) {
	clusterID := opts.ClusterID
	if clusterID == "" {
		clusterID = "kubernetes"
	}
	emu := cloudsimgce.New(cloudsimgce.Config{ClusterID: clusterID, OperationDelay: a.Options.OperationDelay})
	srv, err := cloudsim.Start(emu)
	if err != nil {
		return nil, err
	}
	cfg := emu.Config()
	key, err := emu.NewServiceAccountKey(fmt.Sprintf(serviceAccount, cfg.Project), srv.URL()+cloudsimgce.TokenPath)
	if err != nil {
		_ = srv.Close()
		return nil, err
	}
	adminKey, err := emu.NewServiceAccountKey(fmt.Sprintf(adminAccount, cfg.Project), srv.URL()+cloudsimgce.TokenPath)
	if err != nil {
		_ = srv.Close()
		return nil, err
	}
	// The token is fetched at the harness's first call, and reused.
	//nolint:staticcheck // the key is the emulator's own service account key, not arbitrary JSON.
	creds, err := google.CredentialsFromJSON(context.Background(), adminKey, computeScope)
	if err != nil {
		_ = srv.Close()
		return nil, err
	}
	return &Cloud{Instances: conformance.Instances{Admin: emu}, emu: emu, srv: srv, fx: emu.Fixture(), clusterID: clusterID, opts: opts,
		key: key, adminKey: adminKey, adminToken: creds.TokenSource}, nil
}

// Cloud is one GCE emulator behind the adapter. GCE-only tests reach the
// emulator through it.
type Cloud struct {
	conformance.Instances
	emu       *cloudsimgce.Emulator
	srv       *cloudsim.Server
	fx        cloudsimgce.Fixture
	clusterID string
	opts      conformance.Options
	// key is the service-account key file (JSON) the manager uses.
	key []byte
	// adminKey is the harness's service account's key (adminAccount),
	// adminToken its tokens: every call of the harness's own clients
	// (adminOptions) goes as that account.
	adminKey   []byte
	adminToken oauth2.TokenSource

	mu     sync.Mutex
	cached *view
	// upstream are the base names MakeUpstreamLoadBalancer made, by
	// "<ns>/<name>": upstream's descriptions carry no cluster ID, so the
	// view would not count them as this cluster's.
	upstream map[string][]string
}

var _ conformance.Cloud = (*Cloud)(nil)

func (c *Cloud) Server() *cloudsim.Server { return c.srv }
func (c *Cloud) Close() error             { return c.srv.Close() }

// Emulator exposes the Compute Engine emulator to GCE-only tests.
func (c *Cloud) Emulator() *cloudsimgce.Emulator { return c.emu }

// Fixture is the emulator's fixture, for GCE-only tests.
func (c *Cloud) Fixture() cloudsimgce.Fixture { return c.fx }

// ClusterID is the cloud-config's clusterID.
func (c *Cloud) ClusterID() string { return c.clusterID }

// ServiceAccountKey is a key file (JSON) whose token_uri is the
// emulator's, for another client of the emulator, such as the upstream
// GCP CCM through GOOGLE_APPLICATION_CREDENTIALS: the harness's service
// account's (adminAccount), not the manager's, so that client's calls are
// never held to the manager's policy.
func (c *Cloud) ServiceAccountKey() []byte { return slices.Clone(c.adminKey) }

// adminOptions point a Compute Engine REST client at the emulator, its
// calls made as the harness's service account; base is the API's base
// URL path the client needs after the host ("" for the
// cloud.google.com/go/compute clients, "/compute/v1/" for
// google.golang.org/api's).
func (c *Cloud) adminOptions(base string) []option.ClientOption {
	return []option.ClientOption{option.WithEndpoint(strings.TrimSuffix(c.srv.URL(), "/") + base), option.WithTokenSource(c.adminToken)}
}

var _ conformance.Principal = (*Cloud)(nil)

// ManagerPrincipal is the manager's service account, as the emulator
// tells callers apart (cloudsimgce's Principal: the account an access
// token was issued to).
func (c *Cloud) ManagerPrincipal() string { return fmt.Sprintf(serviceAccount, c.fx.Project) }

var _ conformance.PermissionWithholder = (*Cloud)(nil)

// WithheldPermissions: creating the external load balancer's forwarding
// rule (its target pool and health check are made first, and must be
// taken down with the Service), and reading one instance, which the
// lifecycle checks of a Node with a providerID do (a GET each).
func (c *Cloud) WithheldPermissions() (string, string, string) {
	return "compute.forwardingRules.create", "external-load-balancers", "compute.instances.get"
}

// NodeTag is the network tag every launched instance has.
func (c *Cloud) NodeTag() string { return c.nodeTag() }

// Config points the backend at the emulator with a service-account key
// inline (credentialsJSON), so the suite covers the OAuth2 token flow and
// the key's redaction. Node tags are left to the backend to find (the
// tag every node has).
func (c *Cloud) Config() conformance.CloudConfig {
	var b strings.Builder
	fmt.Fprintf(&b, "  projectID: %s\n  region: %s\n  endpoint: %s\n", c.fx.Project, c.fx.Region, c.srv.URL())
	fmt.Fprintf(&b, "  networkName: %s\n  subnetworkName: %s\n", c.fx.NetworkName, c.fx.SubnetworkName)
	b.WriteString("  credentialsJSON: |\n")
	for _, line := range strings.Split(strings.TrimSpace(string(c.key)), "\n") {
		b.WriteString("    " + line + "\n")
	}
	if c.opts.QuickErrors {
		b.WriteString("  requestTimeout: 5s\n  maxAttempts: 3\n")
	}
	return conformance.CloudConfig{Provider: "gce", ClusterID: c.clusterID, Section: b.String(), Secrets: c.secrets()}
}

// secrets are the key's private parts: its ID and each line of the
// private key's body.
func (c *Cloud) secrets() []string {
	var k struct {
		ID  string `json:"private_key_id"`
		Key string `json:"private_key"`
	}
	_ = json.Unmarshal(c.key, &k)
	out := []string{k.ID}
	for _, line := range strings.Split(k.Key, "\n") {
		if len(line) >= 40 && !strings.HasPrefix(line, "-----") {
			out = append(out, line)
		}
	}
	return out
}

func (c *Cloud) ExtraArgs() []string { return nil }

// Zones are the region's zones, "us-central1-a".
func (c *Cloud) Zones() []string             { return slices.Clone(c.emu.Config().Zones) }
func (c *Cloud) Region() string              { return c.fx.Region }
func (c *Cloud) DefaultInstanceType() string { return cloudsimgce.DefaultMachineType }
func (c *Cloud) ReadFaultOp() string         { return cloudsim.ReadOps }
func (c *Cloud) ForeignProviderID() string {
	return "aws:///eu-west-1a/i-0123456789abcdef0"
}

// Inventory is everything the emulator holds.
func (c *Cloud) Inventory() []cloudsim.Resource { return c.srv.Resources() }

// MalformedAnnotation: a load balancer type that is neither.
func (c *Cloud) MalformedAnnotation() (string, string) {
	return "networking.gke.io/load-balancer-type", "Sideways"
}

// nodeTag is the network tag every node gets, as a cluster's instance
// template gives it; the backend's firewall rules target it.
func (c *Cloud) nodeTag() string { return "k8s-" + c.clusterID + "-node" }

var notName = regexp.MustCompile(`[^a-z0-9-]+`)

// instanceName makes a name hint an instance name (lower-case letters,
// digits and dashes, starting with a letter, at most 63 characters).
func instanceName(hint string) string {
	if hint == "" {
		return ""
	}
	n := notName.ReplaceAllString(strings.ToLower(hint), "-")
	if n == "" || n[0] < 'a' || n[0] > 'z' {
		n = "n-" + n
	}
	if len(n) > 63 {
		n = n[:63]
	}
	return strings.TrimRight(n, "-")
}

// UpstreamAnnotations: the upstream GCE CCM terminates no TLS (its load balancers are layer 4), so the refused ask is one whose exposure the two read differently: upstream makes "INTERNAL" (not exactly Internal or internal) an external load balancer, this backend an internal one.
func (c *Cloud) UpstreamAnnotations() (ignored, refused map[string]string) {
	return map[string]string{"alpha.cloud.google.com/load-balancer-backend-share": "true"}, map[string]string{
		"networking.gke.io/load-balancer-type": "INTERNAL",
	}
}

// Launch starts an instance; a kubelet on GCE registers its Node under
// the instance's name.
func (c *Cloud) Launch(spec conformance.InstanceSpec) (conformance.Instance, error) {
	gs := cloudsimgce.InstanceSpec{
		Name: instanceName(spec.NameHint), Zone: spec.Zone, MachineType: spec.InstanceType, ExternalIP: spec.PublicIP, Tags: []string{c.nodeTag()},
	}
	if c.opts.DualStack {
		// A dual-stack cluster's nodes: nic0 IPV4_IPV6 with a /96 of
		// the fixture subnetwork's internal IPv6 range.
		gs.StackType = cloudsimgce.StackDual
	}
	info, err := c.emu.Launch(gs)
	if err != nil {
		return conformance.Instance{}, err
	}
	return conformance.Instance{ID: info.Name, NodeName: info.Name, Zone: info.Zone}, nil
}

func (c *Cloud) KubeletProviderID(id string) (string, error) {
	info, ok := c.emu.Instance(id)
	if !ok {
		return "", fmt.Errorf("unknown instance %s", id)
	}
	return info.ProviderID, nil
}

func (c *Cloud) ExpectedNode(id string) (conformance.NodeExpectation, error) {
	info, ok := c.emu.Instance(id)
	if !ok {
		return conformance.NodeExpectation{}, fmt.Errorf("unknown instance %s", id)
	}
	addrs := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: info.InternalIP}}
	if info.ExternalIP != "" {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: info.ExternalIP})
	}
	// nic0's IPv6 is an InternalIP, after the IPv4 ones (upstream's
	// nodeAddressesFromInstance and orderAddresses, IPv4 first unless
	// stackType is IPV6).
	if info.IPv6Address != "" {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: info.IPv6Address})
	}
	addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeHostName, Address: info.Name})
	return conformance.NodeExpectation{
		ProviderID: info.ProviderID,
		Labels: map[string]string{
			corev1.LabelInstanceTypeStable: info.MachineType,
			corev1.LabelTopologyZone:       info.Zone,
			corev1.LabelTopologyRegion:     c.fx.Region,
		},
		Addresses: addrs,
	}, nil
}

// view is what LoadBalancers and ServiceResources read, built once per
// emulator generation (a benchmark polls 200 Services several times a
// second).
type view struct {
	gen uint64
	// bases are the Service's base names ("a<uid>") by "<ns>/<name>",
	// from the descriptions of everything the backend made for it.
	bases    map[string][]string
	rules    map[string]*computepb.ForwardingRule
	pools    map[string]*computepb.TargetPool
	services map[string]*computepb.BackendService
	fws      map[string]*computepb.Firewall
}

func (c *Cloud) view() *view {
	gen := c.emu.Generation()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cached != nil && c.cached.gen == gen {
		return c.cached
	}
	v := &view{gen: gen, bases: map[string][]string{}, rules: map[string]*computepb.ForwardingRule{},
		pools: map[string]*computepb.TargetPool{}, services: map[string]*computepb.BackendService{}, fws: map[string]*computepb.Firewall{}}
	note := func(desc, name string) {
		var d map[string]string
		if json.Unmarshal([]byte(desc), &d) != nil || d[descCluster] != c.clusterID || d[descService] == "" {
			return
		}
		base := strings.TrimSuffix(strings.TrimPrefix(name, firewallPrefix), ipv6Suffix)
		base = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(base, "-http-hc"), "-tcp"), "-udp")
		if !slices.Contains(v.bases[d[descService]], base) {
			v.bases[d[descService]] = append(v.bases[d[descService]], base)
		}
	}
	for _, r := range c.emu.ForwardingRules() {
		v.rules[r.GetName()] = r
		note(r.GetDescription(), r.GetName())
	}
	for _, p := range c.emu.TargetPools() {
		v.pools[p.GetName()] = p
		note(p.GetDescription(), p.GetName())
	}
	for _, s := range c.emu.RegionBackendServices() {
		v.services[s.GetName()] = s
		note(s.GetDescription(), s.GetName())
	}
	for _, f := range c.emu.Firewalls() {
		v.fws[f.GetName()] = f
		note(f.GetDescription(), f.GetName())
	}
	for _, a := range c.emu.Addresses() {
		note(a.GetDescription(), a.GetName())
	}
	for _, h := range c.emu.RegionHealthChecks() {
		note(h.GetDescription(), h.GetName())
	}
	for key, bases := range c.upstream {
		for _, base := range bases {
			if !slices.Contains(v.bases[key], base) {
				v.bases[key] = append(v.bases[key], base)
			}
		}
	}
	c.cached = v
	return v
}

func lastSegment(link string) string { return link[strings.LastIndex(link, "/")+1:] }

// LoadBalancers: one per Service that has a forwarding rule, its ports
// those its firewall rule admits (an external rule forwards a port
// range), its backends the target pool's instances (external) or the
// members of the backend service's instance groups (internal). The
// rules of one Service pointing at different backends is inconsistent.
func (c *Cloud) LoadBalancers(svc types.NamespacedName) []conformance.LoadBalancer {
	v := c.view()
	var out []conformance.LoadBalancer
	for _, base := range v.bases[svc.String()] {
		var rules []*computepb.ForwardingRule
		for _, name := range ruleNamesOf(base) {
			if r, ok := v.rules[name]; ok {
				rules = append(rules, r)
			}
		}
		if len(rules) == 0 {
			continue
		}
		lb := conformance.LoadBalancer{ID: "projects/" + c.fx.Project + "/regions/" + c.fx.Region + "/forwardingRules/" + base}
		// An IPv6-only internal Service has only the -ipv6 rule.
		for _, name := range []string{firewallPrefix + base, firewallPrefix + base + ipv6Suffix} {
			fw, ok := v.fws[name]
			if !ok {
				continue
			}
			for _, a := range fw.GetAllowed() {
				for _, p := range a.GetPorts() {
					var n int32
					if _, err := fmt.Sscan(p, &n); err == nil {
						lb.Ports = append(lb.Ports, n)
					}
				}
			}
		}
		slices.Sort(lb.Ports)
		lb.Ports = slices.Compact(lb.Ports)
		sets := map[string][]string{}
		for _, r := range rules {
			var members []string
			switch {
			case r.GetTarget() != "":
				members = c.poolMembers(v, lastSegment(r.GetTarget()))
			case r.GetBackendService() != "":
				members = c.groupMembers(v, lastSegment(r.GetBackendService()))
			}
			sets[strings.Join(members, ",")] = members
		}
		for _, k := range slices.Sorted(maps.Keys(sets)) {
			if len(sets) > 1 {
				lb.Inconsistent = append(lb.Inconsistent, fmt.Sprintf("a rule's backends are %v", sets[k]))
			}
			lb.Backends = append(lb.Backends, sets[k]...)
		}
		slices.Sort(lb.Backends)
		lb.Backends = slices.Compact(lb.Backends)
		out = append(out, lb)
	}
	return out
}

func (c *Cloud) poolMembers(v *view, pool string) []string {
	var out []string
	for _, i := range v.pools[pool].GetInstances() {
		out = append(out, lastSegment(i))
	}
	slices.Sort(out)
	return out
}

func (c *Cloud) groupMembers(v *view, service string) []string {
	var out []string
	for _, b := range v.services[service].GetBackends() {
		parts := strings.Split(b.GetGroup(), "/")
		if len(parts) < 3 {
			continue
		}
		zone := parts[len(parts)-3]
		for _, m := range c.emu.InstanceGroupMembers(zone, lastSegment(b.GetGroup())) {
			out = append(out, lastSegment(m))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ServiceResources: everything named after the Service's base names: its
// forwarding rules, target pool or backend services, address, own health
// checks and firewall rules.
func (c *Cloud) ServiceResources(svc types.NamespacedName) []cloudsim.Resource {
	bases := c.view().bases[svc.String()]
	var out []cloudsim.Resource
	for _, r := range c.srv.Resources() {
		name := lastSegment(r.ID)
		if slices.ContainsFunc(bases, func(b string) bool {
			return name == b || strings.HasPrefix(name, b+"-") || name == firewallPrefix+b || strings.HasPrefix(name, firewallPrefix+b+"-")
		}) {
			out = append(out, r)
		}
	}
	cloudsim.SortResources(out)
	return out
}

// PodRoutes: the backend's routes (described k8s-node-route), by next-hop
// instance.
func (c *Cloud) PodRoutes() map[string]string {
	out := map[string]string{}
	for _, r := range c.emu.Routes() {
		if r.GetDescription() == nodeRouteDescription && r.GetNextHopInstance() != "" {
			out[r.GetDestRange()] = lastSegment(r.GetNextHopInstance())
		}
	}
	return out
}

// SetOperationDelay changes how long operations take, for the
// benchmarks.
func (c *Cloud) SetOperationDelay(d time.Duration) { c.emu.SetOperationDelay(d) }
