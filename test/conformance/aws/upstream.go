package aws

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// MakeUpstreamLoadBalancer makes what the upstream AWS CCM of the cluster
// clusterName (its cluster tag; another cluster's for the orphan
// scenario) makes for the Service: an NLB for type "nlb", else a Classic
// ELB.
func (c *Cloud) MakeUpstreamLoadBalancer(svc *corev1.Service, clusterName string, backends []conformance.Instance) (conformance.UpstreamLoadBalancer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if svc.Annotations["service.beta.kubernetes.io/aws-load-balancer-type"] == "nlb" {
		return c.makeUpstreamNLB(ctx, clusterName, svc, backends)
	}
	return c.makeUpstreamClassic(ctx, clusterName, svc, backends)
}

// makeUpstreamClassic makes the Classic ELB the upstream AWS CCM
// makes for a Service without annotations (its default kind), through
// the EC2 and Elastic Load Balancing APIs as it calls them
// (kubernetes/cloud-provider-aws at 63ec440c):
//   - the security group "k8s-elb-<name>", described "Security group for
//     Kubernetes ELB <name> (<ns>/<name>)" and tagged with the cluster
//     (aws.go:2008-2012, createSecurityGroup :1977), admitting the listener
//     ports and ICMP 3-4 from 0.0.0.0/0 (createSecurityGroupRules :2041);
//   - the load balancer named cloudprovider.DefaultLoadBalancerName in
//     the public subnets, a TCP listener per port to its NodePort, tagged
//     with the cluster and kubernetes.io/service-name (aws_loadbalancer.go
//     :1169-1213);
//   - upstream's health check: TCP to the first NodePort, 2 healthy, 6
//     unhealthy, 5 s timeout, every 10 s (aws_loadbalancer.go:65-77);
//   - the instances registered, and the node security group admitting
//     all traffic from the ELB's group (aws.go:3062-3080).
func (c *Cloud) makeUpstreamClassic(ctx context.Context, clusterName string, svc *corev1.Service, backends []conformance.Instance) (conformance.UpstreamLoadBalancer, error) {
	creds := credentials.NewStaticCredentialsProvider(adminKeyID, SecretAccessKey, "")
	ec2c := ec2.New(ec2.Options{Region: region, BaseEndpoint: aws.String(c.srv.URL()), Credentials: creds})
	elbc := elb.New(elb.Options{Region: region, BaseEndpoint: aws.String(c.srv.URL()), Credentials: creds})

	name := cloudprovider.DefaultLoadBalancerName(svc)
	key := svc.Namespace + "/" + svc.Name
	clusterTag := "kubernetes.io/cluster/" + clusterName
	sg, err := ec2c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
		GroupName:   aws.String("k8s-elb-" + name),
		Description: aws.String(fmt.Sprintf("Security group for Kubernetes ELB %s (%s)", name, key)),
		VpcId:       aws.String(c.fx.VPCID),
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeSecurityGroup,
			Tags: []ec2types.Tag{{Key: aws.String(clusterTag), Value: aws.String("owned")}}}},
	})
	if err != nil {
		return conformance.UpstreamLoadBalancer{}, fmt.Errorf("create security group: %w", err)
	}
	anywhere := []ec2types.IpRange{{CidrIp: aws.String("0.0.0.0/0")}}
	perms := []ec2types.IpPermission{{IpProtocol: aws.String("icmp"), FromPort: aws.Int32(3), ToPort: aws.Int32(4), IpRanges: anywhere}}
	var listeners []elbtypes.Listener
	for _, p := range svc.Spec.Ports {
		perms = append(perms, ec2types.IpPermission{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(p.Port), ToPort: aws.Int32(p.Port), IpRanges: anywhere})
		listeners = append(listeners, elbtypes.Listener{Protocol: aws.String("TCP"), LoadBalancerPort: p.Port,
			InstanceProtocol: aws.String("TCP"), InstancePort: aws.Int32(p.NodePort)})
	}
	if _, err := ec2c.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: sg.GroupId, IpPermissions: perms}); err != nil {
		return conformance.UpstreamLoadBalancer{}, fmt.Errorf("security group rules: %w", err)
	}
	out, err := elbc.CreateLoadBalancer(ctx, &elb.CreateLoadBalancerInput{
		LoadBalancerName: aws.String(name),
		Listeners:        listeners,
		Subnets:          c.publicSubnets(),
		SecurityGroups:   []string{aws.ToString(sg.GroupId)},
		Tags: []elbtypes.Tag{
			{Key: aws.String("kubernetes.io/service-name"), Value: aws.String(key)},
			{Key: aws.String(clusterTag), Value: aws.String("owned")},
		},
	})
	if err != nil {
		return conformance.UpstreamLoadBalancer{}, fmt.Errorf("create load balancer %s: %w", name, err)
	}
	if _, err := elbc.ConfigureHealthCheck(ctx, &elb.ConfigureHealthCheckInput{LoadBalancerName: aws.String(name), HealthCheck: &elbtypes.HealthCheck{
		Target: aws.String(fmt.Sprintf("TCP:%d", svc.Spec.Ports[0].NodePort)), HealthyThreshold: aws.Int32(2), UnhealthyThreshold: aws.Int32(6),
		Timeout: aws.Int32(5), Interval: aws.Int32(10),
	}}); err != nil {
		return conformance.UpstreamLoadBalancer{}, fmt.Errorf("health check of %s: %w", name, err)
	}
	var instances []elbtypes.Instance
	for _, b := range backends {
		instances = append(instances, elbtypes.Instance{InstanceId: aws.String(b.ID)})
	}
	if _, err := elbc.RegisterInstancesWithLoadBalancer(ctx, &elb.RegisterInstancesWithLoadBalancerInput{LoadBalancerName: aws.String(name), Instances: instances}); err != nil {
		return conformance.UpstreamLoadBalancer{}, fmt.Errorf("register instances with %s: %w", name, err)
	}
	if _, err := ec2c.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(c.fx.NodeSecurityGroupID),
		IpPermissions: []ec2types.IpPermission{{IpProtocol: aws.String("-1"), UserIdGroupPairs: []ec2types.UserIdGroupPair{{GroupId: sg.GroupId}}}}}); err != nil {
		return conformance.UpstreamLoadBalancer{}, fmt.Errorf("node security group rule: %w", err)
	}
	return conformance.UpstreamLoadBalancer{
		ID:        name,
		Status:    corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{Hostname: strings.ToLower(aws.ToString(out.DNSName))}}},
		Exclusive: []string{cloudsimaws.KindClassicLoadBalancer, cloudsimaws.KindLoadBalancer, cloudsimaws.KindSecurityGroup},
		Kept:      []string{cloudsimaws.KindClassicListener, cloudsimaws.KindClassicInstance, cloudsimaws.KindSecurityGroupRule},
	}, nil
}

