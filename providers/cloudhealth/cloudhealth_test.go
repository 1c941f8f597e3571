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

// TestNextAnswer: the channel closes at the cloud's next answer, not at
// an unanswered attempt nor at another cloud's answer.
func TestNextAnswer(t *testing.T) {
	b := New(nil)
	next := b.NextAnswer("aws")
	closed := func() bool {
		select {
		case <-next:
			return true
		default:
			return false
		}
	}
	b.Observe("aws", 503, false)
	b.Observe("aws", 429, false)
	b.Observe("gce", 200, false)
	if closed() {
		t.Fatal("closed without an answer from aws")
	}
	b.Observe("aws", 403, false)
	if !closed() {
		t.Fatal("aws answered: want the channel closed")
	}
	if again := b.NextAnswer("aws"); again == next {
		t.Error("a closed channel was handed out again")
	}
}
