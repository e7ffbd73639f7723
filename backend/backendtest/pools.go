package backendtest

import (
	"context"
	"slices"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
)

// poolsRule: a job's Pools and a cluster's Pool are stored as given and
// read back by Job, LiveJobs and ListExecutors; a job without pools reads
// back nil (every pool), a cluster without one "" (the default pool).
func poolsRule(t checker, b backend.Backend) {
	ctx := context.Background()
	mustQueue(t, b, "A")
	w := submit("A", "s", "j1", "j2", "j3")
	w.Jobs[0].Pools = []string{"a100", "h100"}
	w.Jobs[1].Pools = []string{"h100"}
	mustCommit(t, b, w)
	want := map[string][]string{"j1": {"a100", "h100"}, "j2": {"h100"}, "j3": nil}
	for id, pools := range want {
		r, err := b.Job(ctx, id)
		if err != nil {
			t.Fatalf("Job(%s): %v", id, err)
		}
		if !slices.Equal(r.Spec.Pools, pools) || (pools == nil) != (r.Spec.Pools == nil) {
			t.Errorf("Job(%s).Spec.Pools = %q, want %q", id, r.Spec.Pools, pools)
		}
	}
	n := 0
	err := b.LiveJobs(ctx, func(r backend.Record) error {
		n++
		if p := want[r.Spec.Job.ID]; !slices.Equal(r.Spec.Pools, p) {
			t.Errorf("LiveJobs: %s's Pools = %q, want %q", r.Spec.Job.ID, r.Spec.Pools, p)
		}
		return nil
	})
	if err != nil || n != len(want) {
		t.Fatalf("LiveJobs: %d jobs, %v; want %d", n, err, len(want))
	}
	node := func(cluster string, cpu int64) []flotilla.Node {
		return []flotilla.Node{{Name: "n1", Cluster: cluster, Total: flotilla.Resources{cpu, 64 << 30}}}
	}
	for _, e := range []backend.Executor{
		{Cluster: "c1", Nodes: node("c1", 1000), Reported: at(1), Pool: "a100"},
		{Cluster: "c2", Nodes: node("c2", 1000), Reported: at(1)},
	} {
		if err := b.PutExecutor(ctx, e); err != nil {
			t.Fatalf("PutExecutor(%s): %v", e.Cluster, err)
		}
	}
	if err := b.PutExecutor(ctx, backend.Executor{Cluster: "c1", Nodes: node("c1", 2000), Reported: at(2), Pool: "h100"}); err != nil {
		t.Fatalf("PutExecutor(c1) again: %v", err)
	}
	es, err := b.ListExecutors(ctx)
	if err != nil {
		t.Fatalf("ListExecutors: %v", err)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.Cluster+"="+e.Pool)
	}
	if w := []string{"c1=h100", "c2="}; !slices.Equal(got, w) {
		t.Errorf("ListExecutors' pools = %q, want %q", got, w)
	}
}
