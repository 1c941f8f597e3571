package aws

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/smithy-go"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// The drift-repair scenario's out-of-band changes: what a person in the
// console or a cleanup script does to a Service's load balancer, through
// the EC2, ELBv2 and Classic ELB APIs with the real SDK clients (never
// the emulator's internals). Which resources are the Service's is the
// adapter's view (ServiceResources); what is deleted, and whether it is
// gone, is the API's answer.

var _ conformance.DriftMaker = (*Cloud)(nil)

// driftAPI are the SDK clients a person's tools would use, pointed at the
// emulator like MakeUpstreamLoadBalancer's.
type driftAPI struct {
	ec2   *ec2.Client
	elbv2 *elbv2.Client
	elb   *elb.Client
}

func (c *Cloud) driftClients() *driftAPI {
	creds := credentials.NewStaticCredentialsProvider(adminKeyID, SecretAccessKey, "")
	url := aws.String(c.srv.URL())
	return &driftAPI{
		ec2:   ec2.New(ec2.Options{Region: region, BaseEndpoint: url, Credentials: creds}),
		elbv2: elbv2.New(elbv2.Options{Region: region, BaseEndpoint: url, Credentials: creds}),
		elb:   elb.New(elb.Options{Region: region, BaseEndpoint: url, Credentials: creds}),
	}
}

// DeletePart deletes the listener of the Service's lowest port: on its
// NLB (the suite's default shape) with DeleteListener, on a Classic ELB
// (a switched cluster's default) with DeleteLoadBalancerListeners. The
// load balancer, its target groups and its instances stay, but
// LoadBalancers reports the port missing until the manager makes the
// listener again.
func (c *Cloud) DeletePart(svc types.NamespacedName) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	api := c.driftClients()
	parts := c.ServiceResources(svc)
	lbs := map[string]string{} // NLB ARN -> name
	for _, r := range parts {
		if r.Kind == cloudsimaws.KindLoadBalancer {
			lbs[r.ID] = r.Name
		}
	}
	// NLB listeners are named "<protocol>:<port>", Classic ones have IDs
	// "<load balancer>:<port>".
	var nlbListener, classic cloudsim.Resource
	nlbPort, classicPort := int32(0), int32(0)
	for _, r := range parts {
		switch {
		case r.Kind == cloudsimaws.KindListener && lbs[r.Parent] != "":
			if p := portAfterColon(r.Name); p > 0 && (nlbPort == 0 || p < nlbPort) {
				nlbListener, nlbPort = r, p
			}
		case r.Kind == cloudsimaws.KindClassicListener:
			if p := portAfterColon(r.ID); p > 0 && (classicPort == 0 || p < classicPort) {
				classic, classicPort = r, p
			}
		}
	}
	switch {
	case nlbPort > 0:
		if _, err := api.elbv2.DeleteListener(ctx, &elbv2.DeleteListenerInput{ListenerArn: aws.String(nlbListener.ID)}); err != nil {
			return "", fmt.Errorf("delete listener %s: %w", nlbListener.ID, err)
		}
		return fmt.Sprintf("listener of port %d of NLB %s", nlbPort, lbs[nlbListener.Parent]), nil
	case classicPort > 0:
		if _, err := api.elb.DeleteLoadBalancerListeners(ctx, &elb.DeleteLoadBalancerListenersInput{
			LoadBalancerName: aws.String(classic.Parent), LoadBalancerPorts: []int32{classicPort},
		}); err != nil {
			return "", fmt.Errorf("delete listener of port %d of %s: %w", classicPort, classic.Parent, err)
		}
		return fmt.Sprintf("listener of port %d of Classic ELB %s", classicPort, classic.Parent), nil
	}
	return "", fmt.Errorf("service %s has no load balancer listener", svc)
}

func portAfterColon(s string) int32 {
	i := strings.LastIndex(s, ":")
	if i < 0 {
		return 0
	}
	n, err := strconv.Atoi(s[i+1:])
	if err != nil {
		return 0
	}
	return int32(n)
}

