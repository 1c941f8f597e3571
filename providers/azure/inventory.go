package azure

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/multicloud-ccm/multicloud-ccm/providers/inventory"
)

// The inventory of the cluster's load balancers (providers/inventory),
// for drift repair and orphan cleanup. One listing serves every Service:
//
//   - LoadBalancers_List of loadBalancerResourceGroup: the cluster's two
//     load balancers (<loadBalancerName> and -internal, unless tagged for
//     another cluster) with every frontend, rule, probe and pool inline;
//   - PublicIPAddresses_List of resourceGroup, loadBalancerResourceGroup
//     and every group a frontend's public IP is in;
//   - NetworkSecurityGroups_Get of securityGroupName, when configured.
//
// So the calls are one per page of each, whatever the number of
// Services. Nothing else is read: a subnet is listed from the frontends
// that use it (ARM deletes no subnet a frontend uses).
//
// What the cloud records of a part's Service: a public IP the manager
// made carries the Service's namespace/name in its k8s-azure-service tag;
// every frontend, rule and probe is named after the Service's UID
// (naming.go), as upstream names them: "a" and the first 31 of the
// UID's 32 hex digits (this manager's legacy names: all 32). Security
// rules are upstream's, shared by every Service with the same sources and
// ports, and name no Service: a rule's destinations are its Services'
// frontend addresses (the nodes' without floating IP), so a rule is
// listed once per Service it admits ("<rule ID>#<base>"), with that
// Service's destinations only. The Service of a part is:
//
//   - with the Service informer, the Service whose UID the part's name
//     carries: its namespace/name and whole UID;
//   - else the namespace/name its public IP's tag records (none for an
//     internal Service: the cloud records no name), and the UID its name
//     carries: whole under a legacy name; under upstream's 31 digits, the
//     UID's first 35 characters when the informer says no Service has it
//     (so it equals no Service's UID), empty without the informer.

var _ inventory.Inventory = (*loadBalancers)(nil)

// Kinds of the listing, in Azure's terms.
const (
	kindLoadBalancer = "load balancer"
	kindBackendPool  = "backend address pool"
	kindFrontend     = "frontend IP configuration"
	kindRule         = "load-balancing rule"
	kindProbe        = "health probe"
	kindPublicIP     = "public IP address"
	kindSecurityRule = "security rule"
	kindSubnet       = "subnet"
)

// Deletion order: a security rule's destinations go first (they are told
// apart by the load balancer's rules and frontends), then rules, the
// probes they use, the frontends they use (IPv6 ones before IPv4 ones:
// ARM refuses a load balancer with an IPv6 frontend and no IPv4 one),
// and the public IPs the frontends use. Shared parts are deleted as
// orphans only once unneeded: a load balancer with no frontend left,
// its pools with it.
const (
	orderSecurityRule = iota
	orderRule
	orderProbe
	orderFrontendIPv6
	orderFrontend
	orderPublicIP
	orderShared
)

// Load balancer collections, as ARM names them in IDs.
const (
	collFrontends = "frontendIPConfigurations"
	collRules     = "loadBalancingRules"
	collProbes    = "probes"
)

// errPartInUse is a part DeleteOrphan leaves because another part still
// uses it (a frontend with another Service's rules on it).
var errPartInUse = errors.New("still in use")

// listedPart is one part of the listing and how to delete it.
type listedPart struct {
	inventory.Owned
	// del deletes it; nil for a part never deleted.
	del func(ctx context.Context) error
}

// Owned lists the cluster's load-balancer resources (see above).
func (l *loadBalancers) Owned(ctx context.Context) ([]inventory.Owned, error) {
	parts, err := l.listParts(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]inventory.Owned, 0, len(parts))
	for _, p := range parts {
		out = append(out, p.Owned)
	}
	return out, nil
}

// Forget drops what the backend keeps between syncs: the load balancers'
// and the security group's copies (the shared writers'), what it believes
// the NIC-based pools hold, and the Service's security destinations. The
// next sync of any Service then reads them afresh, so a part deleted
// behind the manager's back is seen missing and made again; the caches
// are shared, so one Service's Forget makes every Service's next sync
// read.
func (l *loadBalancers) Forget(svc types.NamespacedName) {
	l.public.forget()
	l.internal.forget()
	if l.nsg != nil {
		l.nsg.forget()
	}
	if l.nics != nil {
		l.nics.forget()
	}
	l.mu.Lock()
	delete(l.dests, svc.String())
	l.mu.Unlock()
}

