package preempt_test

import (
	"fmt"

	"github.com/flotilla-sched/flotilla/preempt"
)

// Making room for 8 cores on a full node among preemptible jobs of 2 and 8
// cores, in victim order: the 2-core job is taken first but is not enough,
// and once the 8-core job goes it can stay.
func ExampleFewest() {
	sizes := []int{2, 8}
	free, need := 0, 8
	victims := preempt.Fewest(len(sizes), func() bool { return free >= need },
		func(i int) { free += sizes[i] }, func(i int) { free -= sizes[i] }, nil)
	fmt.Println("victims:", victims, "free:", free)
	// Output:
	// victims: [1] free: 8
}

func ExampleEvictable() {
	fmt.Println(preempt.Evictable(0.6, 0.5, 0.5, 1)) // above its fair share
	fmt.Println(preempt.Evictable(0.6, 0.5, 0.5, 2)) // protected up to 2 × fair share
	// Output:
	// true
	// false
}
