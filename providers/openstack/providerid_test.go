package openstack

import (
	"strings"
	"testing"
)

func TestServerIDFromProviderID(t *testing.T) {
	const id = "5f0d1e1c-9a4b-4c43-9f57-1d5e3a7b2c10"
	parse := serverIDParser("RegionOne")
	for _, pid := range []string{"openstack:///" + id, "openstack://RegionOne/" + id, "openstack:///" + strings.ToUpper(id)} {
		if got, err := parse(pid); err != nil || got != id {
			t.Errorf("%s: %q, %v", pid, got, err)
		}
	}
	if got := providerID(id); got != "openstack:///"+id {
		t.Errorf("providerID = %q", got)
	}
	for pid, want := range map[string]string{
		"aws:///eu-west-1a/i-0123456789abcdef0": "is not an OpenStack providerID",
		"openstack://RegionTwo/" + id:           `names region "RegionTwo"; this manager serves "RegionOne"`,
		"openstack:///not-a-uuid":               "has no valid server UUID",
		"openstack://" + id:                     "has no server ID",
		"openstack:///" + id + "/extra":         "has no valid server UUID",
		id:                                      "is not an OpenStack providerID",
	} {
		if _, err := parse(pid); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", pid, err, want)
		}
	}
}
