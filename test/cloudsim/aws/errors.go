package aws

import (
	"fmt"
	"net/http"
	"strings"
)

// apiError is an AWS API error. The protocol writer turns it into EC2's
// <Response><Errors> or ELBv2's <ErrorResponse> shape.
type apiError struct {
	Code    string
	Message string
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func apiErr(code, format string, args ...any) *apiError {
	return &apiError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// status is the HTTP status AWS answers the error with. Nearly every error,
// ELBv2's Throttling included, is a 400; EC2 throttling and the
// server-side errors are the exceptions SDK retryers key on.
func (e *apiError) status() int {
	switch e.Code {
	case "RequestLimitExceeded", "ServiceUnavailable", "Unavailable":
		return http.StatusServiceUnavailable
	case "InternalError", "InternalFailure":
		return http.StatusInternalServerError
	case codeUnauthorizedOperation, codeAccessDenied:
		return http.StatusForbidden
	}
	return http.StatusBadRequest
}

// Error codes shared by several handlers.
const (
	codeInvalidParameterValue = "InvalidParameterValue"
	codeMissingParameter      = "MissingParameter"
	codeValidation            = "ValidationError"
	// codeUnauthorizedOperation and codeAccessDenied are EC2's and Elastic
	// Load Balancing's answers (403) to a caller whose policy lacks the
	// action (authz.go).
	codeUnauthorizedOperation = "UnauthorizedOperation"
	codeAccessDenied          = "AccessDenied"
)

// missing is the EC2 error for an absent required parameter.
func missing(name string) *apiError {
	return apiErr(codeMissingParameter, "The request must contain the parameter %s", name)
}

// invalidValue is the EC2 error for a parameter with a bad value.
func invalidValue(name, value, why string) *apiError {
	msg := fmt.Sprintf("Value (%s) for parameter %s is invalid.", value, name)
	if why != "" {
		msg += " " + why
	}
	return &apiError{Code: codeInvalidParameterValue, Message: msg}
}

// validation is ELBv2's catch-all for bad input.
func validation(format string, args ...any) *apiError {
	return apiErr(codeValidation, format, args...)
}

// quoteList renders ids the way AWS messages do: 'a, b'.
func quoteList(ids []string) string { return "'" + strings.Join(ids, ", ") + "'" }
