package flotilla_test

import (
	"math"
	"testing"

	"github.com/flotilla-sched/flotilla"
)

// PriorityClass.Validate says "Any Priority is valid", but scheduler.New
// rejects math.MinInt32 ("reserved for evicted jobs"), so a class that
// validates here cannot be configured.
func TestReviewPriorityClassReservedPriority(t *testing.T) {
	pc := flotilla.PriorityClass{Name: "x", Priority: math.MinInt32}
	if err := pc.Validate(); err == nil {
		t.Errorf("Validate accepted priority %d, which the scheduler rejects", pc.Priority)
	}
}
