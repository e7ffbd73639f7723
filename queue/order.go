package queue

import "slices"

// blockLen is the most items an order block holds: 153 items of 40 bytes
// and the block's bounds fill a 6 KiB allocation size class exactly.
const blockLen = 153

// order keeps a queue's items sorted as Less sorts their entries: a list of blocks, each
// holding a sorted run at items[lo:hi] of a fixed array, every item of a
// block before every item of the next.
//
// It is built for how queues grow: a job submitted after the others
// sorts after them (same class and priority, later submit time), so most
// inserts go past the last item. Those fill the last block and then open
// a new one, and the blocks of a queue fed in order stay full: 40 bytes
// per job, where a B-tree that splits nodes in the middle
// (github.com/google/btree, which this replaces) leaves them half full and
// costs about 100 bytes per job, and an append costs no search. Inserts
// and deletes elsewhere move at most half a block (a block's run can grow
// or shrink at either end), plus, when a block splits (in the middle, as
// a B-tree node does) or empties, the list of block pointers; an insert
// between two blocks goes to the end of the first when it has room, so
// that ascending runs inside the order fill blocks too. A block that falls below a quarter full merges
// into a neighbour with room, so sparse blocks stay bounded after
// deletes.
//
// Items name their entries by handle in the store's slab (Cursor and
// Store.Ascend read entries there). The zero order is empty and ready to
// use. Reads (ascend, ascendFrom, len) do not modify it and may run
// concurrently with each other.
type order struct {
	blocks []*block
	n      int
}

// before reports whether a sorts before b (Less).
func before(a, b *item) bool {
	switch {
	case a.rank != b.rank:
		return a.rank < b.rank
	case a.sec != b.sec:
		return a.sec < b.sec
	case a.nsec != b.nsec:
		return a.nsec < b.nsec
	}
	return a.id < b.id
}

// block is one run of an order; it is never empty while listed.
type block struct {
	lo, hi int32
	items  [blockLen]item
}

func (b *block) len() int    { return int(b.hi - b.lo) }
func (b *block) last() *item { return &b.items[b.hi-1] }

