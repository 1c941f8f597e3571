package aws

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/multicloud-ccm/multicloud-ccm/config"
	"github.com/multicloud-ccm/multicloud-ccm/providers"
	"github.com/multicloud-ccm/multicloud-ccm/providers/internal/importcfg"
)

func importFile(t *testing.T, name string) (*importcfg.Result, error) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "import", name))
	if err != nil {
		t.Fatal(err)
	}
	return ImportConfig(data, importcfg.Options{ClusterName: importcfg.DefaultClusterName})
}

func importString(t *testing.T, conf string) *importcfg.Result {
	t.Helper()
	res, err := ImportConfig([]byte(conf), importcfg.Options{ClusterName: importcfg.DefaultClusterName})
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	return res
}

func noteKeys(res *importcfg.Result) []string {
	keys := make([]string, 0, len(res.Notes))
	for _, n := range res.Notes {
		keys = append(keys, n.Key)
	}
	slices.Sort(keys)
	return keys
}

// validateImported renders the result as the import-config command does
// and checks that the cloud-config it prints is valid.
func validateImported(t *testing.T, res *importcfg.Result) {
	t.Helper()
	reg := providers.NewRegistry()
	reg.MustRegister(Backend())
	clusterID := res.ClusterID
	if clusterID == "" {
		clusterID = importcfg.DefaultClusterName
	}
	out, err := config.Render(ProviderName, clusterID, res.Section)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	if _, err := config.Parse(out, reg); err != nil {
		t.Errorf("rendered cloud-config is not valid: %v\n%s", err, out)
	}
}

// TestImportConfigFull reads a file that sets every key of the upstream
// cloud.conf and checks where each one lands: a field of ours, or a Note.
func TestImportConfigFull(t *testing.T) {
	res, err := importFile(t, "full.conf")
	if err != nil {
		t.Fatal(err)
	}
	sec := res.Section.(*Section)
	notes := map[string]importcfg.Note{}
	for _, n := range res.Notes {
		notes[n.Key] = n
	}

	// Every field of upstreamConfig, by "Section.Key": mapped says where
	// it lands (got must equal want), note names the Note that reports it.
	type landing struct {
		mapped    string
		got, want any
		note      string
	}
	keys := map[string]landing{
		"Global.Zone":                        {note: "[Global] Zone"},
		"Global.Region":                      {mapped: "region", got: sec.Region, want: "ap-southeast-2"},
		"Global.VPC":                         {mapped: "vpcID", got: sec.VPCID, want: "vpc-0f00d1234abcd5678"},
		"Global.SubnetID":                    {note: "[Global] SubnetID"},
		"Global.RouteTableID":                {mapped: "routeTables.ids", got: sec.RouteTables.IDs, want: []string{"rtb-0ccc3333dddd44445"}},
		"Global.RoleARN":                     {mapped: "assumeRole.roleARN", got: sec.AssumeRole.RoleARN, want: "arn:aws:iam::123456789012:role/ccm-import-test"},
		"Global.SourceARN":                   {note: "[Global] SourceARN"},
		"Global.KubernetesClusterTag":        {note: "[Global] KubernetesClusterTag"},
		"Global.KubernetesClusterID":         {mapped: "clusterID", got: res.ClusterID, want: "prod-legacy-7"},
		"Global.DisableSecurityGroupIngress": {note: "[Global] DisableSecurityGroupIngress"},
		"Global.ElbSecurityGroup":            {note: "[Global] ElbSecurityGroup"},
		"Global.NodeIPFamilies":              {mapped: "nodeIPFamilies", got: sec.NodeIPFamilies, want: []string{"ipv4", "ipv6"}},
		"Global.ClusterServiceLoadBalancerHealthProbeMode":       {note: "[Global] ClusterServiceLoadBalancerHealthProbeMode"},
		"Global.ClusterServiceSharedLoadBalancerHealthProbePort": {note: "[Global] ClusterServiceSharedLoadBalancerHealthProbePort"},
		"Global.ClusterServiceSharedLoadBalancerHealthProbePath": {note: "[Global] ClusterServiceSharedLoadBalancerHealthProbePath"},
		"Global.SupportedTopologyInstanceTypePattern":            {note: "[Global] SupportedTopologyInstanceTypePattern"},
		"Global.NLBSecurityGroupMode":                            {note: "[Global] NLBSecurityGroupMode"},
		// Service and URL choose and fill the endpoint; override "5" is
		// for another region, so Region kept it out of endpoints.ec2.
		"ServiceOverride.Service": {mapped: "endpoints.*", got: sec.Endpoints, want: Endpoints{
			EC2:   "https://ec2.vpce-import.example.com",
			ELBv2: "https://elb.vpce-import.example.com",
			STS:   "https://sts.vpce-import.example.com",
		}},
		"ServiceOverride.URL":           {mapped: "endpoints.ec2", got: sec.Endpoints.EC2, want: "https://ec2.vpce-import.example.com"},
		"ServiceOverride.Region":        {note: `[ServiceOverride "5"]`},
		"ServiceOverride.SigningRegion": {note: `[ServiceOverride "2"] SigningRegion`},
		"ServiceOverride.SigningMethod": {note: `[ServiceOverride "1"] SigningMethod`},
		"ServiceOverride.SigningName":   {note: `[ServiceOverride "2"] SigningName`},
	}

	// The table must cover the whole mirrored upstream struct.
	for _, sect := range []struct {
		name string
		typ  reflect.Type
	}{{"Global", reflect.TypeFor[upstreamGlobal]()}, {"ServiceOverride", reflect.TypeFor[upstreamServiceOverride]()}} {
		for i := range sect.typ.NumField() {
			if _, ok := keys[sect.name+"."+sect.typ.Field(i).Name]; !ok {
				t.Errorf("upstream key %s.%s is neither checked as mapped nor as reported", sect.name, sect.typ.Field(i).Name)
			}
		}
	}
	for key, l := range keys {
		switch {
		case l.note != "":
			if n, ok := notes[l.note]; !ok || n.Upstream == "" || n.Instead == "" {
				t.Errorf("%s: want a complete Note %q, notes are %q", key, l.note, noteKeys(res))
			}
		case !reflect.DeepEqual(l.got, l.want):
			t.Errorf("%s lands in %s as %#v, want %#v", key, l.mapped, l.got, l.want)
		}
	}

	wantNotes := []string{
		"(default load balancer type)",
		"[Global] ClusterServiceLoadBalancerHealthProbeMode",
		"[Global] ClusterServiceSharedLoadBalancerHealthProbePath",
		"[Global] ClusterServiceSharedLoadBalancerHealthProbePort",
		"[Global] DisableSecurityGroupIngress",
		"[Global] ElbSecurityGroup",
		"[Global] KubernetesClusterTag",
		"[Global] NLBSecurityGroupMode",
		"[Global] SourceARN",
		"[Global] SubnetID",
		"[Global] SupportedTopologyInstanceTypePattern",
		"[Global] Zone",
		`[ServiceOverride "1"] SigningMethod`,
		`[ServiceOverride "2"] SigningName`,
		`[ServiceOverride "2"] SigningRegion`,
		`[ServiceOverride "3"]`,
		`[ServiceOverride "4"]`,
		`[ServiceOverride "5"]`,
	}
	if got := noteKeys(res); !slices.Equal(got, wantNotes) {
		t.Errorf("notes:\n got %q\nwant %q", got, wantNotes)
	}
	validateImported(t, res)
}

