package cloudhealth

import (
	"testing"
	"time"
)

// TestBoard: any response below 500 but 429 is an answer; no response,
// a 5xx or a 429 is not; a canceled attempt says nothing.
func TestBoard(t *testing.T) {
	now := time.Unix(1000, 0)
	b := New(func() time.Time { return now })
	step := func() { now = now.Add(time.Second) }
	if b.Down("aws") || b.AnsweredSince("aws", time.Time{}) {
		t.Fatal("an unknown cloud is neither down nor answering")
	}
	b.Observe("aws", 200, false)
	step()
	b.Observe("aws", 0, false) // refused
	if !b.Down("aws") {
		t.Error("no response after an answer: down")
	}
	failed := b.Now()
	step()
	b.Observe("aws", 0, true) // the caller gave up
	if !b.Down("aws") || b.AnsweredSince("aws", failed) {
		t.Error("a canceled attempt changed the verdict")
	}
	for _, status := range []int{429, 503} {
		step()
		b.Observe("aws", status, false)
		if !b.Down("aws") {
			t.Errorf("%d: want down", status)
		}
	}
	step()
	b.Observe("aws", 404, false)
	if b.Down("aws") || !b.AnsweredSince("aws", failed) {
		t.Error("a 404 is an answer: up again")
	}
	if b.Down("gce") {
		t.Error("clouds are told apart")
	}
}
