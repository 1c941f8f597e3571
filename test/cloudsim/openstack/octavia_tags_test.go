package openstack_test

import (
	"slices"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"

	cloudsimopenstack "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/openstack"
)

// Tags as a shared load balancer's users write them (the upstream CCM's
// load-balancer-id sharing): a PUT replaces the load balancer's or
// listener's whole set, [] clears it, and each is a change the load
// balancer goes PENDING_UPDATE for, refusing other writes meanwhile; a
// second listener may take a port only with another transport protocol.
func TestOctaviaTagUpdates(t *testing.T) {
	e := newOctaviaEnv(t, cloudsimopenstack.Config{})
	lb := e.activeLB(t, loadbalancers.CreateOpts{Name: "shared", Tags: []string{"kube_service_c_default_a"}})

	two := []string{"kube_service_c_default_a", "kube_service_c_default_b"}
	got, err := loadbalancers.Update(ctx(t), e.lb, lb.ID, loadbalancers.UpdateOpts{Tags: &two}).Extract()
	ok(t, err)
	if got.ProvisioningStatus != "PENDING_UPDATE" || !slices.Equal(got.Tags, two) {
		t.Errorf("after the tag update: %s %v", got.ProvisioningStatus, got.Tags)
	}
	_, err = loadbalancers.Update(ctx(t), e.lb, lb.ID, loadbalancers.UpdateOpts{Tags: &two}).Extract()
	wantFault(t, err, 409, "Invalid state PENDING_UPDATE of loadbalancer resource "+lb.ID)
	e.settle()

	l, err := listeners.Create(ctx(t), e.lb, listeners.CreateOpts{
		LoadbalancerID: lb.ID, Protocol: listeners.ProtocolTCP, ProtocolPort: 80, Tags: []string{"kube_service_c_default_a"},
	}).Extract()
	ok(t, err)
	e.settle()
	_, err = listeners.Create(ctx(t), e.lb, listeners.CreateOpts{
		LoadbalancerID: lb.ID, Protocol: listeners.ProtocolHTTP, ProtocolPort: 80, Tags: []string{"kube_service_c_default_b"},
	}).Extract()
	wantFault(t, err, 409, "Another Listener on this Load Balancer is already using protocol TCP and protocol_port 80")
	_, err = listeners.Create(ctx(t), e.lb, listeners.CreateOpts{
		LoadbalancerID: lb.ID, Protocol: listeners.ProtocolUDP, ProtocolPort: 80, Tags: []string{"kube_service_c_default_b"},
	}).Extract()
	ok(t, err)
	e.settle()

	lt := []string{"kube_service_c_default_a", "mine"}
	gl, err := listeners.Update(ctx(t), e.lb, l.ID, listeners.UpdateOpts{Tags: &lt}).Extract()
	ok(t, err)
	if !slices.Equal(gl.Tags, lt) {
		t.Errorf("listener tags %v, want %v", gl.Tags, lt)
	}
	e.settle()
	page, err := listeners.List(e.lb, listeners.ListOpts{LoadbalancerID: lb.ID, Tags: []string{"mine"}}).AllPages(ctx(t))
	ok(t, err)
	ls, err := listeners.ExtractListeners(page)
	ok(t, err)
	if len(ls) != 1 || ls[0].ID != l.ID {
		t.Errorf("listeners tagged mine: %+v", ls)
	}

	none := []string{}
	_, err = loadbalancers.Update(ctx(t), e.lb, lb.ID, loadbalancers.UpdateOpts{Tags: &none}).Extract()
	ok(t, err)
	e.settle()
	if got := e.getLB(t, lb.ID); len(got.Tags) != 0 || got.ProvisioningStatus != "ACTIVE" {
		t.Errorf("after clearing: %s %v", got.ProvisioningStatus, got.Tags)
	}
}
