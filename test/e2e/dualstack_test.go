package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multicloud-ccm/multicloud-ccm/test/conformance"
)

// dualStack: a dual-stack cluster (every instance with an IPv6 address
// beside its IPv4 one, Service addresses of both families) and the
// cloud's dual-stack cases (conformance.DualStackCloud): the Nodes get an
// InternalIP of each family; a Service the cloud serves gets a load
// balancer of exactly the families it says, every node behind it, its
// status addresses of those families in its order, and no Warning; one it
// refuses gets a Warning saying why, no address and no cloud resource;
// deleting them all leaves the cloud as it was.
func dualStack(t *testing.T, cl *cluster, a conformance.Adapter) {
	if !a.Features().DualStack {
		t.Skipf("the %s backend does not serve IPv6 Services yet", a.Name())
	}
	s := startSuiteCloud(t, cl, a, "dual-stack", func(o *conformance.Options) { o.DualStack = true })
	ds := s.cloud.(conformance.DualStackCloud)
	cases := ds.DualStackCases()
	checkDualStackCases(t, cases)

	zones := s.cloud.Zones()
	var insts []conformance.Instance
	for i := range 2 {
		insts = append(insts, s.launch(t, zones[i%len(zones)], fmt.Sprintf("ds-%d", i)))
	}
	// Registered here: a Node lives until the end of the test that
	// registers it.
	for _, inst := range insts {
		s.registerNode(t, inst.NodeName, "", "")
	}
	t.Run("nodes get an InternalIP of each family", func(t *testing.T) {
		for _, inst := range insts {
			s.waitInitialized(t, inst.NodeName)
			want, err := s.cloud.ExpectedNode(inst.ID)
			if err != nil {
				t.Fatal(err)
			}
			poll(t, converge, "node "+inst.NodeName+" addresses", func(ctx context.Context) (bool, string, error) {
				n, err := s.getNode(ctx, inst.NodeName)
				if err != nil {
					return false, "", err
				}
				return addressSet(n.Status.Addresses) == addressSet(want.Addresses), describeNode(n), nil
			})
			var fams []corev1.IPFamily
			for _, ad := range want.Addresses {
				if ad.Type == corev1.NodeInternalIP {
					fams = append(fams, ipFamily(ad.Address))
				}
			}
			if !slices.Contains(fams, corev1.IPv4Protocol) || !slices.Contains(fams, corev1.IPv6Protocol) {
				t.Errorf("node %s: the adapter expects InternalIPs of the families %v, want both", inst.NodeName, fams)
			}
		}
	})
	before := s.cloud.Inventory()

	keys := map[string]types.NamespacedName{}
	ups := map[string]conformance.UpstreamLoadBalancer{}
	create := func(c conformance.DualStackCase) {
		svc := s.lbService(c.Name, 80)
		svc.Spec.IPFamilies = c.Families
		policy := c.Policy
		svc.Spec.IPFamilyPolicy = &policy
		for k, v := range c.Annotations {
			metav1.SetMetaDataAnnotation(&svc.ObjectMeta, k, v)
		}
		keys[c.Name] = s.createService(t, svc)
	}
	// The upstream CCM's turn first, with this manager stopped: the load
	// balancers it made for dual-stack Services are then taken over.
	if slices.ContainsFunc(cases, func(c conformance.DualStackCase) bool { return c.Upstream }) {
		s.ccm.stop()
		for _, c := range cases {
			if c.Upstream {
				create(c)
				ups[c.Name] = s.playUpstream(t, keys[c.Name], insts)
			}
		}
		if st, ok := s.cloud.(conformance.UpstreamClusterState); ok {
			for _, cm := range st.UpstreamConfigMaps() {
				if _, err := s.admin.CoreV1().ConfigMaps(cm.Namespace).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					_ = s.admin.CoreV1().ConfigMaps(cm.Namespace).Delete(context.Background(), cm.Name, metav1.DeleteOptions{})
				})
			}
		}
		s.ccm = s.startCCM(t, "dual-stack-switched")
	}
	for _, c := range cases {
		if !c.Upstream {
			create(c)
		}
	}
	for _, c := range cases {
		key := keys[c.Name]
		t.Run(fmt.Sprintf("%s %v %s", c.Name, c.Families, c.Policy), func(t *testing.T) {
			if c.Serves == nil {
				poll(t, converge, "a Warning event saying "+c.Refusal, func(ctx context.Context) (bool, string, error) {
					ws, err := s.warnings(ctx, key)
					return slices.ContainsFunc(ws, func(w string) bool { return strings.Contains(w, c.Refusal) }), fmt.Sprint(ws), err
				})
				svc, err := s.getService(context.Background(), key)
				if err != nil {
					t.Fatal(err)
				}
				if len(svc.Status.LoadBalancer.Ingress) != 0 {
					t.Errorf("the refused Service got an address: %v", svc.Status.LoadBalancer.Ingress)
				}
				if rs := s.cloud.ServiceResources(key); len(rs) != 0 {
					t.Errorf("cloud resources for the refused Service: %s", resList(rs))
				}
				return
			}
			s.waitService(t, key, fmt.Sprintf("a status of the families %v", c.StatusFamilies), func(svc *corev1.Service) (bool, string) {
				return statusFamilies(svc, c.StatusFamilies)
			})
			if up, ok := ups[c.Name]; ok {
				poll(t, converge, "the switched manager synced the Service", func(ctx context.Context) (bool, string, error) {
					evs, err := s.admin.CoreV1().Events(key.Namespace).List(ctx, metav1.ListOptions{
						FieldSelector: "involvedObject.kind=Service,involvedObject.name=" + key.Name + ",reason=EnsuredLoadBalancer",
					})
					if err != nil {
						return false, "", err
					}
					return len(evs.Items) > 0, fmt.Sprintf("%d EnsuredLoadBalancer events", len(evs.Items)), nil
				})
				got, err := s.getService(context.Background(), key)
				if err != nil {
					t.Fatal(err)
				}
				if ingressAddrs(got.Status.LoadBalancer) != ingressAddrs(up.Status) {
					t.Errorf("the taken-over Service's address changed from %s to %s", ingressAddrs(up.Status), ingressAddrs(got.Status.LoadBalancer))
				}
			}
			poll(t, converge, fmt.Sprintf("load balancers serving %v with every node behind them", c.Serves), func(context.Context) (bool, string, error) {
				fams := ds.LoadBalancerFamilies(key)
				lbs := s.cloud.LoadBalancers(key)
				ok := slices.Equal(fams, c.Serves) && len(lbs) > 0
				for _, lb := range lbs {
					ok = ok && slices.Equal(lb.Ports, []int32{80}) && len(lb.Backends) == len(insts) && len(lb.Inconsistent) == 0
				}
				return ok, fmt.Sprintf("families %v, load balancers %+v", fams, lbs), nil
			})
			if c.Warning != "" {
				poll(t, converge, "the Warning event saying "+c.Warning, func(ctx context.Context) (bool, string, error) {
					ws, err := s.warnings(ctx, key)
					return slices.ContainsFunc(ws, func(w string) bool { return strings.Contains(w, c.Warning) }), fmt.Sprint(ws), err
				})
			}
			ws, err := s.warnings(context.Background(), key)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range ws {
				if c.Warning == "" || !strings.Contains(w, c.Warning) {
					t.Errorf("a Warning on a served Service: %s", w)
				}
			}
		})
	}
	t.Run("deleting the Services leaves nothing", func(t *testing.T) {
		for _, c := range cases {
			s.deleteServiceAndWait(t, keys[c.Name])
		}
		waitInventory(t, s.cloud, before, "the cloud's whole inventory back to what it was before the dual-stack Services")
	})
}

