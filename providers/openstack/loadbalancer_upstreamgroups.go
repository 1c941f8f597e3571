package openstack

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// The upstream CCM's per-Service security groups. With
// manage-security-groups, kubernetes/cloud-provider-openstack (v1.36.0)
// makes a group per Service, named lb-sg-<UID>-<namespace>-<name>
// (pkg/openstack/loadbalancer_sg.go:42-50) and described "Security Group
// for <ns>/<name> Service LoadBalancer in cluster <cluster-name>"
// (:227-230), fills it with rules admitting the Service's NodePorts
// (:265-303) and adds it to each member node's port (:53-103). It
// removes it (detach from every port carrying it, then delete:
// :105-145, :336-362) only when that Service is deleted or, on an ensure,
// when manage-security-groups is off (loadbalancer.go:1844-1855,
// :2177-2181). After a switch nothing of upstream's would remove it, so
// the group would admit the NodePorts of a Service long gone. The
// manager takes each over as it adopts the Service: its own member group
// admits the Service's traffic first (ensureRules), then upstream's
// group is detached and deleted; a Service deleted without an ensure in
// between loses it at its deletion.

// upstreamGroupName is the upstream CCM's name of the Service's group
// (loadbalancer_sg.go:42-50). MUST NOT change: it is how the groups it
// made are found.
func upstreamGroupName(svc *v1.Service) string {
	return cut(fmt.Sprintf("lb-sg-%s-%s-%s", svc.UID, svc.Namespace, svc.Name), 255)
}

// upstreamGroupDescription is the upstream CCM's description of the
// Service's group (loadbalancer_sg.go:227-230), with the cluster name
// that also names the load balancers this manager adopts (lbName). A
// group with the name but another description is not taken for
// upstream's and is left alone.
func upstreamGroupDescription(clusterID string, svc *v1.Service) string {
	return fmt.Sprintf("Security Group for %s/%s Service LoadBalancer in cluster %s", svc.Namespace, svc.Name, clusterID)
}

// upstreamGroups remembers the Services whose upstream group is known to
// be gone (removed, or never there), so an ensure looks for a Service's
// group once per process lifetime, not on every sync: the manager never
// makes such a group, so once gone it stays gone.
type upstreamGroups struct {
	mu   sync.Mutex
	gone map[types.UID]bool
}

func (u *upstreamGroups) isGone(uid types.UID) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.gone[uid]
}

func (u *upstreamGroups) setGone(uid types.UID, gone bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !gone {
		delete(u.gone, uid)
		return
	}
	if u.gone == nil {
		u.gone = map[types.UID]bool{}
	}
	u.gone[uid] = true
}

// takeOverUpstreamGroup removes the upstream CCM's group of the Service:
// one listing by its exact name, then, for the group with upstream's
// description, one write per port carrying it and its deletion. With
// want (an ensure; nil at the Service's deletion) the group goes only
// when those rules admit everything it admits to the Service's present
// ports: a rule of upstream's that the manager's do not cover keeps the
// group (logged), so the switch never cuts traffic. Its rules for ports
// the Service no longer has (an old NodePort, a health check port no
// monitor probes) need no cover.
func (l *loadBalancers) takeOverUpstreamGroup(ctx context.Context, svc *v1.Service, want []rule, deleting bool) error {
	// A deletion looks anyway (one listing per deleted Service): an
	// upstream CCM still running beside this one during a switch may
	// have made the group again since, and it must not outlive the
	// Service.
	if svc.UID == "" || (!deleting && l.upstreamGroups.isGone(svc.UID)) {
		return nil
	}
	logger := klog.FromContext(ctx)
	name := upstreamGroupName(svc)
	pages, err := groups.List(l.api.network, groups.ListOpts{Name: name}).AllPages(ctx)
	if err != nil {
		return fmt.Errorf("list security groups named %s: %w", name, err)
	}
	list, err := groups.ExtractGroups(pages)
	if err != nil {
		return err
	}
	desc := upstreamGroupDescription(l.clusterID, svc)
	for _, g := range list {
		// Neutron's name filter is exact; the check is for a proxy or
		// an older release that matched otherwise.
		if g.Name != name {
			continue
		}
		if g.Description != desc {
			logger.Info("Left a security group named as the upstream CCM names the Service's: its description is not upstream's for this cluster", "id", g.ID, "name", g.Name, "description", g.Description)
			continue
		}
		if !deleting {
			if missing := uncovered(g.Rules, want); len(missing) > 0 {
				logger.Info("Kept the upstream CCM's security group of the Service: it admits traffic the manager's rules do not", "id", g.ID, "name", g.Name, "notCovered", missing)
				return nil
			}
		}
		if err := detachAndDelete(ctx, l.api.network, g.ID); err != nil {
			return fmt.Errorf("take over the upstream CCM's security group %s of service %s: %w", g.Name, serviceKey(svc), err)
		}
		logger.Info("Detached and deleted the upstream CCM's security group of the Service", "id", g.ID, "name", g.Name)
	}
	if !deleting {
		l.upstreamGroups.setGone(svc.UID, true)
	}
	return nil
}

// uncovered lists upstream's ingress rules for a port some wanted rule
// serves (same protocol and port) whose source no wanted rule for that
// port contains.
func uncovered(have []rules.SecGroupRule, want []rule) []string {
	var out []string
	for _, r := range have {
		if r.Direction != string(rules.DirIngress) || r.PortRangeMin == 0 {
			continue
		}
		src := r.RemoteIPPrefix
		if src == "" {
			src = "0.0.0.0/0"
			if r.EtherType == string(rules.EtherType6) {
				src = "::/0"
			}
		}
		from, err := netip.ParsePrefix(src)
		served, covered := false, false
		for _, w := range want {
			if !strings.EqualFold(w.protocol, r.Protocol) || w.port < r.PortRangeMin || w.port > r.PortRangeMax {
				continue
			}
			served = true
			p, perr := netip.ParsePrefix(w.prefix)
			if err == nil && perr == nil && r.PortRangeMin == r.PortRangeMax && p.Bits() <= from.Bits() && p.Contains(from.Addr()) {
				covered = true
			}
		}
		if served && !covered {
			out = append(out, ruleDetail(&r))
		}
	}
	return out
}
