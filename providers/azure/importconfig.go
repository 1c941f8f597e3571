package azure

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/importcfg"
)

// ImportConfig reads the upstream Azure CCM's azure.json into the azure
// section (`multicloud-ccm import-config --from azure`). Upstream decodes
// the file with sigs.k8s.io/yaml, so it may be JSON or YAML
// (upstream: kubernetes-sigs/cloud-provider-azure
// pkg/provider/config/env.go:39); it is converted to JSON the same way and
// decoded with encoding/json into upstreamConfig, so every key upstream
// reads is read here under the same spelling rules.
//
// Keys that keep their name and meaning fill the section silently (README
// "Azure" lists them). Keys with another meaning, or none here, are Notes,
// as are upstream defaults that differ from ours where that changes what
// the cluster gets (vmType, control-plane Nodes, the backend pool type).
// A key whose value is what this backend always does (loadBalancerSku
// standard, disableOutboundSNAT false, ...) needs nothing written and no
// Note. Nothing is defaulted: what the file leaves out stays out.
func ImportConfig(data []byte, opts importcfg.Options) (*importcfg.Result, error) {
	doc, err := decodeAzureJSON(data)
	if err != nil {
		return nil, err
	}
	im := &importer{up: &doc.cfg, keys: doc.keys, raw: doc.raw, s: &Section{}}
	if err := im.cloud(opts.EnvironmentFile); err != nil {
		return nil, err
	}
	im.placement()
	im.credentials()
	im.vmType()
	im.retries()
	im.instanceCacheTTL()
	im.loadBalancer()
	im.unsupported()
	for _, k := range doc.unknown {
		im.note(k, "not a key of the upstream Azure CCM's azure.json, so it was ignored", `ignored; check its spelling against docs/reference/azure.md`)
	}
	return &importcfg.Result{Section: im.s, Notes: im.sortedNotes()}, nil
}

// azureJSON is a decoded azure.json.
type azureJSON struct {
	cfg upstreamConfig
	// keys maps each upstream key the file sets to the file's spelling.
	keys map[string]string
	// raw holds each set upstream key's JSON value.
	raw map[string]json.RawMessage
	// unknown are the file's keys that are no upstream key, sorted.
	unknown []string
}

func decodeAzureJSON(data []byte) (*azureJSON, error) {
	// Windows editors start files with a byte order mark, which YAML
	// skips and encoding/json refuses; it is on no line of its own.
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("the file is empty: want a JSON object (or YAML mapping) of azure.json keys")
	}
	// A JSON file is decoded as it is, so that encoding/json's offsets
	// are offsets in the file; anything else goes through YAML as
	// upstream's does.
	js, isJSON := data, json.Valid(data)
	if !isJSON {
		var err error
		if js, err = sigsyaml.YAMLToJSON(data); err != nil {
			return nil, syntaxError(data, err)
		}
	}
	doc := &azureJSON{keys: map[string]string{}, raw: map[string]json.RawMessage{}}
	if err := json.Unmarshal(js, &doc.cfg); err != nil {
		return nil, typeError(data, isJSON, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(js, &raw); err != nil || raw == nil {
		// Only a null document gets here: anything but an object already
		// failed to decode into the struct.
		return nil, errors.New("the file holds no keys: want a JSON object (or YAML mapping) of azure.json keys")
	}
	for k, v := range raw {
		c := canonicalKey(k)
		if c == "" {
			doc.unknown = append(doc.unknown, k)
			continue
		}
		doc.keys[c] = k
		doc.raw[c] = v
	}
	slices.Sort(doc.unknown)
	return doc, nil
}

// yamlLineRE finds the line number YAML parse errors carry, and
// yamlMsgRE splits their usual form, "yaml: line 3: <what>".
var (
	yamlLineRE = regexp.MustCompile(`line (\d+)`)
	yamlMsgRE  = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
)

// syntaxError turns a parse failure into an error that names the line.
// The text is the parser's, which quotes at most a character of the file,
// never a value.
func syntaxError(data []byte, yamlErr error) error {
	// A file meant as JSON gets encoding/json's message, whose offset is
	// turned into a line. go-yaml's errors are plain text with the line
	// inside ("yaml: line 3: ..."), so for YAML the text is read.
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '{' {
		var v any
		var se *json.SyntaxError
		if err := json.Unmarshal(data, &v); errors.As(err, &se) {
			return fmt.Errorf("line %d: %s", lineAt(data, se.Offset), se.Error())
		}
	}
	msg := strings.TrimPrefix(yamlErr.Error(), "error converting YAML to JSON: ")
	if m := yamlMsgRE.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("line %s: %s", m[1], m[2])
	}
	// sigs.k8s.io/yaml's parser leaves the line out of a few messages;
	// go.yaml.in/yaml/v3 reports the same faults with their line.
	msg = strings.TrimPrefix(msg, "yaml: ")
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
			return fmt.Errorf("line %s: %s", m[1], msg)
		}
	}
	return fmt.Errorf("line %d: %s", unprintableLine(data), msg)
}

