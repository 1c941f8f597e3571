package gce

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	computev1 "google.golang.org/api/compute/v1"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// The parts of an external (target pool) load balancer, each ensured
// from what GCE holds: created when missing, changed when it differs,
// left alone when it matches, and refused when a resource of the name
// exists that is not this Service's.

// waitOp waits for a Compute Engine operation and returns its error; it
// takes a call's two results: waitOp(ctx)(client.Insert(...)).
func waitOp(ctx context.Context) func(op *compute.Operation, err error) error {
	return func(op *compute.Operation, err error) error {
		if err != nil {
			return err
		}
		return op.Wait(ctx)
	}
}

// alreadyExists says a create found the resource there (a retry whose
// first try went through).
func alreadyExists(err error) bool {
	code, reason := errorCode(err)
	return code == 409 || reason == "alreadyExists"
}

// ignoreNotFound makes a delete of what is already gone a success.
func ignoreNotFound(err error) error {
	if isNotFound(err) {
		return nil
	}
	return err
}

func (l *loadBalancers) regionLink(collection, name string) string {
	return "projects/" + l.cfg.ProjectID + "/regions/" + l.cfg.Region + "/" + collection + "/" + name
}

func (l *loadBalancers) globalLink(collection, name string) string {
	return "projects/" + l.cfg.ProjectID + "/global/" + collection + "/" + name
}

// sameLink compares resource references that may be full URLs or
// relative paths.
func sameLink(a, b string) bool {
	cut := func(s string) string {
		if i := strings.Index(s, "projects/"); i >= 0 {
			return s[i:]
		}
		return s
	}
	return cut(a) == cut(b)
}

// ensureAddress is the external Service's IP: spec.loadBalancerIP as it
// is (the user's reserved address, never changed or released), else the
// IP its forwarding rules hold, else a new one, reserved as the address
// named base (released once the rules hold it, unless keepAddresses,
// ensureExternal): as upstream's ensureStaticIP
// (gce_loadbalancer_external.go:1424-1470) an IP a rule holds is
// promoted, never changed, so a rule made again, or a switch from the
// upstream CCM, keeps it. With the rules as wanted and keepAddresses off
// no address is touched at all.
func (l *loadBalancers) ensureAddress(ctx context.Context, base, svcKey string, sp *lbSpec, rules map[string]*computepb.ForwardingRule) (string, error) {
	if sp.staticIP != "" {
		return sp.staticIP, nil
	}
	held := ""
	settled := true
	for name, p := range ruleNames(base, sp) {
		cur := rules[name]
		if cur == nil || !l.owns(cur.GetDescription(), svcKey, "") {
			settled = false
			continue
		}
		if held == "" {
			held = cur.GetIPAddress()
		}
		settled = settled && ruleAsWanted(cur, cur.GetIPAddress(), p, sp)
	}
	if held != "" && settled && !l.cfg.KeepAddresses {
		return held, nil
	}
	want := &computepb.Address{Name: proto.String(base), AddressType: proto.String("EXTERNAL"), NetworkTier: proto.String(sp.tier)}
	if held != "" {
		want.Address = proto.String(held)
	}
	a, err := l.reserveAddress(ctx, svcKey, want, func(a *computepb.Address) bool { return a.GetAddressType() == "INTERNAL" })
	if err != nil {
		return "", err
	}
	if a.GetNetworkTier() != "" && a.GetNetworkTier() != sp.tier {
		return "", fmt.Errorf("address %s is in network tier %s, the Service asks for %s: delete and recreate the Service to change tiers", base, a.GetNetworkTier(), sp.tier)
	}
	return a.GetAddress(), nil
}

