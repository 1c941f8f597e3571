package aws

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// MakeUpstreamLoadBalancer makes the Classic ELB the upstream AWS CCM
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
func (c *Cloud) MakeUpstreamLoadBalancer(svc *corev1.Service, _ string, backends []conformance.Instance) (conformance.UpstreamLoadBalancer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	creds := credentials.NewStaticCredentialsProvider(accessKeyID, SecretAccessKey, "")
	ec2c := ec2.New(ec2.Options{Region: region, BaseEndpoint: aws.String(c.srv.URL()), Credentials: creds})
	elbc := elb.New(elb.Options{Region: region, BaseEndpoint: aws.String(c.srv.URL()), Credentials: creds})

	name := cloudprovider.DefaultLoadBalancerName(svc)
	key := svc.Namespace + "/" + svc.Name
	clusterTag := "kubernetes.io/cluster/" + c.clusterID
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
	var subnets []string
	for _, z := range slices.Sorted(func(yield func(string) bool) {
		for z := range c.fx.PublicSubnets {
			if !yield(z) {
				return
			}
		}
	}) {
		subnets = append(subnets, c.fx.PublicSubnets[z])
	}
	out, err := elbc.CreateLoadBalancer(ctx, &elb.CreateLoadBalancerInput{
		LoadBalancerName: aws.String(name),
		Listeners:        listeners,
		Subnets:          subnets,
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
	}, nil
}
