package preempt

import (
	"cmp"
	"strings"
	"time"
)

// Evictable reports whether a queue holding share of the cluster, with the
// given fair share and adjusted (demand-capped) fair share, may have its
// preemptible jobs evicted to fair share: its share exceeds protected ×
// max(fair, adjusted). With protected 0 any queue holding anything is
// evictable; with protected ≥ 1 a queue within its fair share never is.
func Evictable(share, fair, adjusted, protected float64) bool {
	return share > protected*max(fair, adjusted)
}

// Victim describes a running job urgency preemption may take.
type Victim struct {
	// Level is the priority level the job holds capacity at: lower goes
	// first.
	Level int
	// QueueFraction is the job's queue's share over its fair share: among
	// equal levels, the queue furthest above its fair share goes first, as
	// its jobs would be rescheduled last.
	QueueFraction float64
	// Start is when the job started: the latest started goes first.
	Start time.Time
	// ID breaks the remaining ties, the greater first.
	ID string
}

// Compare orders victims: lowest level first; then the queue furthest
// above its fair share; then the latest started; then the greatest ID. It
// is a total order for distinct IDs.
func Compare(a, b *Victim) int {
	if c := cmp.Compare(a.Level, b.Level); c != 0 {
		return c
	}
	if c := cmp.Compare(b.QueueFraction, a.QueueFraction); c != 0 {
		return c
	}
	if c := b.Start.Compare(a.Start); c != 0 {
		return c
	}
	return strings.Compare(b.ID, a.ID)
}

// Fewest takes candidates 0..n−1, in order, until fits reports room, then
// gives back, latest taken first, every one whose return keeps fits true.
// take and give must be exact inverses. It returns, ascending, the indices
// kept as victims, reusing out's storage; when even all n do not make room
// it returns all of them (the caller's search guarantees that removing
// every candidate suffices).
func Fewest(n int, fits func() bool, take, give func(i int), out []int) []int {
	out = out[:0]
	for i := 0; i < n && !fits(); i++ {
		take(i)
		out = append(out, i)
	}
	for k := len(out) - 1; k >= 0; k-- {
		give(out[k])
		if fits() {
			out = append(out[:k], out[k+1:]...)
			continue
		}
		take(out[k])
	}
	return out
}