// DeleteOrphan deletes one part of the listing. It lists again and acts
// on the part as it is now: one gone is success; one that is now Kept or
// shared, or whose Service or UID changed since o was listed, is refused.
// A load balancer's rule, probe or frontend goes by a write of the whole
// load balancer without it (through its shared writer: ETag-checked,
// re-applied on 412; with its last frontend the load balancer goes, as
// with EnsureLoadBalancerDeleted); a security rule loses the Service's
// destinations (and goes with its last); a public IP shared by several
// Services loses the Service from its tag (and goes with the last). A
// shared part goes only when this listing, too, says no Service needs
// it (Unneeded): a load balancer (or pool) of the cluster with no
// frontend left, deleted through its shared writer only if still so
// (deleteUnneededLB).
func (l *loadBalancers) DeleteOrphan(ctx context.Context, o inventory.Owned) error {
	if o.Kept {
		return fmt.Errorf("%s %s is user-supplied: never deleted", o.Kind, o.ID)
	}
	parts, err := l.listParts(ctx)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if !strings.EqualFold(p.ID, o.ID) || p.Kind != o.Kind {
			continue
		}
		switch {
		case p.Kept:
			return fmt.Errorf("%s %s is user-supplied: never deleted", p.Kind, p.ID)
		case p.Service != o.Service || p.UID != o.UID:
			return fmt.Errorf("%s %s now belongs to Service %q (UID %q), not %q (UID %q): list again", p.Kind, p.ID, p.Service, p.UID, o.Service, o.UID)
		case p.del == nil, p.Service == (types.NamespacedName{}) && p.UID == "" && !p.Unneeded:
			return fmt.Errorf("%s %s is shared by the cluster's Services: never deleted as an orphan while one needs it", p.Kind, p.ID)
		}
		klog.FromContext(ctx).Info("Deleting orphaned load-balancer resource", "kind", p.Kind, "id", p.ID, "service", p.Service, "uid", p.UID)
		return p.del(ctx)
	}
	return nil
}

// listParts reads the cloud and lists the parts.
func (l *loadBalancers) listParts(ctx context.Context) ([]*listedPart, error) {
	idx, err := l.serviceIndex()
	if err != nil {
		return nil, err
	}
	lbs, err := l.listOwnLoadBalancers(ctx)
	if err != nil {
		return nil, err
	}
	groups := []string{l.cfg.ResourceGroup, l.cfg.LoadBalancerResourceGroup}
	for _, lb := range lbs {
		if lb == nil || lb.Properties == nil {
			continue
		}
		for _, fe := range lb.Properties.FrontendIPConfigurations {
			if rg, _, ok := resourceGroupAndName(feIPID(fe)); ok {
				groups = append(groups, rg)
			}
		}
	}
	pips, err := l.listPublicIPs(ctx, groups)
	if err != nil {
		return nil, err
	}
	var nsg *armnetwork.SecurityGroup
	if l.nsg != nil {
		resp, err := l.api.nsgs.Get(ctx, l.cfg.SecurityGroupResourceGroup, l.cfg.SecurityGroupName, nil)
		switch {
		case isNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("get network security group %s/%s: %w", l.cfg.SecurityGroupResourceGroup, l.cfg.SecurityGroupName, err)
		default:
			nsg = &resp.SecurityGroup
		}
	}
	l.mu.Lock()
	nodeIPs := slices.Clone(l.backendIPs)
	l.mu.Unlock()
	b := newPartsBuilder(l, idx, lbs, pips, nodeIPs)
	b.loadBalancers()
	b.publicIPs()
	b.securityRules(nsg)
	slices.SortStableFunc(b.out, func(x, y *listedPart) int {
		if x.Order != y.Order {
			return x.Order - y.Order
		}
		if c := strings.Compare(x.Kind, y.Kind); c != 0 {
			return c
		}
		return strings.Compare(x.ID, y.ID)
	})
	return b.out, nil
}

// listOwnLoadBalancers are the cluster's load balancers by internal,
// from one listing of their resource group. One tagged for another
// cluster (two clusters with one name in one group) is not listed.
func (l *loadBalancers) listOwnLoadBalancers(ctx context.Context) (map[bool]*armnetwork.LoadBalancer, error) {
	out := map[bool]*armnetwork.LoadBalancer{}
	rg := l.cfg.LoadBalancerResourceGroup
	p := l.api.lbs.NewListPager(rg, nil)
	for p.More() {
		page, err := p.NextPage(ctx)
		if isNotFound(err) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list load balancers in %s: %w", rg, err)
		}
		for _, lb := range page.Value {
			if lb == nil {
				continue
			}
			if c, ok := lb.Tags[tagCluster]; ok && !strings.EqualFold(deref(c), l.clusterID) {
				continue
			}
			for _, internal := range []bool{false, true} {
				if strings.EqualFold(deref(lb.Name), l.lbNameFor(internal)) {
					out[internal] = lb
				}
			}
		}
	}
	return out, nil
}

// listPublicIPs lists the public IPs of each group once (a group that
// does not exist has none).
func (l *loadBalancers) listPublicIPs(ctx context.Context, groups []string) ([]*armnetwork.PublicIPAddress, error) {
	seen := map[string]bool{}
	var out []*armnetwork.PublicIPAddress
	for _, rg := range groups {
		if rg == "" || seen[strings.ToLower(rg)] {
			continue
		}
		seen[strings.ToLower(rg)] = true
		p := l.api.publicIPs.NewListPager(rg, nil)
		for p.More() {
			page, err := p.NextPage(ctx)
			if isNotFound(err) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("list public IPs in %s: %w", rg, err)
			}
			for _, pip := range page.Value {
				if pip != nil {
					out = append(out, pip)
				}
			}
		}
	}
	return out, nil
}

