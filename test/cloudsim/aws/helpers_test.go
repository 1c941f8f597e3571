package aws_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"github.com/aws/smithy-go"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
	cloudsimaws "github.com/multicloud-ccm/multicloud-ccm/test/cloudsim/aws"
)

const region = "eu-west-1"

// env is one emulator behind a server, with real SDK clients pointed at it.
type env struct {
	emu *cloudsimaws.Emulator
	srv *cloudsim.Server
	fx  cloudsimaws.Fixture
	ec2 *ec2.Client
	elb *elbv2.Client
}

// newEnv starts NewDefault(eu-west-1, zones a b c, cluster "test") with
// clients that do not retry, so every error reaches the test as sent.
func newEnv(t *testing.T) *env {
	t.Helper()
	emu := cloudsimaws.NewDefault(cloudsimaws.Config{Region: region, ClusterID: "test"})
	srv, err := cloudsim.Start(emu)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	e := &env{emu: emu, srv: srv, fx: emu.Fixture()}
	e.ec2, e.elb = clients(srv.URL(), 1)
	return e
}

// clients builds SDK clients for url that make up to maxAttempts attempts
// with a 1ms backoff and no client-side retry quota, as a CCM would.
func clients(url string, maxAttempts int) (*ec2.Client, *elbv2.Client) {
	cfg := aws.Config{
		HTTPClient:  &http.Client{Transport: rebufferingTransport{http.DefaultTransport.(*http.Transport).Clone()}},
		Region:      region,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDCLOUDSIM", "secret", ""),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = maxAttempts
				o.RateLimiter = ratelimit.None
				o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
			})
		},
	}
	return ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(url) }),
		elbv2.NewFromConfig(cfg, func(o *elbv2.Options) { o.BaseEndpoint = aws.String(url) })
}

// errorCode returns the API error code of err, or "" when it has none.
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// wantCode fails the test unless err carries the API error code.
func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := errorCode(err); got != code {
		t.Fatalf("want error %s, got %v", code, err)
	}
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func ctx() context.Context { return context.Background() }

func launch(t *testing.T, e *env, spec cloudsimaws.LaunchSpec) []string {
	t.Helper()
	ids, err := e.emu.Launch(spec)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// ok fails the test on err.
func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// rawCode POSTs a hand-written Query request and returns the error code
// in the response, or "" for a success. Tests use it for inputs the SDK
// refuses to send.
func rawCode(t *testing.T, e *env, form string) string {
	t.Helper()
	resp, err := http.Post(e.srv.URL(), "application/x-www-form-urlencoded; charset=utf-8", strings.NewReader(form))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		return ""
	}
	var doc struct {
		Code    string `xml:"Errors>Error>Code"`
		ELBCode string `xml:"Error>Code"`
	}
	if err := xml.Unmarshal(body, &doc); err != nil {
		t.Fatalf("status %d, undecodable body %q", resp.StatusCode, body)
	}
	return doc.Code + doc.ELBCode
}

func targetsOf(ids []string) []elbtypes.TargetDescription {
	var out []elbtypes.TargetDescription
	for _, id := range ids {
		out = append(out, elbtypes.TargetDescription{Id: aws.String(id)})
	}
	return out
}

// rebufferingTransport copies each request body into a plain in-memory
// reader before sending it. With the SDK's own body wrapper, roughly one
// run in four under -race fails a response larger than 4 KiB with "use of
// closed network connection": the client's transport closes the
// connection while the body is being read, even against a server in
// another process. With re-buffered bodies it never happens, so this is
// an SDK/net/http interaction that a fast local server exposes, not an
// emulator bug.
type rebufferingTransport struct{ base http.RoundTripper }

func (t rebufferingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		body, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	return t.base.RoundTrip(req)
}
