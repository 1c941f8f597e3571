package aws

import (
	"net/http"
	"strings"

	"github.com/multicloud-ccm/multicloud-ccm/test/cloudsim"
)

var _ cloudsim.Authorizer = (*Emulator)(nil)

// CallerARN is the identity denials name, as IAM's messages name the
// caller.
const CallerARN = "arn:aws:iam::123456789012:user/multicloud-ccm"

// Principal implements cloudsim.Authorizer: the access key ID of the
// request's Signature Version 4 credential scope
// ("Credential=AKID/date/region/service/aws4_request").
func (e *Emulator) Principal(r *http.Request) string {
	auth := r.Header.Get("Authorization")
	_, rest, ok := strings.Cut(auth, "Credential=")
	if !ok {
		return ""
	}
	key, _, _ := strings.Cut(rest, "/")
	return key
}

// Permissions implements cloudsim.Authorizer: an EC2 action needs the IAM
// action of its name ("ec2:DescribeInstances"); both Elastic Load
// Balancing APIs (v2 and Classic) share the service prefix
// "elasticloadbalancing" (IAM service authorization reference, Elastic
// Load Balancing V2 and Elastic Load Balancing).
func (e *Emulator) Permissions(_ *http.Request, op string) []string {
	switch {
	case strings.HasPrefix(op, elbPrefix):
		return []string{"elasticloadbalancing:" + strings.TrimPrefix(op, elbPrefix)}
	case strings.HasPrefix(op, clbPrefix):
		return []string{"elasticloadbalancing:" + strings.TrimPrefix(op, clbPrefix)}
	}
	return []string{op}
}

// WriteDenied implements cloudsim.Authorizer with AWS's answers to a
// caller whose policy lacks the action: EC2's 403 UnauthorizedOperation
// (its message names the action since 2021), Elastic Load Balancing's 403
// AccessDenied, both "User: <arn> is not authorized to perform: <action>
// because no identity-based policy allows the <action> action".
func (e *Emulator) WriteDenied(w http.ResponseWriter, _ *http.Request, op, missing string) {
	msg := "User: " + CallerARN + " is not authorized to perform: " + missing + " because no identity-based policy allows the " + missing + " action"
	switch {
	case strings.HasPrefix(op, elbPrefix):
		writeELBError(w, newRequestID(), apiErr(codeAccessDenied, "%s", msg))
	case strings.HasPrefix(op, clbPrefix):
		writeCLBError(w, newRequestID(), apiErr(codeAccessDenied, "%s", msg))
	default:
		writeEC2Error(w, newRequestID(), apiErr(codeUnauthorizedOperation, "You are not authorized to perform this operation. %s", msg))
	}
}
