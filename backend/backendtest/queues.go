package backendtest

import (
	"context"
	"math"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

func queueNames(t checker, b backend.Backend) []string {
	t.Helper()
	qs, err := b.ListQueues(context.Background())
	if err != nil {
		t.Fatalf("ListQueues: %v", err)
	}
	var names []string
	for _, q := range qs {
		names = append(names, q.Name)
	}
	return names
}

func wantNames(t checker, what string, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %q, want %q", what, got, want)
		return
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: %q, want %q", what, got, want)
			return
		}
	}
}

func queuesCRUD(t checker, b backend.Backend) {
	ctx := context.Background()
	mustQueue(t, b, "B", "C", "A")
	wantNames(t, "ListQueues", queueNames(t, b), "A", "B", "C")
	limits := map[string]map[string]float64{flotilla.ArmadaDefault: {"cpu": 0.5}}
	if err := b.UpdateQueue(ctx, flotilla.Queue{Name: "B", PriorityFactor: 2, LimitsByPriorityClass: limits}); err != nil {
		t.Fatalf("UpdateQueue: %v", err)
	}
	limits[flotilla.ArmadaDefault]["cpu"] = 0.9 // the caller's map is its own
	q, err := b.Queue(ctx, "B")
	if err != nil {
		t.Fatalf("Queue(B): %v", err)
	}
	if q.PriorityFactor != 2 || q.LimitsByPriorityClass[flotilla.ArmadaDefault]["cpu"] != 0.5 {
		t.Errorf("Queue(B) after UpdateQueue = %+v, want factor 2 and cpu limit 0.5", q)
	}
	if err := b.DeleteQueue(ctx, "C"); err != nil {
		t.Fatalf("DeleteQueue(C): %v", err)
	}
	wantNames(t, "ListQueues after DeleteQueue(C)", queueNames(t, b), "A", "B")
	if _, err := b.Queue(ctx, "C"); err == nil {
		t.Errorf("Queue(C) after DeleteQueue: no error")
	}
}

func createQueueTwice(t checker, b backend.Backend) {
	mustQueue(t, b, "A")
	err := b.CreateQueue(context.Background(), flotilla.Queue{Name: "A", PriorityFactor: 5})
	wantErr(t, "CreateQueue(A) twice", err, backend.ErrExists)
	wantFieldError(t, "CreateQueue(A) twice", err)
	q, err := b.Queue(context.Background(), "A")
	if err != nil || q.PriorityFactor != 0 {
		t.Errorf("Queue(A) after a refused CreateQueue = %+v, %v; want the first definition", q, err)
	}
}

func unknownQueueOps(t checker, b backend.Backend) {
	ctx := context.Background()
	wantErr(t, "UpdateQueue(nope)", b.UpdateQueue(ctx, flotilla.Queue{Name: "nope"}), backend.ErrNotFound)
	wantErr(t, "DeleteQueue(nope)", b.DeleteQueue(ctx, "nope"), backend.ErrNotFound)
	_, err := b.Queue(ctx, "nope")
	wantErr(t, "Queue(nope)", err, backend.ErrNotFound)
	wantNames(t, "ListQueues", queueNames(t, b))
}

func invalidQueue(t checker, b backend.Backend) {
	ctx := context.Background()
	for _, q := range []flotilla.Queue{{Name: ""}, {Name: "A", PriorityFactor: -1}, {Name: "A", PriorityFactor: math.NaN()}} {
		wantFieldError(t, "CreateQueue of an invalid queue", b.CreateQueue(ctx, q))
	}
	wantNames(t, "ListQueues after invalid CreateQueues", queueNames(t, b))
	mustQueue(t, b, "A")
	err := b.UpdateQueue(ctx, flotilla.Queue{Name: "A", PriorityFactor: -1})
	wantFieldError(t, "UpdateQueue with a negative factor", err)
	if q, _ := b.Queue(ctx, "A"); q.PriorityFactor != 0 {
		t.Errorf("a refused UpdateQueue changed the queue: %+v", q)
	}
}

