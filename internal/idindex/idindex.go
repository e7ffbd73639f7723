package idindex

import (
	"hash/maphash"
	"math/bits"
)

// minSlots is the size of a table's first allocation.
const minSlots = 16

// Index maps string keys to uint32 handles. The zero Index is empty and
// ready to use.
type Index struct {
	// slots are 0 when empty, else hash<<32 | (handle+1); len(slots) is a
	// power of two (or 0).
	slots  []uint64
	n      int
	shift  uint8 // 32 - log2(len(slots))
	seeded bool
	seed   maphash.Seed
}

// Len is the number of entries.
func (x *Index) Len() int { return x.n }

// Hash is the hash the index files key under: pass it to the *Hashed
// methods to hash a key once for several lookups of the same index. On
// an index that never held an entry it draws the index's seed, a write:
// readers that may run concurrently check Len first (as Find does).
func (x *Index) Hash(key string) uint32 {
	if !x.seeded {
		x.seed, x.seeded = maphash.MakeSeed(), true
	}
	return uint32(maphash.String(x.seed, key))
}

// home is the first slot a hash probes: its high bits (Fibonacci hashing
// spreads hashes that differ only in low bits).
func (x *Index) home(h uint32) int {
	return int((h * 0x9E3779B9) >> x.shift)
}

// Find returns the handle of key; false when it is absent. keyOf returns
// the key of a handle in the index.
func (x *Index) Find(key string, keyOf func(uint32) string) (uint32, bool) {
	if x.n == 0 {
		return 0, false
	}
	return x.FindHashed(x.Hash(key), key, keyOf)
}

// FindHashed is Find with the key's Hash given.
func (x *Index) FindHashed(h uint32, key string, keyOf func(uint32) string) (uint32, bool) {
	if x.n == 0 {
		return 0, false
	}
	mask := len(x.slots) - 1
	for i := x.home(h); ; i = (i + 1) & mask {
		s := x.slots[i]
		if s == 0 {
			return 0, false
		}
		if uint32(s>>32) == h {
			if v := uint32(s) - 1; keyOf(v) == key {
				return v, true
			}
		}
	}
}

// Prefetch reads the first slot each hash probes, so that the lookups
// and inserts of those hashes that follow find their slots in cache. A
// probe into a table larger than the cache waits for memory; one loop of
// independent reads lets the processor have many of them in flight at
// once, where probes one after another would each wait in turn. It
// changes nothing and may run concurrently with Find; its result has no
// meaning (it keeps the reads from being optimised away).
//
//go:noinline
func (x *Index) Prefetch(hashes []uint32) uint64 {
	if len(x.slots) == 0 {
		return 0
	}
	var sum uint64
	for _, h := range hashes {
		sum += x.slots[x.home(h)]
	}
	return sum
}

// Insert files handle (below math.MaxUint32) under key, which must not
// be in the index (Find first when it may be: Insert does not compare
// keys, and a key inserted twice is found under either handle).
func (x *Index) Insert(key string, handle uint32) {
	x.InsertHashed(x.Hash(key), handle)
}

// InsertHashed is Insert with the key's Hash given.
func (x *Index) InsertHashed(h uint32, handle uint32) {
	if (x.n+1)*4 > len(x.slots)*3 {
		x.grow(max(2*len(x.slots), minSlots))
	}
	x.put(uint64(h)<<32 | (uint64(handle) + 1))
	x.n++
}

// put places a slot value into the first empty slot of its probe.
func (x *Index) put(s uint64) {
	mask := len(x.slots) - 1
	i := x.home(uint32(s >> 32))
	for x.slots[i] != 0 {
		i = (i + 1) & mask
	}
	x.slots[i] = s
}

// Reserve makes room for n entries in all, so that inserting up to that
// many grows the table at most once (now).
func (x *Index) Reserve(n int) {
	want := minSlots
	for n*4 > want*3 {
		want *= 2
	}
	if want > len(x.slots) {
		x.grow(want)
	}
}

// grow moves the entries into a table of size slots (a power of two,
// larger than the current one). A home is the top bits of a hash, so the
// old table, read from just after an empty slot (where no probe run
// wraps), yields entries in order of home, and the new table is written
// front to back rather than at random.
func (x *Index) grow(size int) {
	old := x.slots
	x.slots = make([]uint64, size)
	x.shift = uint8(32 - bits.TrailingZeros(uint(size)))
	if x.n == 0 {
		return
	}
	start := 0
	for old[start] != 0 {
		start++
	}
	mask := len(old) - 1
	for k := 1; k <= len(old); k++ {
		if s := old[(start+k)&mask]; s != 0 {
			x.put(s)
		}
	}
}

// Delete removes key and returns its handle; false when it is absent.
func (x *Index) Delete(key string, keyOf func(uint32) string) (uint32, bool) {
	if x.n == 0 {
		return 0, false
	}
	h := x.Hash(key)
	mask := len(x.slots) - 1
	i := x.home(h)
	for {
		s := x.slots[i]
		if s == 0 {
			return 0, false
		}
		if uint32(s>>32) == h {
			if v := uint32(s) - 1; keyOf(v) == key {
				x.remove(i)
				return v, true
			}
		}
		i = (i + 1) & mask
	}
}

// remove empties slot i, shifting back the entries of its probe run that
// would no longer be found past the hole.
func (x *Index) remove(i int) {
	mask := len(x.slots) - 1
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		s := x.slots[j]
		if s == 0 {
			break
		}
		// s may fill the hole at i when its home is not cyclically in
		// (i, j].
		if (j-x.home(uint32(s>>32)))&mask >= (j-i)&mask {
			x.slots[i] = s
			i = j
		}
	}
	x.slots[i] = 0
	x.n--
}

// Clear removes every entry, keeping the table's room.
func (x *Index) Clear() {
	clear(x.slots)
	x.n = 0
}