// typeError reports a value of the wrong type, by line and key, naming
// the JSON kind it has but never the value itself, which may be a secret.
func typeError(data []byte, isJSON bool, err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("decoding azure.json: %w", err)
	}
	got, _, _ := strings.Cut(te.Value, " ") // "number 5" -> "number"
	if te.Field == "" {
		return fmt.Errorf("line 1: the document is %s; want a JSON object (or YAML mapping) of azure.json keys", withArticle(got))
	}
	key, _, _ := strings.Cut(te.Field, ".")
	line := 0
	if isJSON {
		line = lineAt(data, te.Offset)
	} else {
		line = yamlKeyLine(data, key)
	}
	where := "key " + key // no line found: the key is the next best place
	if line > 0 {
		where = fmt.Sprintf("line %d", line)
	}
	// te.Type is the type of what failed, which for a map or list is an
	// element of the key's value.
	_, types := upstreamFields()
	if ft, ok := types[canonicalKey(key)]; ok && ft != te.Type && (ft.Kind() != reflect.Pointer || ft.Elem() != te.Type) {
		return fmt.Errorf("%s: %s holds %s where the upstream Azure CCM reads %s", where, te.Field, withArticle(got), wantKind(te.Type))
	}
	return fmt.Errorf("%s: %s is %s; the upstream Azure CCM reads %s there", where, te.Field, withArticle(got), wantKind(te.Type))
}

func withArticle(kind string) string {
	if strings.IndexAny(kind, "aeiou") == 0 {
		return "an " + kind
	}
	return "a " + kind
}

// wantKind names what a Go type decodes from.
func wantKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return wantKind(t.Elem())
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Map:
		return "an object"
	case reflect.Slice:
		return "a list"
	}
	return t.String()
}

// lineAt is the 1-based line of the byte before offset: encoding/json's
// offsets point just past what it failed on.
func lineAt(data []byte, offset int64) int {
	offset = min(max(offset-1, 0), int64(len(data)))
	return bytes.Count(data[:offset], []byte("\n")) + 1
}

// unprintableLine is the line of the first byte YAML refuses to read
// (invalid UTF-8, or a control character other than tab and line breaks):
// the YAML messages that carry no line are about those. Without one it is
// the last line, where the parser gave up.
func unprintableLine(data []byte) int {
	line := 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size <= 1, r < 0x20 && r != '\t' && r != '\n' && r != '\r', r == 0x7f:
			return line
		case r == '\n':
			line++
		}
		i += size
	}
	return bytes.Count(bytes.TrimRight(data, "\n"), []byte("\n")) + 1
}

// yamlKeyLine is the line of a top-level key's value in a YAML file, 0 if
// it cannot be found: after YAMLToJSON, encoding/json's offsets are
// offsets in the converted text.
func yamlKeyLine(data []byte, key string) int {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return 0
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return m.Line
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if strings.EqualFold(m.Content[i].Value, key) {
			return m.Content[i+1].Line
		}
	}
	return 0
}

// importer fills the section from a decoded file.
type importer struct {
	up    *upstreamConfig
	keys  map[string]string
	raw   map[string]json.RawMessage
	s     *Section
	notes []orderedNote
}

type orderedNote struct {
	order int
	importcfg.Note
}

// has reports whether the file sets key (its canonical spelling).
func (im *importer) has(key string) bool {
	_, ok := im.keys[key]
	return ok
}

