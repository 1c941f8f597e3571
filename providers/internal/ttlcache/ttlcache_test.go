package ttlcache

import (
	"fmt"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestExpiresAndForgets(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	c := New[[]string](time.Minute, clk)
	c.Set("a", []string{"x"})
	if v, ok := c.Get("a"); !ok || v[0] != "x" {
		t.Fatalf("Get = %v, %v", v, ok)
	}
	clk.Step(59 * time.Second)
	if _, ok := c.Get("a"); !ok {
		t.Fatal("entry expired early")
	}
	clk.Step(2 * time.Second)
	if _, ok := c.Get("a"); ok {
		t.Fatal("entry outlived its TTL")
	}
	c.Set("b", nil)
	c.Delete("b")
	if _, ok := c.Get("b"); ok {
		t.Fatal("deleted entry still there")
	}
	if _, ok := c.Get("never"); ok {
		t.Fatal("Get of a missing key succeeded")
	}
}

// Keys of vanished Services must not pile up: writes collect expired ones.
func TestExpiredKeysDoNotAccumulate(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	c := New[int](time.Minute, clk)
	for i := range 1000 {
		c.Set(fmt.Sprint(i), i)
	}
	clk.Step(2 * time.Minute)
	c.Set("new", 1)
	if n := c.Len(); n != 1 {
		t.Fatalf("%d entries after expiry and a write, want 1", n)
	}
}
