package openstack

import (
	"context"
	"fmt"
	"slices"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// makeUpstreamGroup makes the security group the upstream OpenStack CCM
// makes for a Service with manage-security-groups on (the switched
// config's setting, which import-config carries over): named
// lb-sg-<UID>-<namespace>-<name> (kubernetes/cloud-provider-openstack
// v1.36.0 pkg/openstack/loadbalancer_sg.go:42-50), described "Security
// Group for <ns>/<name> Service LoadBalancer in cluster <cluster>"
// (:227-230), admitting each NodePort from the member subnet, the source
// of an amphora's traffic (:240-257, :265-303), and added to every
// backend server's port (:53-103). The switched manager must take it
// over: nothing of it may outlive the Service.
func (c *Cloud) makeUpstreamGroup(ctx context.Context, netc *gophercloud.ServiceClient, svc *corev1.Service, clusterName string, backends []conformance.Instance) error {
	name := fmt.Sprintf("lb-sg-%s-%s-%s", svc.UID, svc.Namespace, svc.Name)
	g, err := groups.Create(ctx, netc, groups.CreateOpts{
		Name:        name,
		Description: fmt.Sprintf("Security Group for %s/%s Service LoadBalancer in cluster %s", svc.Namespace, svc.Name, clusterName),
	}).Extract()
	if err != nil {
		return fmt.Errorf("create group %s: %w", name, err)
	}
	for _, p := range svc.Spec.Ports {
		if _, err := rules.Create(ctx, netc, rules.CreateOpts{
			Direction: rules.DirIngress, EtherType: rules.EtherType4, SecGroupID: g.ID,
			Protocol: rules.RuleProtocol("tcp"), PortRangeMin: int(p.NodePort), PortRangeMax: int(p.NodePort),
			RemoteIPPrefix: c.fx.SubnetCIDR,
		}).Extract(); err != nil {
			return fmt.Errorf("rule for port %d in %s: %w", p.NodePort, name, err)
		}
	}
	for _, b := range backends {
		for _, port := range c.emu.DevicePorts(b.ID) {
			sgs := slices.Clone(port.SecurityGroups)
			if slices.Contains(sgs, g.ID) {
				continue
			}
			sgs = append(sgs, g.ID)
			if _, err := ports.Update(ctx, netc, port.ID, ports.UpdateOpts{SecurityGroups: &sgs}).Extract(); err != nil {
				return fmt.Errorf("add %s to port %s of %s: %w", name, port.ID, b.ID, err)
			}
		}
	}
	return nil
}
