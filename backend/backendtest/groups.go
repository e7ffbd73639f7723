package backendtest

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
)

// ab is the quota vector {cpu: a, memory: b}; Absent entries are not
// given.
func ab(a, b int64) flotilla.Resources { return flotilla.Resources{a, b} }

const absent = flotilla.Absent

// treeLine is a queue's or group's tree fields as one comparable line.
func treeLine(name, parent string, f float64, g, l, ll flotilla.Resources) string {
	return fmt.Sprintf("%s parent=%q factor=%g guaranteed=%v limit=%v lendingLimit=%v", name, parent, f, g, l, ll)
}

func queueTreeLine(q flotilla.Queue) string {
	return treeLine(q.Name, q.Parent, q.PriorityFactor, q.Guaranteed, q.Limit, q.LendingLimit)
}

func groupLine(g flotilla.QueueGroup) string {
	return treeLine(g.Name, g.Parent, g.PriorityFactor, g.Guaranteed, g.Limit, g.LendingLimit)
}

func groupLines(t checker, b backend.Backend) []string {
	t.Helper()
	gs, err := b.ListGroups(context.Background())
	if err != nil {
		t.Fatalf("ListGroups: %v", err)
	}
	var out []string
	for _, g := range gs {
		out = append(out, groupLine(g))
	}
	return out
}

// queueTreeFields: a queue's parent and quota vectors are stored and read
// back as given (Absent entries too), a vector giving no entry reads back
// as nil, and the caller's slices are its own.
func queueTreeFields(t checker, b backend.Backend) {
	ctx := context.Background()
	g := ab(16000, absent)
	q := flotilla.Queue{Name: "nlp", Parent: "research", PriorityFactor: 0.5, Guaranteed: g, Limit: ab(24000, 0),
		LendingLimit: ab(absent, absent)}
	if err := b.CreateQueue(ctx, q); err != nil {
		t.Fatalf("CreateQueue(nlp): %v", err)
	}
	g[0] = 1 // the caller's vector is its own
	want := treeLine("nlp", "research", 0.5, ab(16000, absent), ab(24000, 0), nil)
	got, err := b.Queue(ctx, "nlp")
	if err != nil {
		t.Fatalf("Queue(nlp): %v", err)
	}
	if queueTreeLine(got) != want {
		t.Errorf("Queue(nlp) = %s, want %s", queueTreeLine(got), want)
	}
	got.Limit[0] = 7 // nor is the reader's the backend's
	q = flotilla.Queue{Name: "nlp", LendingLimit: ab(8000, absent)}
	if err := b.UpdateQueue(ctx, q); err != nil {
		t.Fatalf("UpdateQueue(nlp): %v", err)
	}
	qs, err := b.ListQueues(ctx)
	if err != nil || len(qs) != 1 {
		t.Fatalf("ListQueues = %v, %v; want nlp", qs, err)
	}
	if want := treeLine("nlp", "", 0, nil, nil, ab(8000, absent)); queueTreeLine(qs[0]) != want {
		t.Errorf("after UpdateQueue, ListQueues()[0] = %s, want %s", queueTreeLine(qs[0]), want)
	}
	for _, bad := range []flotilla.Queue{
		{Name: "nlp", Guaranteed: flotilla.Resources{1}},
		{Name: "nlp", Limit: ab(-5, absent)},
		{Name: "nlp", Parent: "nlp"},
	} {
		wantFieldError(t, "UpdateQueue with bad tree fields", b.UpdateQueue(ctx, bad))
	}
	if got, _ := b.Queue(ctx, "nlp"); queueTreeLine(got) != treeLine("nlp", "", 0, nil, nil, ab(8000, absent)) {
		t.Errorf("refused updates changed the queue: %s", queueTreeLine(got))
	}
}

