package aws

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/cloudmetrics"
	decl "github.com/multicloud-ccm/multicloud-ccm/providers/permissions"
)

// recordCloudMetrics is an aws.Config APIOptions entry that reports every
// HTTP attempt of every SDK client to the manager's /metrics.
func recordCloudMetrics(stack *middleware.Stack) error {
	return addCloudMetrics(stack, cloudmetrics.Default())
}

// addCloudMetrics places the metrics middleware in the Finalize step right
// after the SDK's retry middleware, the part of the stack that runs once
// per attempt: a call throttled twice and then served counts three, as the
// cloud counted it, and each attempt carries its own status code.
func addCloudMetrics(stack *middleware.Stack, rec *cloudmetrics.Recorder) error {
	m := &cloudMetrics{rec: rec}
	if err := stack.Finalize.Insert(m, (&retry.Attempt{}).ID(), middleware.After); err != nil {
		// A stack without the retry middleware makes one attempt per call;
		// anywhere in Finalize then sees exactly that attempt.
		return stack.Finalize.Add(m, middleware.After)
	}
	return nil
}

// cloudMetrics is the Finalize middleware that records one attempt.
type cloudMetrics struct{ rec *cloudmetrics.Recorder }

// throttles is the SDK's own notion of a throttling error (RequestLimitExceeded,
// Throttling, ...), the one its standard retryer backs off on.
var throttles = retry.IsErrorThrottles(retry.DefaultThrottles)

func (*cloudMetrics) ID() string { return "MulticloudCCMCloudMetrics" }

func (m *cloudMetrics) HandleFinalize(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (
	middleware.FinalizeOutput, middleware.Metadata, error,
) {
	start := time.Now()
	out, md, err := next.HandleFinalize(ctx, in)
	d := time.Since(start)

	status := attemptStatus(md, err)
	throttled := err != nil && throttles.IsErrorThrottle(err) == aws.TrueTernary
	service, operation := serviceLabel(awsmiddleware.GetServiceID(ctx)), awsmiddleware.GetOperationName(ctx)
	m.rec.Observe(ProviderName, service, operation, cloudmetrics.Code(status, err), d, throttled)
	if perm, ok := deniedPermission(service, operation, err); ok {
		features := declared().FeaturesOf(perm)
		m.rec.PermissionDenied(ProviderName, perm, features)
		err = &decl.DeniedError{Permission: perm, Features: features, Err: err}
	}
	return out, md, err
}

// attemptStatus is an attempt's HTTP status, 0 without a response. The
// SDK keeps each attempt's raw response in the metadata, next to an API
// error too; the ResponseError is the fallback for a stack without that
// middleware.
func attemptStatus(md middleware.Metadata, err error) int {
	if resp, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok && resp != nil {
		return resp.StatusCode
	}
	if re := (*smithyhttp.ResponseError)(nil); errors.As(err, &re) && re.Response != nil {
		return re.Response.StatusCode
	}
	return 0
}

// deniedPermission is the IAM action a call was refused for: EC2 answers
// UnauthorizedOperation, Elastic Load Balancing and STS AccessDenied
// (both 403), and the action is the service's prefix and the operation.
func deniedPermission(service, operation string, err error) (string, bool) {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return "", false
	}
	switch apiErr.ErrorCode() {
	case "UnauthorizedOperation", "AccessDenied", "AccessDeniedException":
	default:
		return "", false
	}
	switch service {
	case "elbv2", "elb":
		return "elasticloadbalancing:" + operation, true
	}
	return service + ":" + operation, true
}

// declared is the backend's declaration, built once: denials look up
// which features need the refused action.
var declared = sync.OnceValue(Permissions)

// serviceLabel shortens the SDK's service IDs to the names operators and
// the AWS CLI use ("Elastic Load Balancing v2" -> "elbv2"). Service IDs
// come from the SDK's generated clients, so the set stays small.
func serviceLabel(serviceID string) string {
	switch serviceID {
	case "Elastic Load Balancing v2":
		return "elbv2"
	case "Elastic Load Balancing":
		return "elb"
	}
	return strings.ReplaceAll(strings.ToLower(serviceID), " ", "-")
}
