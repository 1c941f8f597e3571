package openstack

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/flight"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/keylock"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/svcopts"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/ttlcache"
)

// The member security group (manageSecurityGroups). The upstream CCM
// makes a group per load balancer and adds it to every member port by
// read-modify-write, so each Service costs a port write per node and
// concurrent syncs overwrite each other's port updates, leaking groups
// attached to every node. Here the cluster has one group, attached to
// each node port once, when its Node first backs a load balancer (with
// the port's revision_number as If-Match, so a concurrent writer's change
// is never lost); each Service's rules live in it, marked with the
// Service in their description. A Service change costs rule writes, never
// port writes. When the last Service with rules in it goes, the group is
// detached from the node ports and deleted (release).
//
// Every decision on the group (make it, attach it, write a Service's
// rules, delete it) is taken under its lock from a read made under it:
// the service controller runs several workers, and a deletion deciding
// "no Service needs the group" from a read older than another worker's
// rule write would delete a group that Service relies on, or keep one
// nothing needs.

const (
	// attachedTTL bounds how long a port is trusted to still carry the
	// group without reading it again.
	attachedTTL = 30 * time.Minute
)

// memberGroupName is the cluster's member security group. MUST NOT change.
func memberGroupName(clusterID string) string { return "k8s-lb-members-" + clusterID }

// ruleDescription marks a rule with the Service it admits traffic for.
func ruleDescription(svc *v1.Service) string { return serviceTag(svc) }

type memberGroup struct {
	api       *clients
	clusterID string
	provider  string

	mu sync.Mutex
	id string
	// idFill shares finding (or creating) the group.
	idFill flight.Group[string]
	// attached holds the node ports known to carry the group (under mu:
	// forget replaces it).
	attached *ttlcache.Cache[bool]
	clock    clock.Clock
	// locks holds the group's key (its name) around every read-decide-
	// write of the group: one attach pass, one Service's rules, the
	// deletion of the group, at a time.
	locks keylock.Locks
}

// lock takes the group's lock.
func (g *memberGroup) lock() (unlock func()) { return g.locks.Lock(memberGroupName(g.clusterID)) }

func newMemberGroup(api *clients, clusterID, provider string, clk clock.Clock) *memberGroup {
	return &memberGroup{api: api, clusterID: clusterID, provider: provider, attached: ttlcache.New[bool](attachedTTL, clk), clock: clk}
}

// attachedPorts is the cache of node ports known to carry the group.
func (g *memberGroup) attachedPorts() *ttlcache.Cache[bool] {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.attached
}

// forget drops the group's ID and which node ports carry it, so the next
// sync finds (or makes) the group again and checks the ports: a group
// deleted outside Kubernetes is not written to for ever.
func (g *memberGroup) forget() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.id = ""
	g.attached = ttlcache.New[bool](attachedTTL, g.clock)
}

// groupID finds the cluster's group by name, or (create) creates it; ""
// when there is none and create is false.
func (g *memberGroup) groupID(ctx context.Context, create bool) (string, error) {
	g.mu.Lock()
	id := g.id
	g.mu.Unlock()
	if id != "" {
		return id, nil
	}
	return g.idFill.Do(ctx, fmt.Sprint(create), func(ctx context.Context) (string, error) {
		name := memberGroupName(g.clusterID)
		pages, err := groups.List(g.api.network, groups.ListOpts{Name: name}).AllPages(ctx)
		if err != nil {
			return "", fmt.Errorf("list security groups named %s: %w", name, err)
		}
		list, err := groups.ExtractGroups(pages)
		if err != nil {
			return "", err
		}
		var id string
		switch {
		case len(list) == 0 && !create:
			return "", nil
		case len(list) == 0:
			sg, err := groups.Create(ctx, g.api.network, groups.CreateOpts{
				Name:        name,
				Description: "Admits load balancer traffic to the NodePorts of cluster " + g.clusterID + "; managed by multicloud-ccm",
			}).Extract()
			if err != nil {
				return "", fmt.Errorf("create security group %s: %w", name, err)
			}
			klog.FromContext(ctx).Info("Created the cluster's member security group", "id", sg.ID, "name", name)
			id = sg.ID
		case len(list) == 1:
			id = list[0].ID
		default:
			return "", fmt.Errorf("%d security groups are named %s; delete all but one", len(list), name)
		}
		g.mu.Lock()
		g.id = id
		g.mu.Unlock()
		return id, nil
	})
}

