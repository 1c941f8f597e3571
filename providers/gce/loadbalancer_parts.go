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
// target tags, allowed ports).
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
	if sameFirewall(cur, want) {
		return nil
	}
	err = waitOp(ctx)(l.api.firewalls.Update(ctx, &computepb.UpdateFirewallRequest{Project: project, Firewall: name, FirewallResource: want}, l.api.retry))
	if err != nil {
		return fmt.Errorf("update firewall rule %s: %w", name, err)
	}
	return nil
}

func sameFirewall(a, b *computepb.Firewall) bool {
	sorted := func(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
	allowed := func(f *computepb.Firewall) []string {
		var out []string
		for _, a := range f.GetAllowed() {
			out = append(out, strings.ToLower(a.GetIPProtocol())+":"+strings.Join(sorted(a.GetPorts()), ","))
		}
		return sorted(out)
	}
	// A single address and its /32 are one range: upstream writes the
	// bare IP (gce_loadbalancer_external.go firewallObject).
	ranges := func(rs []string) []string {
		out := make([]string, 0, len(rs))
		for _, r := range rs {
			out = append(out, strings.TrimSuffix(r, "/32"))
		}
		return sorted(out)
	}
	return slices.Equal(ranges(a.GetSourceRanges()), ranges(b.GetSourceRanges())) &&
		slices.Equal(sorted(a.GetTargetTags()), sorted(b.GetTargetTags())) &&
		slices.Equal(ranges(a.GetDestinationRanges()), ranges(b.GetDestinationRanges())) &&
		slices.Equal(allowed(a), allowed(b))
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
// ip on the nodes.
func (l *loadBalancers) ensureClientFirewall(ctx context.Context, base, svcKey, ip string, sp *lbSpec, tags []string) error {
	return l.ensureFirewall(ctx, &computepb.Firewall{
		Name: proto.String(firewallName(base)), SourceRanges: sp.sources, TargetTags: tags, DestinationRanges: []string{ip + "/32"},
		Allowed: allowedPorts(sp.ports, func(p v1.ServicePort) int32 { return p.Port }),
	}, svcKey)
}

// ensureHealthCheckFirewall admits Google's health checkers to a health
// check's port on the nodes with the rule name; owner is "" for the
// cluster's shared check.
func (l *loadBalancers) ensureHealthCheckFirewall(ctx context.Context, name string, port int, tags []string, owner string) error {
	return l.once(ctx, owner, "firewalls/"+name+"/"+strings.Join(tags, ","), func(ctx context.Context) error {
		return l.ensureFirewall(ctx, &computepb.Firewall{
			Name: proto.String(name), SourceRanges: healthCheckRanges, TargetTags: tags,
			Allowed: []*computepb.Allowed{{IPProtocol: proto.String("tcp"), Ports: []string{strconv.Itoa(port)}}},
		}, owner)
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