// search returns the position in b's run of the first item not less than
// x (hi when every item is less).
func (b *block) search(x *item) int {
	lo, hi := int(b.lo), int(b.hi)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if before(&b.items[m], x) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// insertAt puts x at position pos of b's run (lo ≤ pos ≤ hi), moving the
// shorter side that has room; b must not be full.
func (b *block) insertAt(pos int, x item) {
	lo, hi := int(b.lo), int(b.hi)
	right := hi < blockLen && (lo == 0 || hi-pos <= pos-lo)
	if right {
		copy(b.items[pos+1:hi+1], b.items[pos:hi])
		b.hi++
	} else {
		copy(b.items[lo-1:pos-1], b.items[lo:pos])
		b.lo--
		pos--
	}
	b.items[pos] = x
}

// deleteAt removes the item at position pos of b's run, moving the
// shorter side, and clears the freed slot (it must not keep a job alive).
func (b *block) deleteAt(pos int) {
	lo, hi := int(b.lo), int(b.hi)
	if pos-lo < hi-1-pos {
		copy(b.items[lo+1:pos+1], b.items[lo:pos])
		b.items[lo] = item{}
		b.lo++
	} else {
		copy(b.items[pos:hi-1], b.items[pos+1:hi])
		b.items[hi-1] = item{}
		b.hi--
	}
}

// len is the number of items.
func (o *order) len() int { return o.n }

// find returns the index of the first block whose last item is not less
// than x: the block x belongs in, or len(o.blocks) when x is past them
// all.
func (o *order) find(x *item) int {
	lo, hi := 0, len(o.blocks)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if before(o.blocks[m].last(), x) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// insert adds x, which must not be the job of an item in o.
func (o *order) insert(x item) {
	o.n++
	nb := len(o.blocks)
	if nb == 0 || before(o.blocks[nb-1].last(), &x) {
		// Past every item: the common case, an append.
		if nb > 0 {
			if b := o.blocks[nb-1]; b.hi < blockLen {
				b.items[b.hi] = x
				b.hi++
				return
			}
		}
		b := &block{lo: 0, hi: 1}
		b.items[0] = x
		o.blocks = append(o.blocks, b)
		return
	}
	i := o.find(&x)
	b := o.blocks[i]
	pos := b.search(&x)
	if pos == int(b.lo) && i > 0 {
		// x goes between two blocks: at the end of the previous one
		// when it has room, so that a run of ascending inserts inside
		// the order fills blocks as appends do.
		if p := o.blocks[i-1]; p.len() < blockLen {
			p.insertAt(int(p.hi), x)
			return
		}
	}
	if b.len() < blockLen {
		b.insertAt(pos, x)
		return
	}
	nw := &block{}
	if pos == int(b.lo) {
		// Before a full block with no room before it: a block of its
		// own, filled from the back so that more items before it fit
		// without moving (as descending inserts at the head bring).
		nw.lo, nw.hi = blockLen-1, blockLen
		nw.items[blockLen-1] = x
		o.blocks = slices.Insert(o.blocks, i, nw)
		return
	}
	// Inside a full block: split it in the middle (a full block's run is
	// its whole array).
	const mid = blockLen / 2
	nw.hi = int32(copy(nw.items[:], b.items[mid:]))
	clear(b.items[mid:])
	b.hi = mid
	if pos <= mid {
		b.insertAt(pos, x)
	} else {
		nw.insertAt(pos-mid, x)
	}
	o.blocks = slices.Insert(o.blocks, i+1, nw)
}

// delete removes the item of x's job and reports whether there was one.
func (o *order) delete(x *item) bool {
	i := o.find(x)
	if i == len(o.blocks) {
		return false
	}
	b := o.blocks[i]
	pos := b.search(x)
	if pos == int(b.hi) || b.items[pos].id != x.id {
		return false
	}
	b.deleteAt(pos)
	o.n--
	switch {
	case b.len() == 0:
		o.removeBlock(i)
	case b.len() < blockLen/4:
		o.merge(i)
	}
	return true
}

// removeBlock takes block i out of the list. The first block goes by
// reslicing, so that a queue consumed from its head (as cycles lease its
// first jobs) does not move the list each time.
func (o *order) removeBlock(i int) {
	if i == 0 {
		o.blocks[0] = nil
		o.blocks = o.blocks[1:]
		return
	}
	o.blocks = slices.Delete(o.blocks, i, i+1)
}

// merge moves the items of sparse block i into a neighbour that has room
// for them (the previous one first) and drops block i; when neither has,
// it leaves the blocks as they are: each neighbour is then more than
// three quarters full.
func (o *order) merge(i int) {
	b := o.blocks[i]
	if i > 0 {
		if p := o.blocks[i-1]; p.len()+b.len() <= blockLen {
			if int(p.hi)+b.len() > blockLen {
				p.compactFront()
			}
			p.hi += int32(copy(p.items[p.hi:], b.items[b.lo:b.hi]))
			o.removeBlock(i)
			return
		}
	}
	if i+1 < len(o.blocks) {
		if nx := o.blocks[i+1]; nx.len()+b.len() <= blockLen {
			if int(nx.lo) < b.len() {
				nx.compactBack()
			}
			nx.lo -= int32(b.len())
			copy(nx.items[nx.lo:], b.items[b.lo:b.hi])
			o.removeBlock(i)
		}
	}
}

// compactFront moves b's run to the front of its array.
func (b *block) compactFront() {
	n := copy(b.items[:], b.items[b.lo:b.hi])
	clear(b.items[n:b.hi])
	b.lo, b.hi = 0, int32(n)
}

// compactBack moves b's run to the back of its array.
func (b *block) compactBack() {
	n := b.len()
	copy(b.items[blockLen-n:], b.items[b.lo:b.hi])
	clear(b.items[b.lo : blockLen-n])
	b.lo, b.hi = int32(blockLen-n), blockLen
}

// ascend calls fn for every item in order until fn returns false.
func (o *order) ascend(fn func(item) bool) {
	for _, b := range o.blocks {
		for _, it := range b.items[b.lo:b.hi] {
			if !fn(it) {
				return
			}
		}
	}
}

// ascendFrom calls fn, in order, for the items not less than pivot until
// fn returns false.
func (o *order) ascendFrom(pivot *item, fn func(item) bool) {
	i := o.find(pivot)
	if i == len(o.blocks) {
		return
	}
	b := o.blocks[i]
	for _, it := range b.items[b.search(pivot):b.hi] {
		if !fn(it) {
			return
		}
	}
	for _, b := range o.blocks[i+1:] {
		for _, it := range b.items[b.lo:b.hi] {
			if !fn(it) {
				return
			}
		}
	}
}
