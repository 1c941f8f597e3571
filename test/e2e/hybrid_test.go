package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/multicloud-ccm/multicloud-ccm/test/ccmproc"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
	confaws "github.com/multicloud-ccm/multicloud-ccm/test/conformance/aws"
	confopenstack "github.com/multicloud-ccm/multicloud-ccm/test/conformance/openstack"
)

// hybridCloud is one of a hybrid cluster's clouds: its emulator, through
// its conformance adapter.
type hybridCloud struct {
	name  string
	cloud conformance.Cloud
}

// startHybrid starts an emulator per adapter and one release binary
// serving all of them from one cloud-config (providers: in the adapters'
// order, the first the default load-balancer cloud).
func startHybrid(t *testing.T, name string, adapters ...conformance.Adapter) ([]hybridCloud, *ccmProcess) {
	t.Helper()
	var clouds []hybridCloud
	doc := "apiVersion: multicloud-ccm.io/v1alpha1\nkind: CloudConfig\nclusterID: conf-hybrid\nproviders: ["
	var sections, args []string
	for i, a := range adapters {
		c, err := a.Start(conformance.Options{ClusterID: "conf-hybrid", QuickErrors: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		cfg := c.Config()
		if i > 0 {
			doc += ", "
		}
		doc += cfg.Provider
		sections = append(sections, cfg.Provider+":\n"+cfg.Section)
		args = append(args, c.ExtraArgs()...)
		clouds = append(clouds, hybridCloud{name: a.Name(), cloud: c})
	}
	doc += "]\n"
	for _, s := range sections {
		doc += s
	}
	path := writeFile(t, "hybrid-"+name+"-cloud-config.yaml", doc)
	args = append([]string{
		"--leader-elect=false",
		"--cluster-cidr=10.244.0.0/16",
		"--configure-cloud-routes=false",
		"--allocate-node-cidrs=false",
		"--node-monitor-period=1s",
	}, args...)
	return clouds, startCCM(t, "ccm-hybrid-"+name, release(t), path, args...)
}

// launchIn launches an instance in c and registers its Node by name, as
// a kubelet with --cloud-provider=external does (no providerID).
func (c hybridCloud) launchIn(t *testing.T, hint string) conformance.Instance {
	t.Helper()
	inst, err := c.cloud.Launch(conformance.InstanceSpec{Zone: c.cloud.Zones()[0], PublicIP: true, NameHint: hint})
	if err != nil {
		t.Fatal(err)
	}
	registerNode(t, inst.NodeName, "", "")
	return inst
}

// TestHybrid: one manager serving OpenStack and AWS at once. Nodes
// registered by name are placed in the cloud that has them and
// initialized by it, with the label naming it; a Node of a third cloud is
// left alone while NotReady; a LoadBalancer Service gets the default
// cloud's load balancer with only that cloud's Nodes, another the
// annotated cloud's; changing the annotation moves the load balancer and
// leaves nothing in the cloud it left; with the AWS API hanging for a
// minute, a new OpenStack Node and Service are served as usual and AWS's
// NotReady Node stays.
func TestHybrid(t *testing.T) {
	clouds, ccm := startHybrid(t, "openstack-aws", confopenstack.Adapter{}, confaws.Adapter{})
	os, aws := clouds[0], clouds[1]
	o1, a1 := os.launchIn(t, "hy-os-1"), aws.launchIn(t, "hy-aws-1")
	for _, c := range []struct {
		cloud hybridCloud
		inst  conformance.Instance
	}{{os, o1}, {aws, a1}} {
		n := waitInitialized(t, c.inst.NodeName)
		want, err := c.cloud.cloud.ExpectedNode(c.inst.ID)
		if err != nil {
			t.Fatal(err)
		}
		if n.Spec.ProviderID != want.ProviderID || n.Labels["multicloud-ccm.io/provider"] != c.cloud.name {
			t.Errorf("%s node: providerID %q (want %q), labels %v", c.cloud.name, n.Spec.ProviderID, want.ProviderID, n.Labels)
		}
	}

	t.Run("a Node of a third cloud is left alone while NotReady", func(t *testing.T) {
		foreign := registerNode(t, "hybrid-gce-node", "gce://p/europe-west1-b/hybrid-gce-node", "")
		setReady(t, foreign, corev1.ConditionFalse)
		time.Sleep(6 * time.Second)
		n, err := getNode(context.Background(), foreign)
		if err != nil {
			t.Fatalf("the foreign Node: %v", err)
		}
		if ccmproc.HasTaint(n, cloudproviderapi.TaintNodeShutdown) || !ccmproc.HasTaint(n, cloudproviderapi.TaintExternalCloudProvider) {
			t.Errorf("the foreign Node was touched: %s", describeNode(n))
		}
	})

	t.Run("each Service's load balancer is in its cloud, with that cloud's Nodes only", func(t *testing.T) {
		def := createService(t, lbService("hy-default", 80))
		svc := lbService("hy-aws", 80)
		svc.Annotations = map[string]string{"multicloud-ccm.io/load-balancer-provider": "aws"}
		onAWS := createService(t, svc)
		for _, c := range []struct {
			key   string
			cloud hybridCloud
			inst  conformance.Instance
			other hybridCloud
		}{{def.Name, os, o1, aws}, {onAWS.Name, aws, a1, os}} {
			k := keyOf(c.key)
			waitService(t, k, "an address", hasAddress)
			waitBackends(t, c.cloud, k, c.inst.ID)
			if lbs := c.other.cloud.LoadBalancers(k); len(lbs) != 0 {
				t.Errorf("%s also has a load balancer for %s: %+v", c.other.name, k, lbs)
			}
		}
	})

	t.Run("changing the annotation moves the load balancer", func(t *testing.T) {
		k := createService(t, lbService("hy-moving", 80))
		first := ingressAddrs(waitService(t, k, "an address", hasAddress).Status.LoadBalancer)
		waitBackends(t, os, k, o1.ID)
		updateService(t, k, func(s *corev1.Service) {
			if s.Annotations == nil {
				s.Annotations = map[string]string{}
			}
			s.Annotations["multicloud-ccm.io/load-balancer-provider"] = "aws"
		})
		waitService(t, k, "the aws load balancer's address", func(s *corev1.Service) (bool, string) {
			now := ingressAddrs(s.Status.LoadBalancer)
			return now != "" && now != first, now
		})
		waitBackends(t, aws, k, a1.ID)
		poll(t, converge, "the openstack load balancer deleted", func(context.Context) (bool, string, error) {
			lbs := os.cloud.LoadBalancers(k)
			return len(lbs) == 0, fmt.Sprint(lbs), nil
		})
		deleteServiceAndWait(t, k)
		if lbs := aws.cloud.LoadBalancers(k); len(lbs) != 0 {
			t.Errorf("left in aws: %+v", lbs)
		}
	})
	t.Run("with the AWS API not answering for a minute, OpenStack's Nodes and Services are served as usual", func(t *testing.T) {
		srv := aws.cloud.(interface{ Server() *cloudsim.Server }).Server()
		if err := srv.SetFault(cloudsim.FaultSpec{Op: "*", Hang: true}); err != nil {
			t.Fatal(err)
		}
		outage := time.Now()
		cleared := false
		clear := func() {
			if !cleared {
				srv.ClearFaults()
				cleared = true
			}
		}
		defer clear()
		// AWS's Node goes NotReady and ten AWS Services wait on the
		// hanging API, more than the service controller has workers.
		setReady(t, a1.NodeName, corev1.ConditionFalse)
		var pending []types.NamespacedName
		for i := range 10 {
			svc := lbService(fmt.Sprintf("hy-down-%d", i), 80)
			svc.Annotations = map[string]string{"multicloud-ccm.io/load-balancer-provider": "aws"}
			pending = append(pending, createService(t, svc))
		}
		time.Sleep(2 * time.Second)
		start := time.Now()
		// Registered with its cloud's label, as kubelets of a hybrid
		// cluster should: a Node known only by name waits until every
		// cloud has said whether it has an instance of that name.
		o2, err := os.cloud.Launch(conformance.InstanceSpec{Zone: os.cloud.Zones()[0], PublicIP: true, NameHint: "hy-os-2"})
		if err != nil {
			t.Fatal(err)
		}
		labelled := ccmproc.KubeletNode(o2.NodeName, "")
		labelled.Labels["multicloud-ccm.io/provider"] = "openstack"
		createNode(t, labelled)
		waitInitialized(t, o2.NodeName)
		nodeTook := time.Since(start)
		k := createService(t, lbService("hy-os-during", 80))
		waitService(t, k, "an address", hasAddress)
		svcTook := time.Since(start) - nodeTook
		t.Logf("during the AWS outage: an OpenStack Node initialized in %s, an OpenStack Service got its address in %s", nodeTook.Round(100*time.Millisecond), svcTook.Round(100*time.Millisecond))
		// Bounds well above the ~1 s and ~3 s these take with both clouds
		// up, well below what waiting on the hanging API would cost.
		if nodeTook > 15*time.Second || svcTook > 20*time.Second {
			t.Errorf("OpenStack was held up by the AWS outage: Node %s, Service %s", nodeTook, svcTook)
		}
		time.Sleep(time.Until(outage.Add(time.Minute)))
		if _, err := getNode(context.Background(), a1.NodeName); err != nil {
			t.Errorf("AWS's NotReady Node during the outage: %v", err)
		}
		clear()
		setReady(t, a1.NodeName, corev1.ConditionTrue)
		for _, p := range pending {
			waitService(t, p, "an address once AWS answers", hasAddress)
		}
		for _, p := range append(pending, k) {
			deleteServiceAndWait(t, p)
		}
	})
	if ccm.exited() {
		t.Fatalf("the manager exited: %v", ccm.Err())
	}
}

// keyOf is the suite namespace's Service name.
func keyOf(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: confNS, Name: name}
}

// waitBackends waits until c holds one load balancer for k whose backends
// are exactly ids.
func waitBackends(t *testing.T, c hybridCloud, k types.NamespacedName, ids ...string) {
	t.Helper()
	slices.Sort(ids)
	poll(t, converge, c.name+" load balancer of "+k.String()+" on "+fmt.Sprint(ids), func(context.Context) (bool, string, error) {
		lbs := c.cloud.LoadBalancers(k)
		return len(lbs) == 1 && slices.Equal(lbs[0].Backends, ids), fmt.Sprintf("%+v", lbs), nil
	})
}
