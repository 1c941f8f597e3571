package openstack

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/external"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
)

// The floating network of a cloud-config that names none. Upstream's
// openstackutil.GetFloatingNetworkID (pkg/util/openstack/network.go:90-132)
// takes the first network Neutron lists that is router:external, has
// subnets, and has an IPv4 subnet (or one the project cannot see), and
// the upstream CCM calls it on every sync of an external Service without
// a floating network (pkg/openstack/loadbalancer.go:1486-1493). Here the
// same look-up runs once, at start, and its answer is kept for the
// process's life.
//
// Upstream's answer to several candidates is the first in Neutron's
// (unspecified) order, and to none a load balancer without a floating IP
// whose VIP becomes the Service's address, with only a Warning Event
// (loadbalancer.go:759-762). Both are errors here, on the external
// Services that need the network (issue 20): a network picked by
// database order, or a private address for a Service that asked to be
// public, is not what the Service asked for. A cluster whose Services
// are all internal never needs the network, so neither is an error at
// start; loadBalancer.internalLB skips the look-up altogether, since no
// Service can be external then (loadbalancer.go:1374-1380).

// detectedFloatingNetwork is what the look-up found.
type detectedFloatingNetwork struct {
	// id is the only candidate, "" when there are none or several.
	id string
	// candidates names each candidate as "name (UUID)" when there are
	// several, in name order.
	candidates []string
}

// neutronNetwork is the part of a Neutron network the look-up reads.
type neutronNetwork struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Subnets  []string `json:"subnets"`
	External bool     `json:"router:external"`
}

// detectFloatingNetwork fills s.LoadBalancer.detected when the section
// names no floating network and Services may be external: one listing
// of the external networks, and one of their subnets only when several
// have subnets (their IP versions then decide between them). A failed
// listing stops the start with the reason, as a catalog without Neutron
// does (newClients): load balancers could not work either.
func detectFloatingNetwork(ctx context.Context, network *gophercloud.ServiceClient, s *Section) error {
	lb := &s.LoadBalancer
	if lb.FloatingNetworkID != "" || lb.InternalLB {
		return nil
	}
	d, err := lookUpFloatingNetwork(ctx, network)
	if err != nil {
		return fmt.Errorf("find the floating network (openstack.loadBalancer.floatingNetworkID is not set): %w", err)
	}
	lb.detected = d
	return nil
}

func lookUpFloatingNetwork(ctx context.Context, network *gophercloud.ServiceClient) (*detectedFloatingNetwork, error) {
	yes := true
	pages, err := networks.List(network, external.ListOptsExt{ListOptsBuilder: networks.ListOpts{}, External: &yes}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list external networks: %w", err)
	}
	var all []neutronNetwork
	if err := networks.ExtractNetworksInto(pages, &all); err != nil {
		return nil, fmt.Errorf("list external networks: %w", err)
	}
	var nets []neutronNetwork
	for _, n := range all {
		// Upstream skips external networks without subnets: no
		// floating IP can come from them.
		if n.External && len(n.Subnets) > 0 {
			nets = append(nets, n)
		}
	}
	if len(nets) > 1 {
		ids := make([]string, len(nets))
		for i, n := range nets {
			ids[i] = n.ID
		}
		pages, err := subnets.List(network, subnetsOfNetworks(ids)).AllPages(ctx)
		if err != nil {
			return nil, fmt.Errorf("list the subnets of external networks %v: %w", ids, err)
		}
		subs, err := subnets.ExtractSubnets(pages)
		if err != nil {
			return nil, fmt.Errorf("list the subnets of external networks %v: %w", ids, err)
		}
		nets = slices.DeleteFunc(nets, func(n neutronNetwork) bool { return !floatingCandidate(n, subs) })
	}
	// With one network left no subnet is read: were it IPv6-only,
	// Neutron would refuse the floating IP with its own message.
	d := &detectedFloatingNetwork{}
	switch len(nets) {
	case 0:
	case 1:
		d.id = nets[0].ID
	default:
		slices.SortFunc(nets, func(a, b neutronNetwork) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID)) })
		for _, n := range nets {
			d.candidates = append(d.candidates, fmt.Sprintf("%s (%s)", n.Name, n.ID))
		}
	}
	return d, nil
}

// floatingCandidate is upstream's test of an external network: one of
// its subnets is IPv4, or is one the project cannot see (and may be).
// upstream: kubernetes/cloud-provider-openstack pkg/util/openstack/network.go:119-128
func floatingCandidate(n neutronNetwork, visible []subnets.Subnet) bool {
	for _, id := range n.Subnets {
		i := slices.IndexFunc(visible, func(s subnets.Subnet) bool { return s.ID == id })
		if i < 0 || visible[i].IPVersion == 4 {
			return true
		}
	}
	return false
}

// missingReason says why an external Service has no floating network,
// for the error it gets.
func (d *detectedFloatingNetwork) missingReason() string {
	switch {
	case d == nil:
		return "loadBalancer.floatingNetworkID is not set"
	case len(d.candidates) > 1:
		return "loadBalancer.floatingNetworkID is not set and the project sees several external networks to choose from: " + strings.Join(d.candidates, ", ")
	}
	return "loadBalancer.floatingNetworkID is not set and the project sees no external (router:external) network with an IPv4 subnet"
}

// subnetsOfNetworks lists the subnets of several networks in one call:
// Neutron takes a repeated filter as "any of" (gophercloud's ListOpts
// takes one network), and only the fields the look-up reads are asked
// for.
type subnetsOfNetworks []string

// ToSubnetListQuery implements subnets.ListOptsBuilder.
func (ids subnetsOfNetworks) ToSubnetListQuery() (string, error) {
	q := url.Values{}
	for _, id := range ids {
		q.Add("network_id", id)
	}
	for _, f := range []string{"id", "network_id", "ip_version"} {
		q.Add("fields", f)
	}
	return "?" + q.Encode(), nil
}
