package fairness

// Bracket chooses among a fixed number of slots, as a Selector does among
// queues, by the same order (Compare): a knockout tournament, each inner
// match kept with its winner. Updating a slot replays only its path to
// the final: ⌈log₂ slots⌉ comparisons at most, against a heap's two per
// level when the best candidate sinks, which is the common case in
// progressive filling (the queue just served now asks for more). A queue
// tree's group keeps one Bracket over its children.
//
// Slots are 0 ≤ slot < the number given to NewBracket; each holds at
// most one Candidate, whose Queue field the Bracket sets to the slot. A
// Bracket allocates only in NewBracket. It is not safe for concurrent
// use.
type Bracket struct {
	preferLarge bool
	size        int         // leaves: the smallest power of two ≥ slots (at least 1)
	win         []int32     // win[i], 1 ≤ i < 2·size: the slot winning below node i, −1 none; leaves at size+slot
	cands       []Candidate // per slot
	n           int         // slots holding a candidate
}

// NewBracket returns an empty Bracket of slots slots (negative counts as
// 0) ordered as Compare orders with preferLarge.
func NewBracket(slots int, preferLarge bool) *Bracket {
	slots = max(slots, 0)
	size := 1
	for size < slots {
		size *= 2
	}
	b := &Bracket{preferLarge: preferLarge, size: size, win: make([]int32, 2*size), cands: make([]Candidate, slots)}
	for i := range b.win {
		b.win[i] = -1
	}
	return b
}

// Len is the number of slots holding a candidate.
func (b *Bracket) Len() int { return b.n }

// Contains reports whether slot holds a candidate.
func (b *Bracket) Contains(slot int) bool {
	return slot >= 0 && slot < len(b.cands) && b.win[b.size+slot] >= 0
}

// Update sets slot's candidate to *c (its Queue field set to slot; c is
// not kept) and replays the slot's matches. It panics if slot is out of
// range.
func (b *Bracket) Update(slot int, c *Candidate) {
	b.cands[slot] = *c
	b.cands[slot].Queue = slot
	leaf := b.size + slot
	if b.win[leaf] < 0 {
		b.n++
		b.win[leaf] = int32(slot)
	}
	b.replay(leaf, int32(slot))
}

// Remove empties slot and reports whether it held a candidate.
func (b *Bracket) Remove(slot int) bool {
	if !b.Contains(slot) {
		return false
	}
	leaf := b.size + slot
	b.win[leaf] = -1
	b.cands[slot] = Candidate{}
	b.n--
	b.replay(leaf, int32(slot))
	return true
}

// First returns the slot whose candidate goes first; false when the
// Bracket is empty.
func (b *Bracket) First() (slot int, ok bool) {
	w := b.win[1]
	return int(w), w >= 0
}

// Candidate returns slot's candidate (the zero Candidate when it holds
// none).
func (b *Bracket) Candidate(slot int) Candidate { return b.cands[slot] }

// replay recomputes the winners above leaf after slot changed. A match
// whose winner is neither changed nor slot decides nothing above it
// differently, so the replay stops there.
func (b *Bracket) replay(leaf int, slot int32) {
	for i := leaf / 2; i >= 1; i /= 2 {
		old := b.win[i]
		w := b.better(b.win[2*i], b.win[2*i+1])
		b.win[i] = w
		if w == old && w != slot {
			return
		}
	}
}

// better is the winner of a match between slots x and y (−1: empty).
func (b *Bracket) better(x, y int32) int32 {
	switch {
	case x < 0:
		return y
	case y < 0:
		return x
	case compare(&b.cands[y], &b.cands[x], b.preferLarge) < 0:
		return y
	}
	return x
}