// DeleteLoadBalancer deletes every part ServiceResources lists, in the
// order AWS requires: the NLBs and Classic ELBs (their listeners,
// policies and registrations go with them), then the target groups, then
// the rules in other groups that admit the Service's own security groups
// (AWS keeps a referenced group in use), then those groups. A security
// group is deleted only when the manager made it (tagged for the cluster
// as owned and for the Service); Elastic IPs are the user's and stay. A
// part already gone counts as deleted. A part still in use when its turn
// comes (the manager made the load balancer again meanwhile) starts the
// round over, a few times at most.
func (c *Cloud) DeleteLoadBalancer(svc types.NamespacedName) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	api := c.driftClients()
	for attempt := 1; ; attempt++ {
		err := c.deleteServiceParts(ctx, api, svc)
		if err == nil || !inUse(err) || attempt == 5 {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// deleteServiceParts is one round of DeleteLoadBalancer.
func (c *Cloud) deleteServiceParts(ctx context.Context, api *driftAPI, svc types.NamespacedName) error {
	parts := c.ServiceResources(svc)
	var nlbs, classics, tgs, groups []string
	for _, r := range parts {
		switch r.Kind {
		case cloudsimaws.KindLoadBalancer:
			nlbs = append(nlbs, r.ID)
		case cloudsimaws.KindClassicLoadBalancer:
			classics = append(classics, r.ID)
		case cloudsimaws.KindTargetGroup:
			tgs = append(tgs, r.ID)
		case cloudsimaws.KindSecurityGroup:
			if r.Tags[c.fx.ClusterTagKey] == "owned" && r.Tags[serviceTag] == svc.String() {
				groups = append(groups, r.ID)
			}
		case cloudsimaws.KindListener, cloudsimaws.KindTarget, cloudsimaws.KindClassicListener,
			cloudsimaws.KindClassicPolicy, cloudsimaws.KindClassicInstance:
			// Deleted with their load balancer or target group.
		case cloudsimaws.KindSecurityGroupRule:
			// Deleted with their group, or revoked below.
		case cloudsimaws.KindElasticIP:
			// The user's (the manager allocates none).
		default:
			return fmt.Errorf("service %s: do not know how to delete %s %s", svc, r.Kind, r.ID)
		}
	}
	for _, arn := range nlbs {
		if _, err := api.elbv2.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(arn)}); err != nil && !gone(err) {
			return fmt.Errorf("service %s: delete load balancer %s: %w", svc, arn, err)
		}
	}
	for _, name := range classics {
		if _, err := api.elb.DeleteLoadBalancer(ctx, &elb.DeleteLoadBalancerInput{LoadBalancerName: aws.String(name)}); err != nil && !gone(err) {
			return fmt.Errorf("service %s: delete Classic ELB %s: %w", svc, name, err)
		}
	}
	for _, arn := range tgs {
		if _, err := api.elbv2.DeleteTargetGroup(ctx, &elbv2.DeleteTargetGroupInput{TargetGroupArn: aws.String(arn)}); err != nil && !gone(err) {
			return fmt.Errorf("service %s: delete target group %s: %w", svc, arn, err)
		}
	}
	if len(groups) == 0 {
		return nil
	}
	if err := c.revokeReferences(ctx, api, groups); err != nil {
		return fmt.Errorf("service %s: %w", svc, err)
	}
	for _, id := range groups {
		if _, err := api.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(id)}); err != nil && !gone(err) {
			return fmt.Errorf("service %s: delete security group %s: %w", svc, id, err)
		}
	}
	return nil
}

// revokeReferences revokes, in every security group of the VPC, the
// ingress rules whose source is one of groups (the node rules admitting
// the Service's load balancer), as the console does before it deletes a
// group. A group's rules referencing itself go with it.
func (c *Cloud) revokeReferences(ctx context.Context, api *driftAPI, groups []string) error {
	pages := ec2.NewDescribeSecurityGroupsPaginator(api.ec2, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{
		{Name: aws.String("vpc-id"), Values: []string{c.fx.VPCID}},
		{Name: aws.String("ip-permission.group-id"), Values: groups},
	}})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("describe security groups: %w", err)
		}
		for _, sg := range page.SecurityGroups {
			if slices.Contains(groups, aws.ToString(sg.GroupId)) {
				continue
			}
			var revoke []ec2types.IpPermission
			for _, p := range sg.IpPermissions {
				var pairs []ec2types.UserIdGroupPair
				for _, g := range p.UserIdGroupPairs {
					if slices.Contains(groups, aws.ToString(g.GroupId)) {
						pairs = append(pairs, ec2types.UserIdGroupPair{GroupId: g.GroupId})
					}
				}
				if len(pairs) > 0 {
					revoke = append(revoke, ec2types.IpPermission{IpProtocol: p.IpProtocol, FromPort: p.FromPort, ToPort: p.ToPort, UserIdGroupPairs: pairs})
				}
			}
			if len(revoke) == 0 {
				continue
			}
			if _, err := api.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: sg.GroupId, IpPermissions: revoke}); err != nil && !gone(err) {
				return fmt.Errorf("revoke rules from %v in %s: %w", groups, aws.ToString(sg.GroupId), err)
			}
		}
	}
	return nil
}

// gone is AWS's answer for a part already deleted.
func gone(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.ErrorCode() {
	case "LoadBalancerNotFound", "AccessPointNotFound", "TargetGroupNotFound", "ListenerNotFound",
		"InvalidGroup.NotFound", "InvalidPermission.NotFound":
		return true
	}
	return false
}

// inUse is AWS's refusal to delete what another resource still uses.
func inUse(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.ErrorCode() {
	case "ResourceInUse", "DependencyViolation":
		return true
	}
	return false
}
