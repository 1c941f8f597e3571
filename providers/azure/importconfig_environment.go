package azure

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// The environment file of an Azure Stack Hub (or other custom) cloud. The
// upstream Azure CCM, for cloud AzureStackCloud only, reads the JSON file
// the environment variable AZURE_ENVIRONMENT_FILEPATH names into its
// Environment (upstream: kubernetes-sigs/cloud-provider-azure at 7b31c76,
// pkg/azclient/cloud.go:32-36 the variable, :106-131 the read,
// :152-185 the format, the same JSON keys as go-autorest's
// azure.Environment that `az cloud register` and AKS Engine write) and
// takes from it:
//   - resourceManagerEndpoint and tokenAudience, together or not at all
//     (:121-126), over what the metadata document of azure.json's own
//     resourceManagerEndpoint gave (:144-148, that read comes first);
//   - activeDirectoryEndpoint as the Azure AD authority (:127-129).
//
// Nothing else in it reaches what this manager does: upstream reads its
// storageEndpointSuffix only for storage accounts
// (pkg/provider/storage/azure_storageaccount.go:397-398), which are no
// part of a CCM here. An unset variable left AzureStackCloud on the
// public cloud's endpoints (:110-113, pkg/azclient/utils/cloud.go:33-39);
// here the cloud-config then needs the endpoints written in.

// environmentFileVar is the environment variable naming the environment
// file, upstream's (pkg/azclient/cloud.go:35). MUST NOT change.
const environmentFileVar = "AZURE_ENVIRONMENT_FILEPATH"

// environmentFile is what is read of an environment file. encoding/json
// matches keys case-insensitively and skips unknown ones, as upstream's
// json.Unmarshal does.
type environmentFile struct {
	Name                    string `json:"name"`
	ResourceManagerEndpoint string `json:"resourceManagerEndpoint"`
	ActiveDirectoryEndpoint string `json:"activeDirectoryEndpoint"`
	TokenAudience           string `json:"tokenAudience"`
}

// environmentSource is where the environment file came from, for messages:
// the flag or the variable, with the path.
type environmentSource struct {
	path    string
	fromVar bool
}

func (e environmentSource) String() string {
	if e.fromVar {
		return fmt.Sprintf("environment file %s (from %s)", e.path, environmentFileVar)
	}
	return fmt.Sprintf("environment file %s (--environment-file)", e.path)
}

// environmentFileSource is the file the import reads: the flag's, else
// the one AZURE_ENVIRONMENT_FILEPATH names, as upstream found it; false
// when neither names one.
func environmentFileSource(flag string) (environmentSource, bool) {
	if flag != "" {
		return environmentSource{path: flag}, true
	}
	if p := os.Getenv(environmentFileVar); p != "" {
		return environmentSource{path: p, fromVar: true}, true
	}
	return environmentSource{}, false
}

// readEnvironmentFile reads and checks an environment file. Every error
// names the file, and the key or line at fault.
func readEnvironmentFile(src environmentSource) (*environmentFile, error) {
	data, err := os.ReadFile(src.path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	env, err := decodeEnvironmentFile(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	return env, nil
}

// environmentExample is what an environment file holds, for messages.
const environmentExample = `want a JSON object such as {"name": "AzureStackCloud", "resourceManagerEndpoint": "https://management.local.azurestack.external/", "activeDirectoryEndpoint": "https://login.microsoftonline.com/", "tokenAudience": "https://management.<tenant>.onmicrosoft.com/<id>"}`

func decodeEnvironmentFile(data []byte) (*environmentFile, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("the file is empty; " + environmentExample)
	}
	var env environmentFile
	if err := json.Unmarshal(data, &env); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, fmt.Errorf("line %d: %s (the upstream CCM reads this file as JSON)", lineAt(data, se.Offset), se.Error())
		case errors.As(err, &te) && te.Field == "":
			got, _, _ := strings.Cut(te.Value, " ")
			return nil, fmt.Errorf("line 1: the document is %s; %s", withArticle(got), environmentExample)
		case errors.As(err, &te):
			got, _, _ := strings.Cut(te.Value, " ")
			return nil, fmt.Errorf("line %d: %s is %s; the upstream CCM reads a string there", lineAt(data, te.Offset), te.Field, withArticle(got))
		}
		return nil, err
	}
	// Upstream took resourceManagerEndpoint and tokenAudience only as a
	// pair and kept the public cloud's Azure AD without
	// activeDirectoryEndpoint: a file short of one was no Azure Stack Hub
	// to it, so none is carried over half.
	for _, f := range []struct{ key, value, what string }{
		{"resourceManagerEndpoint", env.ResourceManagerEndpoint, "the Resource Manager URL, e.g. https://management.local.azurestack.external/"},
		{"tokenAudience", env.TokenAudience, "the Resource Manager token audience (upstream used resourceManagerEndpoint only together with it)"},
		{"activeDirectoryEndpoint", env.ActiveDirectoryEndpoint, "the Azure AD authority, e.g. https://login.microsoftonline.com/ or, with AD FS, https://adfs.local.azurestack.external/adfs"},
	} {
		if strings.TrimSpace(f.value) == "" {
			return nil, fmt.Errorf("%s is missing: add %s", f.key, f.what)
		}
	}
	return &env, nil
}
