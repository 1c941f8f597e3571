package aws

import (
	"errors"

	"github.com/aws/smithy-go"
)

// How this backend reads AWS errors. Codes are matched exactly, never by
// message text; the only message read is InvalidInstanceID.NotFound's list
// of IDs (instances_lookup.go), because EC2 names the missing IDs nowhere
// else.
//
// Only EC2's own InvalidInstanceID.NotFound for a direct lookup by ID, or
// an instance it lists as terminated, means an instance is gone;
// throttling (RequestLimitExceeded, Throttling), 5xx, timeouts and auth
// errors are errors, retried by the SDK with backoff.

// errCodeInstanceNotFound is EC2's answer to DescribeInstances naming an
// instance it does not know.
const errCodeInstanceNotFound = "InvalidInstanceID.NotFound"

// ec2ErrorCode is the API error code of err, or "" if err is not an API
// error (a timeout, a cancelled context).
func ec2ErrorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// isAPIError reports whether err is the AWS API error with that code.
func isAPIError(err error, code string) bool {
	var ae smithy.APIError
	return err != nil && errors.As(err, &ae) && ae.ErrorCode() == code
}

// staleRecord says err shows the record no longer describes the cloud:
// what it names is gone or not what it was.
func staleRecord(err error) bool {
	for _, code := range []string{"TargetGroupNotFound", "LoadBalancerNotFound", "ValidationError", "InvalidTarget"} {
		if isAPIError(err, code) {
			return true
		}
	}
	return false
}
