package aws

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/klog/v2"
)

// The EC2 side of routes: reading the selected route tables, the route
// calls, and what makes a route ours.

// routeTables returns the selected tables as seen at most maxAge ago,
// sharing one listing between concurrent callers.
func (r *routes) routeTables(ctx context.Context, maxAge time.Duration) ([]ec2types.RouteTable, error) {
	r.mu.Lock()
	tables, at := r.tables, r.tablesAt
	r.mu.Unlock()
	if tables != nil && maxAge > 0 && r.clock.Since(at) <= maxAge {
		return tables, nil
	}
	return r.fetch.Do(ctx, "tables", r.describeTables)
}

func (r *routes) describeTables(ctx context.Context) ([]ec2types.RouteTable, error) {
	start := r.clock.Now()
	var tables []ec2types.RouteTable
	seen := map[string]bool{}
	collect := func(input *ec2.DescribeRouteTablesInput) error {
		p := ec2.NewDescribeRouteTablesPaginator(r.ec2.DescribeRouteTables, input)
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return err
			}
			for _, t := range page.RouteTables {
				if id := aws.ToString(t.RouteTableId); !seen[id] {
					seen[id] = true
					tables = append(tables, t)
				}
			}
		}
		return nil
	}
	if len(r.tableIDs) > 0 {
		if err := collect(&ec2.DescribeRouteTablesInput{RouteTableIds: r.tableIDs}); err != nil {
			return nil, fmt.Errorf("describe route tables %v: %w", r.tableIDs, err)
		}
	}
	if r.discover {
		vpc, err := r.in.vpcID(ctx)
		if err != nil {
			return nil, fmt.Errorf("discover route tables: %w", err)
		}
		err = collect(&ec2.DescribeRouteTablesInput{
			Filters: []ec2types.Filter{
				{Name: aws.String("vpc-id"), Values: []string{vpc}},
				{Name: aws.String("tag-key"), Values: []string{r.in.clusterTag()}},
			},
			MaxResults: aws.Int32(100),
		})
		if err != nil {
			return nil, fmt.Errorf("describe route tables in %s tagged %s: %w", vpc, r.in.clusterTag(), err)
		}
	}
	if tables == nil {
		tables = []ec2types.RouteTable{}
	}
	r.mu.Lock()
	r.tables, r.tablesAt = tables, start
	r.mu.Unlock()
	return tables, nil
}

func (r *routes) createRoute(ctx context.Context, tableID, cidr, id string) error {
	in := &ec2.CreateRouteInput{RouteTableId: aws.String(tableID), InstanceId: aws.String(id)}
	setRouteDestination(cidr, &in.DestinationCidrBlock, &in.DestinationIpv6CidrBlock)
	if _, err := r.ec2.CreateRoute(ctx, in); err != nil {
		return fmt.Errorf("create route %s -> %s in %s: %w", cidr, id, tableID, err)
	}
	klog.FromContext(ctx).Info("Created route", "routeTable", tableID, "cidr", cidr, "instanceID", id)
	return nil
}

func (r *routes) deleteRoute(ctx context.Context, tableID, cidr string) error {
	in := &ec2.DeleteRouteInput{RouteTableId: aws.String(tableID)}
	setRouteDestination(cidr, &in.DestinationCidrBlock, &in.DestinationIpv6CidrBlock)
	if _, err := r.ec2.DeleteRoute(ctx, in); err != nil {
		return fmt.Errorf("delete route %s in %s: %w", cidr, tableID, err)
	}
	klog.FromContext(ctx).Info("Deleted route", "routeTable", tableID, "cidr", cidr)
	return nil
}

