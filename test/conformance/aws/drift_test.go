package aws

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// TestDrift deletes a listener and then the whole load balancer of each
// shape (an NLB, and a Classic ELB as a switched cluster has by default)
// made through the API, and checks the adapter's view: the port gone,
// then nothing of the Service left but the node security group's rules
// it does not own. The Classic ELB's group is tagged for the Service, as
// the manager tags the groups it makes, so it is deleted with the rule
// admitting it into the node group; the NLB has no group.
func TestDrift(t *testing.T) {
	cl, insts := conformance.StartWithNodes(t, Adapter{}, conformance.Options{ClusterID: "cid", Switched: true})
	c := cl.(*Cloud)
	uids := map[string]string{"classic": "1234abcd-0000-1111-2222-333344445555", "nlb": "9876abcd-0000-1111-2222-333344445555"}
	for _, shape := range []string{"classic", "nlb"} {
		t.Run(shape, func(t *testing.T) {
			svc := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc-" + shape, UID: types.UID(uids[shape]),
					Annotations: Adapter{}.Features().AdoptionShapes[shape]},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
					{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}, {Protocol: corev1.ProtocolTCP, Port: 443, NodePort: 30443}}},
			}
			k := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
			if _, err := c.MakeUpstreamLoadBalancer(svc, "cid", insts); err != nil {
				t.Fatal(err)
			}
			if shape == "classic" {
				tagClassicGroup(t, c, k)
			}
			conformance.CheckListenerDrift(t, c, k)
			if err := c.DeleteLoadBalancer(k); err != nil {
				t.Errorf("deleting again: %v", err)
			}
		})
	}
	for _, r := range c.emu.Resources() {
		if r.Kind == cloudsimaws.KindSecurityGroupRule && r.Parent == c.fx.NodeSecurityGroupID &&
			strings.Contains(r.Name, "peer: sg-") && !strings.Contains(r.Name, "peer: "+r.Parent+",") {
			t.Errorf("node rule left: %+v", r)
		}
	}
}

// tagClassicGroup tags the Classic ELB's group k8s-elb-<name> for the
// Service, as the manager tags the groups it makes.
func tagClassicGroup(t *testing.T, c *Cloud, k types.NamespacedName) {
	t.Helper()
	for _, r := range c.emu.Resources() {
		if r.Kind == cloudsimaws.KindSecurityGroup && strings.HasPrefix(r.Name, "k8s-elb-") {
			_, err := c.driftClients().ec2.CreateTags(context.Background(), &ec2.CreateTagsInput{Resources: []string{r.ID},
				Tags: []ec2types.Tag{{Key: aws.String(serviceTag), Value: aws.String(k.String())}}})
			if err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatal("no k8s-elb- group")
}
