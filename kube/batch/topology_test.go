package batch

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/record"

	"github.com/flotilla-sched/flotilla/kube/kubeconv"
)

const (
	labelRack = "topology.flotilla.dev/rack"
	labelHost = "kubernetes.io/hostname"
	// rackConfig is a queue configuration declaring the default
	// topology: racks of hosts.
	rackConfig = `{"config": {"topologies": [{"name": "default", "levels": ["` + labelRack + `", "` + labelHost + `"]}]}}`
)

func rackNode(name, rack, cpu string) *corev1.Node {
	n := testNode(name, cpu)
	n.Labels = map[string]string{labelRack: rack, labelHost: name}
	return n
}

// newTopologyFixture is an owner fixture whose configuration comes from
// ParseConfig(rackConfig), the suspend path on when admit.
func newTopologyFixture(t *testing.T, admit bool, dyn []runtime.Object, objs ...runtime.Object) *ownerFixture {
	t.Helper()
	cfg, err := ParseConfig([]byte(rackConfig))
	if err != nil {
		t.Fatal(err)
	}
	of := &ownerFixture{dyn: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, dyn...)}
	of.fixture = newFixtureConfig(t, func(f *fixture, c *Config) {
		c.Schema, c.Scheduler, c.Dynamic, c.AdmitSuspended = cfg.Schema, cfg.Scheduler, of.dyn, admit
		if admit {
			for _, k := range customKinds {
				gvr := k.resources[0]
				f.cs.Resources = append(f.cs.Resources, &metav1.APIResourceList{GroupVersion: gvr.GroupVersion().String(),
					APIResources: []metav1.APIResource{{Name: gvr.Resource, Namespaced: true, Kind: k.kind}}})
			}
		}
	}, objs...)
	return of
}

// racksOf is the racks of the nodes the binds name ("pod@node").
func (f *fixture) racksOf(binds []string) map[string]bool {
	f.t.Helper()
	racks := map[string]bool{}
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	for _, b := range binds {
		_, node, _ := strings.Cut(b, "@")
		racks[f.s.st.nodes[node].Labels[labelRack]] = true
	}
	return racks
}

// An Indexed Job's gang whose pods carry a topology annotation (Flotilla's
// or Kueue's alias), with the default topology from the configuration
// file: required rack places the 4 pods in the one rack that holds them
// (r2), or nowhere when no rack does, saying so; preferred rack places
// them in r2, or across racks when no rack holds them; a level the
// topology lacks leaves them pending, saying which. Without an
// annotation smallest fit spreads them (the fuller rack r1 first).
func TestJobGangPlacedByItsTopologyAnnotation(t *testing.T) {
	holds := []runtime.Object{rackNode("a1", "r1", "2"), rackNode("a2", "r1", "1"), rackNode("b1", "r2", "2"), rackNode("b2", "r2", "2")}
	short := []runtime.Object{rackNode("a1", "r1", "2"), rackNode("a2", "r1", "1"), rackNode("b1", "r2", "2"), rackNode("b2", "r2", "1")}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		nodes       []runtime.Object
		bound       int
		racks       string
		says        string // in each pod's condition, when none is bound
	}{
		{"required, one rack holds it", map[string]string{kubeconv.AnnotationTopologyRequired: labelRack}, holds, 4, "r2", ""},
		{"Kueue's required, one rack holds it", map[string]string{kubeconv.AnnotationKueueRequiredTopology: labelRack}, holds, 4, "r2", ""},
		{"preferred, one rack holds it", map[string]string{kubeconv.AnnotationKueuePreferredTopology: labelRack}, holds, 4, "r2", ""},
		{"none: smallest fit spreads it", nil, holds, 4, "r1 r2", ""},
		{"required, no rack holds it", map[string]string{kubeconv.AnnotationTopologyRequired: labelRack}, short, 0, "", "no rack has 4 free cpu: best rack r1 has 3"},
		{"preferred, no rack holds it", map[string]string{kubeconv.AnnotationTopologyPreferred: labelRack}, short, 4, "r1 r2", ""},
		{"a level the topology lacks", map[string]string{kubeconv.AnnotationTopologyRequired: "topology.flotilla.dev/zone"}, holds, 0, "", "topology.flotilla.dev/zone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			owned := ownedBy("batch/v1", "Job", "train", "u-train")
			objs := tc.nodes
			for i := range 4 {
				objs = append(objs, testPod(fmt.Sprintf("train-%d", i), "1", both(owned, func(p *corev1.Pod) { p.Annotations = tc.annotations })))
			}
			f := newTopologyFixture(t, false, []runtime.Object{uobj(t, indexedJob4)}, objs...)
			rep := f.cycle()
			if rep.Bound != tc.bound {
				t.Fatalf("bound %d (%v, unscheduled %+v), want %d", rep.Bound, f.binds, rep.Result.UnscheduledJobs, tc.bound)
			}
			var racks []string
			for r := range f.racksOf(f.binds) {
				racks = append(racks, r)
			}
			slices.Sort(racks)
			if got := strings.Join(racks, " "); got != tc.racks {
				t.Fatalf("bound %v in racks %q, want %q", f.binds, got, tc.racks)
			}
			if tc.bound == 0 {
				ps := f.statusPatches()
				if len(ps) != 4 || !strings.Contains(ps[0], tc.says) {
					t.Fatalf("status patches %v: want each pod told %q", ps, tc.says)
				}
			}
		})
	}
}