// reserveAddress is the Service's address named want's name: reserved as
// want if missing, refused if not the Service's, and reserved again if
// stale says it no longer fits (the Service changed type or subnetwork;
// its forwarding rules are made again with the new IP).
func (l *loadBalancers) reserveAddress(ctx context.Context, svcKey string, want *computepb.Address, stale func(*computepb.Address) bool) (*computepb.Address, error) {
	name := want.GetName()
	d := l.describe(ctx, svcKey)
	d.Address = "multicloud-ccm"
	want.Description = proto.String(d.String())
	get := func() (*computepb.Address, error) {
		return l.api.addresses.Get(ctx, &computepb.GetAddressRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, Address: name}, l.api.retry)
	}
	insert := func() error {
		err := waitOp(ctx)(l.api.addresses.Insert(ctx, &computepb.InsertAddressRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, AddressResource: want}, l.api.retry))
		if err != nil && !alreadyExists(err) {
			return fmt.Errorf("reserve address %s: %w", name, err)
		}
		return nil
	}
	a, err := get()
	if isNotFound(err) {
		if err := insert(); err != nil {
			return nil, err
		}
		a, err = get()
	}
	if err != nil {
		return nil, fmt.Errorf("get address %s: %w", name, err)
	}
	if !l.owns(a.GetDescription(), svcKey, "") {
		return nil, fmt.Errorf("address %s exists and is not this Service's (description %q)", name, a.GetDescription())
	}
	if !stale(a) {
		return a, nil
	}
	if err := l.releaseAddress(ctx, name, svcKey); err != nil {
		return nil, err
	}
	if err := insert(); err != nil {
		return nil, err
	}
	if a, err = get(); err != nil {
		return nil, fmt.Errorf("get address %s: %w", name, err)
	}
	return a, nil
}

// releaseAddress deletes the address the manager reserved for the
// Service; the user's, or one already gone, is left alone.
func (l *loadBalancers) releaseAddress(ctx context.Context, base, svcKey string) error {
	a, err := l.api.addresses.Get(ctx, &computepb.GetAddressRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, Address: base}, l.api.retry)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get address %s: %w", base, err)
	}
	// The manager's own reservation, or one the upstream CCM left (it
	// reserves the address only while it makes the forwarding rule, and
	// its deletion releases any left by a failed sync).
	d := parseDescription(a.GetDescription())
	mine := d.Cluster == l.clusterID && d.Service == svcKey && d.Address != ""
	upstream := d.Cluster == "" && d.Service == svcKey
	if !mine && !upstream {
		return nil
	}
	err = waitOp(ctx)(l.api.addresses.Delete(ctx, &computepb.DeleteAddressRequest{Project: l.cfg.ProjectID, Region: l.cfg.Region, Address: base}, l.api.retry))
	if err = ignoreNotFound(err); err != nil {
		return fmt.Errorf("release address %s: %w", base, err)
	}
	return nil
}

// healthCheckFor is the legacy HTTP health check the Service's target
// pool uses: its own on healthCheckNodePort (externalTrafficPolicy
// Local), else the cluster's shared check of kube-proxy.
func (l *loadBalancers) healthCheckFor(base string, sp *lbSpec) *computev1.HttpHealthCheck {
	hc := &computev1.HttpHealthCheck{
		Name: nodeHealthCheckName(l.sharedID()), Port: kubeProxyHealthPort, RequestPath: "/healthz",
		// upstream's intervals: a node is out after 3 failures 8 s apart.
		CheckIntervalSec: 8, TimeoutSec: 1, HealthyThreshold: 1, UnhealthyThreshold: 3,
	}
	if sp.local {
		hc.Name, hc.Port, hc.RequestPath = base, int64(sp.healthPort), sp.healthPath
	}
	return hc
}