// checkDualStackCases holds an adapter to the contract: a dual-stack
// Service that is served (with both families, or with the one the cloud
// serves), and an IPv6-only one.
func checkDualStackCases(t *testing.T, cases []conformance.DualStackCase) {
	t.Helper()
	var dual, v6only bool
	for _, c := range cases {
		dual = dual || (len(c.Families) == 2 && len(c.Serves) > 0)
		v6only = v6only || slices.Equal(c.Families, []corev1.IPFamily{corev1.IPv6Protocol})
		if c.Serves == nil && c.Refusal == "" {
			t.Errorf("case %s is refused without a Refusal to look for", c.Name)
		}
	}
	if !dual || !v6only {
		t.Fatalf("the adapter's cases %+v lack a served dual-stack Service (%v) or an IPv6-only one (%v)", cases, dual, v6only)
	}
}

func ipFamily(addr string) corev1.IPFamily {
	if strings.Contains(addr, ":") {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}

// statusFamilies says the Service's status lists IPs of exactly these
// families in this order, or (want nil) a hostname.
func statusFamilies(svc *corev1.Service, want []corev1.IPFamily) (bool, string) {
	ing := svc.Status.LoadBalancer.Ingress
	seen := fmt.Sprint(ing)
	if want == nil {
		return len(ing) == 1 && ing[0].Hostname != "" && ing[0].IP == "", seen
	}
	if len(ing) != len(want) {
		return false, seen
	}
	for i, in := range ing {
		if in.IP == "" || ipFamily(in.IP) != want[i] {
			return false, seen
		}
	}
	return true, seen
}