// serviceIndex are the cluster's Services by the bases of their parts'
// names (upstream's and legacy), from the Service informer; known is
// false without it.
type serviceIndex struct {
	known  bool
	byBase map[string]*v1.Service
}

func (l *loadBalancers) serviceIndex() (*serviceIndex, error) {
	idx := &serviceIndex{byBase: map[string]*v1.Service{}}
	if l.services == nil {
		return idx, nil
	}
	svcs, err := l.services()
	if err != nil {
		return nil, fmt.Errorf("list Services: %w", err)
	}
	idx.known = true
	for _, s := range svcs {
		if s.UID == "" {
			continue
		}
		idx.byBase[strings.ToLower(upstreamNames(l.clusterID, s).base)] = s
		idx.byBase[strings.ToLower(legacyNames(l.clusterID, s).base)] = s
	}
	return idx, nil
}

// uidDigits is how many of a UID's hex digits upstream's names keep
// (cloudprovider.DefaultLoadBalancerName: "a" and the dashless UID, cut
// to 32 characters); legacy names keep all 32.
const uidDigits = 31

// partBase is the base (naming.go) a part's name starts with: "a" and 31
// hex digits (upstream's) or 32 (legacy), then the end or a dash.
func partBase(name string) (string, bool) {
	isHex := func(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
	n := 1 + uidDigits
	if len(name) < n || name[0] != 'a' && name[0] != 'A' {
		return "", false
	}
	for i := 1; i < n; i++ {
		if !isHex(name[i]) {
			return "", false
		}
	}
	if len(name) > n && isHex(name[n]) {
		n++
	}
	if len(name) > n && name[n] != '-' {
		return "", false
	}
	return name[:n], true
}

// baseUID is the UID a base carries: whole from a legacy base; from
// upstream's, its first 35 characters when known says no Service has it,
// else none.
func baseUID(base string, known bool) types.UID {
	h := strings.ToLower(base[1:])
	if len(h) < 32 && !known {
		return ""
	}
	return types.UID(h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:])
}

// pipBase is the base a public IP the manager named carries:
// "<cluster>-<base>" (cut to 75 characters) or its legacy last 80
// characters, "-IPv6" after either.
func (l *loadBalancers) pipBase(name string) string {
	if hasSuffixFold(name, ipv6Suffix) {
		name = name[:len(name)-len(ipv6Suffix)]
	}
	if prefix := l.clusterID + "-"; len(name) > len(prefix) && strings.EqualFold(name[:len(prefix)], prefix) {
		if b, ok := partBase(name[len(prefix):]); ok && len(b) == len(name)-len(prefix) {
			return b
		}
	}
	if len(name) >= 2+uidDigits+1 {
		if b, ok := partBase(name[len(name)-(2+uidDigits):]); ok && name[len(name)-(3+uidDigits)] == '-' && len(b) == 2+uidDigits {
			return b
		}
	}
	return ""
}

// serviceKeyName reads a tag's "namespace/name".
func serviceKeyName(s string) types.NamespacedName {
	ns, name, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return types.NamespacedName{}
	}
	return types.NamespacedName{Namespace: ns, Name: name}
}

// partsBuilder makes the listing from what was read.
type partsBuilder struct {
	l   *loadBalancers
	idx *serviceIndex
	lbs map[bool]*armnetwork.LoadBalancer
	// pips by lower-cased ID.
	pips    map[string]*armnetwork.PublicIPAddress
	pipList []*armnetwork.PublicIPAddress
	// feOfPIP are, by the public IP's lower-cased ID, the base of the
	// cluster's frontend using it.
	feOfPIP map[string]string
	// named are, by lower-cased base, the Service a public IP the
	// manager made for it names (one Service alone in its tag).
	named map[string]types.NamespacedName
	// feAddr are the cluster's frontends' addresses with the base of
	// their frontend; pipAddr the own public IPs' with their name's.
	feAddr, pipAddr map[string]string
	// nodeAddrs are the nodes' addresses: the destinations of security
	// rules without floating IP.
	nodeAddrs map[string]bool
	// rules are the cluster's load-balancing rules, for telling apart
	// the Services of a security rule's destinations.
	rules   []ruleRef
	subnets map[string]string
	out     []*listedPart
}

// ruleRef is a load-balancing rule as the security rules see it.
type ruleRef struct {
	base         string
	protocol     string
	front, back  int32
	floatingIP   bool
	frontendAddr string
}