// topoJobSet is suspendedJobSet (a driver of 2 cpu and 2 × 4 workers of
// 1 cpu: 10 cpu) whose pod templates carry Kueue's required topology
// annotation, as Kueue's users write it.
var topoJobSet = strings.ReplaceAll(suspendedJobSet, "          spec:\n            schedulerName: flotilla",
	"          metadata: {annotations: {"+kubeconv.AnnotationKueueRequiredTopology+": "+labelRack+"}}\n          spec:\n            schedulerName: flotilla")

// A suspended JobSet whose templates require one rack is admitted only
// once one rack holds its whole gang (10 cpu over two racks of 5 do not;
// the Warning event names the rack), its room held there, and its pods
// are then bound into that rack.
func TestSuspendedJobSetWithARequiredRackIsAdmittedIntoOneRack(t *testing.T) {
	if strings.Count(topoJobSet, kubeconv.AnnotationKueueRequiredTopology) != 2 {
		t.Fatal("the JobSet's two templates lack the annotation")
	}
	dyn := []runtime.Object{uobj(t, topoJobSet)}
	for _, rj := range []string{"driver-0", "w-0", "w-1"} {
		dyn = append(dyn, uobj(t, fmt.Sprintf(`
apiVersion: batch/v1
kind: Job
metadata:
  name: js-%s
  namespace: default
  uid: u-%s
  ownerReferences: [{apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, name: js, uid: u-js, controller: true}]
spec: {completionMode: Indexed, parallelism: 4, completions: 4}`, rj, rj)))
	}
	f := newTopologyFixture(t, true, dyn, rackNode("a1", "r1", "5"), rackNode("b1", "r2", "5"))
	rec := record.NewFakeRecorder(100)
	f.s.recorder = rec
	if rep := f.cycle(); rep.Admitted != 0 || !f.jobSetSuspended("js") {
		t.Fatalf("admitted %d with 10 cpu over two racks of 5", rep.Admitted)
	}
	if e := <-rec.Events; !strings.Contains(e, EventNotAdmitted) || !strings.Contains(e, "rack") {
		t.Fatalf("event %q: want %s naming the rack", e, EventNotAdmitted)
	}
	f.addNode(rackNode("b2", "r2", "5"))
	rep := f.cycle()
	if rep.Admitted != 1 || f.jobSetSuspended("js") {
		t.Fatalf("admitted %d (%v): want the JobSet unsuspended", rep.Admitted, rep.Errors)
	}
	for _, a := range rep.Result.Scheduled {
		if a.Node == "a1" {
			t.Fatalf("placeholder %s held on a1, outside rack r2", a.Job.ID)
		}
	}
	yes := true
	owned := func(job string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job, UID: types.UID("u-" + job[3:]), Controller: &yes}}
			p.Annotations = map[string]string{kubeconv.AnnotationKueueRequiredTopology: labelRack}
		}
	}
	f.createPod(testPod("js-driver-0-0", "2", owned("js-driver-0")))
	for r := range 2 {
		for i := range 4 {
			f.createPod(testPod(fmt.Sprintf("js-w-%d-%d", r, i), "1", owned(fmt.Sprintf("js-w-%d", r))))
		}
	}
	if rep := f.cycle(); rep.Bound != 9 {
		t.Fatalf("bound %d (%v), want the 9 pods into the held room", rep.Bound, rep.Errors)
	}
	if racks := f.racksOf(f.binds); len(racks) != 1 || !racks["r2"] {
		t.Fatalf("bound %v: want all in rack r2", f.binds)
	}
}

// A real Job controller creates the 4 pods of an Indexed Job whose
// template requires one rack (the default topology from the
// configuration file): rack r1 has 3 cpu on its smaller nodes, r2 has 4;
// the gang is bound whole in r2.
func TestLiveJobGangWithARequiredRackBoundInOneRack(t *testing.T) {
	l := newLive(t)
	l.c.Controllers(t, "job")
	for _, n := range []struct{ name, rack, cpu string }{{"a1", "r1", "2"}, {"a2", "r1", "1"}, {"b1", "r2", "2"}, {"b2", "r2", "2"}} {
		l.node(n.name, n.cpu)
		node, err := l.cs.CoreV1().Nodes().Get(l.ctx, n.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node.Labels = map[string]string{labelRack: n.rack, labelHost: n.name} // no kubelet labels it
		if _, err := l.cs.CoreV1().Nodes().Update(l.ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := ParseConfig([]byte(rackConfig))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Dynamic = l.dynamic()
	s := l.scheduler(cfg)
	j := jobOf("train", 4, 4, true, "1")
	j.Spec.Template.Annotations = map[string]string{kubeconv.AnnotationTopologyRequired: labelRack}
	if _, err := l.cs.BatchV1().Jobs("default").Create(l.ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rack := map[string]string{"a1": "r1", "a2": "r1", "b1": "r2", "b2": "r2"}
	outside := func() error {
		for _, p := range l.podsOfJob("train") {
			if p.Spec.NodeName != "" && rack[p.Spec.NodeName] != "r2" {
				return fmt.Errorf("pod %s bound to %s, outside rack r2", p.Name, p.Spec.NodeName)
			}
		}
		return nil
	}
	jobs := l.cycleCollect(s, "the gang bound whole in rack r2", func() bool {
		n := 0
		for _, p := range l.podsOfJob("train") {
			if p.Spec.NodeName != "" {
				n++
			}
		}
		return n == 4
	}, outside)
	for _, j := range jobs {
		if j.Gang.Topology.Required != labelRack || j.Gang.Cardinality != 4 {
			t.Fatalf("job %+v: want a member of the Job's gang of 4 requiring a rack", j)
		}
	}
}
