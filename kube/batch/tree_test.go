package batch

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/kube/kubeconv"
)

// The queue tree comes from the configuration file (groups, parents,
// quotas), its quotas laid out by the cluster's resources whatever order
// the file's resources take.
func TestParseConfigReadsTheQueueTree(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{
		"nodes": [{"name": "n", "resources": {"nvidia.com/gpu": "8", "memory": "64Gi", "cpu": "64"}}],
		"config": {"usageHalfLife": "1h"},
		"groups": [{"name": "research", "guaranteed": {"cpu": "4"}, "limit": {"cpu": "6", "nvidia.com/gpu": "2"}}],
		"queues": [{"name": "nlp", "parent": "research", "limit": {"cpu": "5"}}, {"name": "adhoc"}]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	s := kubeconv.Schema()
	want := s.MustParse(map[string]string{"cpu": "6", "nvidia.com/gpu": "2"})
	mem, _ := s.Index("memory")
	want[mem] = flotilla.Absent
	if len(cfg.Groups) != 1 || !cfg.Groups[0].Limit.Equal(want) {
		t.Fatalf("groups %+v: want research with limit %v", cfg.Groups, want)
	}
	if cfg.Queues[0].Parent != "research" || cfg.Scheduler.UsageHalfLife == 0 {
		t.Fatalf("queue %+v, usage half-life %v", cfg.Queues[0], cfg.Scheduler.UsageHalfLife)
	}
	if _, err := New(fake.NewClientset(), cfg); err != nil {
		t.Fatalf("a valid tree refused: %v", err)
	}
}

// A tree the scheduler would refuse is refused by New, every problem at
// once, by its path.
func TestNewRefusesABadTreeNamingEveryProblem(t *testing.T) {
	s := kubeconv.Schema()
	lim, _ := s.ParsePartial("l", map[string]string{"cpu": "1"})
	g, _ := s.ParsePartial("g", map[string]string{"cpu": "2"})
	_, err := New(fake.NewClientset(), Config{
		Groups: []*flotilla.QueueGroup{{Name: "research", Parent: "nowhere"}},
		Queues: []*flotilla.Queue{{Name: "nlp", Parent: "research", Guaranteed: g, Limit: lim}},
	})
	var fe *flotilla.FieldError
	if !errors.As(err, &fe) || !errors.Is(err, flotilla.ErrUnknownName) || !errors.Is(err, flotilla.ErrInconsistent) ||
		!strings.Contains(err.Error(), "groups[0].parent") || !strings.Contains(err.Error(), "queues[0].limit.cpu") {
		t.Fatalf("err %v: want the unknown parent and the limit below the guarantee", err)
	}
}

// A pod held back by its group's limit says so in its condition, naming
// the level and the resource, with the fair shares along its path.
func TestPodHeldBackByAGroupLimitNamesTheLevelAndTheShares(t *testing.T) {
	s := kubeconv.Schema()
	lim, _ := s.ParsePartial("l", map[string]string{"cpu": "2"})
	inQueue := func(q string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Labels = map[string]string{"flotilla.dev/queue": q} }
	}
	f := newFixtureConfig(t, func(_ *fixture, c *Config) {
		c.Groups = []*flotilla.QueueGroup{{Name: "research", Limit: lim}}
		c.Queues = []*flotilla.Queue{{Name: "nlp", Parent: "research"}}
	}, testNode("n1", "8"), testPod("a", "1", inQueue("nlp")), testPod("b", "1", inQueue("nlp")), testPod("c", "1", inQueue("nlp")))
	f.cycle()
	f.cycle()
	var held string
	for _, p := range f.statusPatches() {
		if strings.Contains(p, "limit: research") {
			held = p
		}
	}
	for _, want := range []string{"group research holds 2 of its limit of 2 cpu", "queue nlp: fair share", "group research: "} {
		if !strings.Contains(held, want) {
			t.Fatalf("status patches %v: want one naming %q", f.statusPatches(), want)
		}
	}
}

// A pod's required node affinity is honoured: it is bound only to a node
// whose labels match, although another node is the tighter fit.
func TestPodWithRequiredNodeAffinityIsBoundToAMatchingNode(t *testing.T) {
	small, big := testNode("small", "2"), testNode("big", "8")
	big.Labels = map[string]string{"gpu": "h100"}
	p := testPod("train", "1", func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "gpu", Operator: corev1.NodeSelectorOpIn, Values: []string{"h100"}}}}}}}}
	})
	f := newFixture(t, small, big, p)
	f.cycle()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.binds) != 1 || f.binds[0] != "train@big" {
		t.Fatalf("binds %v: want train@big", f.binds)
	}
}