func newPartsBuilder(l *loadBalancers, idx *serviceIndex, lbs map[bool]*armnetwork.LoadBalancer, pips []*armnetwork.PublicIPAddress, nodeIPs []string) *partsBuilder {
	b := &partsBuilder{
		l: l, idx: idx, lbs: lbs, pipList: pips,
		pips: map[string]*armnetwork.PublicIPAddress{}, feOfPIP: map[string]string{}, named: map[string]types.NamespacedName{},
		feAddr: map[string]string{}, pipAddr: map[string]string{}, nodeAddrs: map[string]bool{}, subnets: map[string]string{},
	}
	for _, ip := range nodeIPs {
		b.nodeAddrs[ip] = true
	}
	for _, pip := range pips {
		b.pips[strings.ToLower(deref(pip.ID))] = pip
	}
	for _, internal := range []bool{false, true} {
		lb := lbs[internal]
		if lb == nil || lb.Properties == nil {
			continue
		}
		for _, fe := range lb.Properties.FrontendIPConfigurations {
			base, ok := partBase(deref(fe.Name))
			if !ok || fe.Properties == nil {
				continue
			}
			if id := strings.ToLower(feIPID(fe)); id != "" {
				b.feOfPIP[id] = base
			}
			if a := b.frontendAddr(fe); a != "" {
				b.feAddr[a] = base
			}
		}
		for _, pool := range lb.Properties.BackendAddressPools {
			if pool == nil || pool.Properties == nil || !b.ownPool(deref(pool.Name)) {
				continue
			}
			for _, a := range pool.Properties.LoadBalancerBackendAddresses {
				if a != nil && a.Properties != nil && deref(a.Properties.IPAddress) != "" {
					b.nodeAddrs[*a.Properties.IPAddress] = true
				}
			}
		}
	}
	for _, pip := range pips {
		if !b.ownPIP(pip) {
			continue
		}
		base := b.feOfPIP[strings.ToLower(deref(pip.ID))]
		if base == "" {
			base = l.pipBase(deref(pip.Name))
		}
		if base == "" {
			continue
		}
		if a := addressOf(pip); a != "" {
			b.pipAddr[a] = base
		}
		if svcs := pipServices(pip); len(svcs) == 1 {
			b.named[strings.ToLower(base)] = serviceKeyName(svcs[0])
		}
	}
	for _, internal := range []bool{false, true} {
		lb := lbs[internal]
		if lb == nil || lb.Properties == nil {
			continue
		}
		for _, r := range lb.Properties.LoadBalancingRules {
			base, ok := partBase(deref(r.Name))
			if !ok || r.Properties == nil {
				continue
			}
			rp := r.Properties
			ref := ruleRef{base: base, protocol: string(deref(rp.Protocol)), front: deref(rp.FrontendPort), back: deref(rp.BackendPort), floatingIP: deref(rp.EnableFloatingIP)}
			if fe := findFrontend(lb, lastSegment(deref(subID(rp.FrontendIPConfiguration)))); fe != nil {
				ref.frontendAddr = b.frontendAddr(fe)
			}
			b.rules = append(b.rules, ref)
		}
	}
	return b
}

func lastSegment(id string) string { return id[strings.LastIndex(id, "/")+1:] }

// frontendAddr is a frontend's address: private, or its public IP's.
func (b *partsBuilder) frontendAddr(fe *armnetwork.FrontendIPConfiguration) string {
	if fe.Properties == nil {
		return ""
	}
	if a := deref(fe.Properties.PrivateIPAddress); a != "" {
		return a
	}
	if pip := b.pips[strings.ToLower(feIPID(fe))]; pip != nil {
		return addressOf(pip)
	}
	return ""
}

// frontendIPv6 says a frontend is of IPv6: its private address's
// version, or its public IP's.
func (b *partsBuilder) frontendIPv6(fe *armnetwork.FrontendIPConfiguration) bool {
	if fe.Properties == nil {
		return false
	}
	if id := feIPID(fe); id != "" {
		pip := b.pips[strings.ToLower(id)]
		return pip != nil && pip.Properties != nil && deref(pip.Properties.PublicIPAddressVersion) == armnetwork.IPVersionIPv6
	}
	return privateVersion(fe.Properties) == armnetwork.IPVersionIPv6
}

func (b *partsBuilder) ownPool(name string) bool {
	return strings.EqualFold(name, b.l.poolName(false)) || strings.EqualFold(name, b.l.poolName(true))
}

// ownPIP says the manager (or the upstream CCM) made pip for a Service
// of this cluster: a service tag, and the cluster tag naming this
// cluster; without a cluster tag (upstream's oldest) only when the
// cluster's frontend uses it, for it may be another cluster's.
func (b *partsBuilder) ownPIP(pip *armnetwork.PublicIPAddress) bool {
	if len(pipServices(pip)) == 0 {
		return false
	}
	v, ok := pip.Tags[tagCluster]
	if !ok {
		v, ok = pip.Tags[tagLegacyCluster]
	}
	if ok {
		return strings.EqualFold(deref(v), b.l.clusterID)
	}
	return b.feOfPIP[strings.ToLower(deref(pip.ID))] != ""
}

// owner is the Service of the parts named after base, and its UID.
func (b *partsBuilder) owner(base string) (types.NamespacedName, types.UID) {
	if s := b.idx.byBase[strings.ToLower(base)]; s != nil {
		return types.NamespacedName{Namespace: s.Namespace, Name: s.Name}, s.UID
	}
	return b.named[strings.ToLower(base)], baseUID(base, b.idx.known)
}

