package backendtest

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// fencedWrites checks backend.Fenced, where the backend has it: after a
// write with fence 5, a view's queue, group, executor, usage, cordon and
// retry-policy writes with token 4 are refused with ErrFenced (even one
// that would be ErrExists) and change nothing; with token 5 or 6 they
// apply, and an applied one raises the highest fence as a Commit does.
func fencedWrites(t checker, b backend.Backend) {
	f, ok := b.(backend.Fenced)
	if !ok {
		return
	}
	ctx := context.Background()
	node := func(name string, cpu int64) []flotilla.Node {
		return []flotilla.Node{{Name: name, Cluster: "c1", Total: flotilla.Resources{cpu, 64 << 30}}}
	}
	mustQueue(t, b, "A", "D")
	for _, g := range []string{"F", "E"} {
		if err := b.CreateGroup(ctx, flotilla.QueueGroup{Name: g}); err != nil {
			t.Fatalf("CreateGroup(%s): %v", g, err)
		}
	}
	if err := b.PutExecutor(ctx, backend.Executor{Cluster: "c1", Nodes: node("n1", 1000), Reported: at(1)}); err != nil {
		t.Fatalf("PutExecutor: %v", err)
	}
	if err := b.PutUsage(ctx, []backend.UsageRecord{{Key: "queue/A", Value: []float64{1, 1}, At: at(1)}}); err != nil {
		t.Fatalf("PutUsage: %v", err)
	}
	if _, err := b.Commit(ctx, &backend.Write{Fence: 5}); err != nil {
		t.Fatalf("an empty write with fence 5: %v", err)
	}
	// state is what the backend stores, as one comparable line.
	state := func() string {
		t.Helper()
		qs, err := b.ListQueues(ctx)
		if err != nil {
			t.Fatalf("ListQueues: %v", err)
		}
		es, err := b.ListExecutors(ctx)
		if err != nil {
			t.Fatalf("ListExecutors: %v", err)
		}
		us, err := b.ListUsage(ctx)
		if err != nil {
			t.Fatalf("ListUsage: %v", err)
		}
		gs, err := b.ListGroups(ctx)
		if err != nil {
			t.Fatalf("ListGroups: %v", err)
		}
		cs, err := b.ListCordons(ctx)
		if err != nil {
			t.Fatalf("ListCordons: %v", err)
		}
		ps, err := b.ListRetryPolicies(ctx)
		if err != nil {
			t.Fatalf("ListRetryPolicies: %v", err)
		}
		s := ""
		for _, g := range gs {
			s += fmt.Sprintf("group %s %g; ", g.Name, g.PriorityFactor)
		}
		for _, q := range qs {
			s += fmt.Sprintf("queue %s %g; ", q.Name, q.PriorityFactor)
		}
		for _, e := range es {
			s += fmt.Sprintf("executor %s %d nodes %v; ", e.Cluster, len(e.Nodes), e.Reported.UnixNano())
			for _, n := range e.Nodes {
				s += fmt.Sprintf("%s %v; ", n.Name, n.Total)
			}
		}
		for _, u := range us {
			s += fmt.Sprintf("usage %s %v %d; ", u.Key, u.Value, u.At.UnixNano())
		}
		for _, c := range cs {
			s += fmt.Sprintf("cordon %s %s; ", c.Kind, c.Name)
		}
		for _, q := range slices.Sorted(maps.Keys(ps)) {
			s += fmt.Sprintf("retry %s max %d; ", q, ps[q].MaxAttempts)
		}
		return s
	}
	before := state()
	writes := func(v backend.Backend, k int) map[string]error {
		return map[string]error{
			"CreateQueue(B)": v.CreateQueue(ctx, flotilla.Queue{Name: "B"}),
			"UpdateQueue(A)": v.UpdateQueue(ctx, flotilla.Queue{Name: "A", PriorityFactor: float64(k)}),
			"DeleteQueue(D)": v.DeleteQueue(ctx, "D"),
			"CreateGroup(G)": v.CreateGroup(ctx, flotilla.QueueGroup{Name: "G"}),
			"UpdateGroup(F)": v.UpdateGroup(ctx, flotilla.QueueGroup{Name: "F", PriorityFactor: float64(k)}),
			"DeleteGroup(E)": v.DeleteGroup(ctx, "E"),
			"PutExecutor(c1)": v.PutExecutor(ctx, backend.Executor{Cluster: "c1", Nodes: node("n2", int64(k)*1000),
				Reported: at(k)}),
			"PutUsage(queue/A)":  v.PutUsage(ctx, []backend.UsageRecord{{Key: "queue/A", Value: []float64{float64(k), 0}, At: at(k)}}),
			"PutCordon(queue A)": v.PutCordon(ctx, backend.Cordon{Kind: backend.CordonQueue, Name: "A"}, true),
			"PutRetryPolicy(A)": v.PutRetryPolicy(ctx, "A", &events.RetryPolicy{MaxAttempts: k,
				Rules: []events.RetryRule{{OnExitCodes: []int{1}}}}),
		}
	}
	v4 := f.WithFence(4)
	for name, err := range writes(v4, 4) {
		wantErr(t, name+" with fence 4 after fence 5", err, backend.ErrFenced)
		wantFieldError(t, name+" with fence 4 after fence 5", err)
	}
	wantErr(t, "CreateQueue(A), taken, with fence 4 after fence 5", v4.CreateQueue(ctx, flotilla.Queue{Name: "A"}), backend.ErrFenced)
	if got := state(); got != before {
		t.Errorf("after writes fenced off:\n%s\nwant unchanged:\n%s", got, before)
	}

	v5 := f.WithFence(5)
	if err := v5.CreateQueue(ctx, flotilla.Queue{Name: "B"}); err != nil {
		t.Errorf("CreateQueue(B) with fence 5: %v", err)
	}
	if err := v5.UpdateQueue(ctx, flotilla.Queue{Name: "A", PriorityFactor: 5}); err != nil {
		t.Errorf("UpdateQueue(A) with fence 5: %v", err)
	}
	if err := v5.CreateGroup(ctx, flotilla.QueueGroup{Name: "G"}); err != nil {
		t.Errorf("CreateGroup(G) with fence 5: %v", err)
	}
	if err := v5.UpdateGroup(ctx, flotilla.QueueGroup{Name: "F", PriorityFactor: 5}); err != nil {
		t.Errorf("UpdateGroup(F) with fence 5: %v", err)
	}
	v6 := f.WithFence(6)
	if err := v6.DeleteGroup(ctx, "E"); err != nil {
		t.Errorf("DeleteGroup(E) with fence 6: %v", err)
	}
	if err := v6.DeleteQueue(ctx, "D"); err != nil {
		t.Errorf("DeleteQueue(D) with fence 6: %v", err)
	}
	if err := v6.PutExecutor(ctx, backend.Executor{Cluster: "c1", Nodes: node("n2", 6000), Reported: at(6)}); err != nil {
		t.Errorf("PutExecutor(c1) with fence 6: %v", err)
	}
	if err := v6.PutUsage(ctx, []backend.UsageRecord{{Key: "queue/A", Value: []float64{6, 0}, At: at(6)}}); err != nil {
		t.Errorf("PutUsage(queue/A) with fence 6: %v", err)
	}
	if err := v6.PutCordon(ctx, backend.Cordon{Kind: backend.CordonQueue, Name: "A"}, true); err != nil {
		t.Errorf("PutCordon(queue A) with fence 6: %v", err)
	}
	if err := v6.PutRetryPolicy(ctx, "A", &events.RetryPolicy{MaxAttempts: 6, Rules: []events.RetryRule{{OnExitCodes: []int{1}}}}); err != nil {
		t.Errorf("PutRetryPolicy(A) with fence 6: %v", err)
	}
	want := fmt.Sprintf("group F 5; group G 0; queue A 5; queue B 0; executor c1 1 nodes %d; n2 [6000 %d]; usage queue/A [6 0] %d; "+
		"cordon queue A; retry A max 6; ", at(6).UnixNano(), int64(64<<30), at(6).UnixNano())
	if got := state(); got != want {
		t.Errorf("after the writes with fences 5 and 6:\n%s\nwant:\n%s", got, want)
	}

	// The applied writes with fence 6 raised the highest fence to 6.
	err := v5.PutUsage(ctx, []backend.UsageRecord{{Key: "queue/A", Value: []float64{5, 5}, At: at(7)}})
	wantErr(t, "PutUsage with fence 5 after a view's write with fence 6", err, backend.ErrFenced)
	_, err = b.Commit(ctx, &backend.Write{Fence: 5})
	wantErr(t, "Commit with fence 5 after a view's write with fence 6", err, backend.ErrFenced)
	// A refused write raises nothing: fence 6 still writes.
	if _, err := v6.Commit(ctx, &backend.Write{Fence: 6}); err != nil {
		t.Errorf("the view's Commit with fence 6: %v", err)
	}
	wantErr(t, "CreateQueue(B), taken, with fence 6", v6.CreateQueue(ctx, flotilla.Queue{Name: "B"}), backend.ErrExists)
	wantErr(t, "CreateGroup(G), taken, with fence 6", v6.CreateGroup(ctx, flotilla.QueueGroup{Name: "G"}), backend.ErrExists)
}
