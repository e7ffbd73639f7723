package queue

// cursorBatch is how many entries a Cursor reads from the tree at a time.
const cursorBatch = 64

// Cursor returns a pull iterator over one queue in scheduling order. It
// allocates the cursor and its buffer once; reuse it with Reset to iterate
// without allocating.
func (s *Store) Cursor(queue string) *Cursor {
	c := new(Cursor)
	c.Reset(s, queue)
	return c
}

// Cursor walks one queue in scheduling order. It reads the tree
// cursorBatch (64) entries at a time into a buffer it reuses, so Next costs
// no allocation: amortised O(1) per entry plus O(log n) per batch.
//
// A Cursor is valid while the store is not modified; after Add, Remove or
// RemoveJobSet it must be Reset (it does not fail, but may yield removed
// jobs and miss added ones). Use a Cursor through its pointer, from one
// goroutine: it must not be copied after first use (go vet's copylocks
// check reports copies; a copied Cursor panics, as a copied strings.Builder
// does). The zero Cursor yields nothing until Reset.
type Cursor struct {
	_ noCopy

	tree *order
	sl   *slab // the store's entries, which the tree's items name
	buf  []*Entry
	pos  int
	last item // the last item read from the tree (id "": none); the next batch resumes after it
	// skip: the next item the tree yields may be last itself.
	skip bool
	done bool // the tree holds nothing after the buffer

	// fill is c.collect, bound once so that reading a batch does not
	// allocate a closure; self detects a copied Cursor, whose fill would
	// fill the original's buffer.
	fill func(item) bool
	self *Cursor
}

// noCopy makes go vet's copylocks check report copies of a Cursor.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// Reset points c at the start of one queue of s, keeping its buffer.
func (c *Cursor) Reset(s *Store, queue string) {
	c.bind()
	clear(c.buf)
	c.buf = c.buf[:0]
	c.pos = 0
	c.last = item{}
	c.skip = false
	c.tree, c.sl = nil, nil
	c.done = true
	if s == nil {
		return
	}
	if q := s.queues[queue]; q != nil {
		c.tree, c.sl = &q.order, &s.entries
		c.done = false
	}
}

// bind prepares the zero Cursor on first use and rejects copies.
func (c *Cursor) bind() {
	switch c.self {
	case c:
	case nil:
		c.self = c
		c.fill = c.collect
		c.buf = make([]*Entry, 0, cursorBatch)
	default:
		panic("queue: illegal use of a Cursor copied by value")
	}
}

// Next returns the next entry in scheduling order, or false when the queue
// is exhausted.
func (c *Cursor) Next() (*Entry, bool) {
	if c.self != c && c.self != nil {
		c.bind() // panics
	}
	if c.pos == len(c.buf) {
		if c.done {
			return nil, false
		}
		c.refill()
		if len(c.buf) == 0 {
			return nil, false
		}
	}
	e := c.buf[c.pos]
	c.pos++
	return e, true
}

func (c *Cursor) refill() {
	c.bind()
	c.buf = c.buf[:0]
	c.pos = 0
	if c.tree == nil { // the zero Cursor
		c.done = true
		return
	}
	if c.last.id == "" {
		c.tree.ascend(c.fill)
	} else {
		c.skip = true
		pivot := c.last // collect moves c.last along
		c.tree.ascendFrom(&pivot, c.fill)
	}
	if len(c.buf) < cursorBatch {
		c.done = true
	}
}

// collect appends one entry to the batch, skipping the entry the batch
// resumes from.
func (c *Cursor) collect(it item) bool {
	if c.skip {
		c.skip = false
		if it.id == c.last.id {
			return true
		}
	}
	c.buf = append(c.buf, &c.sl.at(it.h).Entry)
	c.last = it
	return len(c.buf) < cursorBatch
}

// EntryReader reads one queue's entries in scheduling order, a batch at a
// time: the pull cursor a scheduling cycle reads a queue through (Store.Open
// returns one; other stores implement their own).
type EntryReader interface {
	// Read copies the next entries into dst, from its start, and returns
	// how many. It returns fewer than len(dst) only when the queue is
	// exhausted, and 0 once it is. The entries belong to the store and are
	// read-only. An error means the store could not be read: the caller
	// gives up on the queue (a scheduling cycle fails with the error).
	Read(dst []*Entry) (int, error)
}

// Open returns a reader over one queue in scheduling order, a *Cursor. It
// allocates the cursor; reading it allocates nothing. Its error is always
// nil: a Store lives in memory.
func (s *Store) Open(queue string) (EntryReader, error) {
	return s.Cursor(queue), nil
}

// Read copies the next entries into dst and returns how many, fewer than
// len(dst) only at the end of the queue; the error is always nil. It is
// EntryReader's Read, the batch form of Next.
func (c *Cursor) Read(dst []*Entry) (int, error) {
	n := 0
	for n < len(dst) {
		e, ok := c.Next()
		if !ok {
			break
		}
		dst[n] = e
		n++
	}
	return n, nil
}