func (b *partsBuilder) add(p inventory.Owned, del func(ctx context.Context) error) {
	b.out = append(b.out, &listedPart{Owned: p, del: del})
}

// servicePart is a part named after base, deleted by del.
func (b *partsBuilder) servicePart(kind, id, name, base, detail string, order int, del func(ctx context.Context) error) {
	svc, uid := b.owner(base)
	b.add(inventory.Owned{Kind: kind, ID: id, Name: name, Service: svc, UID: uid, Detail: detail, Order: order}, del)
}

// loadBalancers lists the load balancers, their pools (shared) and the
// Services' frontends, rules and probes; parts not named after a Service
// (another controller's) are not listed.
func (b *partsBuilder) loadBalancers() {
	l := b.l
	for _, internal := range []bool{false, true} {
		lb := b.lbs[internal]
		if lb == nil {
			continue
		}
		lbID := deref(lb.ID)
		sku := ""
		if lb.SKU != nil {
			sku = string(deref(lb.SKU.Name))
		}
		// No frontend left: no Service needs it, nor its pools. One left
		// so by a crash or by hand (the ensures delete it with its last
		// frontend) goes as an orphan.
		unneeded := l.ownLB(lb) && (lb.Properties == nil || len(lb.Properties.FrontendIPConfigurations) == 0)
		var delLB func(ctx context.Context) error
		if unneeded {
			delLB = func(ctx context.Context) error { return l.deleteUnneededLB(ctx, internal) }
		}
		b.add(inventory.Owned{Kind: kindLoadBalancer, ID: lbID, Name: deref(lb.Name), Detail: "sku " + sku, Unneeded: unneeded, Order: orderShared}, delLB)
		if lb.Properties == nil {
			continue
		}
		p := lb.Properties
		idOf := func(id *string, coll, name string) string {
			if deref(id) != "" {
				return *id
			}
			return lbID + "/" + coll + "/" + name
		}
		for _, pool := range p.BackendAddressPools {
			if pool == nil || !b.ownPool(deref(pool.Name)) {
				continue
			}
			// A pool goes with its load balancer (ARM deletes it with it).
			b.add(inventory.Owned{Kind: kindBackendPool, ID: idOf(pool.ID, "backendAddressPools", deref(pool.Name)), Name: deref(pool.Name),
				Detail: poolDetail(pool), Unneeded: unneeded, Order: orderShared}, delLB)
		}
		for _, fe := range p.FrontendIPConfigurations {
			name := deref(fe.Name)
			base, ok := partBase(name)
			if !ok {
				continue
			}
			order := orderFrontend
			if b.frontendIPv6(fe) {
				order = orderFrontendIPv6
			}
			b.servicePart(kindFrontend, idOf(fe.ID, collFrontends, name), name, base, frontendDetail(fe), order,
				func(ctx context.Context) error { return l.removeLBPart(ctx, internal, collFrontends, name) })
			if fe.Properties != nil && fe.Properties.Subnet != nil && deref(fe.Properties.Subnet.ID) != "" {
				b.subnets[strings.ToLower(*fe.Properties.Subnet.ID)] = *fe.Properties.Subnet.ID
			}
		}
		for _, r := range p.LoadBalancingRules {
			name := deref(r.Name)
			base, ok := partBase(name)
			if !ok {
				continue
			}
			b.servicePart(kindRule, idOf(r.ID, collRules, name), name, base, ruleDetail(r), orderRule,
				func(ctx context.Context) error { return l.removeLBPart(ctx, internal, collRules, name) })
		}
		for _, pr := range p.Probes {
			name := deref(pr.Name)
			base, ok := partBase(name)
			if !ok {
				continue
			}
			b.servicePart(kindProbe, idOf(pr.ID, collProbes, name), name, base, probeDetail(pr), orderProbe,
				func(ctx context.Context) error { return l.removeLBPart(ctx, internal, collProbes, name) })
		}
	}
	for _, k := range sortedKeys(b.subnets) {
		id := b.subnets[k]
		b.add(inventory.Owned{Kind: kindSubnet, ID: id, Name: lastSegment(id), Kept: true, Order: orderShared}, nil)
	}
}

