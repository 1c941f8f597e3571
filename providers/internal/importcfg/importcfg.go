// Package importcfg is the contract between `multicloud-ccm import-config`
// and the backends: each backend reads its upstream CCM's own config file
// (AWS cloud.conf, Azure azure.json, GCE gce.conf, OpenStack cloud.conf)
// into its config section and says what it could not carry over. The
// command renders the result as a cloud-config and validates it.
//
// A backend's importer lives in the backend's package, beside the section
// it fills, so a slim build imports only the clouds it serves.
package importcfg

import (
	"fmt"
	"strings"

	"github.com/multicloud-ccm/multicloud-ccm/config"
)

// DefaultClusterName is the upstream managers' --cluster-name default
// (k8s.io/cloud-provider options/kubecloudshared.go: "kubernetes"). Azure
// names its load balancer after it, GCE and OpenStack name load balancer
// parts with it, so a switched cluster must keep it as clusterID.
const DefaultClusterName = "kubernetes"

// Options is what the command knows besides the file.
type Options struct {
	// ClusterName is the upstream manager's --cluster-name.
	ClusterName string
	// EnvironmentFile is the path of the file of a custom cloud's
	// endpoints that the upstream manager read beside its config file
	// (--environment-file): the Azure CCM's AZURE_ENVIRONMENT_FILEPATH
	// file, read for cloud AzureStackCloud. Empty: the Azure importer
	// takes the one that variable names, as upstream did. Only the Azure
	// importer reads it.
	EnvironmentFile string
}

// Note is one upstream key the importer could not carry over unchanged,
// for the person running the import. A Note never holds a key's value:
// values may be secrets.
type Note struct {
	// Key names the upstream key as the file spells it, with its section
	// for INI files: "[Global] KubernetesClusterTag", "loadBalancerSku".
	Key string
	// Upstream is what the key did in the upstream CCM.
	Upstream string
	// Instead is what to do here: the equivalent, or why none is needed.
	Instead string
}

// String is the Note as one line of the command's report.
func (n Note) String() string {
	return fmt.Sprintf("%s: upstream, %s; here, %s", n.Key, strings.TrimSuffix(n.Upstream, "."), strings.TrimSuffix(n.Instead, "."))
}

// Result is an imported config.
type Result struct {
	// Section is the backend's section filled from the file (defaults not
	// applied: the command prints only what was set).
	Section config.Section
	// ClusterID, when the upstream file names the cluster itself (AWS's
	// KubernetesClusterTag or KubernetesClusterID), is the clusterID that
	// keeps the cloud resources' tags; empty means Options.ClusterName.
	ClusterID string
	// Notes are the keys with no equivalent, or with a changed meaning.
	Notes []Note
}

// Func reads an upstream config file. A file it cannot parse is an error
// that gives the line; keys it does not know are Notes, not errors,
// because an import should carry over everything it can.
type Func func(data []byte, opts Options) (*Result, error)