func deleteQueueWithLiveJobs(t checker, b backend.Backend) {
	ctx := context.Background()
	mustQueue(t, b, "A")
	mustCommit(t, b, submit("A", "s", "j1", "j2"))
	wantErr(t, "DeleteQueue(A) with two queued jobs", b.DeleteQueue(ctx, "A"), backend.ErrNotEmpty)
	mustCommit(t, b, &backend.Write{Events: []events.Event{ev("A", "s", "j1", events.Cancelled, 5)}})
	wantErr(t, "DeleteQueue(A) with one queued job", b.DeleteQueue(ctx, "A"), backend.ErrNotEmpty)
	wantNames(t, "ListQueues after refused deletes", queueNames(t, b), "A")
	mustCommit(t, b, &backend.Write{Events: []events.Event{ev("A", "s", "j2", events.Cancelled, 6)}})
	if err := b.DeleteQueue(ctx, "A"); err != nil {
		t.Errorf("DeleteQueue(A) once every job ended: %v", err)
	}
}

func executorsRule(t checker, b backend.Backend) {
	ctx := context.Background()
	node := func(cluster, name string, cpu int64) flotilla.Node {
		return flotilla.Node{Name: name, Cluster: cluster, Total: flotilla.Resources{cpu, 64 << 30}, Labels: map[string]string{"zone": "a"}}
	}
	put := func(e backend.Executor) error { return b.PutExecutor(ctx, e) }
	if err := put(backend.Executor{Cluster: "c2", Nodes: []flotilla.Node{node("c2", "n1", 8000)}, Reported: at(1)}); err != nil {
		t.Fatalf("PutExecutor(c2): %v", err)
	}
	if err := put(backend.Executor{Cluster: "c1", Nodes: []flotilla.Node{node("c1", "n1", 4000)}, Reported: at(2)}); err != nil {
		t.Fatalf("PutExecutor(c1): %v", err)
	}
	if err := put(backend.Executor{Cluster: "c1", Nodes: []flotilla.Node{node("c1", "n1", 4000), node("c1", "n2", 2000)}, Reported: at(3)}); err != nil {
		t.Fatalf("PutExecutor(c1) again: %v", err)
	}
	bad := []backend.Executor{
		{Cluster: "", Nodes: []flotilla.Node{node("", "n1", 1)}, Reported: at(4)},
		{Cluster: "c1", Nodes: []flotilla.Node{node("c2", "n9", 1)}, Reported: at(4)},
		{Cluster: "c1", Nodes: []flotilla.Node{node("c1", "n1", 1), node("c1", "n1", 1)}, Reported: at(4)},
		{Cluster: "c1", Nodes: []flotilla.Node{{Name: "n1", Cluster: "c1", Total: flotilla.Resources{-1, 0}}}, Reported: at(4)},
	}
	for i, e := range bad {
		err := put(e)
		if err == nil {
			t.Errorf("PutExecutor of bad report %d: no error", i)
		}
		wantFieldError(t, "PutExecutor of a bad report", err)
	}
	es, err := b.ListExecutors(ctx)
	if err != nil {
		t.Fatalf("ListExecutors: %v", err)
	}
	if len(es) != 2 || es[0].Cluster != "c1" || es[1].Cluster != "c2" {
		t.Fatalf("ListExecutors = %+v, want c1 then c2", es)
	}
	if len(es[0].Nodes) != 2 || es[0].Nodes[1].Name != "n2" || es[0].Nodes[1].Total[0] != 2000 ||
		es[0].Nodes[0].Labels["zone"] != "a" || !es[0].Reported.Equal(at(3)) {
		t.Errorf("c1 as stored = %+v, want its last good report (two nodes, reported %v)", es[0], at(3))
	}
}