// attach adds the group to the ports of nodes that do not carry it yet:
// one listing of the nodes' network finds their ports, and each port is
// written once, with If-Match. Passes run one at a time, so Services
// synced together never race for the same port.
func (g *memberGroup) attach(ctx context.Context, subnets lbSubnets, members []member) error {
	attached := g.attachedPorts()
	todo := func() []string {
		var out []string
		for _, m := range members {
			if _, ok := attached.Get(m.address); !ok {
				out = append(out, m.address)
			}
		}
		return out
	}
	if len(todo()) == 0 {
		return nil
	}
	defer g.lock()()
	// Another pass may have done them meanwhile, or a release deleted
	// the group (and forgot which ports carried it).
	attached = g.attachedPorts()
	addrs := todo()
	if len(addrs) == 0 {
		return nil
	}
	return g.attachAddresses(ctx, attached, subnets.memberNetworkID, addrs)
}

// attachLocked is attach for a caller holding the group's lock.
func (g *memberGroup) attachLocked(ctx context.Context, subnets lbSubnets, members []member) error {
	attached := g.attachedPorts()
	var addrs []string
	for _, m := range members {
		if _, ok := attached.Get(m.address); !ok {
			addrs = append(addrs, m.address)
		}
	}
	if len(addrs) == 0 {
		return nil
	}
	return g.attachAddresses(ctx, attached, subnets.memberNetworkID, addrs)
}

func (g *memberGroup) attachAddresses(ctx context.Context, attached *ttlcache.Cache[bool], networkID string, addrs []string) error {
	sg, err := g.groupID(ctx, true)
	if err != nil {
		return err
	}
	pages, err := ports.List(g.api.network, ports.ListOpts{NetworkID: networkID}).AllPages(ctx)
	if err != nil {
		return fmt.Errorf("list ports of network %s: %w", networkID, err)
	}
	list, err := ports.ExtractPorts(pages)
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, a := range addrs {
		want[a] = true
	}
	for i := range list {
		p := &list[i]
		addr := ""
		for _, ip := range p.FixedIPs {
			if want[ip.IPAddress] {
				addr = ip.IPAddress
			}
		}
		if addr == "" || !strings.HasPrefix(p.DeviceOwner, "compute:") {
			continue
		}
		if err := g.addToPort(ctx, p, sg); err != nil {
			return err
		}
		attached.Set(addr, true)
	}
	return nil
}

// addToPort adds the group to a port's groups.
func (g *memberGroup) addToPort(ctx context.Context, p *ports.Port, sg string) error {
	changed, err := updatePort(ctx, g.api.network, p, func(p *ports.Port) (ports.UpdateOpts, bool) {
		if slices.Contains(p.SecurityGroups, sg) {
			return ports.UpdateOpts{}, false
		}
		groups := append(slices.Clone(p.SecurityGroups), sg)
		return ports.UpdateOpts{SecurityGroups: &groups}, true
	})
	if err != nil {
		return fmt.Errorf("add security group %s to port %s: %w", sg, p.ID, err)
	}
	if changed {
		klog.FromContext(ctx).V(2).Info("Attached the member security group to a node port", "port", p.ID)
	}
	return nil
}

// rule is one ingress rule the group should hold for a Service.
type rule struct {
	protocol string
	port     int
	prefix   string
}

