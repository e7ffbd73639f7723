package queue

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/flotilla-sched/flotilla"
)

// testOrder is an order over a slab of its own, which holds its items'
// jobs.
type testOrder struct {
	order
	slab slab
	// mixed makes item's ids of three forms (see item).
	mixed bool
}

func newTestOrder() *testOrder {
	return new(testOrder)
}

// item returns a test item, its job added to the slab: only id and class
// vary, so that the order is by class (higher first), then id, as id's
// number. In a mixed order ids are of three forms, of three lengths,
// some short ones prefixes of long ones; the order then is not the
// numbers'.
func (o *testOrder) item(class int32, id int) item {
	h := o.slab.alloc()
	name := fmt.Sprintf("%06d", id)
	switch {
	case o.mixed && id%3 == 1:
		name = "0000000000000000" + name
	case o.mixed && id%3 == 2:
		name = "00000000" + name
	}
	*o.slab.at(h) = stored{Entry: Entry{Job: &flotilla.Job{ID: name}, ClassPriority: class}, h: h}
	return itemOf(&o.slab.at(h).Entry, h)
}

// key is it as the order's methods take it.
func (o *testOrder) key(it item) *item { return &it }

// orderOp is a generated operation on an order: insert a fresh item
// (after every item, before every item, or anywhere), or delete an item
// (the first, the last, or anywhere), or a miss (delete an absent item).
type orderOp struct {
	kind int
	at   int
}

// checkOrder compares o with the sorted oracle and checks its block
// invariants: no empty block, runs within their arrays, every slot
// outside a run cleared, and no two neighbours both under a quarter full
// that would fit in one block (merge keeps them apart).
func checkOrder(o *testOrder, want []item) error {
	var got []item
	o.ascend(func(it item) bool { got = append(got, it); return true })
	if !slices.Equal(got, want) || o.len() != len(want) {
		return fmt.Errorf("order holds %d items %v, want %d %v", o.len(), o.ids(got), len(want), o.ids(want))
	}
	for i, b := range o.blocks {
		if b.len() <= 0 || b.lo < 0 || b.hi > blockLen {
			return fmt.Errorf("block %d: run [%d, %d)", i, b.lo, b.hi)
		}
		for k := range b.items {
			if (k < int(b.lo) || k >= int(b.hi)) && b.items[k] != (item{}) {
				return fmt.Errorf("block %d: slot %d outside the run [%d, %d) not cleared", i, k, b.lo, b.hi)
			}
		}
	}
	for i := 1; i < len(o.blocks); i++ {
		a, b := o.blocks[i-1].len(), o.blocks[i].len()
		if a < blockLen/4 && b < blockLen/4 && a+b <= blockLen {
			return fmt.Errorf("blocks %d and %d hold %d and %d items: they should have merged", i-1, i, a, b)
		}
	}
	// ascendFrom agrees with the oracle from every item and from
	// between items.
	for k := range want {
		var from []item
		o.ascendFrom(o.key(want[k]), func(it item) bool { from = append(from, it); return true })
		if !slices.Equal(from, want[k:]) {
			return fmt.Errorf("ascendFrom(%s) yields %v", o.key(want[k]).id, o.ids(from))
		}
	}
	return nil
}

func (o *testOrder) ids(its []item) []string {
	out := make([]string, len(its))
	for i, it := range its {
		out[i] = fmt.Sprint(o.slab.at(it.h).ClassPriority, "/", o.key(it).id)
	}
	return out
}

