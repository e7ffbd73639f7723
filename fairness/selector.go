package fairness

import (
	"cmp"
	"math"
	"strings"
)

// Candidate is one queue's next gang, as progressive filling sees it. The
// scheduler builds one per queue (NewCandidate does the arithmetic) and keeps
// them in a Selector.
type Candidate struct {
	// Queue is the queue's dense index, 0 ≤ Queue < number of queues. A
	// Selector holds at most one candidate per queue.
	Queue int
	// ClassPriority is the gang's priority-class priority (the lowest over
	// its members). Higher goes first, before any fairness consideration.
	ClassPriority int32
	// WithinGuarantee is the queue tree's tier (docs/queue-tree.md):
	// set when the child has a non-zero guarantee and would stay within it
	// in every resource with this gang. Such candidates go before the
	// others of their class priority. Never set for a flat list of queues.
	WithinGuarantee bool
	// Fraction is the fraction of its fair share the queue would hold after
	// this gang is scheduled: (share + gang share) / fair share. Progressive
	// filling picks the smallest.
	Fraction float64
	// Current is the fraction of its fair share the queue holds now, without
	// the gang: share / fair share. Used only by prefer-large ordering.
	Current float64
	// Budget is the queue's demand-capped (adjusted) fair share in the same
	// unit: adjusted fair share / fair share. A candidate with Fraction ≤
	// Budget keeps its queue within budget. Used only by prefer-large
	// ordering.
	Budget float64
	// Size measures the gang for prefer-large ordering: larger goes first
	// among within-budget queues holding equal Current. NewCandidate sets it
	// to gang share × fair share (see there). Ignored otherwise.
	Size float64
	// Name is the queue's name, the final tie-break (ascending).
	Name string
}

// NewCandidate computes a Candidate from shares, all fractions of the
// cluster (as Model.Share returns them): share is what the queue holds now,
// gangShare what its next gang costs, fairShare and adjustedFairShare the
// queue's results from FairShares and AdjustedFairShares.
//
//	Fraction = (share + gangShare) / fairShare
//	Current  = share / fairShare
//	Budget   = adjustedFairShare / fairShare
//	Size     = gangShare × fairShare
//
// Size follows Armada, which multiplies the gang's unweighted cost by the
// queue's weight so that the same gang looks larger in a heavier queue; since
// fair share is weight / Σ active weights, the same divisor for every queue of
// one selection, multiplying by fair share orders candidates identically.
// A queue with no fair share (fairShare ≤ 0) gets Fraction and Current +Inf
// and Budget 0: it goes after every queue that has one.
func NewCandidate(queue int, name string, classPriority int32, share, gangShare, fairShare, adjustedFairShare float64) Candidate {
	c := Candidate{Queue: queue, Name: name, ClassPriority: classPriority}
	if fairShare <= 0 {
		c.Fraction, c.Current = math.Inf(1), math.Inf(1)
		return c
	}
	c.Fraction = (share + gangShare) / fairShare
	c.Current = share / fairShare
	c.Budget = adjustedFairShare / fairShare
	c.Size = gangShare * fairShare
	return c
}

// Compare orders candidates for progressive filling: it returns a negative
// number when a goes before b, positive when after, 0 only for candidates
// equal in every compared field (same Queue). The order is total and
// deterministic:
//
//  1. higher ClassPriority first, then WithinGuarantee first;
//  2. without preferLarge: smaller Fraction first — the queue that would
//     hold the smallest fraction of its fair share after its next gang
//     (Armada's job scheduling order);
//  3. with preferLarge, Armada's enablePreferLargeJobOrdering (experimental
//     in Armada, QueueCandidateGangIteratorPQ.Less): candidates that keep
//     their queue within budget (Fraction ≤ Budget) go before those that do
//     not. Among within-budget candidates, the queue holding less now goes
//     first (smaller Current) and, at equal Current — as on an empty or
//     fully evicted cluster, where every Current is 0 — the larger gang
//     (larger Size). Among over-budget candidates, smaller Fraction first,
//     as without preferLarge. Note that within budget the order looks at
//     Current, not Fraction: a queue with a large next gang is not pushed
//     behind queues with small ones, and small gangs of different queues
//     still interleave;
//  4. then Name ascending, then Queue ascending.
//
// Floating-point fields are compared with cmp.Compare, so even NaN yields a
// consistent (if meaningless) order; callers should not produce NaN.
func Compare(a, b Candidate, preferLarge bool) int {
	return compare(&a, &b, preferLarge)
}

func compare(a, b *Candidate, preferLarge bool) int {
	if a.ClassPriority != b.ClassPriority {
		if a.ClassPriority > b.ClassPriority {
			return -1
		}
		return 1
	}
	if a.WithinGuarantee != b.WithinGuarantee {
		if a.WithinGuarantee {
			return -1
		}
		return 1
	}
	if preferLarge {
		aIn, bIn := a.Fraction <= a.Budget, b.Fraction <= b.Budget
		switch {
		case aIn && bIn:
			if c := cmp.Compare(a.Current, b.Current); c != 0 {
				return c
			}
			if c := cmp.Compare(b.Size, a.Size); c != 0 {
				return c
			}
		case aIn:
			return -1
		case bIn:
			return 1
		default:
			if c := cmp.Compare(a.Fraction, b.Fraction); c != 0 {
				return c
			}
		}
	} else if c := cmp.Compare(a.Fraction, b.Fraction); c != 0 {
		return c
	}
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return cmp.Compare(a.Queue, b.Queue)
}