// disableSourceDestCheck lets the instance receive packets for its pod
// CIDR, which EC2 otherwise drops because they are not addressed to it.
func (r *routes) disableSourceDestCheck(ctx context.Context, inst *instance) error {
	if inst.sourceDestCheckOff {
		return nil
	}
	id := inst.id
	_, err := r.ec2.ModifyInstanceAttribute(ctx, &ec2.ModifyInstanceAttributeInput{
		InstanceId:      aws.String(id),
		SourceDestCheck: &ec2types.AttributeBooleanValue{Value: aws.Bool(false)},
	})
	switch code := ec2ErrorCode(err); {
	case err == nil:
	case code == "InvalidAction" || code == "UnsupportedOperation":
		// EC2 always has the action; EC2-compatible clouds and the test
		// emulator may not, and routes are still worth creating there.
		klog.FromContext(ctx).V(2).Info("Cannot disable source/destination check here; skipping", "instanceID", id, "code", code)
	default:
		return fmt.Errorf("disable source/destination check on %s: %w", id, err)
	}
	return nil
}

// isClusterInstance reports whether inst carries the cluster tag; an
// instance EC2 no longer lists (nil: terminated or unknown, while a
// route still points at it) is not known to be the cluster's.
func (in *instances) isClusterInstance(inst *instance) bool {
	return inst != nil && inst.clusterTagged
}

// isOwnRoute reports whether a route is of the kind this CCM manages: one to
// an instance, or a blackhole left by one (a blackhole with a gateway, NAT
// or peering target belongs to whoever made it).
func isOwnRoute(rt ec2types.Route) bool {
	if rt.Origin != "" && rt.Origin != ec2types.RouteOriginCreateRoute {
		return false
	}
	foreign := aws.ToString(rt.GatewayId) + aws.ToString(rt.NatGatewayId) + aws.ToString(rt.VpcPeeringConnectionId) +
		aws.ToString(rt.TransitGatewayId) + aws.ToString(rt.EgressOnlyInternetGatewayId) + aws.ToString(rt.CarrierGatewayId) +
		aws.ToString(rt.LocalGatewayId) + aws.ToString(rt.CoreNetworkArn) + aws.ToString(rt.OdbNetworkArn)
	if foreign != "" {
		return false
	}
	if rt.State == ec2types.RouteStateBlackhole {
		return true
	}
	return aws.ToString(rt.InstanceId) != ""
}

// routeTarget names what a route points at, for messages.
func routeTarget(rt ec2types.Route) string {
	for _, s := range []*string{rt.InstanceId, rt.NetworkInterfaceId, rt.GatewayId, rt.NatGatewayId, rt.VpcPeeringConnectionId,
		rt.TransitGatewayId, rt.EgressOnlyInternetGatewayId, rt.CarrierGatewayId, rt.LocalGatewayId, rt.CoreNetworkArn} {
		if aws.ToString(s) != "" {
			return aws.ToString(s)
		}
	}
	return "nothing"
}

// routeCIDR is the route's destination in canonical form, or "" for
// prefix-list destinations.
func routeCIDR(rt ec2types.Route) string {
	s := aws.ToString(rt.DestinationCidrBlock)
	if s == "" {
		s = aws.ToString(rt.DestinationIpv6CidrBlock)
	}
	cidr, err := canonicalRouteCIDR(s)
	if err != nil {
		return ""
	}
	return cidr
}

func findRouteFor(t ec2types.RouteTable, cidr string) (ec2types.Route, bool) {
	for _, rt := range t.Routes {
		if routeCIDR(rt) == cidr {
			return rt, true
		}
	}
	return ec2types.Route{}, false
}

// canonicalRouteCIDR canonicalises a CIDR so that the route controller's and
// EC2's spellings compare equal.
func canonicalRouteCIDR(s string) (string, error) {
	p, err := netip.ParsePrefix(strings.TrimSpace(s))
	if err != nil {
		return "", fmt.Errorf("route destination %q is not a CIDR: %w", s, err)
	}
	return p.Masked().String(), nil
}

func setRouteDestination(cidr string, v4, v6 **string) {
	if strings.Contains(cidr, ":") {
		*v6 = aws.String(cidr)
	} else {
		*v4 = aws.String(cidr)
	}
}