// setNonZero reports whether the file sets key to something other than
// its zero value; a zero value asks upstream for its default.
func (im *importer) setNonZero(key string) bool {
	raw, ok := im.raw[key]
	if !ok {
		return false
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return true
	}
	switch buf.String() {
	case "null", `""`, "false", "{}", "[]", "0":
		return false
	}
	var f float64
	return json.Unmarshal(buf.Bytes(), &f) != nil || f != 0
}

// note reports key, as the file spells it if it sets it. Notes are
// ordered like upstreamConfig's fields, unknown keys last.
func (im *importer) note(key, upstream, instead string) {
	order := slices.Index(upstreamKeys(), key)
	if order < 0 {
		order = len(upstreamKeys())
	}
	if spelled, ok := im.keys[key]; ok {
		key = spelled
	}
	im.notes = append(im.notes, orderedNote{order: order, Note: importcfg.Note{Key: key, Upstream: upstream, Instead: instead}})
}

func (im *importer) sortedNotes() []importcfg.Note {
	slices.SortStableFunc(im.notes, func(a, b orderedNote) int { return a.order - b.order })
	out := make([]importcfg.Note, len(im.notes))
	for i, n := range im.notes {
		out[i] = n.Note
	}
	return out
}

// upstreamClouds are the cloud names upstream knows, upper-cased as it
// compares them (upstream: pkg/azclient/utils/cloud.go:25-39); any other
// name meant AzurePublicCloud there.
var upstreamClouds = map[string]string{
	"AZURECHINACLOUD":        CloudChina,
	"AZURECLOUD":             CloudPublic,
	"AZUREPUBLICCLOUD":       CloudPublic,
	"AZUREUSGOVERNMENT":      CloudUSGovernment,
	"AZUREUSGOVERNMENTCLOUD": CloudUSGovernment,
}

// cloud maps cloud and resourceManagerEndpoint. Upstream found a custom
// cloud's other endpoints itself (upstream: pkg/azclient/cloud.go:42-150):
// from the endpoint's metadata document, or for AzureStackCloud from the
// environment file AZURE_ENVIRONMENT_FILEPATH names. Here they are part of
// the config: the environment file's are carried over when the import is
// given it (envFlag, else the variable; importconfig_environment.go),
// and otherwise the Notes say where to copy them from.
func (im *importer) cloud(envFlag string) error {
	name := strings.ToUpper(strings.TrimSpace(im.up.Cloud))
	stack := name == strings.ToUpper(CloudStack)
	src, haveEnv := environmentFileSource(envFlag)
	switch {
	case haveEnv && stack:
		return im.stackEnvironment(src)
	case haveEnv && !src.fromVar:
		return fmt.Errorf("--environment-file: the upstream Azure CCM reads an environment file only for cloud AzureStackCloud (upstream: pkg/azclient/cloud.go:107-109), and this file's cloud is %q: set cloud to AzureStackCloud, or leave the flag out", im.up.Cloud)
	case haveEnv:
		im.note(environmentFileVar, "named an environment file, which the upstream CCM reads only for cloud AzureStackCloud",
			"ignored, as upstream did")
	}
	switch {
	case im.up.ResourceManagerEndpoint != "":
		im.s.ResourceManagerEndpoint = im.up.ResourceManagerEndpoint
		if stack {
			im.s.Cloud = CloudStack
		} else if name != "" {
			im.note("cloud", "picked, with resourceManagerEndpoint set, the entry of that endpoint's metadata document to use",
				"left empty: with the endpoints set it is a custom cloud")
		}
		im.note("resourceManagerEndpoint", "was the Resource Manager URL, whose metadata document (<resourceManagerEndpoint>/metadata/endpoints?api-version=2019-05-01) gave the Azure AD authority and token audience",
			"carried over; also set activeDirectoryAuthorityHost to that document's authentication.loginEndpoint and resourceManagerAudience to its authentication.audiences[0], and caFile if the endpoints' certificates come from a private CA")
	case stack:
		im.s.Cloud = CloudStack
		im.note("cloud", "took Azure Stack Hub's endpoints from the JSON file the environment variable AZURE_ENVIRONMENT_FILEPATH names",
			"carried over, without the endpoints: give that file with --environment-file (or set resourceManagerEndpoint, activeDirectoryAuthorityHost (that file's activeDirectoryEndpoint) and resourceManagerAudience (its tokenAudience) yourself), and set caFile if the certificates come from a private CA")
	case name == "":
	default:
		if c, ok := upstreamClouds[name]; ok {
			im.s.Cloud = c
			return nil
		}
		im.s.Cloud = CloudPublic
		im.note("cloud", "used AzurePublicCloud for a cloud name it did not know",
			"set to AzurePublicCloud, as upstream did; for Azure Stack Hub or another custom cloud give its endpoints instead")
	}
	return nil
}