// wantedRules admit each NodePort (and the health check port) from the
// VIP subnet and the member subnet: an amphora sends to members from its
// port on the member subnet when that is another subnet (upstream admits
// the member subnet's CIDR: kubernetes/cloud-provider-openstack
// pkg/openstack/loadbalancer_sg.go:240-251, v1.36.0), so a switch that
// takes over upstream's group keeps admitting what it admitted. OVN keeps
// the client's address, so with it the source ranges (default everyone)
// are admitted too (upstream: loadbalancer_sg.go:252-257).
func (g *memberGroup) wantedRules(opts *lbOptions, subnets lbSubnets) []rule {
	sources := []string{subnets.vipCIDR.String()}
	if subnets.memberCIDR.IsValid() && subnets.memberCIDR != subnets.vipCIDR {
		sources = append(sources, subnets.memberCIDR.String())
	}
	monitorSources := []string{subnets.vipCIDR.String()}
	if o := subnets.other; o != nil {
		// A load balancer with a VIP of each family reaches the
		// second family's members from that family's subnets.
		sources = append(sources, o.vipCIDR.String())
		if o.memberCIDR.IsValid() && o.memberCIDR != o.vipCIDR {
			sources = append(sources, o.memberCIDR.String())
		}
		monitorSources = append(monitorSources, o.vipCIDR.String())
	}
	if g.provider == "ovn" {
		if len(opts.sourceRanges) == 0 {
			sources = append(sources, svcopts.AllClients(opts.family)[0].String())
		} else {
			sources = append(sources, opts.sourceRanges...)
		}
	}
	var out []rule
	for _, p := range opts.ports {
		for _, s := range sources {
			out = append(out, rule{strings.ToLower(p.protocol), p.nodePort, s})
		}
	}
	if opts.monitor != nil && opts.monitor.port != 0 {
		for _, s := range monitorSources {
			out = append(out, rule{"tcp", opts.monitor.port, s})
		}
	}
	slices.SortFunc(out, func(a, b rule) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	return slices.Compact(out)
}

// ensureRules attaches the group to the nodes' ports and makes the
// group's rules for the Service exactly the wanted ones.
func (g *memberGroup) ensureRules(ctx context.Context, svc *v1.Service, opts *lbOptions, subnets lbSubnets, members []member) error {
	// Under the lock: a release deciding from its read that no Service
	// needs the group either ran before (the group is made again here)
	// or runs after and sees these rules.
	defer g.lock()()
	if err := g.attachLocked(ctx, subnets, members); err != nil {
		return err
	}
	sg, err := g.groupID(ctx, true)
	if err != nil {
		return err
	}
	have, err := g.rules(ctx, sg, svc)
	if err != nil {
		return err
	}
	want := g.wantedRules(opts, subnets)
	var create []rules.CreateOpts
	keep := map[string]bool{}
	for _, w := range want {
		i := slices.IndexFunc(have, func(r rules.SecGroupRule) bool {
			return r.Protocol == w.protocol && r.PortRangeMin == w.port && r.PortRangeMax == w.port && r.RemoteIPPrefix == w.prefix
		})
		if i >= 0 {
			keep[have[i].ID] = true
			continue
		}
		ether := rules.EtherType4
		if p, err := netip.ParsePrefix(w.prefix); err == nil && p.Addr().Is6() {
			ether = rules.EtherType6
		}
		create = append(create, rules.CreateOpts{
			Direction: rules.DirIngress, EtherType: ether, SecGroupID: sg, Description: ruleDescription(svc),
			Protocol: rules.RuleProtocol(w.protocol), PortRangeMin: w.port, PortRangeMax: w.port, RemoteIPPrefix: w.prefix,
		})
	}
	if len(create) > 0 {
		if err := rules.CreateBulk(ctx, g.api.network, create).Err; err != nil && !isConflict(err) {
			return fmt.Errorf("create %d security group rules: %w", len(create), err)
		}
	}
	for _, r := range have {
		if !keep[r.ID] {
			if err := ignoreNotFound(rules.Delete(ctx, g.api.network, r.ID).Err); err != nil {
				return fmt.Errorf("delete security group rule %s: %w", r.ID, err)
			}
		}
	}
	return nil
}

// rules are the group's rules for the Service.
func (g *memberGroup) rules(ctx context.Context, sg string, svc *v1.Service) ([]rules.SecGroupRule, error) {
	pages, err := rules.List(g.api.network, rules.ListOpts{SecGroupID: sg, Description: ruleDescription(svc)}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list rules of security group %s: %w", sg, err)
	}
	return rules.ExtractRules(pages)
}

// release removes the Service's rules from the group and, when no rule
// of another Service is left in it, detaches the group from every port
// and deletes it. Under the group's lock, from one listing of its rules
// read under it: every other worker's rule write is in that read, so
// any number of Services deleted at once leave no group, and a Service
// being ensured keeps it.
func (g *memberGroup) release(ctx context.Context, svc *v1.Service) error {
	defer g.lock()()
	sg, err := g.groupID(ctx, false)
	if err != nil || sg == "" {
		return err
	}
	pages, err := rules.List(g.api.network, rules.ListOpts{SecGroupID: sg}).AllPages(ctx)
	if isNotFound(err) {
		g.forget()
		return nil
	}
	if err != nil {
		return fmt.Errorf("list rules of security group %s: %w", sg, err)
	}
	all, err := rules.ExtractRules(pages)
	if err != nil {
		return err
	}
	var others []string
	for _, r := range all {
		switch {
		case r.Description == ruleDescription(svc):
			if err := ignoreNotFound(rules.Delete(ctx, g.api.network, r.ID).Err); err != nil {
				return fmt.Errorf("delete security group rule %s: %w", r.ID, err)
			}
		case strings.HasPrefix(r.Description, "kube_service="):
			others = append(others, strings.TrimPrefix(r.Description, "kube_service="))
		}
	}
	if len(others) > 0 {
		slices.Sort(others)
		klog.FromContext(ctx).V(2).Info("The member security group stays for other Services", "id", sg, "services", slices.Compact(others))
		return nil
	}
	if err := detachAndDelete(ctx, g.api.network, sg); err != nil {
		return err
	}
	g.forget()
	klog.FromContext(ctx).Info("Deleted the cluster's member security group: no Service needs it", "id", sg, "name", memberGroupName(g.clusterID))
	return nil
}

// detachAndDelete removes a security group from every port that carries
// it (one listing, then one write per port, with If-Match so a
// concurrent change to the port's groups is never lost), then deletes
// it. Neutron refuses to delete a group a port still carries
// (409 SecurityGroupInUse): one attached meanwhile by someone else makes
// this an error, and the caller retries. Gone already is success.
func detachAndDelete(ctx context.Context, network *gophercloud.ServiceClient, sg string) error {
	pages, err := ports.List(network, ports.ListOpts{SecurityGroups: []string{sg}}).AllPages(ctx)
	if err != nil {
		return fmt.Errorf("list ports with security group %s: %w", sg, err)
	}
	list, err := ports.ExtractPorts(pages)
	if err != nil {
		return err
	}
	for i := range list {
		p := &list[i]
		_, err := updatePort(ctx, network, p, func(p *ports.Port) (ports.UpdateOpts, bool) {
			if !slices.Contains(p.SecurityGroups, sg) {
				return ports.UpdateOpts{}, false
			}
			rest := slices.DeleteFunc(slices.Clone(p.SecurityGroups), func(id string) bool { return id == sg })
			return ports.UpdateOpts{SecurityGroups: &rest}, true
		})
		if err := ignoreNotFound(err); err != nil {
			return fmt.Errorf("remove security group %s from port %s: %w", sg, p.ID, err)
		}
	}
	if err := ignoreNotFound(groups.Delete(ctx, network, sg).Err); err != nil {
		return fmt.Errorf("delete security group %s: %w", sg, err)
	}
	return nil
}
