package clientopts

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestDefaultsAndValidation(t *testing.T) {
	var o Options
	o.SetDefaults()
	if o != (Options{RequestTimeout: DefaultRequestTimeout, MaxAttempts: DefaultMaxAttempts, InstanceCacheTTL: DefaultInstanceCacheTTL}) {
		t.Fatalf("defaults = %+v", o)
	}
	if errs := o.Validate(field.NewPath("aws")); len(errs) != 0 {
		t.Fatalf("defaults invalid: %v", errs)
	}
	for _, tc := range []struct {
		name string
		o    Options
		path string
	}{
		{"timeout too short", Options{RequestTimeout: time.Millisecond}, "aws.requestTimeout"},
		{"timeout too long", Options{RequestTimeout: time.Hour}, "aws.requestTimeout"},
		{"attempts negative", Options{MaxAttempts: -1}, "aws.maxAttempts"},
		{"attempts too many", Options{MaxAttempts: 50}, "aws.maxAttempts"},
		{"ttl too short", Options{InstanceCacheTTL: time.Millisecond}, "aws.instanceCacheTTL"},
		{"ttl too long", Options{InstanceCacheTTL: time.Hour}, "aws.instanceCacheTTL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.SetDefaults()
			errs := tc.o.Validate(field.NewPath("aws"))
			if len(errs) != 1 || errs[0].Field != tc.path || !strings.Contains(errs[0].Error(), "must be between") {
				t.Fatalf("errors = %v, want one for %s", errs, tc.path)
			}
		})
	}
}
