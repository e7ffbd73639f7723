package gang

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/flotilla-sched/flotilla"
)

// EvictionClosure extends a set of evictions to whole gangs: if a job of a
// gang is evicted, every other running member of that gang is evicted too,
// whichever node it runs on (Armada's scheduler, "Preemption", step
// 1). running are the running jobs; evicted[i] says whether running[i] is
// evicted, and is updated in place. Jobs outside gangs (empty Gang.ID) are
// left as they are. It returns how many jobs it newly marked.
//
// Bad input (evicted of another length than running, a nil running job) is
// reported as *flotilla.FieldError values joined with errors.Join, and
// evicted is then left unchanged.
//
// Cost: O(len(running)) with a map of the affected gang ids, allocated
// only when some evicted job is a gang member.
func EvictionClosure(running []*flotilla.Job, evicted []bool) (added int, err error) {
	var errs []error
	if len(evicted) != len(running) {
		errs = append(errs, flotilla.Errorf("evicted", strconv.Itoa(len(evicted)), flotilla.ErrInconsistent,
			"one flag per running job: %d running", len(running)))
	}
	for i, j := range running {
		if j == nil {
			errs = append(errs, flotilla.Errorf(fmt.Sprintf("running[%d]", i), "", flotilla.ErrRequired, "nil job"))
		}
	}
	if len(errs) > 0 {
		return 0, errors.Join(errs...)
	}
	var gangs map[string]struct{}
	for i, j := range running {
		if evicted[i] && j.Gang.ID != "" {
			if gangs == nil {
				gangs = make(map[string]struct{})
			}
			gangs[j.Gang.ID] = struct{}{}
		}
	}
	if gangs == nil {
		return 0, nil
	}
	for i, j := range running {
		if evicted[i] || j.Gang.ID == "" {
			continue
		}
		if _, ok := gangs[j.Gang.ID]; ok {
			evicted[i] = true
			added++
		}
	}
	return added, nil
}