// Selector chooses the queue whose next gang progressive filling tries next:
// an indexed binary min-heap of at most one Candidate per queue, ordered by
// Compare. The scheduler Peeks the best candidate, tries its gang, then
// Updates that queue with its following gang (its Fraction now includes the
// gang just placed) or Removes it when the queue has nothing left to try.
//
// Queues are dense indexes: the Selector keeps a position table as long as
// the largest queue index seen. Push, Update, Remove and Pop take O(log n)
// comparisons, Peek, Contains and Len O(1); none allocates once the tables
// have grown to the number of queues (Reset keeps them for the next cycle).
// A Selector is not safe for concurrent use.
type Selector struct {
	preferLarge bool
	heap        []int       // queue indexes in heap order
	pos         []int       // pos[q] = 1 + position of q in heap; 0 when absent
	cands       []Candidate // cands[q] = q's candidate while present
}

// NewSelector returns an empty Selector. preferLarge selects Armada's
// prefer-large-jobs ordering (see Compare); false is plain progressive
// filling, the default.
func NewSelector(preferLarge bool) *Selector {
	return &Selector{preferLarge: preferLarge}
}

// Len is the number of queues with a candidate.
func (s *Selector) Len() int { return len(s.heap) }

// Contains reports whether queue has a candidate.
func (s *Selector) Contains(queue int) bool {
	return queue >= 0 && queue < len(s.pos) && s.pos[queue] != 0
}

// Push adds c under c.Queue, replacing the queue's candidate if it has one.
// It panics if c.Queue is negative.
func (s *Selector) Push(c Candidate) { s.Update(c.Queue, c) }

// Update sets queue's candidate to c (c.Queue is set to queue), adding it if
// the queue had none, and restores the order. It panics if queue is negative.
func (s *Selector) Update(queue int, c Candidate) {
	s.update(queue, &c)
}

func (s *Selector) update(queue int, c *Candidate) {
	if queue >= len(s.pos) {
		s.grow(queue + 1)
	}
	s.cands[queue] = *c
	s.cands[queue].Queue = queue
	if p := s.pos[queue]; p != 0 {
		s.fix(p - 1)
		return
	}
	s.heap = append(s.heap, queue)
	s.pos[queue] = len(s.heap)
	s.up(len(s.heap) - 1)
}

// Remove drops queue's candidate and reports whether it had one.
func (s *Selector) Remove(queue int) bool {
	if !s.Contains(queue) {
		return false
	}
	s.removeAt(s.pos[queue] - 1)
	return true
}

// Peek returns the candidate that goes first, leaving it in place; false when
// the Selector is empty.
func (s *Selector) Peek() (Candidate, bool) {
	if len(s.heap) == 0 {
		return Candidate{}, false
	}
	return s.cands[s.heap[0]], true
}

// First returns the queue whose candidate goes first, without copying the
// candidate; false when the Selector is empty.
func (s *Selector) First() (queue int, ok bool) {
	if len(s.heap) == 0 {
		return 0, false
	}
	return s.heap[0], true
}

// Pop removes and returns the candidate that goes first; false when the
// Selector is empty.
func (s *Selector) Pop() (Candidate, bool) {
	if len(s.heap) == 0 {
		return Candidate{}, false
	}
	c := s.cands[s.heap[0]]
	s.removeAt(0)
	return c, true
}

// Reset empties the Selector, keeping its tables for reuse. O(Len).
func (s *Selector) Reset() {
	for _, q := range s.heap {
		s.pos[q] = 0
		s.cands[q] = Candidate{}
	}
	s.heap = s.heap[:0]
}

func (s *Selector) grow(n int) {
	s.pos = append(s.pos, make([]int, n-len(s.pos))...)
	s.cands = append(s.cands, make([]Candidate, n-len(s.cands))...)
}

func (s *Selector) less(i, j int) bool {
	return compare(&s.cands[s.heap[i]], &s.cands[s.heap[j]], s.preferLarge) < 0
}

func (s *Selector) swap(i, j int) {
	h := s.heap
	h[i], h[j] = h[j], h[i]
	s.pos[h[i]] = i + 1
	s.pos[h[j]] = j + 1
}

func (s *Selector) removeAt(i int) {
	last := len(s.heap) - 1
	q := s.heap[i]
	if i != last {
		s.swap(i, last)
	}
	s.heap = s.heap[:last]
	s.pos[q] = 0
	s.cands[q] = Candidate{}
	if i != last {
		s.fix(i)
	}
}

func (s *Selector) fix(i int) {
	if !s.down(i) {
		s.up(i)
	}
}

func (s *Selector) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !s.less(i, parent) {
			return
		}
		s.swap(i, parent)
		i = parent
	}
}

// down sifts i towards the leaves and reports whether it moved.
func (s *Selector) down(i int) bool {
	start, n := i, len(s.heap)
	for {
		child := 2*i + 1
		if child >= n {
			break
		}
		if r := child + 1; r < n && s.less(r, child) {
			child = r
		}
		if !s.less(child, i) {
			break
		}
		s.swap(i, child)
		i = child
	}
	return i > start
}
