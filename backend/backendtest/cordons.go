package backendtest

import (
	"context"
	"slices"

	"github.com/flotilla-sched/flotilla/backend"
)

// cordonsRule: PutCordon cordons and uncordons queues and clusters,
// idempotently; ListCordons lists them sorted by kind, then name; bad
// input is a field error and changes nothing.
func cordonsRule(t checker, b backend.Backend) {
	ctx := context.Background()
	put := func(k backend.CordonKind, name string, on bool) {
		t.Helper()
		if err := b.PutCordon(ctx, backend.Cordon{Kind: k, Name: name}, on); err != nil {
			t.Fatalf("PutCordon(%s %s, %v): %v", k, name, on, err)
		}
	}
	list := func() []backend.Cordon {
		t.Helper()
		cs, err := b.ListCordons(ctx)
		if err != nil {
			t.Fatalf("ListCordons: %v", err)
		}
		return cs
	}
	if cs := list(); len(cs) != 0 {
		t.Errorf("a new backend lists cordons %v", cs)
	}
	put(backend.CordonQueue, "B", true)
	put(backend.CordonQueue, "A", true)
	put(backend.CordonQueue, "A", true)
	put(backend.CordonCluster, "c1", true)
	put(backend.CordonCluster, "c2", false)
	want := []backend.Cordon{{Kind: backend.CordonCluster, Name: "c1"}, {Kind: backend.CordonQueue, Name: "A"}, {Kind: backend.CordonQueue, Name: "B"}}
	if cs := list(); !slices.Equal(cs, want) {
		t.Errorf("ListCordons = %v, want %v", cs, want)
	}
	put(backend.CordonQueue, "B", false)
	put(backend.CordonQueue, "B", false)
	for _, bad := range []backend.Cordon{{Kind: "node", Name: "n1"}, {Kind: backend.CordonQueue}} {
		err := b.PutCordon(ctx, bad, true)
		wantFieldError(t, "PutCordon of a bad cordon", err)
	}
	if cs := list(); !slices.Equal(cs, want[:2]) {
		t.Errorf("ListCordons after uncordoning B and two refusals = %v, want %v", cs, want[:2])
	}
}