// publicSubnets are the fixture's public subnets, one per zone in zone
// order: those upstream picks for an internet-facing load balancer.
func (c *Cloud) publicSubnets() []string {
	var out []string
	for _, z := range slices.Sorted(maps.Keys(c.fx.PublicSubnets)) {
		out = append(out, c.fx.PublicSubnets[z])
	}
	return out
}

// makeUpstreamNLB makes the NLB the upstream AWS CCM makes for a Service
// of type "nlb" in its default security group mode, through the EC2 and
// ELBv2 APIs as it calls them (kubernetes/cloud-provider-aws at 63ec440c):
//   - the load balancer named cloudprovider.DefaultLoadBalancerName in the
//     public subnets, without a security group, tagged with the cluster
//     and kubernetes.io/service-name (aws_loadbalancer.go:150-205);
//   - per port a target group named k8s-<ns8>-<name8>-<10 hex of a SHA-1
//     over cluster, namespace, name, ports, protocols and health check>
//     (aws_loadbalancer.go:686-706), TCP to the NodePort, instance
//     targets, upstream's health check (TCP, traffic port, every 30 s,
//     10 s timeout, 3 either way, aws_loadbalancer.go:65-77), tagged like
//     the load balancer, with the instances registered, and a TCP listener
//     forwarding to it, tagged like the load balancer too
//     (createListenerV2, aws_loadbalancer.go:707-736);
//   - on the node security group, the client rule from 0.0.0.0/0 on each
//     NodePort described "kubernetes.io/rule/nlb/client=<name>" and the
//     MTU rule (ICMP 3-4) described "kubernetes.io/rule/nlb/mtu"; no
//     health rule, since the client rule covers it
//     (aws_loadbalancer.go:977-1100).
func (c *Cloud) makeUpstreamNLB(ctx context.Context, clusterName string, svc *corev1.Service, backends []conformance.Instance) (conformance.UpstreamLoadBalancer, error) {
	creds := credentials.NewStaticCredentialsProvider(adminKeyID, SecretAccessKey, "")
	ec2c := ec2.New(ec2.Options{Region: region, BaseEndpoint: aws.String(c.srv.URL()), Credentials: creds})
	elbv2c := elbv2.New(elbv2.Options{Region: region, BaseEndpoint: aws.String(c.srv.URL()), Credentials: creds})

	name := cloudprovider.DefaultLoadBalancerName(svc)
	key := svc.Namespace + "/" + svc.Name
	tags := []elbv2types.Tag{
		{Key: aws.String("kubernetes.io/service-name"), Value: aws.String(key)},
		{Key: aws.String("kubernetes.io/cluster/" + clusterName), Value: aws.String("owned")},
	}
	out, err := elbv2c.CreateLoadBalancer(ctx, &elbv2.CreateLoadBalancerInput{
		Name: aws.String(name), Type: elbv2types.LoadBalancerTypeEnumNetwork,
		Subnets: c.publicSubnets(), Tags: tags,
	})
	if err != nil {
		return conformance.UpstreamLoadBalancer{}, fmt.Errorf("create load balancer %s: %w", name, err)
	}
	lb := out.LoadBalancers[0]
	var targets []elbv2types.TargetDescription
	for _, b := range backends {
		targets = append(targets, elbv2types.TargetDescription{Id: aws.String(b.ID)})
	}
	var perms []ec2types.IpPermission
	for _, p := range svc.Spec.Ports {
		tg, err := elbv2c.CreateTargetGroup(ctx, &elbv2.CreateTargetGroupInput{
			Name: aws.String(upstreamTargetGroupName(clusterName, svc, p)), Protocol: elbv2types.ProtocolEnumTcp,
			Port: aws.Int32(p.NodePort), VpcId: lb.VpcId, TargetType: elbv2types.TargetTypeEnumInstance,
			HealthCheckProtocol: elbv2types.ProtocolEnumTcp, HealthCheckPort: aws.String("traffic-port"),
			HealthCheckIntervalSeconds: aws.Int32(30), HealthCheckTimeoutSeconds: aws.Int32(10),
			HealthyThresholdCount: aws.Int32(3), UnhealthyThresholdCount: aws.Int32(3), Tags: tags,
		})
		if err != nil {
			return conformance.UpstreamLoadBalancer{}, fmt.Errorf("create target group for port %d: %w", p.Port, err)
		}
		arn := tg.TargetGroups[0].TargetGroupArn
		if _, err := elbv2c.RegisterTargets(ctx, &elbv2.RegisterTargetsInput{TargetGroupArn: arn, Targets: targets}); err != nil {
			return conformance.UpstreamLoadBalancer{}, fmt.Errorf("register targets for port %d: %w", p.Port, err)
		}
		if _, err := elbv2c.CreateListener(ctx, &elbv2.CreateListenerInput{
			LoadBalancerArn: lb.LoadBalancerArn, Port: aws.Int32(p.Port), Protocol: elbv2types.ProtocolEnumTcp,
			DefaultActions: []elbv2types.Action{{Type: elbv2types.ActionTypeEnumForward, TargetGroupArn: arn}}, Tags: tags,
		}); err != nil {
			return conformance.UpstreamLoadBalancer{}, fmt.Errorf("create listener on port %d: %w", p.Port, err)
		}
		perms = append(perms, ec2types.IpPermission{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(p.NodePort), ToPort: aws.Int32(p.NodePort),
			IpRanges: []ec2types.IpRange{{CidrIp: aws.String("0.0.0.0/0"), Description: aws.String("kubernetes.io/rule/nlb/client=" + name)}}})
	}
	if _, err := ec2c.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(c.fx.NodeSecurityGroupID), IpPermissions: perms}); err != nil {
		return conformance.UpstreamLoadBalancer{}, fmt.Errorf("node security group rules: %w", err)
	}
	// One MTU rule per client CIDR serves every NLB: the first made it.
	mtu := []ec2types.IpPermission{{IpProtocol: aws.String("icmp"), FromPort: aws.Int32(3), ToPort: aws.Int32(4),
		IpRanges: []ec2types.IpRange{{CidrIp: aws.String("0.0.0.0/0"), Description: aws.String("kubernetes.io/rule/nlb/mtu")}}}}
	var apiErr smithy.APIError
	if _, err := ec2c.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(c.fx.NodeSecurityGroupID), IpPermissions: mtu}); err != nil &&
		!(errors.As(err, &apiErr) && apiErr.ErrorCode() == "InvalidPermission.Duplicate") {
		return conformance.UpstreamLoadBalancer{}, fmt.Errorf("node security group MTU rule: %w", err)
	}
	return conformance.UpstreamLoadBalancer{
		ID:     aws.ToString(lb.LoadBalancerArn),
		Status: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{Hostname: aws.ToString(lb.DNSName)}}},
		// No security group: the NLB has none and must keep having none.
		Exclusive: []string{cloudsimaws.KindClassicLoadBalancer, cloudsimaws.KindLoadBalancer, cloudsimaws.KindSecurityGroup},
		Kept:      []string{cloudsimaws.KindTargetGroup, cloudsimaws.KindTarget, cloudsimaws.KindListener, cloudsimaws.KindSecurityGroupRule},
	}, nil
}

// upstreamTargetGroupName is the name upstream's buildTargetGroupName
// gives the target group of port p with its default health check.
func upstreamTargetGroupName(clusterID string, svc *corev1.Service, p corev1.ServicePort) string {
	h := sha1.New()
	for _, part := range []string{clusterID, svc.Namespace, svc.Name, strconv.Itoa(int(p.Port)), strconv.Itoa(int(p.NodePort)), "TCP", "instance", "TCP", "30"} {
		h.Write([]byte(part))
	}
	alnum := func(s string) string {
		return strings.Map(func(r rune) rune {
			if (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
				return r
			}
			return -1
		}, s)
	}
	trim := func(s string, n int) string { return s[:min(n, len(s))] }
	return fmt.Sprintf("k8s-%s-%s-%s", trim(alnum(svc.Namespace), 8), trim(alnum(svc.Name), 8), hex.EncodeToString(h.Sum(nil))[:10])
}
