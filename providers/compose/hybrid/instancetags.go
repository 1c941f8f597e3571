package hybrid

import "github.com/multicloud-ccm/multicloud-ccm/providers/instancetags"

var _ instancetags.Source = (*instances)(nil)

// InstanceTagger is the named member's instance tagger, for
// controllers/tagging, which serves one cloud only (AWS). Its calls
// bypass the member's call share: the controller runs its own bounded
// workers and batches.
func (i *instances) InstanceTagger(cloud string) (instancetags.Tagger, bool) {
	m, ok := i.h.byName[cloud]
	if !ok {
		return nil, false
	}
	t, ok := m.instances.(instancetags.Tagger)
	return t, ok
}
