package server

// fifoLock is the service's lock: a mutex that hands itself to the
// goroutines waiting for it in the order they came. sync.Mutex lets a
// running goroutine take the lock again ahead of one that has waited
// (until the waiter has waited a millisecond), so an executor's report
// could wait behind two or three other holders in a row (a cycle's
// chunks, other clusters' reports) for one it queued behind; here it
// waits for those ahead of it only. It is a channel of one slot: a
// goroutine blocked sending on a full channel is queued, and the slot
// that a receive frees goes to the first one queued.
type fifoLock chan struct{}

func newFIFOLock() fifoLock { return make(fifoLock, 1) }

// Lock waits until the lock is free and the goroutines that asked before
// have had it.
func (l fifoLock) Lock() { l <- struct{}{} }

// Unlock frees the lock; unlocking a free lock is a run-time error, as
// for sync.Mutex.
func (l fifoLock) Unlock() {
	select {
	case <-l:
	default:
		panic("server: unlock of an unlocked lock")
	}
}
