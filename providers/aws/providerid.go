package aws

import (
	"fmt"
	"regexp"
	"strings"
)

// instanceIDRE matches the two EC2 instance ID lengths.
var instanceIDRE = regexp.MustCompile(`^i-[0-9a-f]{8}([0-9a-f]{9})?$`)

// providerID formats the providerID the upstream AWS CCM writes, which
// Cluster API, the cluster autoscaler and existing Nodes depend on.
func providerID(zone, instanceID string) string {
	return fmt.Sprintf("aws:///%s/%s", zone, instanceID)
}

// instanceIDFromProviderID accepts every form the upstream AWS CCM accepts:
// aws:///<zone>/<id>, aws:////<id> (zone unknown), aws://<zone>/<id> (zone
// in the host part, written by some old tools), and a bare i-... ID.
func instanceIDFromProviderID(pid string) (string, error) {
	s := pid
	if !strings.HasPrefix(s, "aws://") {
		if strings.Contains(s, "://") {
			return "", fmt.Errorf("providerID %q is not an AWS providerID", pid)
		}
		s = "aws:////" + s
	}
	rest := strings.TrimPrefix(s, "aws://")
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	var id string
	switch len(parts) {
	case 1:
		id = parts[0]
	case 2:
		id = parts[1]
	}
	if !instanceIDRE.MatchString(id) {
		return "", fmt.Errorf("providerID %q has no valid EC2 instance ID (want aws:///<zone>/i-...)", pid)
	}
	return id, nil
}
