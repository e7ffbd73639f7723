// Package queue holds the jobs that wait to be scheduled, one ordered queue
// per tenant, with a job-set index and allocation-free iteration.
//
// A Store keeps every queued job of a queue in an ordered list of blocks
// (a two-level B-tree, order.go) in scheduling order (see Less): priority-class
// priority, higher first; then the job's Priority, LOWER number first
// (Armada's convention: priority 1 runs before priority 10); then submit
// time; then ID. IDs are unique in a Store, so the order is total and
// deterministic.
//
//	store, _ := queue.New(schema, flotilla.DefaultPriorityClasses(), flotilla.ArmadaDefault)
//	_ = store.Add(job)                      // O(log n); validates job against schema
//	_ = store.AddAll(jobs)                  // a batch, all or none
//	c := store.Cursor("A")
//	for e, ok := c.Next(); ok; e, ok = c.Next() {
//		// e.Job in order; e.Key is its scheduling key
//	}
//	store.Remove(job.ID)                    // O(log n)
//
// Add rejects, with a *flotilla.FieldError naming the field and value,
// every job flotilla.Job.Validate rejects against the store's schema
// (requests of the wrong length or negative, ...), so every stored job is
// one a scheduler can place.
//
// Per queue, a Store keeps up to date on every Add and Remove what a
// scheduling cycle needs without reading the queue (Stats: the job count,
// the gang-member count and the demand, the exact sum of requests clamped
// to the int64 range; SchedulingKeys: how many lone jobs have each
// scheduling key). With Open, whose reader (an EntryReader, here a *Cursor)
// reads entries in batches, these make *Store the in-memory implementation
// of the scheduler's storage seam, scheduler.Queued.
//
// Costs, for a store of n jobs: Add, Remove O(log n); Get, Stats O(1);
// SchedulingKeys O(distinct keys); a Cursor O(1) amortised per job
// without allocation; JobSet O(k log k) and RemoveJobSet O(k log n) for
// a set of k jobs. (Add and Remove also move up to half a block of 153
// items and, when a block splits or empties, the queue's list of n/153
// block pointers.) A job that sorts after every job of its queue, as
// most do in a queue fed in submission order, is appended to the last
// block without a search, and such blocks stay full: 40 bytes of order
// per job, where a B-tree splitting its nodes in the middle keeps them
// half full. The order's items carry copies of the ordering fields, so a
// search compares inside the blocks rather than loading every job it
// passes. Entries live in blocks of 1024 whose room a removed job leaves
// to the next one added; the index by ID is a pointer-free hash table of
// handles into them (internal/idindex), and the order's items and the
// job-set lists name entries by handle too, so a store of n jobs holds
// about n/1024 + n/153 objects, and the garbage collector scans two
// pointers per job (the entry's Job, the item's id) and nothing of the
// index. Memory is about 115 bytes per queued job for the store itself
// with jobs added in random order (BenchmarkStoreAdd1M reports it), less
// in submission order.
//
// Evicted jobs (running jobs that preemption reconsiders) are not stored
// here: the scheduler keeps them and offers them before a queue's stored
// jobs, ordered by LessEvicted. A scheduler builds their entries with
// Store.NewEntry.
//
// Each Entry carries a scheduling key: a 64-bit hash of everything that
// decides where a job can go (requests, class priority, node selector,
// tolerations, node-uniformity label, avoided clusters). Jobs with equal requirements have
// equal keys, so a scheduler can skip, without a node search, a job whose key
// already failed to fit in this cycle.
//
// Jobs are owned by the caller but must not be modified while stored: the
// fields that place a job (ID, Queue, JobSet, PriorityClass, Priority,
// SubmitTime) and its scheduling key are read at Add. To change a job's
// priority, Remove it, change it, and Add it again. (A Priority or
// SubmitTime changed in place does not corrupt the order, which keeps the
// values read at Add, and Remove still finds the job, by a linear search.)
//
// A Store is not safe for concurrent modification. Its read methods (Get,
// Len, QueueLen, Stats, SchedulingKeys, Queues, JobSet, Ascend, and
// Cursors) may run concurrently
// with each other, but not with Add, Remove or RemoveJobSet. The package
// starts no goroutines, reads no clock and holds no package-level state.
package queue
