package azure

import (
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v6"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// TestDrift deletes a rule and then the whole of one Service's part of
// the shared load balancer, which another Service's frontend keeps (a PUT
// without the first's frontend, rules and probes), then the second's,
// whose frontend was the last (the load balancer is deleted). Each
// Service's public IP goes with it; the other Service is untouched.
func TestDrift(t *testing.T) {
	cl, insts := conformance.StartWithNodes(t, Adapter{}, conformance.Options{ClusterID: "cid"})
	c := cl.(*Cloud)
	var keys []types.NamespacedName
	for i, uid := range []string{"1234abcd-0000-1111-2222-333344445555", "9876abcd-0000-1111-2222-333344445555"} {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: []string{"a", "b"}[i], UID: types.UID(uid)},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
				{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}, {Protocol: corev1.ProtocolTCP, Port: 443, NodePort: 30443}}},
		}
		if _, err := c.MakeUpstreamLoadBalancer(svc, "cid", insts); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name})
	}
	a, b := keys[0], keys[1]
	part, err := c.DeletePart(a)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(part, "load-balancing rule ") || !strings.HasSuffix(part, " of port 80") {
		t.Errorf("deleted %q, want the rule of port 80", part)
	}
	if lbs := c.LoadBalancers(a); len(lbs) != 1 || !slices.Equal(lbs[0].Ports, []int32{443}) || len(lbs[0].Backends) != 2 {
		t.Errorf("after deleting %s: %+v, want one load balancer on 443 with 2 backends", part, lbs)
	}
	if err := c.DeleteLoadBalancer(a); err != nil {
		t.Fatal(err)
	}
	if rs := c.ServiceResources(a); len(rs) != 0 {
		t.Errorf("%s: resources left: %+v", a, rs)
	}
	if lbs := c.LoadBalancers(b); len(lbs) != 1 || !slices.Equal(lbs[0].Ports, []int32{80, 443}) || len(lbs[0].Backends) != 2 {
		t.Errorf("%s after deleting %s's: %+v, want one load balancer on 80 and 443 with 2 backends", b, a, lbs)
	}
	if _, ok := c.emu.LoadBalancer(c.fx.ResourceGroup, "cid"); !ok {
		t.Fatal("the shared load balancer is gone with another Service's frontend on it")
	}
	if err := c.DeleteLoadBalancer(b); err != nil {
		t.Fatal(err)
	}
	if rs := c.ServiceResources(b); len(rs) != 0 {
		t.Errorf("%s: resources left: %+v", b, rs)
	}
	if _, ok := c.emu.LoadBalancer(c.fx.ResourceGroup, "cid"); ok {
		t.Error("the load balancer is left without frontends")
	}
	if err := c.DeleteLoadBalancer(b); err != nil {
		t.Errorf("deleting again: %v", err)
	}
}

// TestManagerMadePublicIP: only the manager's name for a frontend, tagged
// for the Service alone and this cluster, is the manager's.
func TestManagerMadePublicIP(t *testing.T) {
	c := &Cloud{clusterID: "cid"}
	svc := types.NamespacedName{Namespace: "ns", Name: "a"}
	pip := func(name, service, cluster string) armnetwork.PublicIPAddress {
		return armnetwork.PublicIPAddress{Name: to.Ptr(name), Tags: map[string]*string{tagService: to.Ptr(service), tagCluster: to.Ptr(cluster)}}
	}
	for _, tc := range []struct {
		pip  armnetwork.PublicIPAddress
		want bool
	}{
		{pip("cid-afe", "ns/a", "cid"), true},
		{pip("cid-afe-IPv6", "ns/a", "cid"), true},
		{pip("my-address", "ns/a", "cid"), false},
		{pip("cid-afe", "ns/a,ns/b", "cid"), false},
		{pip("cid-afe", "ns/a", "other"), false},
		{pip("cid-other", "ns/a", "cid"), false},
	} {
		if got := c.managerMadePublicIP(tc.pip, svc, []string{"afe"}); got != tc.want {
			t.Errorf("%s tagged %s, %s: %t, want %t", *tc.pip.Name, *tc.pip.Tags[tagService], *tc.pip.Tags[tagCluster], got, tc.want)
		}
	}
}
