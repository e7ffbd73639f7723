package queue

// slabShift sets the block length of a Store's entries: 1024 (48 KiB), so
// that a store of a million jobs makes a thousand allocations rather than
// a million, and the garbage collector sees a thousand objects.
const (
	slabShift = 10
	slabLen   = 1 << slabShift
)

// slab holds a Store's entries in blocks that never move, each entry at a
// handle (its position); the handles of removed entries are reused by
// later Adds, so the slab is as large as the most jobs ever stored at
// once.
type slab struct {
	blocks [][]stored
	n      int      // handles given out so far (fresh ones are n, n+1, …)
	free   []uint32 // handles of removed entries
}

// at returns the entry of handle h.
func (sl *slab) at(h uint32) *stored { return &sl.blocks[h>>slabShift][h&(slabLen-1)] }

// alloc returns the handle of an unused (zero) entry.
func (sl *slab) alloc() uint32 {
	if n := len(sl.free); n > 0 {
		h := sl.free[n-1]
		sl.free = sl.free[:n-1]
		return h
	}
	if sl.n == len(sl.blocks)*slabLen {
		sl.blocks = append(sl.blocks, make([]stored, slabLen))
	}
	sl.n++
	return uint32(sl.n - 1)
}

// release zeroes the entry of h (it keeps no job alive) and makes h free
// for reuse.
func (sl *slab) release(h uint32) {
	*sl.at(h) = stored{}
	sl.free = append(sl.free, h)
}
