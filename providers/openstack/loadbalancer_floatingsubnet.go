package openstack

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
)

// subnetMatcher picks the floating network's subnets a floating IP may
// come from, by name (floating-subnet) and tags (floating-subnet-tags),
// as upstream's floatingSubnetSpec (loadbalancer_subnet_match.go:30-231).
type subnetMatcher struct {
	// pattern and tags are the annotations' values, for messages.
	pattern, tags string
	// name matches the whole subnet name; nil matches any.
	name    *regexp.Regexp
	negName bool
	// tagList with the ! (negTags) and & (allTags) prefixes.
	tagList          []string
	negTags, allTags bool
}

// parseFloatingSubnet reads floating-subnet and floating-subnet-tags.
// As upstream (loadbalancer.go:1496-1511) the floating-subnet-id
// annotation takes precedence, and either of them overrides
// loadBalancer.floatingSubnetID. Malformed values are refused even when
// floating-subnet-id wins.
func (o *lbOptions) parseFloatingSubnet(svc *v1.Service) error {
	m := &subnetMatcher{}
	pat, havePat := annotationFloatingSubnet.Lookup(svc)
	tags, haveTags := annotationFloatingSubnetTags.Lookup(svc)
	pat, tags = strings.TrimSpace(pat), strings.TrimSpace(tags)
	if havePat {
		// Upstream reads an empty value as unset (Configured is false).
		if pat != "" {
			m.pattern = pat
			p := pat
			if m.negName = strings.HasPrefix(p, "!"); m.negName {
				p = p[1:]
			}
			var expr string
			if strings.HasPrefix(p, "~") {
				expr = p[1:]
			} else {
				expr = globToRegexp(p)
			}
			if expr == "" {
				return annotationFloatingSubnet.Invalid(pat, `a subnet name, a glob such as "public-*", or a regular expression after "~", optionally negated by a leading "!"`)
			}
			re, err := regexp.Compile(`^(?:` + expr + `)$`)
			if err != nil {
				return annotationFloatingSubnet.Invalid(pat, fmt.Sprintf(`a valid regular expression after "~" (%v)`, err))
			}
			m.name = re
		}
	}
	if haveTags && tags != "" {
		m.tags = tags
		t := tags
		if m.negTags = strings.HasPrefix(t, "!"); m.negTags {
			t = t[1:]
		}
		if m.allTags = strings.HasPrefix(t, "&"); m.allTags {
			t = t[1:]
		}
		for _, tag := range strings.Split(t, ",") {
			tag = strings.TrimSpace(tag)
			// Neutron's tags are 1 to 255 characters, and a comma
			// would split them in the list query.
			if tag == "" || len(tag) > 255 {
				return annotationFloatingSubnetTags.Invalid(tags, `comma-separated Neutron tags of 1 to 255 characters such as "public,ipv4", optionally prefixed by "&" (all of them) and "!" (negated)`)
			}
			m.tagList = append(m.tagList, tag)
		}
	}
	if m.name == nil && m.tagList == nil {
		return nil
	}
	if _, ok := annotationFloatingSubnetID.Lookup(svc); ok {
		// floating-subnet-id takes precedence (upstream :1498-1499).
		return nil
	}
	o.floatingSubnet = m
	o.floatingSubnetID = ""
	return nil
}

