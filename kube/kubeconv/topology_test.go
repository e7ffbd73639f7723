package kubeconv

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-sched/flotilla"
)

// A gang member's topology annotations, flotilla's or Kueue's, become its
// gang's topology request; both ways at once must agree; a pod outside a
// gang may not set them.
func TestGangTopologyFromAnnotationsAndKueueAliases(t *testing.T) {
	gang := map[string]string{AnnotationGangID: "g", AnnotationGangCardinality: "2"}
	with := func(kv ...string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Annotations = map[string]string{}
			for k, v := range gang {
				p.Annotations[k] = v
			}
			for i := 0; i+1 < len(kv); i += 2 {
				p.Annotations[kv[i]] = kv[i+1]
			}
		}
	}
	for _, tc := range []struct {
		name string
		mod  func(*corev1.Pod)
		want flotilla.GangTopology
	}{
		{"flotilla's", with(AnnotationTopologyRequired, "rack", AnnotationTopologyPreferred, "host"),
			flotilla.GangTopology{Required: "rack", Preferred: "host"}},
		{"kueue's", with(AnnotationKueueRequiredTopology, "block", AnnotationKueuePreferredTopology, "rack"),
			flotilla.GangTopology{Required: "block", Preferred: "rack"}},
		{"both, agreeing", with(AnnotationTopologyPreferred, "rack", AnnotationKueuePreferredTopology, "rack"),
			flotilla.GangTopology{Preferred: "rack"}},
		{"none", with(), flotilla.GangTopology{}},
	} {
		j, err := Job(pod(tc.mod), Schema())
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if j.Gang.Topology != tc.want {
			t.Errorf("%s: topology %+v, want %+v", tc.name, j.Gang.Topology, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		mod  func(*corev1.Pod)
		want string
	}{
		{"disagreeing", with(AnnotationTopologyRequired, "rack", AnnotationKueueRequiredTopology, "block"),
			`metadata.annotations[kueue.x-k8s.io/podset-required-topology] "block"`},
		{"empty", with(AnnotationTopologyPreferred, ""), `metadata.annotations[flotilla.dev/topology-preferred] ""`},
		{"without a gang", func(p *corev1.Pod) {
			p.Annotations = map[string]string{AnnotationKueueRequiredTopology: "rack"}
		}, `metadata.annotations[kueue.x-k8s.io/podset-required-topology] "rack"`},
	} {
		_, err := Job(pod(tc.mod), Schema())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %s", tc.name, err, tc.want)
		}
	}
}