// groupsCRUD: groups are created, updated, listed by name and deleted;
// a name taken is ErrExists, an unknown one ErrNotFound, a bad group a
// field error, and no refused write changes anything.
func groupsCRUD(t checker, b backend.Backend) {
	ctx := context.Background()
	research := flotilla.QueueGroup{Name: "research", PriorityFactor: 2, Guaranteed: ab(16000, absent), Limit: ab(24000, 1<<40)}
	vision := flotilla.QueueGroup{Name: "vision", Parent: "research", LendingLimit: ab(absent, 0)}
	for _, g := range []flotilla.QueueGroup{vision, research, {Name: "adhoc"}} {
		if err := b.CreateGroup(ctx, g); err != nil {
			t.Fatalf("CreateGroup(%s): %v", g.Name, err)
		}
	}
	research.Guaranteed[0] = 1 // the caller's vector is its own
	want := []string{
		treeLine("adhoc", "", 0, nil, nil, nil),
		treeLine("research", "", 2, ab(16000, absent), ab(24000, 1<<40), nil),
		treeLine("vision", "research", 0, nil, nil, ab(absent, 0)),
	}
	if got := groupLines(t, b); !slices.Equal(got, want) {
		t.Errorf("ListGroups = %q, want %q", got, want)
	}
	wantErr(t, "CreateGroup(adhoc) twice", b.CreateGroup(ctx, flotilla.QueueGroup{Name: "adhoc", PriorityFactor: 3}), backend.ErrExists)
	wantErr(t, "UpdateGroup(nope)", b.UpdateGroup(ctx, flotilla.QueueGroup{Name: "nope"}), backend.ErrNotFound)
	wantErr(t, "DeleteGroup(nope)", b.DeleteGroup(ctx, "nope"), backend.ErrNotFound)
	for _, bad := range []flotilla.QueueGroup{
		{Name: ""},
		{Name: "adhoc", PriorityFactor: -1},
		{Name: "adhoc", PriorityFactor: math.Inf(1)},
		{Name: "adhoc", Guaranteed: flotilla.Resources{1, 2, 3}},
		{Name: "adhoc", LendingLimit: ab(-1, absent)},
		{Name: "adhoc", Parent: "adhoc"},
	} {
		wantFieldError(t, "UpdateGroup of a bad group", b.UpdateGroup(ctx, bad))
		wantFieldError(t, "CreateGroup of a bad group", b.CreateGroup(ctx, flotilla.QueueGroup{Name: bad.Name + "x", PriorityFactor: bad.PriorityFactor,
			Parent: bad.Parent + "x", Guaranteed: bad.Guaranteed, LendingLimit: bad.LendingLimit}))
	}
	if got := groupLines(t, b); !slices.Equal(got, want) {
		t.Errorf("after refused writes, ListGroups = %q, want %q", got, want)
	}
	if err := b.UpdateGroup(ctx, flotilla.QueueGroup{Name: "vision", Parent: "adhoc", PriorityFactor: 0.5, Limit: ab(absent, 5)}); err != nil {
		t.Fatalf("UpdateGroup(vision): %v", err)
	}
	if err := b.DeleteGroup(ctx, "research"); err != nil {
		t.Fatalf("DeleteGroup(research): %v", err)
	}
	want = []string{treeLine("adhoc", "", 0, nil, nil, nil), treeLine("vision", "adhoc", 0.5, nil, ab(absent, 5), nil)}
	if got := groupLines(t, b); !slices.Equal(got, want) {
		t.Errorf("after UpdateGroup and DeleteGroup, ListGroups = %q, want %q", got, want)
	}
}

// deleteGroupWithChildren: a group a queue or a group names as parent is
// not deleted (ErrNotEmpty); once no node names it, it is.
func deleteGroupWithChildren(t checker, b backend.Backend) {
	ctx := context.Background()
	for _, g := range []flotilla.QueueGroup{{Name: "G"}, {Name: "H", Parent: "G"}} {
		if err := b.CreateGroup(ctx, g); err != nil {
			t.Fatalf("CreateGroup(%s): %v", g.Name, err)
		}
	}
	if err := b.CreateQueue(ctx, flotilla.Queue{Name: "Q", Parent: "G"}); err != nil {
		t.Fatalf("CreateQueue(Q): %v", err)
	}
	err := b.DeleteGroup(ctx, "G")
	wantErr(t, "DeleteGroup(G) with a queue and a group below it", err, backend.ErrNotEmpty)
	wantFieldError(t, "DeleteGroup(G) with children", err)
	if err := b.DeleteGroup(ctx, "H"); err != nil {
		t.Fatalf("DeleteGroup(H): %v", err)
	}
	wantErr(t, "DeleteGroup(G) with a queue below it", b.DeleteGroup(ctx, "G"), backend.ErrNotEmpty)
	if got := groupLines(t, b); len(got) != 1 {
		t.Errorf("after refused deletes, ListGroups = %q, want G only", got)
	}
	if err := b.UpdateQueue(ctx, flotilla.Queue{Name: "Q"}); err != nil {
		t.Fatalf("UpdateQueue(Q) to the root: %v", err)
	}
	if err := b.DeleteGroup(ctx, "G"); err != nil {
		t.Errorf("DeleteGroup(G) once nothing names it: %v", err)
	}
}
