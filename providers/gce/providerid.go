package gce

import (
	"fmt"
	"strings"
)

// instanceRef names an instance: project, zone and name, the three parts
// of upstream's providerID gce://<project>/<zone>/<name>.
type instanceRef struct {
	project, zone, name string
}

// key is the snapshot's key for the instance: "<project>/<zone>/<name>".
func (r instanceRef) key() string { return r.project + "/" + r.zone + "/" + r.name }

// providerID is the providerID upstream writes for the instance.
func (r instanceRef) providerID() string { return "gce://" + r.key() }

// parseKey reads a snapshot key back.
func parseKey(key string) (instanceRef, error) {
	parts := strings.Split(key, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return instanceRef{}, fmt.Errorf("malformed instance key %q", key)
	}
	r := instanceRef{project: parts[0], zone: parts[1], name: parts[2]}
	if !projectRE.MatchString(r.project) || !nameRE.MatchString(r.zone) || !nameRE.MatchString(r.name) {
		return instanceRef{}, fmt.Errorf("malformed instance key %q", key)
	}
	return r, nil
}

// parseProviderID reads gce://<project>/<zone>/<name>. The project is
// honoured as written: a Node may run in another project than the
// config's (a Shared VPC service project), and its instance is looked
// up there.
func parseProviderID(providerID string) (instanceRef, error) {
	rest, ok := strings.CutPrefix(providerID, ProviderName+"://")
	if !ok {
		return instanceRef{}, fmt.Errorf("providerID %q is not a GCE one (gce://<project>/<zone>/<instance>)", providerID)
	}
	r, err := parseKey(rest)
	if err != nil {
		return instanceRef{}, fmt.Errorf("providerID %q: want gce://<project>/<zone>/<instance>", providerID)
	}
	return r, nil
}

// instanceKeyOf is the snapshot key of a providerID, for the node lister.
func instanceKeyOf(providerID string) (string, error) {
	r, err := parseProviderID(providerID)
	if err != nil {
		return "", err
	}
	return r.key(), nil
}

// lastSegment is the name at the end of a resource URL
// (".../zones/us-central1-a" -> "us-central1-a").
func lastSegment(url string) string {
	return url[strings.LastIndex(url, "/")+1:]
}