// publicIPs lists the public IPs the manager made for the cluster's
// Services (one entry per Service when several share one), and, Kept,
// those a frontend of the cluster uses that the user made.
func (b *partsBuilder) publicIPs() {
	l := b.l
	for _, pip := range b.pipList {
		id, name := deref(pip.ID), deref(pip.Name)
		rg, _, _ := resourceGroupAndName(id)
		feBase := b.feOfPIP[strings.ToLower(id)]
		if !b.ownPIP(pip) {
			if feBase != "" {
				svc, uid := b.owner(feBase)
				b.add(inventory.Owned{Kind: kindPublicIP, ID: id, Name: name, Service: svc, UID: uid, Detail: pipDetail(pip), Kept: true, Order: orderPublicIP}, nil)
			}
			continue
		}
		base := feBase
		if base == "" {
			base = l.pipBase(name)
		}
		svcs := pipServices(pip)
		for _, s := range svcs {
			svc := serviceKeyName(s)
			var uid types.UID
			if base != "" {
				if osvc, ouid := b.owner(base); osvc == svc {
					uid = ouid
				}
			}
			// One entry per Service using it, "<public IP ID>#<ns/name>"
			// whether it is one or several: an ID that changed as a
			// second Service starts sharing the address would look like
			// a part gone and another added (lbrepair).
			b.add(inventory.Owned{Kind: kindPublicIP, ID: id + "#" + s, Name: name, Service: svc, UID: uid, Detail: pipDetail(pip), Order: orderPublicIP},
				func(ctx context.Context) error { return l.releaseOrphanPIP(ctx, rg, name, svc) })
		}
	}
}

// securityRules lists, per Service, the destinations the security
// group's rules give it: of the manager's rules (upstream's, shared),
// "<rule ID>#<base>"; of a rule named after one Service (upstream's
// before v1.29, this manager's before), the rule; of a rule the user
// made, Kept. A destination of no Service of the cluster (another
// cluster's, in a shared group) is not listed.
func (b *partsBuilder) securityRules(g *armnetwork.SecurityGroup) {
	if g == nil || g.Properties == nil {
		return
	}
	l := b.l
	for _, r := range g.Properties.SecurityRules {
		if r == nil || r.Properties == nil {
			continue
		}
		name, id := deref(r.Name), deref(r.ID)
		if base, ok := partBase(name); ok {
			b.servicePart(kindSecurityRule, id, name, base, securityDetail(r.Properties, destinations(r.Properties)), orderSecurityRule,
				func(ctx context.Context) error { return l.removeSecurityDestinations(ctx, name, nil) })
			continue
		}
		managed := managedRule(r)
		shares := b.attribute(r.Properties, managed)
		for _, k := range sortedKeys(shares) {
			base, dsts := shares[k].base, shares[k].dsts
			svc, uid := b.owner(base)
			o := inventory.Owned{Kind: kindSecurityRule, ID: id + "#" + base, Name: name, Service: svc, UID: uid,
				Detail: securityDetail(r.Properties, dsts), Kept: !managed, Order: orderSecurityRule}
			if !managed {
				b.add(o, nil)
				continue
			}
			b.add(o, func(ctx context.Context) error { return l.removeSecurityDestinations(ctx, name, dsts) })
		}
	}
}

// share is one Service's destinations in a security rule.
type share struct {
	base string
	dsts []string
}

// attribute tells apart the Services a security rule's destinations are
// for, by their parts' lower-cased base. A frontend's address is its Service's, or with several
// Services on it, the one whose floating-IP rule has the port; a node's
// address (no floating IP) is the Service's whose rules send the rule's
// ports (NodePorts) to the nodes. The user's rules count only frontend
// addresses.
func (b *partsBuilder) attribute(p *armnetwork.SecurityRulePropertiesFormat, managed bool) map[string]*share {
	ports, portsOK := rulePortList(p)
	proto := string(deref(p.Protocol))
	out := map[string]*share{}
	for _, d := range destinations(p) {
		cands := map[string]string{}
		if portsOK && managed {
			for _, port := range ports {
				for _, x := range b.rules {
					if !strings.EqualFold(x.protocol, proto) {
						continue
					}
					if x.floatingIP && x.frontendAddr == d && x.front == port || !x.floatingIP && b.nodeAddrs[d] && b.feAddr[d] == "" && x.back == port {
						cands[strings.ToLower(x.base)] = x.base
					}
				}
			}
		}
		if len(cands) == 0 {
			if base := b.feAddr[d]; base != "" {
				cands[strings.ToLower(base)] = base
			} else if base := b.pipAddr[d]; base != "" {
				cands[strings.ToLower(base)] = base
			}
		}
		if len(cands) != 1 {
			continue
		}
		for k, base := range cands {
			if out[k] == nil {
				out[k] = &share{base: base}
			}
			out[k].dsts = append(out[k].dsts, d)
		}
	}
	return out
}

// removeLBPart writes the load balancer without one rule, probe or
// frontend. A probe a rule uses, or a frontend any rule uses, stays
// (errPartInUse). With the last frontend the load balancer goes (the
// shared writer readies its NIC-based pools first, as for
// EnsureLoadBalancerDeleted).
func (l *loadBalancers) removeLBPart(ctx context.Context, internal bool, coll, name string) error {
	w := l.public
	if internal {
		w = l.internal
	}
	lbName := l.lbNameFor(internal)
	edit := removeNamedPart(coll, name)
	if coll == collFrontends {
		edit = l.keepingIPv4(lbName, "removing frontend "+name, edit)
	}
	// A fresh read: the part was seen in a listing, not in the kept copy.
	w.forget()
	if _, err := w.submit(ctx, false, edit); errors.Is(err, errNeedsIPv4Frontend) {
		return fmt.Errorf("%w: %w", errPartInUse, err)
	} else if err != nil {
		return fmt.Errorf("load balancer %s: %w", lbName, err)
	}
	return nil
}

