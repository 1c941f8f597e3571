package gce

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// TestDriftMaker makes a load balancer of each shape through the API
// (as the upstream CCM would), then deletes its firewall rule
// (DeletePart: the ports vanish, the backends stay) and the whole of it
// (DeleteLoadBalancer: the address reserved for the Service goes, the
// user's stays, a second call finds everything gone and succeeds).
func TestDriftMaker(t *testing.T) {
	cl, insts := conformance.StartWithNodes(t, Adapter{}, conformance.Options{ClusterID: "cid"})
	c := cl.(*Cloud)
	shapes := map[string]map[string]string{"external": nil, "internal": {annotationLBType: "Internal"}}
	uids := map[string]string{"external": "1234abcd-0000-1111-2222-333344445555", "internal": "9876abcd-0000-1111-2222-333344445555"}
	for _, shape := range []string{"external", "internal"} {
		t.Run(shape, func(t *testing.T) {
			svc := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc-" + shape, UID: types.UID(uids[shape]), Annotations: shapes[shape]},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, SessionAffinity: corev1.ServiceAffinityNone,
					Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}},
			}
			key := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
			base := "a" + strings.ReplaceAll(uids[shape], "-", "")[:31]
			if _, err := c.MakeUpstreamLoadBalancer(svc, "cid", insts); err != nil {
				if shape == "internal" && strings.Contains(err.Error(), "is not emulated") {
					t.Skip("the emulator lacks what upstream's internal load balancer needs:", err)
				}
				t.Fatal(err)
			}

			part, err := c.DeletePart(key)
			if err != nil {
				t.Fatal(err)
			}
			if want := "firewall rule k8s-fw-" + base; part != want {
				t.Errorf("DeletePart deleted %q, want %q", part, want)
			}
			lbs := c.LoadBalancers(key)
			if len(lbs) != 1 || len(lbs[0].Ports) != 0 || len(lbs[0].Backends) != 2 {
				t.Errorf("after DeletePart: load balancers %+v, want one with no ports and 2 backends", lbs)
			}

			// An address the manager reserved for the Service, and one
			// the user reserved and named alike.
			mine, user := base, base+"-user"
			c.insertAddress(t, mine, fmt.Sprintf(`{"kubernetes.io/service-name":"%s","kubernetes.io/cluster-id":"cid","kubernetes.io/reserved-by":"multicloud-ccm"}`, key))
			c.insertAddress(t, user, "")

			if err := c.DeleteLoadBalancer(key); err != nil {
				t.Fatal(err)
			}
			if lbs := c.LoadBalancers(key); len(lbs) != 0 {
				t.Errorf("after DeleteLoadBalancer: load balancers %+v", lbs)
			}
			left := c.ServiceResources(key)
			if len(left) != 1 || left[0].Kind != kindAddress || left[0].Name != user {
				t.Errorf("after DeleteLoadBalancer: %+v left, want only the user's address %s", left, user)
			}
			if err := c.DeleteLoadBalancer(key); err != nil {
				t.Errorf("DeleteLoadBalancer again: %v", err)
			}
			c.deleteAddress(t, user)
		})
	}
}

func (c *Cloud) insertAddress(t *testing.T, name, desc string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	api, err := c.upstreamClients(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer api.close()
	if err := api.wait(ctx, "reserve address "+name)(api.addresses.Insert(ctx, &computepb.InsertAddressRequest{Project: c.fx.Project, Region: c.fx.Region,
		AddressResource: &computepb.Address{Name: proto.String(name), Description: proto.String(desc)}})); err != nil {
		t.Fatal(err)
	}
}

func (c *Cloud) deleteAddress(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	api, err := c.upstreamClients(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer api.close()
	if err := api.wait(ctx, "release address "+name)(api.addresses.Delete(ctx, &computepb.DeleteAddressRequest{Project: c.fx.Project, Region: c.fx.Region, Address: name})); err != nil {
		t.Fatal(err)
	}
}
