package aws

import (
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/clientopts"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/nodes"
	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

const (
	testRegion  = "eu-west-1"
	testCluster = "test"
)

// testEnv is the emulator behind a real HTTP server, and the backend's
// instances built on real SDK clients pointed at it.
type testEnv struct {
	emu   *cloudsimaws.Emulator
	srv   *cloudsim.Server
	fx    cloudsimaws.Fixture
	sec   *Section
	api   *clients
	in    *instances
	clock *clocktesting.FakeClock
}

// newTestEnv starts the emulator's default fixture (VPC, subnets in
// eu-west-1a/b/c, a cluster-tagged main route table). mod adjusts the
// section before defaults are applied.
func newTestEnv(t *testing.T, mod func(*Section)) *testEnv {
	t.Helper()
	// clients.go hands the SDK a plain *http.Client, to which the SDK
	// cannot add a CA bundle; the emulator is plain HTTP anyway.
	t.Setenv("AWS_CA_BUNDLE", "")
	emu := cloudsimaws.NewDefault(cloudsimaws.Config{Region: testRegion, ClusterID: testCluster})
	srv, err := cloudsim.Start(emu)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	s := &Section{
		Region:      testRegion,
		Endpoints:   Endpoints{EC2: srv.URL(), ELBv2: srv.URL()},
		Credentials: Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "test-secret"},
		// Fault tests must fail within seconds, not the 30s x 8 defaults.
		Options: clientopts.Options{RequestTimeout: time.Second, MaxAttempts: 2},
	}
	if mod != nil {
		mod(s)
	}
	s.SetDefaults()
	api := testClients(t, t.Context(), s)
	env := &testEnv{emu: emu, srv: srv, fx: emu.Fixture(), sec: s, api: api, clock: clocktesting.NewFakeClock(time.Now())}
	env.in = newInstances(api, s, testCluster, nodes.New(instanceIDFromProviderID), env.clock)
	return env
}

// launch starts cluster-tagged instances and returns their IDs.
func (e *testEnv) launch(t *testing.T, spec cloudsimaws.LaunchSpec) []string {
	t.Helper()
	if spec.Tags == nil {
		spec.Tags = map[string]string{e.fx.ClusterTagKey: "owned"}
	}
	ids, err := e.emu.Launch(spec)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func (e *testEnv) info(t *testing.T, id string) cloudsimaws.InstanceInfo {
	t.Helper()
	info, ok := e.emu.Instance(id)
	if !ok {
		t.Fatalf("emulator has no instance %s", id)
	}
	return info
}

// nodeByName is a Node as the kubelet registers it: named by the private
// DNS name, without a providerID.
func (e *testEnv) nodeByName(t *testing.T, id string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: e.info(t, id).PrivateDNSName}}
}

// nodeByProviderID is an initialized Node.
func (e *testEnv) nodeByProviderID(t *testing.T, id string) *v1.Node {
	info := e.info(t, id)
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: info.PrivateDNSName},
		Spec:       v1.NodeSpec{ProviderID: providerID(info.Zone, id)},
	}
}

// describes counts DescribeInstances calls the emulator served.
func (e *testEnv) describes() int { return e.srv.CallCount("ec2:DescribeInstances") }

// expire moves the fake clock past the snapshot's TTL.
func (e *testEnv) expire() { e.clock.SetTime(e.clock.Now().Add(e.sec.InstanceCacheTTL + time.Second)) }

// TestOwnRequestBodiesSurviveSDKClose: the SDK closes the body it built
// as soon as Do returns, while net/http may still be reading it. The body
// the transport got must not be affected.
func TestOwnRequestBodiesSurviveSDKClose(t *testing.T) {
	const form = "Action=DescribeInstances&Version=2016-11-15"
	var sent io.Reader
	inner := clientDoFunc(func(req *http.Request) (*http.Response, error) {
		sent = req.Body
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	})
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/", &closableBody{r: strings.NewReader(form)})
	if _, err := ownRequestBodies(inner).Do(req); err != nil {
		t.Fatal(err)
	}
	_ = req.Body.Close() // as smithy-go's ClientHandler does
	got, err := io.ReadAll(sent)
	if err != nil || string(got) != form {
		t.Fatalf("transport's body after the SDK closed its own: %q, %v", got, err)
	}
}

type clientDoFunc func(*http.Request) (*http.Response, error)

func (f clientDoFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }

// closableBody reads nothing once closed, like smithy-go's safeReadCloser.
type closableBody struct {
	r      io.Reader
	closed bool
}

func (b *closableBody) Read(p []byte) (int, error) {
	if b.closed {
		return 0, io.EOF
	}
	return b.r.Read(p)
}

func (b *closableBody) Close() error { b.closed = true; return nil }

// TestIPv6NodeAddresses: with nodeIPFamilies [ipv6, ipv4] an instance's
// interface IPv6 address, as EC2 describes it, is the Node's first
// address (what a kubelet with --node-ip=<ipv6> is checked against).
func TestIPv6NodeAddresses(t *testing.T) {
	env := newTestEnv(t, func(s *Section) { s.NodeIPFamilies = []string{familyIPv6, familyIPv4} })
	ids := env.launch(t, cloudsimaws.LaunchSpec{Count: 1})
	info := env.info(t, ids[0])
	out, err := env.api.ec2.AssignIpv6Addresses(t.Context(), &ec2.AssignIpv6AddressesInput{NetworkInterfaceId: aws.String(info.NetworkInterfaceID), Ipv6AddressCount: aws.Int32(1)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.AssignedIpv6Addresses) != 1 {
		t.Fatalf("assigned %v", out.AssignedIpv6Addresses)
	}
	md, err := env.in.InstanceMetadata(t.Context(), env.nodeByProviderID(t, ids[0]))
	if err != nil {
		t.Fatal(err)
	}
	want := []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: out.AssignedIpv6Addresses[0]},
		{Type: v1.NodeInternalIP, Address: info.PrivateIP},
		{Type: v1.NodeInternalDNS, Address: info.PrivateDNSName},
		{Type: v1.NodeHostName, Address: info.PrivateDNSName},
	}
	if !reflect.DeepEqual(md.NodeAddresses, want) {
		t.Errorf("addresses\n got %v\nwant %v", md.NodeAddresses, want)
	}
}
