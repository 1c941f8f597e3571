package aws

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// clients are the SDK operations the backend calls. The SDK does signing,
// retries with backoff on throttling (RequestLimitExceeded, Throttling) and
// 5xx, and pagination; we only configure it.
type clients struct {
	ec2   *ec2Calls
	elbv2 *elbv2Calls
	elb   *elbCalls
}

// newClients builds the SDK clients from the section. It makes no API call.
func newClients(ctx context.Context, s *Section) (*clients, error) {
	cfg, err := sdkConfig(ctx, s)
	if err != nil {
		return nil, err
	}
	return clientsFrom(cfg, s), nil
}

// sdkConfig is the SDK configuration every client of the section shares:
// region, HTTP client, retryer, credentials and the metrics middleware.
func sdkConfig(ctx context.Context, s *Section) (aws.Config, error) {
	// The SDK's buildable client keeps its own transport settings (and the
	// AWS_CA_BUNDLE handling, which refuses a plain *http.Client) while
	// bounding every attempt.
	httpClient := awshttp.NewBuildableClient().WithTimeout(s.RequestTimeout)
	retryer, wakeStack := wakeRetries(s.MaxAttempts)
	opts := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithRegion(s.Region),
		awsconfig.WithHTTPClient(httpClient),
		awsconfig.WithRetryer(retryer),
	}
	if c := s.Credentials; c.AccessKeyID != "" {
		opts = append(opts, awsconfig.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS SDK config: %w", err)
	}
	// Wrapped after loading: the CA bundle handling needs the buildable
	// client itself.
	cfg.HTTPClient = ownRequestBodies(cfg.HTTPClient)
	// Every client built from cfg, STS included, counts each attempt on /metrics.
	cfg.APIOptions = append(cfg.APIOptions, recordCloudMetrics, wakeStack)
	if ar := s.AssumeRole; ar.RoleARN != "" {
		stsClient := sts.NewFromConfig(cfg, func(o *sts.Options) {
			if s.Endpoints.STS != "" {
				o.BaseEndpoint = aws.String(s.Endpoints.STS)
			}
		})
		cfg.Credentials = aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(stsClient, ar.RoleARN, func(o *stscreds.AssumeRoleOptions) {
			o.RoleSessionName = ar.SessionName
			if ar.ExternalID != "" {
				o.ExternalID = aws.String(ar.ExternalID)
			}
		}))
	}
	return cfg, nil
}

// clientsFrom builds the EC2, ELBv2 and Classic ELB clients on cfg, at the section's
// endpoints when it names them.
func clientsFrom(cfg aws.Config, s *Section) *clients {
	return &clients{
		ec2: newEC2Calls(ec2.NewFromConfig(cfg, func(o *ec2.Options) {
			if s.Endpoints.EC2 != "" {
				o.BaseEndpoint = aws.String(s.Endpoints.EC2)
			}
		})),
		elbv2: newELBv2Calls(elbv2.NewFromConfig(cfg, func(o *elbv2.Options) {
			if s.Endpoints.ELBv2 != "" {
				o.BaseEndpoint = aws.String(s.Endpoints.ELBv2)
			}
		})),
		elb: newELBCalls(elb.NewFromConfig(cfg, func(o *elb.Options) {
			if ep := s.elbEndpoint(); ep != "" {
				o.BaseEndpoint = aws.String(ep)
			}
		})),
	}
}

// noRateLimit disables the SDK's client-side retry token bucket.
type noRateLimit struct{}

func (noRateLimit) GetToken(context.Context, uint) (func() error, error) {
	return func() error { return nil }, nil
}
func (noRateLimit) AddTokens(uint) error { return nil }

// ownRequestBodies makes c send a private in-memory copy of each request
// body instead of the body the SDK built.
//
// The SDK closes the body it built as soon as Do returns, while
// net/http's write loop may still be finishing the request: after the
// Content-Length bytes are on the wire it reads the body once more to
// check for excess bytes. That read goes through the SDK wrapper's
// WriteTo, which on a closed body returns io.EOF as an error; the
// transport then treats the request write as failed and closes the
// connection under the response being read. A response larger than the
// transport's read buffer then fails with "use of closed network
// connection", and every affected connection is lost to the pool. A fast
// server (the emulator, a nearby endpoint) or a starved client (-race,
// CPU throttling) exposes it. EC2 and ELBv2 Query bodies are small, so
// the copy is cheap.
func ownRequestBodies(c aws.HTTPClient) aws.HTTPClient { return bodyOwningClient{c} }

type bodyOwningClient struct{ aws.HTTPClient }

func (c bodyOwningClient) Do(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return c.HTTPClient.Do(req)
	}
	var body []byte
	var err error
	if n := req.ContentLength; n > 0 {
		// Sized up front: growing a 400 KB RegisterTargets body from
		// 512 bytes doubles the garbage of every large call.
		body = make([]byte, n)
		_, err = io.ReadFull(req.Body, body)
	} else {
		body, err = io.ReadAll(req.Body)
	}
	_ = req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	req = req.Clone(req.Context())
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return c.HTTPClient.Do(req)
}
