package aws

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

var _ conformance.UserAddresser = (*Cloud)(nil)

// annotationEIPAllocations is where the upstream AWS CCM, and so the
// backend, take the Elastic IPs of an internet-facing NLB: one allocation
// ID per subnet of the NLB, comma-separated.
const annotationEIPAllocations = "service.beta.kubernetes.io/aws-load-balancer-eip-allocations"

// ReserveUserAddress allocates Elastic IPs as `aws ec2 allocate-address
// --domain vpc` does, once per subnet the manager's NLB will be in: an
// AllocateAddress with no tag specification, so nothing marks them as a
// cluster's or a Service's. The backend takes one allocation per subnet
// or refuses the Service, and picks, like the upstream CCM, one subnet per
// zone among the VPC's public subnets, whichever zones the Nodes are in;
// so the count is the zones of the subnets tagged for internet-facing
// load balancers (kubernetes.io/role/elb), read through DescribeSubnets as
// a person would before writing the annotation. A Service names them in
// the aws-load-balancer-eip-allocations annotation; IP stays empty, since
// an NLB's status is its DNS name, not an address.
func (c *Cloud) ReserveUserAddress() (conformance.UserAddress, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	api := c.driftClients()
	var zones []string
	pages := ec2.NewDescribeSubnetsPaginator(api.ec2, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{
		{Name: aws.String("vpc-id"), Values: []string{c.fx.VPCID}},
		{Name: aws.String("tag-key"), Values: []string{"kubernetes.io/role/elb"}},
	}})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return conformance.UserAddress{}, fmt.Errorf("describe subnets of %s: %w", c.fx.VPCID, err)
		}
		for _, s := range page.Subnets {
			if z := aws.ToString(s.AvailabilityZone); z != "" && !slices.Contains(zones, z) {
				zones = append(zones, z)
			}
		}
	}
	if len(zones) == 0 {
		return conformance.UserAddress{}, fmt.Errorf("no subnet of %s is tagged kubernetes.io/role/elb", c.fx.VPCID)
	}
	allocs := make([]string, 0, len(zones))
	for range zones {
		out, err := api.ec2.AllocateAddress(ctx, &ec2.AllocateAddressInput{Domain: ec2types.DomainTypeVpc})
		if err != nil {
			return conformance.UserAddress{}, fmt.Errorf("allocate address: %w", err)
		}
		allocs = append(allocs, aws.ToString(out.AllocationId))
	}
	value := strings.Join(allocs, ",")
	return conformance.UserAddress{Use: func(svc *corev1.Service) {
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		svc.Annotations[annotationEIPAllocations] = value
	}}, nil
}
