package aws

import (
	"context"
	"net/http"
	"testing"

	"github.com/aws/smithy-go/middleware"
)

// testClients builds the SDK clients as production does, each test with a
// connection pool of its own: with http.DefaultTransport's, an idle
// connection to an earlier test's closed emulator could be picked for a new
// emulator that reused its port. apiOptions are added to every client's
// middleware stack.
func testClients(t *testing.T, ctx context.Context, s *Section, apiOptions ...func(*middleware.Stack) error) *clients {
	t.Helper()
	cfg, err := sdkConfig(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	// Wrapped as sdkConfig wraps its client; see ownRequestBodies.
	cfg.HTTPClient = ownRequestBodies(&http.Client{Timeout: s.RequestTimeout, Transport: tr})
	cfg.APIOptions = append(cfg.APIOptions, apiOptions...)
	return clientsFrom(cfg, s)
}
