package server

import (
	"iter"
	"slices"

	"github.com/flotilla-sched/flotilla/internal/idindex"
)

// jobTable holds the non-terminal jobs by id: a pointer-free hash index
// (internal/idindex) of handles into a slice of the jobs, whose holes
// (jobs that ended) later jobs fill. The garbage collector scans one
// pointer per job here, where a map[string]*job costs it a string and a
// pointer per entry and costs about 40 bytes.
type jobTable struct {
	index idindex.Index
	// blocks hold the jobs by handle h at blocks[h/jobBlock][h%jobBlock],
	// nil where a job ended; n handles were given out.
	blocks [][]*job
	n      int
	free   []uint32 // handles of the holes
}

// jobBlock is the length of a jobTable block: growing never copies more
// than a block.
const jobBlock = 1024

// at returns the slot of handle h.
func (t *jobTable) at(h uint32) **job { return &t.blocks[h/jobBlock][h%jobBlock] }

// keyOf is the index's key of a handle.
func (t *jobTable) keyOf(h uint32) string { return (*t.at(h)).id() }

// get returns the job of an id; nil when there is none.
func (t *jobTable) get(id string) *job {
	if h, ok := t.index.Find(id, t.keyOf); ok {
		return *t.at(h)
	}
	return nil
}

// getHashed is get with the id's hash in the index given (hashes).
func (t *jobTable) getHashed(id string, hash uint32) *job {
	if h, ok := t.index.FindHashed(hash, id, t.keyOf); ok {
		return *t.at(h)
	}
	return nil
}

// hashes returns the hashes in the index of n ids (id(i) is the i-th),
// in scratch's room, and fetches the slots they probe together
// (idindex.Index.Prefetch), so that the gets or puts of those ids that
// follow (a cycle's decisions, a write's new jobs) find them in cache
// rather than each waiting for memory in turn.
func (t *jobTable) hashes(scratch []uint32, n int, id func(i int) string) []uint32 {
	hs := slices.Grow(scratch[:0], n)[:n]
	for i := range hs {
		hs[i] = t.index.Hash(id(i))
	}
	_ = t.index.Prefetch(hs)
	return hs
}

// put adds j, whose id must not be in the table.
func (t *jobTable) put(j *job) { t.putHashed(j, t.index.Hash(j.id())) }

// putHashed is put with the id's hash in the index given.
func (t *jobTable) putHashed(j *job, hash uint32) {
	var h uint32
	if n := len(t.free); n > 0 {
		h, t.free = t.free[n-1], t.free[:n-1]
	} else {
		if t.n == len(t.blocks)*jobBlock {
			t.blocks = append(t.blocks, make([]*job, jobBlock))
		}
		h = uint32(t.n)
		t.n++
	}
	*t.at(h) = j
	t.index.InsertHashed(hash, h)
}

// del removes the job of an id, if any.
func (t *jobTable) del(id string) {
	if h, ok := t.index.Delete(id, t.keyOf); ok {
		*t.at(h) = nil
		t.free = append(t.free, h)
	}
}

// len is the number of jobs.
func (t *jobTable) len() int { return t.index.Len() }

// all yields the jobs, in no particular order (the order of their
// handles); the table must not change meanwhile.
func (t *jobTable) all() iter.Seq[*job] {
	return func(yield func(*job) bool) {
		for _, b := range t.blocks {
			for _, j := range b {
				if j != nil && !yield(j) {
					return
				}
			}
		}
	}
}