// stackEnvironment carries an AzureStackCloud's endpoints over from its
// environment file, as upstream took them: over whatever the metadata
// document of azure.json's resourceManagerEndpoint gave (upstream:
// pkg/azclient/cloud.go:144-148), so the file's resourceManagerEndpoint
// wins where the two differ.
func (im *importer) stackEnvironment(src environmentSource) error {
	env, err := readEnvironmentFile(src)
	if err != nil {
		return err
	}
	s := im.s
	s.Cloud = CloudStack
	s.ResourceManagerEndpoint = env.ResourceManagerEndpoint
	s.ResourceManagerAudience = env.TokenAudience
	s.ActiveDirectoryAuthorityHost = env.ActiveDirectoryEndpoint
	if own := im.up.ResourceManagerEndpoint; own != "" && !strings.EqualFold(strings.TrimSuffix(own, "/"), strings.TrimSuffix(env.ResourceManagerEndpoint, "/")) {
		im.note("resourceManagerEndpoint", "was replaced by the environment file's resourceManagerEndpoint, which upstream read after this one's metadata document",
			"the environment file's is carried over; this one is not used")
	}
	im.note("cloud", "took Azure Stack Hub's endpoints from the JSON file the environment variable AZURE_ENVIRONMENT_FILEPATH names",
		fmt.Sprintf("carried over from the %s: resourceManagerEndpoint, resourceManagerAudience (its tokenAudience) and activeDirectoryAuthorityHost (its activeDirectoryEndpoint); set caFile if their certificates come from a private CA", src))
	return nil
}

// placement carries over where the cluster and its network resources are,
// all with upstream's meaning.
func (im *importer) placement() {
	up, s := im.up, im.s
	for _, f := range []struct {
		key      string
		from     string
		to       *string
		required string
	}{
		{"tenantId", up.TenantID, &s.TenantID, "has no default (with workload identity the webhook's AZURE_TENANT_ID filled it)"},
		{"subscriptionId", up.SubscriptionID, &s.SubscriptionID, "has no default"},
		{"resourceGroup", up.ResourceGroup, &s.ResourceGroup, "has no default"},
		{"location", up.Location, &s.Location, "has no default"},
		{"vnetName", up.VnetName, &s.VnetName, "needs it only for internal load balancers"},
		{"vnetResourceGroup", up.VnetResourceGroup, &s.VnetResourceGroup, ""},
		{"subnetName", up.SubnetName, &s.SubnetName, "needs it only for internal load balancers"},
		{"securityGroupName", up.SecurityGroupName, &s.SecurityGroupName, ""},
		{"securityGroupResourceGroup", up.SecurityGroupResourceGroup, &s.SecurityGroupResourceGroup, ""},
		{"routeTableName", up.RouteTableName, &s.RouteTableName, ""},
		{"routeTableResourceGroup", up.RouteTableResourceGroup, &s.RouteTableResourceGroup, ""},
		// Upstream names the load balancer after --cluster-name when this
		// is empty, ours after the clusterID: the command makes the
		// clusterID the cluster name, so both keep the same name.
		{"loadBalancerName", up.LoadBalancerName, &s.LoadBalancerName, ""},
		{"loadBalancerResourceGroup", up.LoadBalancerResourceGroup, &s.LoadBalancerResourceGroup, ""},
	} {
		*f.to = strings.TrimSpace(f.from)
		if *f.to == "" && f.required != "" {
			im.note(f.key, "not in the file; the upstream CCM "+f.required, "required: set azure."+f.key)
		}
	}
	// upstream: pkg/provider/azure_loadbalancer.go:4057-4066 makes and
	// finds public IPs in resourceGroup, whatever loadBalancerResourceGroup
	// says; so does this manager, so the key means the same.
	// Network resources in another subscription or tenant are one
	// subscription's here; the same IDs again mean nothing different.
	if id := up.NetworkResourceSubscriptionID; id != "" && !strings.EqualFold(id, up.SubscriptionID) {
		im.note("networkResourceSubscriptionID", "kept the network resources (virtual network, security group, route table, load balancer, public IPs) in another subscription",
			"not supported: every resource must be in subscriptionId")
	}
	if id := up.NetworkResourceTenantID; id != "" && !strings.EqualFold(id, up.TenantID) {
		im.note("networkResourceTenantID", "kept the network resources in a subscription of another tenant",
			"not supported: every resource must be in subscriptionId, reachable with the one credential")
	}
}

