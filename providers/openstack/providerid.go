package openstack

import (
	"fmt"
	"regexp"
	"strings"
)

// ProviderName is the backend's name in the cloud-config and the scheme of
// its providerIDs.
const ProviderName = "openstack"

// serverIDRE matches a Nova server ID.
var serverIDRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// providerID formats the providerID the upstream OpenStack CCM writes,
// which Cluster API (CAPO), the cluster autoscaler and existing Nodes
// depend on. MUST NOT change.
func providerID(serverID string) string { return "openstack:///" + serverID }

// serverIDParser returns the providerID parser for a cluster in region:
// openstack:///<server-uuid> as written by this and the upstream CCM, and
// openstack://<region>/<server-uuid> as written by CCMs that serve
// several regions, which is refused for any region but ours: that server
// is not in the cloud this manager talks to.
func serverIDParser(region string) func(pid string) (string, error) {
	return func(pid string) (string, error) {
		rest, ok := strings.CutPrefix(pid, "openstack://")
		if !ok {
			return "", fmt.Errorf("providerID %q is not an OpenStack providerID (want openstack:///<server-uuid>)", pid)
		}
		host, id, found := strings.Cut(rest, "/")
		if !found {
			return "", fmt.Errorf("providerID %q has no server ID (want openstack:///<server-uuid>)", pid)
		}
		if host != "" && host != region {
			return "", fmt.Errorf("providerID %q names region %q; this manager serves %q", pid, host, region)
		}
		if !serverIDRE.MatchString(id) {
			return "", fmt.Errorf("providerID %q has no valid server UUID (want openstack:///<server-uuid>)", pid)
		}
		return strings.ToLower(id), nil
	}
}