// TestImportConfigNotesHoldNoValues checks that no Note repeats a value
// of the file: values may be secrets in other clouds' files, and a Note
// names keys only.
func TestImportConfigNotesHoldNoValues(t *testing.T) {
	values := []string{
		"ap-southeast-2", "vpc-0f00d1234abcd5678", "subnet-0aaa1111bbbb22223", "rtb-0ccc3333dddd44445",
		"123456789012", "ccm-import-test", "import-source", "prod-legacy-7", "sg-0eee5555ffff66667",
		"10299", "healthz-import", "p5e-import", "vpce-import", "elb-import-signer", "eu-central-1",
		"other-region-import", "us-east-1",
	}
	for _, name := range []string{"full.conf", "typical.conf", "unknown.conf"} {
		res, err := importFile(t, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, n := range res.Notes {
			for _, v := range values {
				if strings.Contains(n.String(), v) {
					t.Errorf("%s: note %q holds the value %q", name, n, v)
				}
			}
		}
	}
}

func TestImportConfigSamples(t *testing.T) {
	for _, tc := range []struct {
		file      string
		clusterID string
		section   Section
		notes     []string
	}{
		{
			file:      "typical.conf",
			clusterID: "shop-prod",
			section: Section{Region: "us-east-2", LoadBalancer: LoadBalancerConfig{DefaultType: defaultTypeClassic, UpstreamShape: true},
				// No RouteTableID: the cluster-tagged table, as upstream.
				RouteTables: RouteTableSelection{Discover: true}},
			// DisableSecurityGroupIngress = false and NodeIPFamilies = ipv4
			// are what this backend does: no Note.
			notes: []string{"(default load balancer type)", "[Global] Zone"},
		},
		{
			file:      "unknown.conf",
			clusterID: "shop-prod",
			section: Section{Region: "eu-west-1", Endpoints: Endpoints{EC2: "https://ec2.example.com"}, LoadBalancer: LoadBalancerConfig{DefaultType: defaultTypeClassic, UpstreamShape: true},
				RouteTables: RouteTableSelection{Discover: true}},
			notes: []string{
				"(default load balancer type)", "[Global] Regoin", "[Global] VPCID",
				"[LoadBalancer]", `[ServiceOverride "1"] Endpoint`,
			},
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			res, err := importFile(t, tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if got := *res.Section.(*Section); !reflect.DeepEqual(got, tc.section) {
				t.Errorf("section %+v, want %+v", got, tc.section)
			}
			if res.ClusterID != tc.clusterID {
				t.Errorf("clusterID %q, want %q", res.ClusterID, tc.clusterID)
			}
			if got := noteKeys(res); !slices.Equal(got, tc.notes) {
				t.Errorf("notes:\n got %q\nwant %q", got, tc.notes)
			}
			for _, n := range res.Notes {
				if strings.HasPrefix(n.Key, "[Global] Regoin") && !strings.Contains(n.Upstream, "not a key of the upstream AWS CCM's cloud.conf") {
					t.Errorf("unknown key note %q does not say it is no upstream key", n)
				}
			}
			validateImported(t, res)
		})
	}
}

// TestImportConfigErrorsNameTheLine covers gcfg's syntax errors (which
// carry a position) and its value errors (which do not).
func TestImportConfigErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"syntax.conf", []string{"line 4, column 5:", "expected '='"}},
		{"badvalue.conf", []string{"line 5:", "DisableSecurityGroupIngress"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			res, err := importFile(t, tc.file)
			if err == nil {
				t.Fatalf("no error; notes %q", noteKeys(res))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestImportConfigRules covers the upstream rules the importer follows
// for region, cluster ID, VPC and endpoint overrides.
func TestImportConfigRules(t *testing.T) {
	for _, tc := range []struct {
		name      string
		conf      string
		region    string
		clusterID string
		vpcID     string
		endpoints Endpoints
		// notes must all be there; absent must not.
		notes, absent []string
	}{
		{
			name:   "no region anywhere: set it",
			conf:   "[Global]\nKubernetesClusterID = c1\n",
			region: "", clusterID: "c1",
			notes: []string{"[Global] Region"},
		},
		{
			name:   "zone wins over region, as upstream",
			conf:   "[Global]\nZone = eu-west-3c\nRegion = eu-west-1\nKubernetesClusterID = c1\n",
			region: "eu-west-3", clusterID: "c1",
			notes: []string{"[Global] Zone", "[Global] Region"},
		},
		{
			name:   "local zone",
			conf:   "[Global]\nZone = us-west-2-lax-1a\nKubernetesClusterID = c1\n",
			region: "us-west-2", clusterID: "c1",
			notes: []string{"[Global] Zone"}, absent: []string{"[Global] Region"},
		},
		{
			name:   "a zone with no region in it leaves Region",
			conf:   "[Global]\nZone = nowhere\nRegion = eu-west-1\nKubernetesClusterID = c1\n",
			region: "eu-west-1", clusterID: "c1",
			notes: []string{"[Global] Zone"}, absent: []string{"[Global] Region"},
		},
		{
			name:   "legacy cluster tag only",
			conf:   "[Global]\nRegion = eu-west-1\nKubernetesClusterTag = old-1\n",
			region: "eu-west-1", clusterID: "old-1",
			notes: []string{"[Global] KubernetesClusterTag"},
		},
		{
			name:   "cluster tag and ID differ: the ID wins, and the Note says upstream refused this",
			conf:   "[Global]\nRegion = eu-west-1\nKubernetesClusterTag = old-1\nKubernetesClusterID = new-1\n",
			region: "eu-west-1", clusterID: "new-1",
			notes: []string{"[Global] KubernetesClusterTag"},
		},
		{
			name:   "no cluster ID: it came from the instance's tag",
			conf:   "[Global]\nRegion = eu-west-1\n",
			region: "eu-west-1",
			notes:  []string{"[Global] KubernetesClusterID"},
		},
		{
			name:   "VPC alone was not used upstream",
			conf:   "[Global]\nRegion = eu-west-1\nKubernetesClusterID = c1\nVPC = vpc-0abc1234\n",
			region: "eu-west-1", clusterID: "c1", vpcID: "vpc-0abc1234",
			notes: []string{"[Global] VPC"},
		},
		{
			name:   "VPC with SubnetID and a cluster ID was used upstream",
			conf:   "[Global]\nRegion = eu-west-1\nKubernetesClusterID = c1\nVPC = vpc-0abc1234\nSubnetID = subnet-0abc1234\n",
			region: "eu-west-1", clusterID: "c1", vpcID: "vpc-0abc1234",
			notes: []string{"[Global] SubnetID"}, absent: []string{"[Global] VPC"},
		},
		{
			name:   "upstream defaults are ours: no Note",
			conf:   "[Global]\nRegion = eu-west-1\nKubernetesClusterID = c1\nRouteTableID = rtb-0abc1234\nDisableSecurityGroupIngress = false\nNodeIPFamilies = ipv4\nClusterServiceLoadBalancerHealthProbeMode = ServiceNodePort\n",
			region: "eu-west-1", clusterID: "c1",
			absent: []string{"[Global] DisableSecurityGroupIngress", "[Global] NodeIPFamilies", "[Global] ClusterServiceLoadBalancerHealthProbeMode", "[Global] RouteTableID"},
		},
		{
			name: "the SDK's service ID wins over a legacy spelling of the same service",
			conf: "[Global]\nRegion = eu-west-1\nKubernetesClusterID = c1\n" +
				"[ServiceOverride \"a\"]\nService = ec2\nRegion = eu-west-1\nURL = https://legacy.example.com\nSigningRegion = eu-west-1\n" +
				"[ServiceOverride \"b\"]\nService = EC2\nRegion = eu-west-1\nURL = https://current.example.com\nSigningRegion = eu-west-1\n" +
				"[ServiceOverride \"c\"]\nService = elasticloadbalancing\nRegion = eu-west-1\nURL = https://elb.example.com\nSigningRegion = eu-west-1\n",
			region: "eu-west-1", clusterID: "c1",
			endpoints: Endpoints{EC2: "https://current.example.com", ELBv2: "https://elb.example.com"},
			notes:     []string{`[ServiceOverride "a"]`, `[ServiceOverride "c"] Service`},
			absent:    []string{`[ServiceOverride "b"]`, `[ServiceOverride "b"] Service`},
		},
		{
			name: "an override with no region in the file: set region",
			conf: "[Global]\nKubernetesClusterID = c1\n" +
				"[ServiceOverride \"1\"]\nService = Elastic Load Balancing v2\nRegion = eu-west-1\nURL = https://elb.example.com\nSigningRegion = eu-west-1\n",
			clusterID: "c1",
			endpoints: Endpoints{ELBv2: "https://elb.example.com"},
			notes:     []string{`[ServiceOverride "1"] Region`, "[Global] Region"},
		},
		{
			name: "the Classic ELB override lands in endpoints.elb; KMS and metadata overrides have no use here",
			conf: "[Global]\nRegion = eu-west-1\nKubernetesClusterID = c1\n" +
				"[ServiceOverride \"1\"]\nService = Elastic Load Balancing\nRegion = eu-west-1\nURL = https://elb.example.com\nSigningRegion = eu-west-1\n" +
				"[ServiceOverride \"2\"]\nService = KMS\nRegion = eu-west-1\nURL = https://kms.example.com\nSigningRegion = eu-west-1\n" +
				"[ServiceOverride \"3\"]\nService = ec2imds\nRegion = eu-west-1\nURL = http://169.254.169.254\nSigningRegion = eu-west-1\n",
			region: "eu-west-1", clusterID: "c1",
			endpoints: Endpoints{ELB: "https://elb.example.com"},
			notes:     []string{`[ServiceOverride "2"]`, `[ServiceOverride "3"]`},
		},
		{
			name:   "an NLB security group mode upstream refused",
			conf:   "[Global]\nRegion = eu-west-1\nKubernetesClusterID = c1\nNLBSecurityGroupMode = Unmanaged\n",
			region: "eu-west-1", clusterID: "c1",
			notes: []string{"[Global] NLBSecurityGroupMode"},
		},
		{
			name:   "a subsection of Global is no upstream key",
			conf:   "[Global]\nRegion = eu-west-1\nKubernetesClusterID = c1\n[Global \"x\"]\nRegion = eu-west-2\n",
			region: "eu-west-1", clusterID: "c1",
			notes: []string{`[Global "…"]`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := importString(t, tc.conf)
			sec := res.Section.(*Section)
			if sec.Region != tc.region || res.ClusterID != tc.clusterID || sec.VPCID != tc.vpcID || sec.Endpoints != tc.endpoints {
				t.Errorf("got region %q clusterID %q vpcID %q endpoints %+v, want %q %q %q %+v",
					sec.Region, res.ClusterID, sec.VPCID, sec.Endpoints, tc.region, tc.clusterID, tc.vpcID, tc.endpoints)
			}
			got := noteKeys(res)
			for _, k := range tc.notes {
				if !slices.Contains(got, k) {
					t.Errorf("no Note %q; notes %q", k, got)
				}
			}
			for _, k := range tc.absent {
				if slices.Contains(got, k) {
					t.Errorf("unexpected Note %q", k)
				}
			}
		})
	}
}
