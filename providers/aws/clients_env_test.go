package aws

import (
	"context"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
)

// testClients builds the SDK clients as production does, each test with a
// connection pool of its own: with http.DefaultTransport's, an idle
// connection to an earlier test's closed emulator could be picked for a new
// emulator that reused its port.
func testClients(t *testing.T, ctx context.Context, s *Section) *clients {
	t.Helper()
	api, err := newClients(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Timeout: s.RequestTimeout, Transport: tr}
	// Wrapped as newClients wraps its client; see ownRequestBodies.
	api.ec2 = ec2.New(api.ec2.Options(), func(o *ec2.Options) { o.HTTPClient = ownRequestBodies(hc) })
	api.elbv2 = elbv2.New(api.elbv2.Options(), func(o *elbv2.Options) { o.HTTPClient = ownRequestBodies(hc) })
	return api
}
