package server

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// blockedSending counts the goroutines blocked in fifoLock.Lock, sending
// on its channel (the state runtime.Stack names "chan send").
func blockedSending() int {
	buf := make([]byte, 1<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "[chan send") && strings.Contains(g, "fifoLock.Lock") {
			n++
		}
	}
	return n
}

// waitBlockedSending yields until n goroutines are blocked sending.
func waitBlockedSending(t *testing.T, n int) {
	t.Helper()
	for range 1_000_000 {
		if blockedSending() >= n {
			return
		}
		runtime.Gosched()
	}
	t.Fatalf("%d goroutines never blocked on the lock", n)
}

// TestFIFOLockHandsItselfOverInTheOrderAsked: five goroutines queue for
// the lock one after another; when it is freed they have it in that
// order, and the goroutine that freed it, asking again at once, has it
// only after all five (a sync.Mutex would let it barge ahead).
func TestFIFOLockHandsItselfOverInTheOrderAsked(t *testing.T) {
	l := newFIFOLock()
	l.Lock()
	order := make(chan int, 6)
	for i := range 5 {
		go func() {
			l.Lock()
			order <- i
			l.Unlock()
		}()
		waitBlockedSending(t, i+1)
	}
	l.Unlock()
	l.Lock()
	order <- 5
	l.Unlock()
	close(order)
	var got []int
	for i := range order {
		got = append(got, i)
	}
	require.Equal(t, []int{0, 1, 2, 3, 4, 5}, got)
}

// TestFIFOLockUnlockOfAFreeLockPanics, as sync.Mutex's does: a bug, not
// a state to carry on from.
func TestFIFOLockUnlockOfAFreeLockPanics(t *testing.T) {
	l := newFIFOLock()
	require.Panics(t, l.Unlock)
	l.Lock()
	l.Unlock()
	require.Panics(t, l.Unlock)
}
