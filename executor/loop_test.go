package executor_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/executor"
)

// fakeTimer is an executor.Timer the test moves: Advance calls the
// functions whose time it passes, before it returns. waiting blocks
// until n of them are pending, so the test advances only once the loop
// waits.
type fakeTimer struct {
	mu      sync.Mutex
	cond    *sync.Cond
	now     time.Time
	next    int
	waiters map[int]fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	f  func()
}

func newFakeTimer(t0 time.Time) *fakeTimer {
	f := &fakeTimer{now: t0, waiters: map[int]fakeWaiter{}}
	f.cond = sync.NewCond(&f.mu)
	return f
}

func (f *fakeTimer) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeTimer) AfterFunc(d time.Duration, fn func()) func() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	id := f.next
	f.waiters[id] = fakeWaiter{at: f.now.Add(d), f: fn}
	f.cond.Broadcast()
	return func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		_, ok := f.waiters[id]
		delete(f.waiters, id)
		return ok
	}
}

// Advance moves the time on by d and calls the functions due, in time
// order.
func (f *fakeTimer) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	var due []fakeWaiter
	for id, w := range f.waiters {
		if !w.at.After(f.now) {
			due = append(due, w)
			delete(f.waiters, id)
		}
	}
	f.mu.Unlock()
	slices.SortFunc(due, func(a, b fakeWaiter) int { return a.at.Compare(b.at) })
	for _, w := range due {
		w.f()
	}
}

// pending returns how many functions wait.
func (f *fakeTimer) pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// waiting blocks until n functions wait.
func (f *fakeTimer) waiting(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.waiters) < n {
		f.cond.Wait()
	}
}

func TestAReportsDeadlineFollowsTheLeaseTimeoutNotThePeriod(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	l := executor.Loop{Period: 300 * time.Millisecond, LeaseTimeout: 30 * time.Second}
	for _, c := range []struct {
		name           string
		start, renewed time.Duration // after t0
		want           time.Duration // after t0
	}{
		{"renewed just now: until a tenth of the lease timeout before the leases expire", 0, 0, 27 * time.Second},
		{"renewed 10 s ago", 10 * time.Second, 0, 27 * time.Second},
		{"renewed 26.9 s ago: at least a period", 26900 * time.Millisecond, 0, 27200 * time.Millisecond},
		{"no lease left to save: a period", time.Hour, 0, time.Hour + 300*time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, t0.Add(c.want), l.Deadline(t0.Add(c.start), t0.Add(c.renewed)))
		})
	}
	require.Equal(t, t0.Add(27*time.Second), executor.Loop{Period: time.Second}.Deadline(t0, t0),
		"a lease timeout of 0 is the service's default, 30 s")
}

// TestASlowReportFinishesAndRenewsItsLeasesTheNextWaitsForIt: against a
// slow service, a report running past the renew period is not abandoned:
// it finishes (and renews), and the next starts once it has ended. A
// report that runs until shortly before the leases it would renew expire
// is abandoned (ErrReportTooLate), and onError hears of it.
func TestASlowReportFinishesAndRenewsItsLeasesTheNextWaitsForIt(t *testing.T) {
	const period, leaseTimeout = 300 * time.Millisecond, 3 * time.Second
	clock := newFakeTimer(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	t0 := clock.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type call struct {
		ctx    context.Context
		at     time.Time
		finish chan error
	}
	calls := make(chan call)
	var errs []error
	done := make(chan error, 1)
	go func() {
		done <- executor.Every(ctx, executor.Loop{Period: period, LeaseTimeout: leaseTimeout, Timer: clock},
			func(ctx context.Context) error {
				c := call{ctx: ctx, at: clock.Now(), finish: make(chan error)}
				calls <- c
				return <-c.finish
			}, func(err error) { errs = append(errs, err) })
	}()

	// The first report answers at once.
	c := <-calls
	require.Equal(t, t0, c.at)
	c.finish <- nil
	clock.waiting(1) // the loop waits for the next period
	clock.Advance(period)

	// The second is slow: five periods pass, it is not abandoned (its
	// deadline is t0 + 0.9 × lease timeout: no timer fires).
	c = <-calls
	require.Equal(t, t0.Add(period), c.at)
	clock.waiting(1) // its deadline
	clock.Advance(5 * period)
	require.Equal(t, 1, clock.pending(), "a report slower than the renew period is not abandoned: its deadline has not fired")
	require.NoError(t, c.ctx.Err())
	c.finish <- nil // it renewed the leases at t0 + period

	// The next starts at once: its period has passed.
	c = <-calls
	require.Equal(t, t0.Add(6*period), c.at)
	clock.waiting(1)
	// Its deadline: shortly before the leases the second renewed expire,
	// at t0 + period + 0.9 × lease timeout.
	clock.Advance(t0.Add(period+leaseTimeout*9/10).Sub(clock.Now()) - time.Nanosecond)
	require.Equal(t, 1, clock.pending(), "a report is not abandoned before its deadline")
	require.NoError(t, c.ctx.Err())
	clock.Advance(time.Nanosecond)
	require.Error(t, c.ctx.Err(), "abandoned at its deadline")
	require.ErrorIs(t, context.Cause(c.ctx), executor.ErrReportTooLate)
	c.finish <- c.ctx.Err()

	// The next starts at once, its deadline a period away (the leases
	// are lost), and the failure was heard.
	c = <-calls
	require.Len(t, errs, 1)
	require.ErrorIs(t, errs[0], context.Canceled)
	clock.waiting(1)
	clock.Advance(period)
	require.Error(t, c.ctx.Err(), "abandoned a period after it started")
	require.ErrorIs(t, context.Cause(c.ctx), executor.ErrReportTooLate)
	cancel()
	c.finish <- errors.New("abandoned")
	require.ErrorIs(t, <-done, context.Canceled)
}
