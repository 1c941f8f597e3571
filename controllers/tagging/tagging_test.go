package tagging_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/controllers/tagging"
	"github.com/multicloud-ccm/multicloud-ccm/providers"
	_ "github.com/multicloud-ccm/multicloud-ccm/providers/builtin"
	"github.com/multicloud-ccm/multicloud-ccm/providers/instancetags"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
	"github.com/multicloud-ccm/multicloud-ccm/test/controlplane"
)

const (
	region  = "eu-west-1"
	cluster = "test"
)

// env is the AWS emulator behind a real HTTP server and the AWS cloud the
// manager would build from a cloud-config pointing at it (registry,
// hybrid composite, backend, real SDK clients).
type env struct {
	emu    *cloudsimaws.Emulator
	srv    *cloudsim.Server
	tagger instancetags.Tagger
}

func newEnv(t *testing.T) *env {
	t.Helper()
	t.Setenv("AWS_CA_BUNDLE", "")
	emu := cloudsimaws.NewDefault(cloudsimaws.Config{Region: region, ClusterID: cluster})
	srv, err := cloudsim.Start(emu)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	doc := fmt.Sprintf(`apiVersion: multicloud-ccm.io/v1alpha1
kind: CloudConfig
provider: aws
clusterID: %s
aws:
  region: %s
  vpcID: %s
  endpoints: {ec2: %q, elbv2: %q}
  credentials: {accessKeyID: AKIDTEST, secretAccessKey: test-secret}
`, cluster, region, emu.Fixture().VPCID, srv.URL(), srv.URL())
	cfg, err := config.Parse([]byte(doc), providers.Default)
	if err != nil {
		t.Fatal(err)
	}
	cloud, err := providers.Default.NewCloud(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	in, _ := cloud.InstancesV2()
	src, ok := in.(instancetags.Source)
	if !ok {
		t.Fatalf("the AWS cloud's instances (%T) offer no instance tagger", in)
	}
	tagger, ok := src.InstanceTagger("aws")
	if !ok {
		t.Fatal("no AWS instance tagger")
	}
	return &env{emu: emu, srv: srv, tagger: tagger}
}

// launch starts n instances and returns their Nodes as the cloud-node
// controller leaves them, named after the instances.
func (e *env) launch(t *testing.T, n int) []*v1.Node {
	t.Helper()
	ids, err := e.emu.Launch(cloudsimaws.LaunchSpec{Count: n, Tags: map[string]string{e.emu.ClusterTagKey(): "owned"}})
	if err != nil {
		t.Fatal(err)
	}
	var out []*v1.Node
	for _, id := range ids {
		info, _ := e.emu.Instance(id)
		out = append(out, &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: info.PrivateDNSName},
			Spec:       v1.NodeSpec{ProviderID: "aws:///" + info.Zone + "/" + id},
		})
	}
	return out
}

func (e *env) tags(t *testing.T, n *v1.Node) map[string]string {
	t.Helper()
	id, _ := e.tagger.InstanceID(n.Spec.ProviderID)
	info, ok := e.emu.Instance(id)
	if !ok {
		t.Fatalf("no instance %s", id)
	}
	return info.Tags
}

// run starts the controller with tags on kube until the returned stop.
func run(t *testing.T, e *env, kube kubernetes.Interface, tags map[string]string) (stop func()) {
	t.Helper()
	opts := tagging.NewOptions()
	opts.Tags = tags
	if err := opts.Validate(); err != nil {
		t.Fatal(err)
	}
	f := informers.NewSharedInformerFactory(kube, 0)
	c, err := tagging.New(*opts, e.tagger, kube, f.Core().V1().Nodes())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	f.Start(ctx.Done())
	go func() {
		defer close(done)
		c.Run(ctx, opts.Workers)
	}()
	return func() {
		cancel()
		<-done
		f.Shutdown()
	}
}