// deleteUnneededLB deletes the cluster's load balancer if, as its shared
// writer reads it, it is still the cluster's (ownLB) and has no frontend:
// the edit "changes" it only then, and the writer deletes a load balancer
// so left empty, ETag-checked (a frontend added since fails the delete
// and the edit, applied again to a fresh read, refuses), its NIC-based
// pools readied first (beforeDelete), as with the last Service's
// EnsureLoadBalancerDeleted.
func (l *loadBalancers) deleteUnneededLB(ctx context.Context, internal bool) error {
	w := l.public
	if internal {
		w = l.internal
	}
	lbName := l.lbNameFor(internal)
	w.forget()
	_, err := w.submit(ctx, false, func(lb *armnetwork.LoadBalancer) (bool, error) {
		if !l.ownLB(lb) {
			return false, fmt.Errorf("tagged for another cluster: not deleted")
		}
		if lb.Properties != nil && len(lb.Properties.FrontendIPConfigurations) > 0 {
			return false, fmt.Errorf("%w: %d frontends, a Service needs it again", errPartInUse, len(lb.Properties.FrontendIPConfigurations))
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("load balancer %s: %w", lbName, err)
	}
	return nil
}

// removeNamedPart is the edit taking one part out of a load balancer.
func removeNamedPart(coll, name string) func(lb *armnetwork.LoadBalancer) (bool, error) {
	is := func(n *string) bool { return strings.EqualFold(deref(n), name) }
	return func(lb *armnetwork.LoadBalancer) (bool, error) {
		if lb.Properties == nil {
			return false, nil
		}
		p := lb.Properties
		switch coll {
		case collRules:
			n := len(p.LoadBalancingRules)
			p.LoadBalancingRules = slices.DeleteFunc(p.LoadBalancingRules, func(r *armnetwork.LoadBalancingRule) bool { return r != nil && is(r.Name) })
			return n != len(p.LoadBalancingRules), nil
		case collProbes:
			for _, r := range p.LoadBalancingRules {
				if r != nil && r.Properties != nil && strings.EqualFold(lastSegment(deref(subID(r.Properties.Probe))), name) {
					return false, fmt.Errorf("probe %s: %w by rule %s", name, errPartInUse, deref(r.Name))
				}
			}
			n := len(p.Probes)
			p.Probes = slices.DeleteFunc(p.Probes, func(r *armnetwork.Probe) bool { return r != nil && is(r.Name) })
			return n != len(p.Probes), nil
		case collFrontends:
			if frontendsInUse(p)[strings.ToLower(name)] {
				return false, fmt.Errorf("frontend %s: %w by a rule; it goes with the rules on it", name, errPartInUse)
			}
			n := len(p.FrontendIPConfigurations)
			p.FrontendIPConfigurations = slices.DeleteFunc(p.FrontendIPConfigurations, func(f *armnetwork.FrontendIPConfiguration) bool { return f != nil && is(f.Name) })
			return n != len(p.FrontendIPConfigurations), nil
		}
		return false, fmt.Errorf("no such load balancer part collection %q", coll)
	}
}

// releaseOrphanPIP deletes the public IP the manager made for svc, or,
// when it lists other Services too, takes svc off the list.
func (l *loadBalancers) releaseOrphanPIP(ctx context.Context, rg, name string, svc types.NamespacedName) error {
	return l.releasePublicIPIn(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: svc.Name}}, rg, name)
}

// removeSecurityDestinations takes dsts out of the security rule named
// name (none: the whole rule), and the rule with its last destination.
func (l *loadBalancers) removeSecurityDestinations(ctx context.Context, name string, dsts []string) error {
	l.nsg.forget()
	_, err := l.nsg.submit(ctx, false, func(g *armnetwork.SecurityGroup) (bool, error) {
		if g.Properties == nil {
			return false, nil
		}
		n := len(g.Properties.SecurityRules)
		changed := false
		g.Properties.SecurityRules = slices.DeleteFunc(g.Properties.SecurityRules, func(r *armnetwork.SecurityRule) bool {
			if r == nil || !strings.EqualFold(deref(r.Name), name) {
				return false
			}
			if dsts == nil || r.Properties == nil {
				return true
			}
			cur := destinations(r.Properties)
			left := slices.DeleteFunc(slices.Clone(cur), func(d string) bool { return slices.Contains(dsts, d) })
			if len(left) == len(cur) {
				return false
			}
			if len(left) == 0 && len(r.Properties.DestinationApplicationSecurityGroups) == 0 {
				return true
			}
			setDestinations(r.Properties, left)
			changed = true
			return false
		})
		return changed || n != len(g.Properties.SecurityRules), nil
	})
	if err != nil {
		return fmt.Errorf("security rule %s: %w", name, err)
	}
	return nil
}

// ---- details: what an ensure sets, as a person reads it ----

