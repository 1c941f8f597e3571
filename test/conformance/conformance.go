// Package conformance is the contract between the backend-agnostic CCM
// conformance suite (TestConformance in test/e2e) and one cloud: an
// Adapter starts that cloud's in-process emulator and answers, in the
// cloud's own terms, what the suite asks in neutral ones (which instances
// back this Service's load balancer, what providerID this Node must get).
//
// It is the pattern of kubernetes' e2e ProviderInterface and csi-test's
// sanity.Test(t, config): the scenarios are written once, and a new
// backend passes them unchanged by adding one small adapter package
// (test/conformance/<cloud>) and one line in test/conformance/clouds. The
// sandbox (make demo) and the benchmarks (make bench) use the same
// adapters, so CLOUD=<name> works there too.
//
// Only what differs between clouds belongs in an adapter; anything an
// adapter would compute the same way for every cloud belongs in the suite.
package conformance

import (
	"errors"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

// Adapter plugs one cloud into the suite, the sandbox and the benchmarks.
type Adapter interface {
	// Name is the cloud's provider name, as the cloud-config spells it
	// ("aws"); subtests are named after it.
	Name() string
	// Features says which optional scenarios apply to this cloud.
	Features() Features
	// Start runs a fresh emulator in-process, with the network fixture a
	// cluster needs (VPC, subnets, route table, ...) but no instances.
	Start(opts Options) (Cloud, error)
}

// Features are the optional capabilities a cloud's backend has.
type Features struct {
	// Routes: the backend programs pod-CIDR routes (Routes() is
	// supported), so the manager runs with --configure-cloud-routes=true
	// and the routes scenario applies.
	Routes bool
	// NoAdoption, when set, says why the adoption scenario (a load
	// balancer the upstream CCM made is taken over) does not run for
	// this cloud yet; the scenario is skipped with this reason.
	NoAdoption string
	// AdoptionShapes names each kind of load balancer the upstream CCM
	// makes, by the Service annotations that ask it for that kind; the
	// adoption scenario adopts one Service of each. Nil is one Service
	// without annotations.
	AdoptionShapes map[string]map[string]string
	// DualStack: the backend serves IPv6 Services; Start takes
	// Options.DualStack and its Cloud is a DualStackCloud, so the
	// dual-stack scenario runs.
	DualStack bool
}

// Options tune Start.
type Options struct {
	// ClusterID is the cloud-config's clusterID; the emulator's fixture is
	// tagged with it, as a cluster installer would.
	ClusterID string
	// Routes asks for a cloud-config that selects a route table (or the
	// cloud's equivalent) for pod routes.
	Routes bool
	// Switched asks for the cloud-config import-config makes from the
	// upstream CCM's file (AWS: loadBalancer.defaultType classic), as a
	// cluster switched from the upstream CCM runs.
	Switched bool
	// QuickErrors bounds the backend's request timeout and retries so an
	// injected fault reaches the controllers as an error within seconds
	// (the fault scenarios check the controllers saw it). It never
	// changes cache lifetimes: the suite measures the product's own
	// detection latency.
	QuickErrors bool
	// DualStack asks for a dual-stack cluster: the network has IPv6
	// blocks, every instance Launch starts gets an IPv6 address beside its
	// IPv4 one, and the cloud-config asks for both families of Node
	// addresses where the backend must be asked (AWS nodeIPFamilies).
	// Only a Cloud that is a DualStackCloud is started with it.
	DualStack bool
}

// CloudConfig is what the suite needs to write a cloud-config file.
type CloudConfig struct {
	// Provider is the cloud-config's provider field.
	Provider string
	// ClusterID is the cloud-config's clusterID field.
	ClusterID string
	// Section is the provider's own section, YAML indented for nesting
	// under "<provider>:" (each line starts with two spaces).
	Section string
	// Secrets are the credential values in Section; none may ever appear
	// in the manager's output.
	Secrets []string
	// Orphans is the cloud-config's orphans: ("" for the default, report).
	Orphans string
}

// YAML renders the whole cloud-config document.
func (c CloudConfig) YAML() string {
	doc := "apiVersion: multicloud-ccm.io/v1alpha1\nkind: CloudConfig\nprovider: " + c.Provider +
		"\nclusterID: " + c.ClusterID + "\n"
	if c.Orphans != "" {
		doc += "orphans: " + c.Orphans + "\n"
	}
	return doc + c.Provider + ":\n" + c.Section
}

// HybridYAML renders one cloud-config serving several clouds at once
// (providers: in the given order; the first is the default load-balancer
// cloud), from each cloud's own config. clusterID is shared, so every
// emulator must have been started with the same Options.ClusterID.
func HybridYAML(clusterID string, cfgs ...CloudConfig) string {
	var names []string
	for _, c := range cfgs {
		names = append(names, c.Provider)
	}
	doc := "apiVersion: multicloud-ccm.io/v1alpha1\nkind: CloudConfig\nclusterID: " + clusterID +
		"\nproviders: [" + strings.Join(names, ", ") + "]\n"
	for _, c := range cfgs {
		doc += c.Provider + ":\n" + c.Section
	}
	return doc
}

// InstanceSpec describes an instance to launch.
type InstanceSpec struct {
	// Zone is one of Cloud.Zones(); empty lets the cloud pick.
	Zone string
	// InstanceType is the cloud's machine type; empty means
	// Cloud.DefaultInstanceType().
	InstanceType string
	// PublicIP gives the instance a public address.
	PublicIP bool
	// NameHint is used where the cloud lets the caller name instances;
	// clouds that name instances themselves ignore it.
	NameHint string
}

// Instance is a launched instance.
type Instance struct {
	// ID is the cloud's instance identity as route and load-balancer
	// backends name it (an EC2 instance ID, a GCE instance name, ...).
	ID string
	// NodeName is the name a kubelet on this instance registers its Node
	// under by default.
	NodeName string
	// Zone the instance runs in.
	Zone string
}

// NodeExpectation is what an initialized Node of an instance must carry.
type NodeExpectation struct {
	// ProviderID in the upstream CCM's exact format.
	ProviderID string
	// Labels that must be present with these values: instance type
	// (node.kubernetes.io/instance-type), topology zone and region.
	Labels map[string]string
	// Addresses is the Node's exact address set (order not significant).
	Addresses []corev1.NodeAddress
}

// LoadBalancer is one cloud load balancer of a Service, in neutral terms.
type LoadBalancer struct {
	// ID is the cloud's identity of the load balancer.
	ID string
	// Ports are the frontend (listener) ports, sorted.
	Ports []int32
	// Backends are the instance IDs traffic is sent to, sorted and
	// deduplicated across ports. Every port must have the same set; a
	// port whose set differs is reported in Inconsistent.
	Backends []string
	// Inconsistent names ports whose backends differ from the others'.
	Inconsistent []string
}

// UpstreamLoadBalancer is a Service's load balancer as the upstream CCM
// made it.
type UpstreamLoadBalancer struct {
	// ID is the load balancer's ID as LoadBalancers reports it.
	ID string
	// Status is the status the upstream CCM wrote on the Service.
	Status corev1.LoadBalancerStatus
	// Annotations are those the upstream CCM wrote on the Service.
	Annotations map[string]string
	// Exclusive are the resource kinds (load balancers, addresses) of
	// which adopting must make none: a new one would be a duplicate or a
	// new address.
	Exclusive []string
	// Kept are the resource kinds (its parts) of which adopting alone,
	// before the Service changes, must remove none: a part replaced
	// could mean a moment without a backend.
	Kept []string
	// Finalizers are the upstream CCM's own finalizers on the Service
	// (GCE's gke.networking.io/l4-netlb-v1), which only the switched
	// manager can remove when the Service goes.
	Finalizers []string
}

// UpstreamClusterState is what a Cloud may also implement: objects the
// upstream CCM keeps in the cluster itself (GCE's ConfigMap
// kube-system/ingress-uid with the cluster ID its shared parts are named
// after), which the adoption scenario creates before the switch.
type UpstreamClusterState interface {
	UpstreamConfigMaps() []*corev1.ConfigMap
}

// Cloud is one running emulator as seen through its adapter.
type Cloud interface {
	// Server is the emulator: call counts, fault injection, inventory.
	Server() *cloudsim.Server
	// Close stops the emulator.
	Close() error

	// Config is the cloud-config for a manager pointed at this emulator.
	Config() CloudConfig
	// ExtraArgs are manager flags this cloud needs beyond the suite's.
	ExtraArgs() []string
	// Zones the emulator offers, in a stable order (at least two).
	Zones() []string
	// Region the zones belong to.
	Region() string
	// DefaultInstanceType is a machine type the emulator knows.
	DefaultInstanceType() string

	// Launch starts an instance; no Node is registered for it.
	Launch(spec InstanceSpec) (Instance, error)
	// Stop, Start and Terminate change an instance's power state.
	Stop(id string) error
	Start(id string) error
	Terminate(id string) error
	// KubeletProviderID is the spec.providerID a kubelet started with
	// --provider-id would set for the instance (the upstream format).
	KubeletProviderID(id string) (string, error)
	// ExpectedNode is what the manager must give the instance's Node.
	ExpectedNode(id string) (NodeExpectation, error)

	// LoadBalancers lists the load balancers the cloud holds for a
	// Service (normally one; more is a duplicate).
	LoadBalancers(svc types.NamespacedName) []LoadBalancer
	// ServiceResources lists every cloud resource created for a Service
	// (load balancer, listeners, pools, security groups, rules, ...).
	ServiceResources(svc types.NamespacedName) []cloudsim.Resource
	// MalformedAnnotation is a Service annotation the backend must reject.
	MalformedAnnotation() (key, value string)
	// UpstreamAnnotations are, for the switching scenarios, annotations of
	// the upstream CCM of this cloud: ignored ones that the backend does
	// not serve (the Service is served and warned), and refused ones that
	// ask for what the backend refuses to leave out (TLS termination, or
	// on clouds whose upstream CCM has no TLS, another ask that would
	// change the load balancer's exposure).
	UpstreamAnnotations() (ignored, refused map[string]string)
	// MakeUpstreamLoadBalancer makes the Service's load balancer through
	// the emulator's API the way the upstream CCM of this cloud shapes it
	// (names, tags or descriptions, parts and settings), with backends as
	// its nodes, and returns what the upstream CCM leaves behind. Only
	// called when Features().NoAdoption is empty.
	MakeUpstreamLoadBalancer(svc *corev1.Service, clusterName string, backends []Instance) (UpstreamLoadBalancer, error)

	// PodRoutes maps each pod-CIDR route's destination to the instance ID
	// it targets; nil when the cloud has no routes.
	PodRoutes() map[string]string

	// ReadFaultOp is the cloudsim fault target matching every read the
	// backend makes (normally cloudsim.ReadOps).
	ReadFaultOp() string
	// ForeignProviderID is a well-formed providerID of another cloud.
	ForeignProviderID() string
	// Inventory is everything the emulator holds, for whole-cloud leak
	// checks (cloudsim.DiffResources).
	Inventory() []cloudsim.Resource
}

// DriftMaker is what a Cloud may also implement: the changes a person (a
// console click, a cleanup script) makes to a Service's load balancer
// behind the manager's back, for the drift-repair scenario. Both go
// through the emulator's API, as a person's tools would.
type DriftMaker interface {
	// DeleteLoadBalancer deletes the whole of the Service's load balancer:
	// every part ServiceResources lists, but an address the user named.
	DeleteLoadBalancer(svc types.NamespacedName) error
	// DeletePart deletes one part a working load balancer needs (a
	// listener, a rule, a forwarding rule, a pool member) and says which.
	DeletePart(svc types.NamespacedName) (string, error)
}

// Sharer is what a Cloud may also implement when Services can share one
// load balancer by asking for it (OpenStack's load-balancer-id): the
// shared-parts scenario makes a Service share the first one's.
type Sharer interface {
	// ShareAnnotations are the annotations that make a Service share the
	// load balancer of first, a Service the manager serves.
	ShareAnnotations(first *corev1.Service) map[string]string
}

// UserAddresser is what a Cloud may also implement: an address the user
// reserves in the cloud themselves (a console click or CLI call, tagged
// for no cluster) and names on a Service. The manager uses it and never
// deletes it, however the Service goes: the orphan scenario orphans a
// Service that uses one.
type UserAddresser interface {
	// ReserveUserAddress reserves an address through the emulator's API
	// as a user would, and says how a Service names it.
	ReserveUserAddress() (UserAddress, error)
}

// UserAddress is an address a user reserved.
type UserAddress struct {
	// IP is the address, as the Service's status shows it.
	IP string
	// Use names it on a Service: spec.loadBalancerIP, or the cloud's
	// annotation where the upstream CCM takes it there (AWS's
	// aws-load-balancer-eip-allocations).
	Use func(*corev1.Service)
}

// Instances gives an adapter's Cloud Stop, Start and Terminate from its
// emulator's cloud-neutral admin shape (cloudsim.Instances), so every
// cloud is driven the same way; an adapter embeds it and writes only
// Launch, which knows the cloud's cluster tags and Node names.
type Instances struct {
	Admin cloudsim.Instances
}

// Stop stops an instance.
func (i Instances) Stop(id string) error { return i.Admin.StopInstance(id) }

// Start starts a stopped instance.
func (i Instances) Start(id string) error { return i.Admin.StartInstance(id) }

// Terminate terminates an instance.
func (i Instances) Terminate(id string) error { return i.Admin.TerminateInstance(id) }

// PodCIDRKind is which instance the node-ipam scenario asks for.
type PodCIDRKind int

const (
	// PodCIDRsDefault: an instance of the cluster's usual kind, whose
	// Node the cloud allocator gives pod CIDRs (GCE: an alias range from
	// "pods"; AWS: a delegated /80; Azure: a VM of the default pool).
	PodCIDRsDefault PodCIDRKind = iota
	// PodCIDRsOtherPool: an instance of another node pool, with another
	// range size where the cloud has pools (Azure: a scale set tagged
	// kubernetesNodeCIDRMaskIPV4=26; GCE: a /26 alias range).
	PodCIDRsOtherPool
	// PodCIDRsNone: an instance the cloud holds no range for; its Node
	// gets none and a CIDRNotAvailable Warning. Clouds that allocate from
	// the cluster CIDR (Azure) have no such instance: LaunchPodCIDRs
	// answers ErrNoSuchKind.
	PodCIDRsNone
)

// ErrNoSuchKind is LaunchPodCIDRs' answer for a kind the cloud has not.
var ErrNoSuchKind = errors.New("the cloud has no instance of this kind")

// PodCIDRWant is what a Node's pod CIDRs must be.
type PodCIDRWant struct {
	// Exact are the pod CIDRs, in order, when the cloud holds them.
	Exact []string
	// Within and Masks, for ranges allocated from the cluster CIDR: the
	// i-th pod CIDR lies in Within[i] and has Masks[i] bits.
	Within []string
	Masks  []int
	// None: the Node gets no pod CIDR.
	None bool
	// NetworkAvailable: the allocator sets NetworkUnavailable=False (the
	// cloud routes the ranges itself).
	NetworkAvailable bool
}

// PodCIDRCloud is what a Cloud may also implement when its backend has a
// cloud allocator (controllers/nodeipam): the scenario "pod CIDRs come
// from the cloud".
type PodCIDRCloud interface {
	// PodCIDRArgs are the manager flags that turn the allocator on as
	// this cloud's users run it (GCE: kOps' flag set).
	PodCIDRArgs() []string
	// LaunchPodCIDRs starts an instance of the kind and says what its
	// Node's pod CIDRs must be.
	LaunchPodCIDRs(spec InstanceSpec, kind PodCIDRKind) (Instance, PodCIDRWant, error)
}

// Principal is what a Cloud may also implement when its emulator
// enforces policies (cloudsim.Authorizer): the identity the manager calls
// as, from its cloud-config. The harness's own calls (a user reserving an
// address, making drift, playing the upstream CCM) go as another
// identity and are never checked.
type Principal interface {
	ManagerPrincipal() string
}

// PermissionWithholder is what a Cloud may also implement when its
// backend declares permissions: which ones the scenario "a permission
// withheld gives a clear message and loses nothing" withholds.
type PermissionWithholder interface {
	// WithheldPermissions are a permission a new Service's load balancer
	// needs, with the feature that declares it, and the permission the
	// instance lookups of Node lifecycle need.
	WithheldPermissions() (loadBalancer, feature, instances string)
}

// DualStackCloud is what a Cloud implements once its backend serves IPv6:
// the dual-stack scenario runs on it, started with Options.DualStack.
type DualStackCloud interface {
	// DualStackCases are the Services the scenario makes and what each
	// must get: at least a dual-stack Service that is served (with both
	// families where the cloud can), and an IPv6-only one, served or
	// refused as the cloud can.
	DualStackCases() []DualStackCase
	// LoadBalancerFamilies are the IP families the Service's load
	// balancers in the cloud serve (their frontend addresses), sorted
	// (IPv4 before IPv6).
	LoadBalancerFamilies(svc types.NamespacedName) []corev1.IPFamily
}

// DualStackCase is one Service of the dual-stack scenario.
type DualStackCase struct {
	// Name is the Service's name.
	Name string
	// Families and Policy are its spec.ipFamilies and ipFamilyPolicy.
	Families []corev1.IPFamily
	Policy   corev1.IPFamilyPolicy
	// Annotations are the cloud's annotations on it, if any.
	Annotations map[string]string
	// Serves are the families its load balancer must serve, sorted; nil
	// when the Service is refused.
	Serves []corev1.IPFamily
	// StatusFamilies are the families of its status's IPs, in order; nil
	// when the status names a hostname (AWS).
	StatusFamilies []corev1.IPFamily
	// Refusal is a phrase of the Warning event on a refused Service.
	Refusal string
	// Upstream: the upstream CCM made the Service's load balancer
	// (MakeUpstreamLoadBalancer) before the manager took the cluster over;
	// Serves and StatusFamilies are what the taken-over load balancer
	// serves, and its status must stay upstream's.
	Upstream bool
	// Warning is a phrase of the one Warning a served Service gets, where
	// the upstream CCM warns too (OpenStack's LoadBalancerFloatingIPSkipped
	// for an IPv6 VIP); empty: a served Service gets none.
	Warning string
}

// The families of the dual-stack cases, in spec.ipFamilies order.
var (
	IPv4Only  = []corev1.IPFamily{corev1.IPv4Protocol}
	IPv6Only  = []corev1.IPFamily{corev1.IPv6Protocol}
	IPv4First = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	IPv6First = []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}
)
