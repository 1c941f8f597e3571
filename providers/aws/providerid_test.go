package aws

import "testing"

func TestInstanceIDFromProviderID(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{in: "aws:///eu-west-1a/i-0123456789abcdef0", want: "i-0123456789abcdef0"},
		{in: "aws:////i-0123456789abcdef0", want: "i-0123456789abcdef0"},
		{in: "aws:///i-0123456789abcdef0", want: "i-0123456789abcdef0"},
		{in: "aws://eu-west-1a/i-0123456789abcdef0", want: "i-0123456789abcdef0"},
		{in: "i-0123456789abcdef0", want: "i-0123456789abcdef0"},
		{in: "i-01234567", want: "i-01234567"},
		{in: "aws:///eu-west-1a/fargate-10.0.0.1", wantErr: true},
		{in: "gce://p/z/n", wantErr: true},
		{in: "", wantErr: true},
		{in: "aws:///a/b/i-0123456789abcdef0", wantErr: true},
		{in: "i-XYZ", wantErr: true},
	}
	for _, tt := range tests {
		got, err := instanceIDFromProviderID(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("instanceIDFromProviderID(%q) = %q, %v; want %q, err=%v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
	if got := providerID("eu-west-1a", "i-0123456789abcdef0"); got != "aws:///eu-west-1a/i-0123456789abcdef0" {
		t.Errorf("providerID = %q", got)
	}
}
