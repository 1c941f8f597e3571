package lbrecords

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

type rec struct{ n int }

func TestOverlappingOperations(t *testing.T) {
	const ttl = 10 * time.Minute
	clk := clocktesting.NewFakePassiveClock(time.Now())
	s := New[rec](ttl, clk)

	op := s.Begin("a")
	op.End(&rec{1}, op.Start)
	if op := s.Begin("a"); op.Rec == nil || op.Rec.n != 1 {
		t.Error("record not kept")
	} else {
		// Taken out while in use: an overlapping operation doesn't see it.
		if op2 := s.Begin("a"); op2.Rec != nil {
			t.Error("record handed to two operations")
		} else {
			op2.End(&rec{2}, op2.Start)
		}
		op.End(&rec{3}, op.Start)
	}
	if op := s.Begin("a"); op.Rec != nil {
		t.Error("a record kept from overlapping operations")
	} else {
		op.End(nil, op.Start)
	}

	// Another key is unaffected by a's operations.
	opA, opB := s.Begin("a"), s.Begin("b")
	opB.End(&rec{4}, opB.Start)
	s.Forget("a") // EnsureLoadBalancerDeleted while a's update runs
	opA.End(&rec{5}, opA.Start)
	if s.Len() != 1 {
		t.Errorf("%d records, want only b's", s.Len())
	}
	if op := s.Begin("b"); op.Rec == nil || op.Rec.n != 4 {
		t.Error("b's record lost")
	} else {
		// Keeping the record it found keeps its age.
		op.End(op.Rec, op.RecAt)
	}

	// Expired records are not handed out, and are swept.
	clk.SetTime(clk.Now().Add(ttl + time.Second))
	if op := s.Begin("b"); op.Rec != nil {
		t.Error("expired record handed out")
	} else {
		op.End(nil, op.Start)
	}
	c := s.Begin("c")
	c.End(&rec{6}, c.Start)
	c.End(&rec{7}, c.Start) // a second End does nothing
	if s.Len() != 1 || len(s.busy) != 0 || len(s.dirty) != 0 {
		t.Errorf("left %d records, %d busy, %d dirty", s.Len(), len(s.busy), len(s.dirty))
	}
}

// A record is trusted for the TTL from the full read it rests on, not from
// when it was last used.
func TestRecordAgeIsTheFullReadsAge(t *testing.T) {
	const ttl = time.Minute
	clk := clocktesting.NewFakePassiveClock(time.Now())
	s := New[rec](ttl, clk)
	op := s.Begin("k")
	op.End(&rec{1}, op.Start)
	clk.SetTime(clk.Now().Add(40 * time.Second))
	op = s.Begin("k")
	op.End(op.Rec, op.RecAt)
	clk.SetTime(clk.Now().Add(30 * time.Second))
	if op := s.Begin("k"); op.Rec != nil {
		t.Error("a record used 40 s after its read was trusted 70 s after it")
	}
}