// Credential methods, in the order upstream tries them
// (upstream: pkg/azclient/auth.go:58-73).
const (
	credWorkloadIdentity = "useFederatedWorkloadIdentityExtension"
	credManagedIdentity  = "useManagedIdentityExtension"
	credSecret           = "aadClientSecret"
	credCertificate      = "aadClientCertPath"
	credMSIDataPlane     = "aadMSIDataPlaneIdentityPath"
)

// credentials keeps the one credential upstream used and drops the rest:
// upstream took the first method that was set, ours accepts exactly one.
// AKS writes aadClientId and aadClientSecret "msi" beside
// useManagedIdentityExtension, so dropping is the common case, and the
// Note says so without the value.
func (im *importer) credentials() {
	up, s := im.up, im.s
	var method string
	switch {
	case up.UseFederatedWorkloadIdentityExtension:
		method = credWorkloadIdentity
	case up.UseManagedIdentityExtension:
		method = credManagedIdentity
	case up.AADClientSecret != "":
		method = credSecret
	case up.AADClientCertPath != "":
		method = credCertificate
	case up.AADMSIDataPlaneIdentityPath != "":
		method = credMSIDataPlane
	}
	drop := func(key, why string) {
		if im.setNonZero(key) {
			im.note(key, why, "dropped: the cloud-config sets exactly one credential")
		}
	}
	superseded := "not used, since " + method + " comes first in upstream's order (workload identity, managed identity, client secret, client certificate)"

	switch method {
	case credWorkloadIdentity:
		s.UseFederatedWorkloadIdentityExtension = true
		s.AADFederatedTokenFile = up.AADFederatedTokenFile
	default:
		drop("aadFederatedTokenFile", "was read only with useFederatedWorkloadIdentityExtension")
	}
	switch method {
	case credManagedIdentity:
		s.UseManagedIdentityExtension = true
		s.UserAssignedIdentityID = up.UserAssignedIdentityID
		drop("aadClientId", "was not used with useManagedIdentityExtension, which names a user-assigned identity by userAssignedIdentityID (AKS writes a placeholder here)")
	case credWorkloadIdentity:
		drop(credManagedIdentity, superseded)
		drop("userAssignedIdentityID", "was read only with useManagedIdentityExtension")
	default:
		drop("userAssignedIdentityID", "was read only with useManagedIdentityExtension")
	}
	if method != credManagedIdentity {
		s.AADClientID = up.AADClientID
	}
	switch method {
	case credSecret:
		s.AADClientSecret = up.AADClientSecret
	case credManagedIdentity:
		drop(credSecret, "was not used with useManagedIdentityExtension (AKS writes a placeholder here)")
	default:
		drop(credSecret, superseded)
	}
	switch method {
	case credCertificate:
		s.AADClientCertPath = up.AADClientCertPath
		s.AADClientCertPassword = up.AADClientCertPassword
	default:
		drop(credCertificate, superseded)
		drop("aadClientCertPassword", "was read only with aadClientCertPath, when no other credential came first")
	}
	switch {
	case method == credMSIDataPlane:
		im.note(credMSIDataPlane, "authenticated with the user-assigned identity credentials in that file (msi-dataplane)",
			"not supported: use useManagedIdentityExtension with userAssignedIdentityID, or workload identity")
	case method == "":
		im.note(credWorkloadIdentity, "no credential in the file: the upstream CCM used workload identity when the webhook set AZURE_FEDERATED_TOKEN_FILE in its environment",
			"required: set useFederatedWorkloadIdentityExtension: true for workload identity, or aadClientId with aadClientSecret or aadClientCertPath, or useManagedIdentityExtension")
	default:
		drop(credMSIDataPlane, superseded)
	}
}