func poolDetail(pool *armnetwork.BackendAddressPool) string {
	if pool.Properties == nil {
		return "empty"
	}
	var members []string
	for _, a := range pool.Properties.LoadBalancerBackendAddresses {
		if a != nil && a.Properties != nil && deref(a.Properties.IPAddress) != "" {
			members = append(members, deref(a.Name)+"="+*a.Properties.IPAddress)
		}
	}
	for _, c := range pool.Properties.BackendIPConfigurations {
		if c != nil && deref(c.ID) != "" {
			members = append(members, shortID(*c.ID))
		}
	}
	if len(members) == 0 {
		return "empty"
	}
	slices.Sort(members)
	members = slices.Compact(members)
	return "members " + strings.Join(members, ",")
}

// shortID is an ID from its resource's provider on
// ("networkInterfaces/nic-1/ipConfigurations/ipconfig1").
func shortID(id string) string {
	segs := strings.Split(strings.Trim(id, "/"), "/")
	if len(segs) > 6 && strings.EqualFold(segs[4], "providers") {
		return strings.Join(segs[6:], "/")
	}
	return id
}

func frontendDetail(fe *armnetwork.FrontendIPConfiguration) string {
	p := fe.Properties
	if p == nil {
		return ""
	}
	if id := feIPID(fe); id != "" {
		rg, name, _ := resourceGroupAndName(id)
		return "public IP " + rg + "/" + name
	}
	subnet := ""
	if p.Subnet != nil {
		subnet = shortID(deref(p.Subnet.ID))
	}
	return fmt.Sprintf("private %s %s %s subnet %s", deref(p.PrivateIPAddress), deref(p.PrivateIPAllocationMethod), privateVersion(p), subnet)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func ruleDetail(r *armnetwork.LoadBalancingRule) string {
	p := r.Properties
	if p == nil {
		return ""
	}
	var pools []string
	for _, ref := range append([]*armnetwork.SubResource{p.BackendAddressPool}, p.BackendAddressPools...) {
		if id := deref(subID(ref)); id != "" {
			pools = append(pools, lastSegment(id))
		}
	}
	slices.Sort(pools)
	pools = slices.Compact(pools)
	probe := lastSegment(deref(subID(p.Probe)))
	if probe == "" {
		probe = "none"
	}
	return fmt.Sprintf("%s %d->%d frontend %s pool %s probe %s floating IP %s idle %d min TCP reset %s distribution %s",
		deref(p.Protocol), deref(p.FrontendPort), deref(p.BackendPort), lastSegment(deref(subID(p.FrontendIPConfiguration))),
		strings.Join(pools, ","), probe, onOff(deref(p.EnableFloatingIP)), deref(p.IdleTimeoutInMinutes), onOff(deref(p.EnableTCPReset)), deref(p.LoadDistribution))
}

func probeDetail(pr *armnetwork.Probe) string {
	p := pr.Properties
	if p == nil {
		return ""
	}
	s := fmt.Sprintf("%s port %d", deref(p.Protocol), deref(p.Port))
	if path := deref(p.RequestPath); path != "" {
		s += " path " + path
	}
	return s + fmt.Sprintf(" every %ds threshold %d", deref(p.IntervalInSeconds), deref(p.ProbeThreshold))
}

func pipDetail(pip *armnetwork.PublicIPAddress) string {
	sku := ""
	if pip.SKU != nil {
		sku = string(deref(pip.SKU.Name))
	}
	p := pip.Properties
	if p == nil {
		return sku
	}
	version := deref(p.PublicIPAddressVersion)
	if version == "" {
		version = armnetwork.IPVersionIPv4
	}
	s := fmt.Sprintf("%s %s %s %s", deref(p.IPAddress), deref(p.PublicIPAllocationMethod), version, sku)
	if label := dnsLabelOf(pip); label != "" {
		s += " DNS label " + label
	}
	return s
}

// securityDetail is a security rule as it admits dsts: everything an
// ensure sets but its priority (kept as found) and description.
func securityDetail(p *armnetwork.SecurityRulePropertiesFormat, dsts []string) string {
	srcs := sources(p)
	slices.Sort(srcs)
	ds := slices.Clone(dsts)
	slices.Sort(ds)
	var ports []string
	if v := deref(p.DestinationPortRange); v != "" {
		ports = append(ports, v)
	}
	for _, v := range p.DestinationPortRanges {
		ports = append(ports, deref(v))
	}
	slices.SortFunc(ports, func(a, b string) int {
		x, errX := strconv.Atoi(a)
		y, errY := strconv.Atoi(b)
		if errX == nil && errY == nil {
			return x - y
		}
		return strings.Compare(a, b)
	})
	s := fmt.Sprintf("%s %s %s from %s to %s ports %s", deref(p.Access), deref(p.Direction), deref(p.Protocol),
		strings.Join(srcs, ","), strings.Join(ds, ","), strings.Join(ports, ","))
	if sp := deref(p.SourcePortRange); sp != "" && sp != "*" {
		s += " source ports " + sp
	}
	return s
}
