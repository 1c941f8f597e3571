package controllers

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	cloudprovider "k8s.io/cloud-provider"
	cloudcontrollerconfig "k8s.io/cloud-provider/app/config"
	fakecloud "k8s.io/cloud-provider/fake"
	genericcontrollermanager "k8s.io/controller-manager/app"
)

func TestTaggingOffUnlessNamed(t *testing.T) {
	for _, tc := range []struct {
		controllers []string
		want        bool
	}{
		{[]string{"*"}, false},
		{[]string{"*", "tagging"}, true},
		{[]string{"tagging"}, true},
		{[]string{"*", "-tagging"}, false},
		{[]string{"tagging", "-tagging"}, true},
		{[]string{"-tagging", "tagging"}, false},
		{[]string{"*", "tagging-controller"}, false},
	} {
		if got := namedInControllers(tc.controllers, Tagging); got != tc.want {
			t.Errorf("namedInControllers(%q) = %v, want %v", tc.controllers, got, tc.want)
		}
	}
}

// TestTaggingStart: with "*" the controller is not started; named, it
// refuses bad flags and a cloud that is not AWS, each with the reason,
// which stops the manager.
func TestTaggingStart(t *testing.T) {
	start := func(controllers []string, tags map[string]string, cloud cloudprovider.Interface) (bool, error) {
		o := NewOptions()
		o.Tagging.Tags = tags
		cfg := &cloudcontrollerconfig.Config{SharedInformers: informers.NewSharedInformerFactory(fake.NewClientset(), 0)}
		cfg.ComponentConfig.Generic.Controllers = controllers
		c := InitFuncConstructors(o)[Tagging]
		_, started, err := c.Constructor(c.InitContext, cfg.Complete(), cloud)(context.Background(), genericcontrollermanager.ControllerContext{})
		return started, err
	}
	gce := &fakecloud.Cloud{Provider: "gce"}
	if started, err := start([]string{"*"}, nil, gce); started || err != nil {
		t.Fatalf("with --controllers=*: started %v, err %v; want neither", started, err)
	}
	if _, err := start([]string{"*", "tagging"}, nil, gce); err == nil || !strings.Contains(err.Error(), "--tags must not be empty") {
		t.Fatalf("without --tags: %v", err)
	}
	_, err := start([]string{"*", "tagging"}, map[string]string{"a": "b"}, gce)
	if err == nil || !strings.Contains(err.Error(), `no configured cloud is AWS (provider "gce")`) {
		t.Fatalf("on GCE: %v", err)
	}
}