// vmType maps the node type. Upstream's default is vmss, ours standard,
// so an absent vmType becomes an explicit vmss.
func (im *importer) vmType() {
	switch v := strings.ToLower(strings.TrimSpace(im.up.VMType)); v {
	case "":
		// upstream: pkg/provider/azure.go:284-287, vmss when absent, as here.
		im.s.VMType = VMTypeVMSS
	case VMTypeVMSS, VMTypeStandard:
		im.s.VMType = v
	case "vmssflex":
		im.s.VMType = VMTypeStandard
		im.note("vmType", "served flexible scale set VMs", "set to standard, which serves flexible scale set VMs (plain VMs to ARM) along with every other VM")
	default:
		im.s.VMType = VMTypeStandard
		im.note("vmType", "served standalone and availability set VMs for any value other than vmss and vmssflex", "set to standard, which serves the same")
	}
}

// maxAttemptsLimit is the most maxAttempts the section accepts
// (clientopts.Options.Validate).
const maxAttemptsLimit = 20

// retries maps the backoff keys onto maxAttempts. Upstream passed the
// retries to azcore only with cloudProviderBackoff on
// (upstream: pkg/azclient/arm_conf.go:81-86); azcore counts retries after
// the first attempt, maxAttempts counts every attempt.
func (im *importer) retries() {
	up := im.up
	if up.CloudProviderBackoff {
		im.note("cloudProviderBackoff", "turned on the cloudProviderBackoff* retry settings (azcore retried 3 times either way)",
			"always on: 429 and 5xx answers are retried with exponential backoff, honouring Retry-After, for up to maxAttempts attempts in all")
	}
	switch r := up.CloudProviderBackoffRetries; {
	case r <= 0:
	case up.CloudProviderBackoff:
		im.s.MaxAttempts = min(r+1, maxAttemptsLimit)
		instead := "maxAttempts, which counts the first attempt too, is set to the retries plus one"
		if r+1 > maxAttemptsLimit {
			instead += fmt.Sprintf(", capped at %d", maxAttemptsLimit)
		}
		im.note("cloudProviderBackoffRetries", "retried a failed ARM call that many times after the first attempt", instead)
	default:
		im.note("cloudProviderBackoffRetries", "had no effect without cloudProviderBackoff: true (azcore's 3 retries applied)",
			"not carried over: maxAttempts keeps its default of 8 attempts")
	}
	if up.CloudProviderBackoffDuration > 0 {
		im.note("cloudProviderBackoffDuration", "set the seconds before the first retry (with cloudProviderBackoff)",
			"no setting: azcore waits 0.5 s before the first retry, doubling up to 30 s, unless ARM's Retry-After says otherwise")
	}
}

// Bounds of instanceCacheTTL (clientopts.Options.Validate).
const (
	minInstanceCacheTTL = time.Second
	maxInstanceCacheTTL = 10 * time.Minute
)

// instanceCacheTTL maps upstream's instance caches onto the one snapshot
// age here. Upstream cached VMs and each kind of scale set instance
// separately; ours lists them together, so the shortest TTL the file sets
// bounds them all.
func (im *importer) instanceCacheTTL() {
	up := im.up
	ttls := []struct {
		key  string
		secs int
	}{
		{"vmCacheTTLInSeconds", up.VMCacheTTLInSeconds},
		{"vmssVirtualMachinesCacheTTLInSeconds", up.VmssVirtualMachinesCacheTTLInSeconds},
		{"vmssFlexVMCacheTTLInSeconds", up.VmssFlexVMCacheTTLInSeconds},
	}
	shortest := 0
	for _, t := range ttls {
		if t.secs > 0 && (shortest == 0 || t.secs < shortest) {
			shortest = t.secs
		}
	}
	if shortest == 0 {
		return // upstream's defaults; ours stays at its own
	}
	ttl := min(max(time.Duration(shortest)*time.Second, minInstanceCacheTTL), maxInstanceCacheTTL)
	im.s.InstanceCacheTTL = ttl
	for _, t := range ttls {
		if t.secs > 0 && time.Duration(t.secs)*time.Second != ttl {
			im.note(t.key, "set how many seconds those instances were cached",
				"instanceCacheTTL bounds the age of every instance, VMs and scale set instances alike: it is set to the shortest of vmCacheTTLInSeconds, vmssVirtualMachinesCacheTTLInSeconds and vmssFlexVMCacheTTLInSeconds, at most 10m")
		}
	}
}