func usageRule(t checker, b backend.Backend) {
	ctx := context.Background()
	good := []backend.UsageRecord{{Key: "queue/B", Value: []float64{2, 3}, At: at(1)}, {Key: "queue/A", Value: []float64{1, 0}, At: at(1)}}
	if err := b.PutUsage(ctx, good); err != nil {
		t.Fatalf("PutUsage: %v", err)
	}
	good[0].Value[0] = 99 // the caller's slice is its own
	bad := [][]backend.UsageRecord{
		{{Key: "queue/A", Value: []float64{7, 7}, At: at(2)}, {Key: "queue/B", Value: []float64{math.NaN(), 0}, At: at(2)}},
		{{Key: "queue/A", Value: []float64{7, 7}, At: at(2)}, {Key: "queue/A", Value: []float64{8, 8}, At: at(2)}},
		{{Key: "queue/A", Value: []float64{7, 7}, At: at(2)}, {Key: "", Value: []float64{1, 1}, At: at(2)}},
		{{Key: "queue/A", Value: []float64{7, 7}, At: at(2)}, {Key: "queue/C", Value: []float64{1}, At: at(2)}},
		{{Key: "queue/A", Value: []float64{7, -1}, At: at(2)}},
	}
	for i, rs := range bad {
		err := b.PutUsage(ctx, rs)
		if err == nil {
			t.Errorf("PutUsage of bad batch %d: no error", i)
		}
		wantFieldError(t, "PutUsage of a bad batch", err)
	}
	us, err := b.ListUsage(ctx)
	if err != nil {
		t.Fatalf("ListUsage: %v", err)
	}
	if len(us) != 2 || us[0].Key != "queue/A" || us[1].Key != "queue/B" ||
		us[0].Value[0] != 1 || us[1].Value[0] != 2 || us[1].Value[1] != 3 || !us[0].At.Equal(at(1)) {
		t.Errorf("ListUsage = %+v, want A [1 0] and B [2 3] at %v, untouched by the refused batches", us, at(1))
	}
}

func closedRule(t checker, b backend.Backend) {
	ctx := context.Background()
	mustQueue(t, b, "A")
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, err := b.Commit(ctx, submit("A", "s", "j1"))
	wantErr(t, "Commit after Close", err, backend.ErrClosed)
	_, err = b.ListQueues(ctx)
	wantErr(t, "ListQueues after Close", err, backend.ErrClosed)
	_, err = b.Events(ctx, "A", "s", 1, 0)
	wantErr(t, "Events after Close", err, backend.ErrClosed)
	_, err = b.ListGroups(ctx)
	wantErr(t, "ListGroups after Close", err, backend.ErrClosed)
	wantErr(t, "CreateGroup after Close", b.CreateGroup(ctx, flotilla.QueueGroup{Name: "G"}), backend.ErrClosed)
}

func queueCreatedAgain(t checker, b backend.Backend) {
	ctx := context.Background()
	mustQueue(t, b, "A")
	w := submit("A", "s", "j1")
	w.Jobs[0].ClientID = "c-1"
	w.Events = append(w.Events, ev("A", "s", "j1", events.Cancelled, 1))
	mustCommit(t, b, w)
	if err := b.DeleteQueue(ctx, "A"); err != nil {
		t.Fatalf("DeleteQueue(A): %v", err)
	}
	_, err := b.Commit(ctx, submit("A", "s", "j2"))
	wantErr(t, "Commit to a deleted queue", err, backend.ErrNotFound)
	mustQueue(t, b, "A")
	w = submit("A", "s", "j3")
	w.Jobs[0].ClientID = "c-1"
	_, err = b.Commit(ctx, w)
	wantErr(t, "a client id of the queue's first life", err, backend.ErrDuplicate)
	out := mustCommit(t, b, submit("A", "s", "j4"))
	if out[0].Seq != 3 {
		t.Errorf("the first event after the queue was created again has seq %d, want 3 (the log continues)", out[0].Seq)
	}
	if id, err := b.JobByClientID(ctx, "A", "c-1"); err != nil || id != "j1" {
		t.Errorf("JobByClientID(A, c-1) = %q, %v; want j1", id, err)
	}
}