// globToRegexp turns a glob (* any run of characters, ? one) into a
// regular expression; everything else is literal.
func globToRegexp(g string) string {
	var b strings.Builder
	for _, r := range g {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	return b.String()
}

// String describes the matcher for messages.
func (m *subnetMatcher) String() string {
	var parts []string
	if m.pattern != "" {
		parts = append(parts, fmt.Sprintf("%s=%q", annotationFloatingSubnet, m.pattern))
	}
	if m.tags != "" {
		parts = append(parts, fmt.Sprintf("%s=%q", annotationFloatingSubnetTags, m.tags))
	}
	return strings.Join(parts, " and ")
}

// listOpts asks Neutron for the network's subnets with the tags, as
// upstream's tweakListOpts (loadbalancer_subnet_match.go:155-173).
func (m *subnetMatcher) listOpts(networkID string) subnets.ListOpts {
	opts := subnets.ListOpts{NetworkID: networkID}
	tags := strings.Join(m.tagList, ",")
	switch {
	case tags == "":
	case m.allTags && m.negTags:
		opts.NotTagsAny = tags
	case m.allTags:
		opts.Tags = tags
	case m.negTags:
		opts.NotTags = tags
	default:
		opts.TagsAny = tags
	}
	return opts
}

func (m *subnetMatcher) matchName(name string) bool {
	if m.name == nil {
		return true
	}
	return m.name.MatchString(name) != m.negName
}

// allocateInMatchingSubnet allocates a floating IP for the VIP port from
// the first matching subnet with a free address, as upstream
// (loadbalancer.go:719-747).
func (l *loadBalancers) allocateInMatchingSubnet(ctx context.Context, opts *lbOptions, create floatingips.CreateOpts) (*floatingips.FloatingIP, error) {
	m := opts.floatingSubnet
	pages, err := subnets.List(l.api.network, m.listOpts(opts.floatingNetworkID)).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("list subnets of floating network %s: %w", opts.floatingNetworkID, err)
	}
	all, err := subnets.ExtractSubnets(pages)
	if err != nil {
		return nil, fmt.Errorf("list subnets of floating network %s: %w", opts.floatingNetworkID, err)
	}
	var errs []error
	tried := 0
	for _, s := range all {
		if !m.matchName(s.Name) {
			continue
		}
		tried++
		create.SubnetID = s.ID
		f, err := floatingips.Create(ctx, l.api.network, create).Extract()
		if err == nil {
			klog.FromContext(ctx).Info("Allocated floating IP", "floatingIP", f.FloatingIP, "id", f.ID, "subnet", s.Name, "subnetID", s.ID)
			return f, nil
		}
		errs = append(errs, fmt.Errorf("subnet %s (%s): %w", s.Name, s.ID, err))
	}
	if tried == 0 {
		return nil, fmt.Errorf("no subnet of floating network %s matches %s", opts.floatingNetworkID, m)
	}
	return nil, fmt.Errorf("allocate a floating IP in a subnet of network %s matching %s: %w", opts.floatingNetworkID, m, errors.Join(errs...))
}

// parseNodeSelector reads node-selector as upstream's StringToMap
// (pkg/util/util.go:72-96): "k=v" pairs and bare keys separated by
// commas, spaces trimmed. Keys and values must be valid label keys and
// values, which upstream does not check (a bad one matches no Node).
func parseNodeSelector(svc *v1.Service) (map[string]string, error) {
	v, ok := annotationNodeSelector.Lookup(svc)
	if !ok || strings.TrimSpace(v) == "" {
		return nil, nil
	}
	want := `comma-separated node labels key=value, or key for any value, such as "env=prod, node-role.example.com/lb"`
	sel := map[string]string{}
	for _, kv := range strings.Split(v, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, val, _ := strings.Cut(kv, "=")
		k, val = strings.TrimSpace(k), strings.TrimSpace(val)
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			return nil, annotationNodeSelector.Invalid(v, fmt.Sprintf("%s (label key %q: %s)", want, k, strings.Join(msgs, "; ")))
		}
		if msgs := validation.IsValidLabelValue(val); len(msgs) > 0 {
			return nil, annotationNodeSelector.Invalid(v, fmt.Sprintf("%s (label value %q: %s)", want, val, strings.Join(msgs, "; ")))
		}
		sel[k] = val
	}
	return sel, nil
}

// selectNodes keeps the Nodes with all the selector's labels (any value
// for ""), as upstream's filterNodes (loadbalancer.go:2271-2300).
func selectNodes(nodes []*v1.Node, sel map[string]string) []*v1.Node {
	if len(sel) == 0 {
		return nodes
	}
	out := make([]*v1.Node, 0, len(nodes))
	for _, n := range nodes {
		ok := n != nil
		for k, want := range sel {
			if !ok {
				break
			}
			got, has := n.Labels[k]
			ok = has && (want == "" || got == want)
		}
		if ok {
			out = append(out, n)
		}
	}
	return out
}