// loadBalancer reports the load balancer keys whose meaning depends on
// their value, including defaults that differ from ours.
func (im *importer) loadBalancer() {
	up := im.up
	switch v := strings.ToLower(strings.TrimSpace(up.LoadBalancerSKU)); v {
	case "", "standard":
		// Upstream's default is standard (pkg/provider/azure.go:600-602),
		// the only SKU here.
	case "service":
		im.note("loadBalancerSku", "used Azure Service Gateway load balancers (with serviceGatewayEnabled)",
			"always Standard: Services are frontends of the cluster's Standard load balancer")
	default:
		im.note("loadBalancerSku", "used Basic load balancers and public IPs",
			"always Standard: Services get Standard public IPs, and a Basic public IP named by azure-pip-name or spec.loadBalancerIP must be upgraded to Standard first")
	}
	// upstream: pkg/provider/azure.go:604-608; the same default (true)
	// here, so only false is carried.
	if up.ExcludeMasterFromStandardLB != nil && !*up.ExcludeMasterFromStandardLB {
		im.s.ExcludeMasterFromStandardLB = to.Ptr(false)
	}
	if up.DisableOutboundSNAT != nil && *up.DisableOutboundSNAT {
		im.note("disableOutboundSNAT", "turned off outbound SNAT on the load-balancing rules, so Nodes' outbound traffic did not leave through Service addresses",
			"not supported: the rules keep outbound SNAT through each Service's frontend; a NAT gateway on the nodes' subnet still takes precedence for outbound traffic")
	}
	// upstream: pkg/provider/azure_utils.go:65-183; the same keys and
	// meaning here.
	im.s.Tags, im.s.SystemTags = im.up.Tags, im.up.SystemTags
	if len(im.up.TagsMap) > 0 {
		im.s.TagsMap = im.up.TagsMap
	}
	// upstream: pkg/provider/azure.go:310-320, default nodeIPConfiguration;
	// here the default is nodeIP, so upstream's default is carried: the
	// pool the upstream CCM filled through the nodes' NICs keeps working
	// as it is from the first sync.
	switch v := strings.ToLower(strings.TrimSpace(up.LoadBalancerBackendPoolConfigurationType)); v {
	case "nodeip":
		im.s.LoadBalancerBackendPoolConfigurationType = PoolNodeIP
	case "", "nodeipconfiguration":
		im.s.LoadBalancerBackendPoolConfigurationType = PoolNodeIPConfiguration
	default:
		im.s.LoadBalancerBackendPoolConfigurationType = PoolNodeIPConfiguration
		im.note("loadBalancerBackendPoolConfigurationType", "put pod IPs in the backend pool (podIP)",
			"not supported: the nodes' network interfaces join the pool (nodeIPConfiguration) and traffic goes to the Nodes")
	}
	switch v := strings.ToLower(strings.TrimSpace(up.ClusterServiceLoadBalancerHealthProbeMode)); v {
	case "", "servicenodeport":
	default:
		im.note("clusterServiceLoadBalancerHealthProbeMode", "probed every Cluster Service through one HTTP probe of kube-proxy's /healthz",
			"no shared probe: each port of a Cluster Service is probed with TCP on its NodePort every 5 s")
	}
}

// unsupported reports the keys that have no equivalent whatever their
// value (unsupportedKeys).
func (im *importer) unsupported() {
	for _, k := range upstreamKeys() {
		if n, ok := unsupportedKeys[k]; ok && im.setNonZero(k) {
			im.note(k, n[0], n[1])
		}
	}
}
