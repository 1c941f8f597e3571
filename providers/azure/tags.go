package azure

import (
	"maps"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The config's tags, as upstream's (cloud-provider-azure
// pkg/provider/azure_utils.go:65-111 parseTags, :141-183 reconcileTags):
// tags ("k1=v1,k2=v2") and tagsMap (which wins over a key tags has in
// another case) go on the load balancers, the public IPs the manager makes
// and the security group and route table it writes; an existing tag's
// value is changed only when it differs other than in case. Without
// systemTags no tag is ever removed; with it, a tag neither configured nor
// starting with one of its keys is removed when the resource is written
// (the manager's own keys are always kept here).

// configTags are tags and tagsMap merged; errs are malformed pairs.
func (s *Section) configTags(path *field.Path) (map[string]string, field.ErrorList) {
	out := map[string]string{}
	var errs field.ErrorList
	if strings.TrimSpace(s.Tags) != "" {
		for _, kv := range strings.Split(s.Tags, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || strings.Contains(v, "=") || strings.TrimSpace(k) == "" {
				errs = append(errs, field.Invalid(path.Child("tags"), kv, `want comma-separated key=value pairs such as "team=web,env=prod"`))
				continue
			}
			out[strings.TrimSpace(k)] = tagValue(v)
		}
	}
	for k, v := range s.TagsMap {
		key := strings.TrimSpace(k)
		if key == "" {
			errs = append(errs, field.Invalid(path.Child("tagsMap"), k, "a tag key may not be empty"))
			continue
		}
		for have := range out {
			if strings.EqualFold(have, key) && have != key {
				delete(out, have)
			}
		}
		out[key] = tagValue(v)
	}
	for k := range out {
		switch {
		case strings.EqualFold(k, tagCluster) || strings.EqualFold(k, tagService) || strings.EqualFold(k, tagLegacyCluster) || strings.EqualFold(k, tagLegacyService):
			errs = append(errs, field.Invalid(path.Child("tags"), k, "is the manager's own tag key"))
		case len(k) > 512 || strings.ContainsAny(k, `<>%&\?/`):
			errs = append(errs, field.Invalid(path.Child("tags"), k, `an Azure tag key has at most 512 characters and none of <>%&\?/`))
		case len(out[k]) > 256:
			errs = append(errs, field.Invalid(path.Child("tags"), out[k], "an Azure tag value has at most 256 characters"))
		}
	}
	return out, errs
}

// tagValue trims a value unless that would make it "null", which ARM
// reserves (upstream keeps the spaces then).
func tagValue(v string) string {
	if t := strings.TrimSpace(v); !strings.EqualFold(t, "null") {
		return t
	}
	return v
}

// systemTagKeys are systemTags' keys (prefixes).
func (s *Section) systemTagKeys() []string {
	var out []string
	for _, k := range strings.Split(s.SystemTags, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}

// tagger applies the config's tags.
type tagger struct {
	tags   map[string]string
	system []string
}

func newTagger(s *Section) tagger {
	tags, _ := s.configTags(field.NewPath("azure")) // validated at start
	return tagger{tags: tags, system: s.systemTagKeys()}
}

// reconcile makes cur carry the config's tags and extra (the resource's
// own), as upstream's reconcileTags. It edits cur in place and says
// whether anything changed.
func (t tagger) reconcile(cur *map[string]*string, extra map[string]string) bool {
	if len(t.tags) == 0 && len(extra) == 0 && len(t.system) == 0 {
		return false
	}
	if *cur == nil {
		*cur = map[string]*string{}
	}
	want := maps.Clone(t.tags)
	if want == nil {
		want = map[string]string{}
	}
	maps.Copy(want, extra)
	changed := false
	for k, v := range want {
		key := k
		for have := range *cur {
			if strings.EqualFold(have, k) {
				key = have
				break
			}
		}
		if old, ok := (*cur)[key]; !ok || !strings.EqualFold(deref(old), v) {
			(*cur)[key] = to.Ptr(v)
			changed = true
		}
	}
	if len(t.system) > 0 {
		for k := range *cur {
			if _, ok := want[k]; ok || ownTag(k) {
				continue
			}
			keep := false
			for _, p := range t.system {
				if strings.HasPrefix(strings.ToLower(k), strings.ToLower(p)) {
					keep = true
				}
			}
			if !keep {
				delete(*cur, k)
				changed = true
			}
		}
	}
	return changed
}

// ownTag says a key is one the manager (or upstream) sets for itself.
func ownTag(k string) bool {
	for _, o := range []string{tagCluster, tagService, tagLegacyCluster, tagLegacyService, "k8s-azure-dns-label-service"} {
		if strings.EqualFold(k, o) {
			return true
		}
	}
	return false
}

func validateTags(s *Section, path *field.Path) field.ErrorList {
	_, errs := s.configTags(path)
	return errs
}

// fresh are a new resource's tags: the config's and its own.
func (t tagger) fresh(own map[string]string) map[string]*string {
	var out map[string]*string
	t.reconcile(&out, own)
	return out
}
