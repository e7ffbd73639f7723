package server

import (
	"iter"
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
)

// ids yields the table's job ids, in no particular order.
func (t *jobTable) ids() iter.Seq[string] {
	return func(yield func(string) bool) {
		for j := range t.all() {
			if !yield(j.id()) {
				return
			}
		}
	}
}

// TestJobTableAgreesWithAMap checks get, put, del, len and all against a
// map over random sequences, holes and their reuse included.
func TestJobTableAgreesWithAMap(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 200
	params.MaxSize = 300
	params.Rng.Seed(5)
	props := gopter.NewProperties(params)
	props.Property("the table holds exactly the jobs put and not deleted", prop.ForAll(
		func(ops []int) bool {
			var tab jobTable
			oracle := map[string]*job{}
			for _, o := range ops {
				id := "j" + strconv.Itoa(o/2)
				if o%2 == 0 {
					if oracle[id] == nil {
						j := newJob(backend.JobSpec{Job: &flotilla.Job{ID: id}})
						tab.put(j)
						oracle[id] = j
					}
				} else {
					tab.del(id)
					delete(oracle, id)
				}
				if tab.len() != len(oracle) {
					return false
				}
			}
			for k := range 50 {
				id := "j" + strconv.Itoa(k)
				if tab.get(id) != oracle[id] {
					return false
				}
			}
			return slices.Equal(slices.Sorted(tab.ids()), slices.Sorted(maps.Keys(oracle)))
		},
		gen.SliceOf(gen.IntRange(0, 99)),
	))
	props.TestingRun(t)
}
