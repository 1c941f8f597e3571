package aws

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

func TestRecordTagsRoundTrip(t *testing.T) {
	rec := map[string]bool{}
	for p := 1; p <= 100; p++ {
		rec[fmt.Sprintf("%d-tcpudp", 60000+p)] = true
	}
	set, remove := recordTags(rec, map[string]string{recordTagKey + "-9": "x", "other": "y"})
	if len(set) < 2 {
		t.Fatalf("100 entries should need several tags, got %d", len(set))
	}
	tags := map[string]string{}
	for _, tg := range set {
		if v := aws.ToString(tg.Value); len(v) > maxTagValueLength {
			t.Errorf("tag value of %d characters", len(v))
		}
		tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	if len(remove) != 1 || remove[0] != recordTagKey+"-9" {
		t.Errorf("remove = %v", remove)
	}
	if got := parseRecord(tags); !equalSets(got, rec) {
		t.Errorf("round trip lost entries: %d of %d", len(got), len(rec))
	}
	// The empty record still writes its key, so "no target groups" is
	// distinguishable from "never recorded".
	set, _ = recordTags(nil, nil)
	if len(set) != 1 || aws.ToString(set[0].Value) != "" {
		t.Errorf("empty record: %v", set)
	}
}
