package openstack

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gcopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// TestHarnessIsNotTheManager: a policy set for ManagerPrincipal holds the
// user the manager's config authenticates as, and never the harness's
// own calls (a user's floating IP, the upstream CCM's load balancer).
func TestHarnessIsNotTheManager(t *testing.T) {
	cl, insts := conformance.StartWithNodes(t, Adapter{Options: Options{ProvisioningDelay: 50 * time.Millisecond}}, conformance.Options{ClusterID: "cid"})
	c := cl.(*Cloud)
	if !strings.Contains(c.Config().Section, "username: "+c.fx.Username+"\n") {
		t.Fatalf("the manager's config does not authenticate as the fixture user:\n%s", c.Config().Section)
	}
	c.srv.SetPolicy(c.ManagerPrincipal(), []string{})

	// The manager's user is denied.
	p, err := gcopenstack.AuthenticatedClient(t.Context(), gophercloud.AuthOptions{
		IdentityEndpoint: c.fx.IdentityEndpoint(c.srv.URL()), Username: c.fx.Username, Password: c.fx.Password,
		DomainName: c.fx.DomainName, Scope: &gophercloud.AuthScope{ProjectName: c.fx.ProjectName, DomainID: c.fx.DomainID},
	})
	if err != nil {
		t.Fatal(err)
	}
	lbc, err := gcopenstack.NewLoadBalancerV2(p, gophercloud.EndpointOpts{Region: c.fx.Region})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loadbalancers.List(lbc, loadbalancers.ListOpts{}).AllPages(t.Context()); !gophercloud.ResponseCodeIs(err, 403) {
		t.Errorf("the manager's user under an empty policy: %v, want a 403", err)
	}
	if got := c.srv.Denied(); !slices.Equal(got, []string{"os_load-balancer_api:loadbalancer:get_all"}) {
		t.Errorf("denied %v", got)
	}

	// The harness is not.
	c.srv.ResetUsed()
	if _, err := c.ReserveUserAddress(); err != nil {
		t.Errorf("a user's address: %v", err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "1234abcd-0000-1111-2222-333344445555"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}},
	}
	if _, err := c.MakeUpstreamLoadBalancer(svc, "cid", insts); err != nil {
		t.Errorf("the upstream CCM's load balancer: %v", err)
	}
	if got := c.srv.Used(); len(got) != 0 {
		t.Errorf("the harness's calls were checked: %v", got)
	}
}
