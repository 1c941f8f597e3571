package compose

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	cloudprovider "k8s.io/cloud-provider"
)

type instances struct{ cloudprovider.InstancesV2 }

type routes struct{ cloudprovider.Routes }

type lb struct{ cloudprovider.LoadBalancer }

func (lb) GetLoadBalancerName(context.Context, string, *v1.Service) string { return "lb" }

// TestAssembly: the interface every backend offers, whatever parts it
// has: a typed nil part is absent, the load balancer is wrapped (calls
// serialized per Service), and missing hooks are no-ops.
func TestAssembly(t *testing.T) {
	var noRoutes *routes
	c := New(Parts{Name: "test", Instances: instances{}, Routes: noRoutes})
	if c.ProviderName() != "test" || !c.HasClusterID() {
		t.Errorf("name %q, cluster ID %v", c.ProviderName(), c.HasClusterID())
	}
	if _, ok := c.InstancesV2(); !ok {
		t.Error("no InstancesV2")
	}
	for name, ok := range map[string]bool{
		"Routes":       second(c.Routes()),
		"LoadBalancer": second(c.LoadBalancer()),
		"Instances":    second(c.Instances()),
		"Zones":        second(c.Zones()),
		"Clusters":     second(c.Clusters()),
	} {
		if ok {
			t.Errorf("%s offered", name)
		}
	}
	c.Initialize(nil, nil)
	c.SetInformers(informers.NewSharedInformerFactory(fake.NewClientset(), 0))

	var inited, informed bool
	c = New(Parts{
		Name: "full", Instances: instances{}, Routes: &routes{}, LoadBalancer: lb{},
		Initialize:   func(cloudprovider.ControllerClientBuilder, <-chan struct{}) { inited = true },
		SetInformers: func(informers.SharedInformerFactory) { informed = true },
	})
	if _, ok := c.Routes(); !ok {
		t.Error("routes given, not offered")
	}
	got, ok := c.LoadBalancer()
	if !ok {
		t.Fatal("load balancer given, not offered")
	}
	if _, raw := got.(lb); raw {
		t.Error("the load balancer is not wrapped")
	}
	if got.GetLoadBalancerName(context.Background(), "", &v1.Service{}) != "lb" {
		t.Error("the wrapper does not reach the backend")
	}
	c.Initialize(nil, nil)
	c.SetInformers(nil)
	if !inited || !informed {
		t.Errorf("Initialize ran %v, SetInformers %v", inited, informed)
	}
}

func second[T any](_ T, ok bool) bool { return ok }