func TestOrderAgreesWithASortedSlice(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 150
	params.MaxSize = 1500
	params.Rng.Seed(7)
	props := gopter.NewProperties(params)
	opGen := gopter.CombineGens(gen.IntRange(0, 6), gen.IntRange(0, 1<<20)).
		Map(func(v []any) orderOp { return orderOp{v[0].(int), v[1].(int)} })
	props.Property("ascend, ascendFrom and len match a sorted slice, and blocks stay well formed, through appends, prepends, inserts and deletes anywhere", prop.ForAll(
		func(ops []orderOp) string {
			o := newTestOrder()
			o.mixed = true
			var want []item
			next := 0
			for step, op := range ops {
				next++
				var x item
				switch op.kind {
				case 0, 1: // after every item: an append
					x = o.item(0, 500000+next)
				case 2: // before every item
					x = o.item(2, 500000-next)
				case 3: // anywhere: a class-1 item with a random id
					x = o.item(1, op.at%1000000*2+1)
					if _, found := slices.BinarySearchFunc(want, x, o.compare); found {
						continue
					}
				case 4, 5: // delete the first, the last, or anywhere
					if len(want) == 0 {
						continue
					}
					k := op.at % len(want)
					if op.kind == 5 && op.at%3 == 0 {
						k = 0
					}
					if !o.delete(o.key(want[k])) {
						return fmt.Sprintf("step %d: delete of %s found nothing", step, o.key(want[k]).id)
					}
					want = slices.Delete(want, k, k+1)
					continue
				case 6: // delete an absent item
					if o.delete(o.key(o.item(1, op.at*2))) {
						return fmt.Sprintf("step %d: delete of an absent item succeeded", step)
					}
					continue
				}
				o.insert(x)
				k, _ := slices.BinarySearchFunc(want, x, o.compare)
				want = slices.Insert(want, k, x)
			}
			if err := checkOrder(o, want); err != nil {
				return err.Error()
			}
			return ""
		},
		gen.SliceOf(opGen)))
	props.TestingRun(t)
}

// compare is the oracle's order of items: by their entries' class,
// higher first, then id.
func (o *testOrder) compare(a, b item) int {
	x, y := o.slab.at(a.h), o.slab.at(b.h)
	if c := cmp.Compare(y.ClassPriority, x.ClassPriority); c != 0 {
		return c
	}
	return cmp.Compare(x.Job.ID, y.Job.ID)
}

// orderHeapPerItem makes the items of a test order (their jobs and slab
// entries) with prepare, then runs what prepare returns, which inserts
// (and deletes) them, and returns the live heap that took per item the
// order holds at the end, wantLen.
func orderHeapPerItem(t *testing.T, wantLen int, prepare func(o *testOrder) func()) float64 {
	t.Helper()
	o := newTestOrder()
	fill := prepare(o)
	before := heapAlloc()
	fill()
	after := heapAlloc()
	if o.len() != wantLen {
		t.Fatalf("the order holds %d items, want %d", o.len(), wantLen)
	}
	runtime.KeepAlive(o)
	runtime.KeepAlive(fill) // and the items it holds, measured in before
	return (float64(after) - float64(before)) / float64(wantLen)
}

// items makes count items of class whose ids go from first by step.
func (o *testOrder) items(class int32, first, count, step int) []item {
	out := make([]item, count)
	for i := range out {
		out[i] = o.item(class, first+i*step)
	}
	return out
}

// An order costs at most 48 bytes per item however a queue fills it (an
// item is 40 bytes; a B-tree that splits nodes in the middle costs about
// 100): fed in order, prepended to, or with ascending runs arriving
// inside it (a higher class's jobs while lower ones wait). Drained but
// for one item in fifty spread along it, it costs at most 160 bytes per
// item left, not the room of every item it once held (2,000 bytes each).
func TestOrderTakesAtMost48BytesPerItemHoweverItFills(t *testing.T) {
	const n = 100 * blockLen
	insert := func(o *testOrder, its ...[]item) func() {
		return func() {
			for _, xs := range its {
				for _, x := range xs {
					o.insert(x)
				}
			}
		}
	}
	for _, c := range []struct {
		name    string
		budget  float64
		left    int
		prepare func(o *testOrder) func()
	}{
		{"appends", 48, n + 3, func(o *testOrder) func() { return insert(o, o.items(0, 0, n+3, 1)) }},
		{"prepends", 48, n, func(o *testOrder) func() { return insert(o, o.items(0, 900000, n, -1)) }},
		{"ascending runs inside", 48, n + n/2, func(o *testOrder) func() {
			return insert(o, o.items(0, 0, n/2, 1), o.items(1, 0, n, 1))
		}},
		{"drained but one in fifty", 160, n / 50, func(o *testOrder) func() {
			all := o.items(0, 0, n, 1)
			return func() {
				insert(o, all)()
				for i, x := range all {
					if i%50 != 0 && !o.delete(o.key(x)) {
						t.Fatalf("delete %s found nothing", o.key(x).id)
					}
				}
			}
		}},
	} {
		perItem := orderHeapPerItem(t, c.left, c.prepare)
		t.Logf("%s: %.1f bytes per item", c.name, perItem)
		if perItem > c.budget {
			t.Errorf("%s: %.1f bytes per item, want at most %.0f", c.name, perItem, c.budget)
		}
	}
}