func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %s", what, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func hasTags(have, want map[string]string) bool {
	for k, v := range want {
		if w, ok := have[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestChecksumIsUpstreams(t *testing.T) {
	// Upstream's getChecksumOfTags (tagging_controller.go:448-455): the
	// sorted key=value pairs joined by commas, MD5 in hex; want is
	// `printf 'a=1,b=' | md5sum`.
	if got, want := tagging.Checksum(map[string]string{"b": "", "a": "1"}), "2f3ce7104f3af1d32f770ce5d3e2ca64"; got != want {
		t.Fatalf("Checksum = %s, want %s", got, want)
	}
}

// TestTagsAndUntags: three Nodes present at start cost one CreateTags
// call and are labelled with the tags' checksum; the label updates that
// follow cost nothing; a Node without a providerID or of another cloud
// is left alone; deleting a Node untags its instance with one DeleteTags
// call; a Node whose instance EC2 never had, older than the five minutes
// EC2 may take to know a new one, is given up without retries.
func TestTagsAndUntags(t *testing.T) {
	e := newEnv(t)
	nodes := e.launch(t, 3)
	old := metav1.NewTime(time.Now().Add(-time.Hour))
	objs := []*v1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "no-provider-id"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "gce-node"}, Spec: v1.NodeSpec{ProviderID: "gce://p/z/gce-node"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "gone", CreationTimestamp: old}, Spec: v1.NodeSpec{ProviderID: "aws:///eu-west-1a/i-0123456789abcdef0"}},
	}
	objs = append(objs, nodes...)
	kube := fake.NewClientset()
	for _, n := range objs {
		if _, err := kube.CoreV1().Nodes().Create(t.Context(), n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tags := map[string]string{"team": "a", "cost-center": "42"}
	stop := run(t, e, kube, tags)
	defer stop()

	sum := tagging.Checksum(tags)
	eventually(t, "three Nodes labelled", func() (bool, string) {
		var labels []string
		for _, n := range nodes {
			got, err := kube.CoreV1().Nodes().Get(t.Context(), n.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			labels = append(labels, got.Labels[tagging.LabelKey])
		}
		return labels[0] == sum && labels[1] == sum && labels[2] == sum, fmt.Sprint(labels)
	})
	for _, n := range nodes {
		if got := e.tags(t, n); !hasTags(got, tags) {
			t.Fatalf("instance of %s tags %v, want %v", n.Name, got, tags)
		}
	}
	time.Sleep(300 * time.Millisecond) // the label updates' events, and a retry if any
	// One batch for the three Nodes and the gone one, then one call per
	// instance of the refused batch to find which; the gone Node is old,
	// so it is not retried.
	if n := e.srv.CallCount("ec2:CreateTags"); n != 1+4 {
		t.Fatalf("CreateTags calls = %d, want 5 (one batch of 4 refused for the gone instance, then one each)", n)
	}
	for _, name := range []string{"no-provider-id", "gce-node", "gone"} {
		got, _ := kube.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
		if _, ok := got.Labels[tagging.LabelKey]; ok {
			t.Fatalf("Node %s labelled: %v", name, got.Labels)
		}
	}

	e.srv.ResetCalls()
	if err := kube.CoreV1().Nodes().Delete(t.Context(), nodes[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "deleted Node's instance untagged", func() (bool, string) {
		got := e.tags(t, nodes[0])
		return !hasTags(got, map[string]string{"team": "a"}) && !hasTags(got, map[string]string{"cost-center": "42"}), fmt.Sprint(got)
	})
	if got := e.tags(t, nodes[0]); !maps.Equal(got, map[string]string{e.emu.ClusterTagKey(): "owned"}) {
		t.Fatalf("untag removed more than --tags: %v", got)
	}
	if n, c := e.srv.CallCount("ec2:DeleteTags"), e.srv.CallCount("ec2:CreateTags"); n != 1 || c != 0 {
		t.Fatalf("calls for one deleted Node: DeleteTags %d, CreateTags %d; want 1, 0", n, c)
	}
}

// TestNewNodeRetriedUntilEC2KnowsIt: a Node created just now whose
// instance EC2 does not know yet (CreateTags is eventually consistent)
// is retried, and tagged once the instance shows up.
func TestNewNodeRetriedUntilEC2KnowsIt(t *testing.T) {
	e := newEnv(t)
	kube := fake.NewClientset()
	// The Node, created just now, names an instance EC2 does not know; it
	// is retried (not given up) until its providerID names a known one.
	nodes := e.launch(t, 1)
	n := nodes[0].DeepCopy()
	n.CreationTimestamp = metav1.Now()
	real := n.Spec.ProviderID
	n.Spec.ProviderID = "aws:///eu-west-1a/i-0123456789abcdef0"
	if _, err := kube.CoreV1().Nodes().Create(t.Context(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stop := run(t, e, kube, map[string]string{"team": "a"})
	defer stop()
	eventually(t, "retried", func() (bool, string) {
		c := e.srv.CallCount("ec2:CreateTags")
		return c >= 2, fmt.Sprintf("%d CreateTags calls", c)
	})
	got, err := kube.CoreV1().Nodes().Get(t.Context(), n.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Spec.ProviderID = real
	if _, err := kube.CoreV1().Nodes().Update(t.Context(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "tagged", func() (bool, string) {
		tags := e.tags(t, nodes[0])
		return tags["team"] == "a", fmt.Sprint(tags)
	})
}

// TestAgainstAPIServer: on a real kube-apiserver, Nodes get the label and
// their instances the tags; restarted with other --tags, the controller
// retags every Node once and the label follows the new checksum; the
// keys dropped from --tags stay on the instances, as upstream leaves them.
func TestAgainstAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("needs etcd and kube-apiserver (test/controlplane)")
	}
	e := newEnv(t)
	nodes := e.launch(t, 3)
	cp, err := controlplane.Start(controlplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	kube := cp.AdminClient
	for _, n := range nodes {
		if _, err := kube.CoreV1().Nodes().Create(t.Context(), n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	labelled := func(sum string) func() (bool, string) {
		return func() (bool, string) {
			var got []string
			ok := true
			for _, n := range nodes {
				live, err := kube.CoreV1().Nodes().Get(t.Context(), n.Name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, live.Labels[tagging.LabelKey])
				ok = ok && live.Labels[tagging.LabelKey] == sum
			}
			return ok, fmt.Sprint(got)
		}
	}

	first := map[string]string{"team": "a", "env": "prod"}
	stop := run(t, e, kube, first)
	eventually(t, "labelled with the first tags' checksum", labelled(tagging.Checksum(first)))
	time.Sleep(300 * time.Millisecond)
	stop()
	for _, n := range nodes {
		if got := e.tags(t, n); !hasTags(got, first) {
			t.Fatalf("instance of %s tags %v, want %v", n.Name, got, first)
		}
	}
	if n := e.srv.CallCount("ec2:CreateTags"); n != 1 {
		t.Fatalf("CreateTags calls for 3 Nodes = %d, want 1", n)
	}

	// Started again with the same tags: nothing to do.
	e.srv.ResetCalls()
	stop = run(t, e, kube, first)
	time.Sleep(500 * time.Millisecond)
	stop()
	if n := e.srv.CallCount("ec2:CreateTags"); n != 0 {
		t.Fatalf("CreateTags calls on a restart with the same tags = %d, want 0", n)
	}

	second := map[string]string{"team": "b", "owner": "sre"}
	stop = run(t, e, kube, second)
	defer stop()
	eventually(t, "labelled with the second tags' checksum", labelled(tagging.Checksum(second)))
	for _, n := range nodes {
		got := e.tags(t, n)
		if !hasTags(got, second) || got["env"] != "prod" {
			t.Fatalf("instance of %s tags %v, want %v and the dropped env=prod kept", n.Name, got, second)
		}
	}
	if n := e.srv.CallCount("ec2:CreateTags"); n != 1 {
		t.Fatalf("CreateTags calls to retag 3 Nodes = %d, want 1", n)
	}

	e.srv.ResetCalls()
	for _, n := range nodes {
		if err := kube.CoreV1().Nodes().Delete(t.Context(), n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	eventually(t, "instances untagged", func() (bool, string) {
		for _, n := range nodes {
			if got := e.tags(t, n); got["owner"] != "" || got["team"] != "" {
				return false, fmt.Sprintf("%s: %v", n.Name, got)
			}
		}
		return true, ""
	})
	t.Logf("DeleteTags calls for 3 deleted Nodes: %d", e.srv.CallCount("ec2:DeleteTags"))
	if n := e.srv.CallCount("ec2:DeleteTags"); n < 1 || n > 3 {
		t.Fatalf("DeleteTags calls for 3 deleted Nodes = %d, want 1 to 3 (one per batch of deletes seen together)", n)
	}
}
