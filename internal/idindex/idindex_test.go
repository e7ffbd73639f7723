package idindex

import (
	"strconv"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
)

// op is one step of the property: insert, delete or find key k.
type op struct {
	kind, k int
}

// TestIndexAgreesWithAMap checks Find, Insert, Delete, Len, Reserve and
// Clear against a map over random sequences on a small key space, so that
// probe runs collide, wrap around the table's end and are shifted back by
// deletions.
func TestIndexAgreesWithAMap(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 300
	params.MaxSize = 600
	params.Rng.Seed(9)
	props := gopter.NewProperties(params)
	opGen := gopter.CombineGens(gen.IntRange(0, 9), gen.IntRange(0, 59)).
		Map(func(v []any) op { return op{v[0].(int), v[1].(int)} })
	props.Property("every key inserted and not deleted is found under its handle, and no other", prop.ForAll(
		func(ops []op) bool {
			var x Index
			var keys []string // handle → key
			keyOf := func(h uint32) string { return keys[h] }
			oracle := map[string]uint32{}
			for _, o := range ops {
				key := "job-" + strconv.Itoa(o.k)
				switch {
				case o.kind < 4: // insert when absent
					if _, ok := oracle[key]; ok {
						continue
					}
					h := uint32(len(keys))
					keys = append(keys, key)
					x.Insert(key, h)
					oracle[key] = h
				case o.kind < 7:
					h, ok := x.Delete(key, keyOf)
					want, wantOK := oracle[key]
					if ok != wantOK || h != want {
						return false
					}
					delete(oracle, key)
				case o.kind == 7:
					x.Reserve(o.k * 3)
				case o.kind == 8 && o.k == 0:
					x.Clear()
					clear(oracle)
				}
				if x.Len() != len(oracle) {
					return false
				}
				for k := range 60 {
					key := "job-" + strconv.Itoa(k)
					h, ok := x.Find(key, keyOf)
					want, wantOK := oracle[key]
					if ok != wantOK || h != want {
						return false
					}
				}
			}
			return true
		},
		gen.SliceOf(opGen),
	))
	props.TestingRun(t)
}

// TestIndexHashedMethodsAgreeWithTheKeyed checks that a key's Hash given
// to FindHashed and InsertHashed files and finds it as Find and Insert do.
func TestIndexHashedMethodsAgreeWithTheKeyed(t *testing.T) {
	var x Index
	keys := []string{"a", "b", "c"}
	keyOf := func(h uint32) string { return keys[h] }
	x.InsertHashed(x.Hash("a"), 0)
	x.Insert("b", 1)
	for i, k := range keys[:2] {
		if h, ok := x.FindHashed(x.Hash(k), k, keyOf); !ok || h != uint32(i) {
			t.Fatalf("FindHashed(%q) = %d, %v; want %d, true", k, h, ok, i)
		}
		if h, ok := x.Find(k, keyOf); !ok || h != uint32(i) {
			t.Fatalf("Find(%q) = %d, %v; want %d, true", k, h, ok, i)
		}
	}
	if _, ok := x.Find("c", keyOf); ok {
		t.Fatal("found a key never inserted")
	}
}

// TestIndexReserveGrowsOnce checks that after Reserve(n) inserting n keys
// does not reallocate the table.
func TestIndexReserveGrowsOnce(t *testing.T) {
	var x Index
	x.Reserve(1000)
	size := len(x.slots)
	for i := range 1000 {
		x.Insert(strconv.Itoa(i), uint32(i))
	}
	if len(x.slots) != size {
		t.Fatalf("table grew from %d to %d slots after Reserve", size, len(x.slots))
	}
}

// BenchmarkIndexInsert1M inserts a million 26-byte keys.
func BenchmarkIndexInsert1M(b *testing.B) {
	keys := make([]string, 1_000_000)
	for i := range keys {
		keys[i] = "01JD" + strconv.FormatInt(int64(i)*7919+1_000_000_000_000_000, 36)
	}
	keyOf := func(h uint32) string { return keys[h] }
	b.ResetTimer()
	for range b.N {
		var x Index
		for i, k := range keys {
			x.Insert(k, uint32(i))
		}
		if _, ok := x.Find(keys[0], keyOf); !ok {
			b.Fatal("lost a key")
		}
	}
}

// TestIndexPrefetchChangesNothing checks that Prefetch, on an empty
// index and on hashes present and absent, leaves every lookup as it was.
func TestIndexPrefetchChangesNothing(t *testing.T) {
	var x Index
	keys := []string{"a", "b", "c", "d"}
	keyOf := func(h uint32) string { return keys[h] }
	_ = x.Prefetch([]uint32{x.Hash("a")}) // empty: no table yet
	for i, k := range keys[:3] {
		x.Insert(k, uint32(i))
	}
	hashes := []uint32{x.Hash("a"), x.Hash("b"), x.Hash("c"), x.Hash("d")}
	_ = x.Prefetch(hashes)
	for i, k := range keys {
		h, ok := x.FindHashed(hashes[i], k, keyOf)
		if want := i < 3; ok != want || (ok && h != uint32(i)) {
			t.Errorf("after Prefetch, %q finds (%d, %v), want (%d, %v)", k, h, ok, i, want)
		}
	}
	if x.Len() != 3 {
		t.Errorf("Len %d after Prefetch, want 3", x.Len())
	}
}
