package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/multicloud-ccm/multicloud-ccm/test/ccmproc"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
	confazure "github.com/multicloud-ccm/multicloud-ccm/test/conformance/azure"
)

// TestAzureBesideCloudNodeManager: the first way the switch guide offers
// an Azure cluster. The upstream Azure install runs its CCM with
// --controllers=*,-cloud-node and a cloud-node-manager DaemonSet that
// initializes each Node from its own host (cloud-provider-azure
// helm/cloud-provider-azure/templates/cloud-provider-azure.yaml); a switch
// may keep that DaemonSet and run this manager with the same flag. Then
// this manager never initializes a Node (the DaemonSet's job: here done
// the way it does it, providerID, labels and addresses from the VM, then
// the taint removed), and still serves everything else for such Nodes: a
// load balancer with them as backends, and the lifecycle checks by the
// providerID the node manager wrote. (The second way, the DaemonSet
// removed and this manager's cloud-node controller on, is every other
// Azure test.)
func TestAzureBesideCloudNodeManager(t *testing.T) {
	s := startSuiteCloud(t, env.cluster, confazure.Adapter{}, "beside-node-manager")
	// startSuiteCloud's manager initializes Nodes; this one must not.
	s.ccm.stop()
	s.ccm = s.startCCM(t, "beside-node-manager-nocloudnode", "--controllers=*,-cloud-node")
	ctx := context.Background()
	zones := s.cloud.Zones()
	var insts []conformance.Instance
	for i := range 2 {
		insts = append(insts, s.launchNode(t, zones[i%len(zones)], fmt.Sprintf("cnm-%d", i), ""))
	}
	before := s.cloud.Inventory()

	// The manager's own first sync would have initialized them by now
	// (the conformance bound); the cloud-node controller is off, so they
	// wait for the node manager.
	poll(t, converge, "the cloud-node controller named disabled in the manager's log", func(context.Context) (bool, string, error) {
		log := s.ccm.log.String()
		return strings.Contains(log, `"cloud-node-controller" is disabled`), grepLines(log, "cloud-node"), nil
	})
	for _, inst := range insts {
		n, err := s.getNode(ctx, inst.NodeName)
		if err != nil {
			t.Fatal(err)
		}
		if ccmproc.Initialized(n) || n.Spec.ProviderID != "" {
			t.Fatalf("a manager without its cloud-node controller initialized %s: %s", inst.NodeName, describeNode(n))
		}
		nodeManagerInitializes(t, s, inst)
	}

	k := s.createService(t, s.lbService("cnm-web", 80))
	s.waitService(t, k, "an address", hasAddress)
	s.waitLB(t, k, []int32{80}, insts...)
	if ws, err := s.warnings(ctx, k); err != nil || len(ws) != 0 {
		t.Errorf("warnings: %v %v", ws, err)
	}

	// The lifecycle controller finds the VM by the node manager's
	// providerID: a terminated one's NotReady Node goes.
	gone := insts[1]
	s.setReady(t, gone.NodeName, corev1.ConditionTrue)
	if err := s.cloud.Terminate(gone.ID); err != nil {
		t.Fatal(err)
	}
	s.setReady(t, gone.NodeName, corev1.ConditionFalse)
	within(t, time.Now(), lifecycleBound, "the terminated VM's Node deleted", func(ctx context.Context) (bool, string, error) {
		_, err := s.getNode(ctx, gone.NodeName)
		return apierrors.IsNotFound(err), fmt.Sprint(err), nil
	})
	s.waitLB(t, k, []int32{80}, insts[0])

	s.deleteServiceAndWait(t, k)
	// As before the Service, but for the terminated VM and its parts.
	poll(t, converge, "nothing of the Service left", func(context.Context) (bool, string, error) {
		added, removed := cloudsim.DiffResources(before, s.cloud.Inventory())
		var others []cloudsim.Resource
		for _, r := range removed {
			if !strings.Contains(r.ID, "/"+gone.NodeName) {
				others = append(others, r)
			}
		}
		return len(added)+len(others) == 0, fmt.Sprintf("added %s; removed %s", resList(added), resList(others)), nil
	})
	if s.ccm.exited() {
		t.Fatalf("the manager exited: %v", s.ccm.Err())
	}
}

// nodeManagerInitializes does to inst's Node what the upstream
// cloud-node-manager does on the Node's host: it writes the providerID,
// the instance-type, zone and region labels and the addresses of the VM,
// and removes the uninitialized taint.
func nodeManagerInitializes(t *testing.T, s *suiteCloud, inst conformance.Instance) {
	t.Helper()
	ctx := context.Background()
	want, err := s.cloud.ExpectedNode(inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.getNode(ctx, inst.NodeName)
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.ProviderID = want.ProviderID
	for k, v := range want.Labels {
		metav1.SetMetaDataLabel(&n.ObjectMeta, k, v)
	}
	var taints []corev1.Taint
	for _, tn := range n.Spec.Taints {
		if tn.Key != cloudproviderapi.TaintExternalCloudProvider {
			taints = append(taints, tn)
		}
	}
	n.Spec.Taints = taints
	if n, err = s.admin.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.Status.Addresses = want.Addresses
	if _, err := s.admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
