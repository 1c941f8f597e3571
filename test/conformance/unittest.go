package conformance

import "testing"

// StartWithNodes is an adapter's own unit tests' start: its emulator
// (closed at cleanup) and two instances, node-a and node-b where the cloud
// takes a name, in the first two zones.
func StartWithNodes(t testing.TB, a Adapter, opts Options) (Cloud, []Instance) {
	t.Helper()
	c, err := a.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	var insts []Instance
	for i, z := range c.Zones()[:2] {
		in, err := c.Launch(InstanceSpec{NameHint: []string{"node-a", "node-b"}[i], Zone: z})
		if err != nil {
			t.Fatal(err)
		}
		insts = append(insts, in)
	}
	return c, insts
}