// ensureHealthCheck makes the health check exist as want; svcKey is ""
// for the cluster's shared one.
func (l *loadBalancers) ensureHealthCheck(ctx context.Context, want *computev1.HttpHealthCheck, svcKey string) error {
	name := want.Name
	want.Description = l.describe(ctx, svcKey).String()
	cur, err := l.api.httpHealthChecks.Get(l.cfg.ProjectID, name).Context(ctx).Do()
	switch {
	case isNotFound(err):
		op, err := l.api.httpHealthChecks.Insert(l.cfg.ProjectID, want).Context(ctx).Do()
		if err = l.waitGlobal(ctx, op, err); err != nil && !alreadyExists(err) {
			return fmt.Errorf("create health check %s: %w", name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("get health check %s: %w", name, err)
	}
	if !l.owns(cur.Description, svcKey, name) {
		return fmt.Errorf("health check %s exists and is not this cluster's (description %q)", name, cur.Description)
	}
	if cur.Port == want.Port && cur.RequestPath == want.RequestPath && cur.CheckIntervalSec == want.CheckIntervalSec && cur.UnhealthyThreshold == want.UnhealthyThreshold {
		return nil
	}
	op, err := l.api.httpHealthChecks.Update(l.cfg.ProjectID, name, want).Context(ctx).Do()
	if err = l.waitGlobal(ctx, op, err); err != nil {
		return fmt.Errorf("update health check %s: %w", name, err)
	}
	return nil
}

// deleteHealthCheck deletes the legacy health check name if it is
// svcKey's ("" for the cluster's shared one) and no target pool uses it,
// and says whether it is gone. One not the Service's stays and counts as
// not gone.
func (l *loadBalancers) deleteHealthCheck(ctx context.Context, name, svcKey string) (bool, error) {
	cur, err := l.api.httpHealthChecks.Get(l.cfg.ProjectID, name).Context(ctx).Do()
	if isNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("get health check %s: %w", name, err)
	}
	if !l.owns(cur.Description, svcKey, name) {
		return false, nil
	}
	op, err := l.api.httpHealthChecks.Delete(l.cfg.ProjectID, name).Context(ctx).Do()
	err = ignoreNotFound(l.waitGlobal(ctx, op, err))
	if inUse(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("delete health check %s: %w", name, err)
	}
	return true, nil
}

// waitGlobal waits for a global operation the discovery client started.
func (l *loadBalancers) waitGlobal(ctx context.Context, op *computev1.Operation, err error) error {
	if err != nil {
		return err
	}
	for op.Status != "DONE" {
		w, err := l.api.globalOperations.Wait(ctx, &computepb.WaitGlobalOperationRequest{Project: l.cfg.ProjectID, Operation: op.Name}, l.api.retry)
		if err != nil {
			return err
		}
		op.Status = w.GetStatus().String()
		if e := w.GetError(); e != nil && len(e.GetErrors()) > 0 {
			return fmt.Errorf("operation %s: %s: %s", op.Name, e.GetErrors()[0].GetCode(), e.GetErrors()[0].GetMessage())
		}
	}
	if op.Error != nil && len(op.Error.Errors) > 0 {
		return fmt.Errorf("operation %s: %s: %s", op.Name, op.Error.Errors[0].Code, op.Error.Errors[0].Message)
	}
	return nil
}

// ensureFirewall makes the firewall rule exist as want (network, sources,
// target tags, allowed ports, destinations when want names any). A rule
// that already does what want asks is left alone (firewallSatisfies),
// also in the form the upstream GCE CCM made it; one that does not is
// changed, keeping the upstream CCM's form on its rules (firewallUpdate).
func (l *loadBalancers) ensureFirewall(ctx context.Context, want *computepb.Firewall, svcKey string) error {
	name := want.GetName()
	want.Network = proto.String(l.cfg.networkURL())
	want.Description = proto.String(l.describe(ctx, svcKey).String())
	project := l.cfg.NetworkProjectID
	cur, err := l.api.firewalls.Get(ctx, &computepb.GetFirewallRequest{Project: project, Firewall: name}, l.api.retry)
	switch {
	case isNotFound(err):
		err = waitOp(ctx)(l.api.firewalls.Insert(ctx, &computepb.InsertFirewallRequest{Project: project, FirewallResource: want}, l.api.retry))
		if err != nil && !alreadyExists(err) {
			return fmt.Errorf("create firewall rule %s: %w", name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("get firewall rule %s: %w", name, err)
	}
	if !l.owns(cur.GetDescription(), svcKey, name) {
		return fmt.Errorf("firewall rule %s exists and is not this Service's (description %q)", name, cur.GetDescription())
	}
	if firewallSatisfies(cur, want) {
		return nil
	}
	update := l.firewallUpdate(cur, want, svcKey)
	klog.FromContext(ctx).V(2).Info("Updating firewall rule", "firewall", name, "service", svcKey)
	err = waitOp(ctx)(l.api.firewalls.Update(ctx, &computepb.UpdateFirewallRequest{Project: project, Firewall: name, FirewallResource: update}, l.api.retry))
	if err != nil {
		return fmt.Errorf("update firewall rule %s: %w", name, err)
	}
	return nil
}

// firewallSatisfies says the rule cur does what want asks: the same
// sources, target tags and allowed ports (as sets: upstream writes runs
// of ports as "lo-hi", getPortsAndProtocol in
// gce_loadbalancer_internal.go), and want's destinations when it names
// any. A rule with destinations where want names none is narrower than
// asked and is kept so: the upstream GCE CCM makes its health-check rules
// with the Service's IP as destination (ensureHTTPHealthCheckFirewall,
// gce_loadbalancer_external.go:1035-1076, through createFirewall and
// firewallObject 1108-1185, destination 1181-1183), and never widens them
// (its drift check, 1062-1067, leaves destinations out); dropping them
// would open the health checkers' ranges to the port on every address of
// the tagged nodes. A single address and its /32 (/128) are one range: upstream
// writes the bare IP. Description and priority are not compared, so an
// adopted rule of upstream's is never rewritten for its description.
func firewallSatisfies(cur, want *computepb.Firewall) bool {
	ranges := func(rs []string) []string {
		out := make([]string, 0, len(rs))
		for _, r := range rs {
			out = append(out, strings.TrimSuffix(strings.TrimSuffix(r, "/32"), "/128"))
		}
		return sorted(out)
	}
	dests := len(want.GetDestinationRanges()) == 0 || slices.Equal(ranges(cur.GetDestinationRanges()), ranges(want.GetDestinationRanges()))
	return dests && slices.Equal(ranges(cur.GetSourceRanges()), ranges(want.GetSourceRanges())) &&
		slices.Equal(sorted(cur.GetTargetTags()), sorted(want.GetTargetTags())) &&
		slices.Equal(allowedSpans(cur), allowedSpans(want))
}

// allowedSpans are a rule's allowed protocols and ports as merged spans
// ("tcp:80-81", "udp:53-53"; a protocol with no ports is "tcp:all"), so
// "80","81" and "80-81" compare equal.
func allowedSpans(f *computepb.Firewall) []string {
	type span struct{ lo, hi int }
	byProto := map[string][]span{}
	var all []string
	for _, a := range f.GetAllowed() {
		p := strings.ToLower(a.GetIPProtocol())
		if len(a.GetPorts()) == 0 {
			all = append(all, p+":all")
			continue
		}
		for _, ps := range a.GetPorts() {
			lo, hi, found := strings.Cut(ps, "-")
			if !found {
				hi = lo
			}
			l, errL := strconv.Atoi(lo)
			h, errH := strconv.Atoi(hi)
			if errL != nil || errH != nil {
				// Not a port GCE would accept: compared as written.
				all = append(all, p+":"+ps)
				continue
			}
			byProto[p] = append(byProto[p], span{l, h})
		}
	}
	out := slices.Compact(sorted(all))
	for p, spans := range byProto {
		slices.SortFunc(spans, func(a, b span) int { return a.lo - b.lo })
		merged := []span{spans[0]}
		for _, s := range spans[1:] {
			if last := &merged[len(merged)-1]; s.lo <= last.hi+1 {
				last.hi = max(last.hi, s.hi)
			} else {
				merged = append(merged, s)
			}
		}
		for _, s := range merged {
			out = append(out, fmt.Sprintf("%s:%d-%d", p, s.lo, s.hi))
		}
	}
	slices.Sort(out)
	return out
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

// firewallUpdate is the rule that replaces cur to do what want asks. A
// rule with no destinations wanted keeps cur's (never widened, see
// firewallSatisfies). A rule the upstream GCE CCM made (its description,
// not this manager's, names the Service or the upstream cluster ID) also
// keeps upstream's description and priority, with the new IP where
// upstream's description names one (makeFirewallDescription,
// gce_loadbalancer_naming.go:139-142), so it stays what upstream, started
// again, finds as its own and expects.
func (l *loadBalancers) firewallUpdate(cur, want *computepb.Firewall, svcKey string) *computepb.Firewall {
	up := proto.Clone(want).(*computepb.Firewall)
	if len(want.GetDestinationRanges()) == 0 {
		up.DestinationRanges = slices.Clone(cur.GetDestinationRanges())
	}
	if d := parseDescription(cur.GetDescription()); d.Cluster == l.clusterID && d.Service == svcKey {
		return up
	}
	up.Description, up.Priority = cur.Description, cur.Priority
	if strings.Contains(cur.GetDescription(), `"kubernetes.io/service-ip"`) && len(up.GetDestinationRanges()) == 1 {
		up.Description = proto.String(upstreamFirewallDescription(svcKey, strings.TrimSuffix(up.GetDestinationRanges()[0], "/32")))
	}
	return up
}

// upstreamFirewallDescription is the upstream GCE CCM's description of a
// Service's firewall rules, byte for byte (makeFirewallDescription,
// gce_loadbalancer_naming.go:139-142, with its space).
func upstreamFirewallDescription(svcKey, ip string) string {
	return fmt.Sprintf(`{"kubernetes.io/service-name":"%s", "kubernetes.io/service-ip":"%s"}`, svcKey, ip)
}

// deleteFirewall deletes the Service's firewall rule; one gone, or not
// the Service's, is left alone.
func (l *loadBalancers) deleteFirewall(ctx context.Context, name, svcKey string) error {
	project := l.cfg.NetworkProjectID
	cur, err := l.api.firewalls.Get(ctx, &computepb.GetFirewallRequest{Project: project, Firewall: name}, l.api.retry)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get firewall rule %s: %w", name, err)
	}
	if !l.owns(cur.GetDescription(), svcKey, name) {
		return nil
	}
	err = waitOp(ctx)(l.api.firewalls.Delete(ctx, &computepb.DeleteFirewallRequest{Project: project, Firewall: name}, l.api.retry))
	if err = ignoreNotFound(err); err != nil {
		return fmt.Errorf("delete firewall rule %s: %w", name, err)
	}
	return nil
}

// healthCheckOwner is the Service owning its health check: the Service
// for externalTrafficPolicy Local (its own check), else "" (the
// cluster's shared check of kube-proxy).
func healthCheckOwner(sp *lbSpec, svcKey string) string {
	if sp.local {
		return svcKey
	}
	return ""
}

// ensureClientFirewall admits the Service's source ranges to its ports at
// ip on the nodes. The destination is the bare IP, as upstream writes it
// (firewallObject, gce_loadbalancer_external.go:1181-1183), so upstream's
// drift check (firewallNeedsUpdate, 1022-1026, compares it as written)
// finds the rule as it makes it.
func (l *loadBalancers) ensureClientFirewall(ctx context.Context, base, svcKey, ip string, sp *lbSpec, tags []string) error {
	return l.ensureFirewall(ctx, &computepb.Firewall{
		Name: proto.String(firewallName(base)), SourceRanges: sp.sources, TargetTags: tags, DestinationRanges: []string{ip},
		Allowed: allowedPorts(sp.ports, func(p v1.ServicePort) int32 { return p.Port }),
	}, svcKey)
}

// ensureHealthCheckFirewall admits Google's health checkers (from ranges,
// healthCheckRanges or ilbHealthCheckRangesIPv6) to a health check's port
// on the nodes with the rule name; owner is "" for the
// cluster's shared check. dest, when set, narrows the rule to the
// Service's IP, as upstream makes an external Service's own health-check
// rule (ensureHTTPHealthCheckFirewall, gce_loadbalancer_external.go:1035-1076).
// The shared rules get none: every Service's health probes pass them.
// (Upstream gives the shared external rule the first Service's IP; one
// it made so is kept as it is, firewallSatisfies.)
func (l *loadBalancers) ensureHealthCheckFirewall(ctx context.Context, name string, port int, tags []string, owner, dest string, ranges []string) error {
	want := &computepb.Firewall{
		Name: proto.String(name), SourceRanges: ranges, TargetTags: tags,
		Allowed: []*computepb.Allowed{{IPProtocol: proto.String("tcp"), Ports: []string{strconv.Itoa(port)}}},
	}
	if dest != "" {
		want.DestinationRanges = []string{dest}
	}
	return l.once(ctx, owner, "firewalls/"+name+"/"+strings.Join(tags, ","), func(ctx context.Context) error {
		return l.ensureFirewall(ctx, want, owner)
	})
}

// allowedPorts are the firewall's allowed entries: each protocol's ports.
func allowedPorts(ports []v1.ServicePort, port func(v1.ServicePort) int32) []*computepb.Allowed {
	byProto := map[v1.Protocol][]string{}
	for _, p := range ports {
		byProto[p.Protocol] = append(byProto[p.Protocol], strconv.Itoa(int(port(p))))
	}
	var out []*computepb.Allowed
	for _, proto := range []v1.Protocol{v1.ProtocolTCP, v1.ProtocolUDP} {
		if ps := byProto[proto]; len(ps) > 0 {
			slices.Sort(ps)
			out = append(out, &computepb.Allowed{IPProtocol: protoString(strings.ToLower(string(proto))), Ports: slices.Compact(ps)})
		}
	}
	return out
}

func protoString(s string) *string { return &s }
