package ha

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flotilla-sched/flotilla/backend"
)

// DefaultLeaderTTL is Config.TTL's default (serve's -leader-ttl).
const DefaultLeaderTTL = 10 * time.Second

// term is one period of leadership under one token.
type term struct {
	token uint64
	// ctx ends with the term.
	ctx    context.Context
	cancel context.CancelFunc
	// epoch is the elector's first reading of its clock, and until when
	// the term ends unless renewed, in nanoseconds since epoch: times are
	// compared by Sub, on the monotonic clock (time.Now's readings carry
	// one), so a step of the wall clock (NTP, an operator) neither
	// lengthens nor shortens a term. Unix times would follow the wall
	// clock: set back, it would keep a deposed leader writing.
	epoch time.Time
	until atomic.Int64
}

// alive reports whether the term still holds at now.
func (t *term) alive(now time.Time) bool {
	return t.ctx.Err() == nil && int64(now.Sub(t.epoch)) < t.until.Load()
}

// elector takes part in the election for one process.
type elector struct {
	leases backend.Leases
	// holder names this process in the lease; advertise is where the
	// others forward requests to.
	holder, advertise string
	ttl               time.Duration
	// now is the elector's clock (time.Now in serve: its readings carry
	// the monotonic clock); epoch is its first reading.
	now   func() time.Time
	epoch time.Time
	// newTerm hears of each new term (buffered: the latest is what counts).
	newTerm chan struct{}
	// onChange, when set, hears of every change of leader (for logging).
	onChange func(leading bool, leader string, token uint64)

	mu sync.Mutex
	// cur is the current term, nil while following.
	cur *term
	// ended is the token of the last term this process ended (0: none).
	// No term starts again under it: that term's writes still in flight
	// carry it, and only a higher fence refuses them.
	ended uint64
	// leader is the leader's advertised address as last read ("" when
	// none is known); lastErr the last Lead's error.
	leader  string
	lastErr error
}

func newElector(leases backend.Leases, holder, advertise string, ttl time.Duration, now func() time.Time) *elector {
	return &elector{leases: leases, holder: holder, advertise: advertise, ttl: ttl, now: now, epoch: now(),
		newTerm: make(chan struct{}, 1)}
}

// round is one election round: one Lead call, and the term started,
// renewed or ended by its answer. It returns how long to wait before the
// next round.
func (e *elector) round(ctx context.Context) time.Duration {
	sent := e.now()
	e.mu.Lock()
	if e.cur != nil && !e.cur.alive(sent) {
		e.endTerm() // not renewed for a whole ttl (this process was paused?)
	}
	limit := e.ttl / 3
	if e.cur != nil {
		// A Lead call that hangs must not outlive the term.
		limit = min(limit, time.Duration(e.cur.until.Load()-int64(sent.Sub(e.epoch))))
	}
	e.mu.Unlock()
	lctx, cancel := context.WithTimeout(ctx, limit)
	l, err := e.leases.Lead(lctx, e.holder, e.advertise, e.ttl)
	cancel()
	if err == nil && l.Leading && l.Token <= e.endedToken() {
		// The database renewed the lease of a term this process ended
		// (a renewal applied whose answer was lost): give it up, so that
		// the next Lead takes it with a higher token.
		rctx, cancel := context.WithTimeout(ctx, e.ttl/3)
		err = e.leases.Resign(rctx, e.holder)
		cancel()
		e.mu.Lock()
		defer e.mu.Unlock()
		e.lastErr = err
		e.setLeader("", l.Token)
		return 10 * time.Millisecond
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lastErr = err
	wait := e.ttl / 3
	switch {
	case err != nil:
		if e.cur != nil && !e.cur.alive(e.now()) {
			e.endTerm()
		}
		if e.cur == nil {
			e.setLeader("", 0)
		}
		wait = min(wait, 250*time.Millisecond)
	case l.Leading:
		if e.cur != nil && e.cur.token != l.Token {
			e.endTerm()
		}
		if e.cur == nil {
			t := &term{token: l.Token, epoch: e.epoch}
			t.ctx, t.cancel = context.WithCancel(context.WithoutCancel(ctx))
			e.cur = t
			select {
			case e.newTerm <- struct{}{}:
			default:
			}
		}
		e.cur.until.Store(int64(sent.Sub(e.epoch) + e.ttl))
		e.setLeader(e.advertise, l.Token)
	default:
		if e.cur != nil {
			e.endTerm()
		}
		leader := ""
		if l.Expires.After(l.Now) {
			leader = l.Address
			// Try again just after the leader's lease would end.
			wait = min(wait, l.Expires.Sub(l.Now)+10*time.Millisecond)
		}
		e.setLeader(leader, l.Token)
	}
	return max(wait, time.Millisecond)
}

// setLeader records the leader's address; the caller holds mu.
func (e *elector) setLeader(addr string, token uint64) {
	if addr == e.leader {
		return
	}
	e.leader = addr
	if e.onChange != nil {
		e.onChange(e.cur != nil, addr, token)
	}
}

// endedToken returns the token of the last term this process ended.
func (e *elector) endedToken() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ended
}

// endTerm ends the current term; the caller holds mu.
func (e *elector) endTerm() {
	e.ended = max(e.ended, e.cur.token)
	e.cur.until.Store(math.MinInt64)
	e.cur.cancel()
	e.cur = nil
}

// run calls round until ctx ends, then resigns the lease if it holds it,
// so that another process takes over at once.
func (e *elector) run(ctx context.Context) {
	for {
		wait := e.round(ctx)
		select {
		case <-ctx.Done():
			e.mu.Lock()
			leading := e.cur != nil
			if leading {
				e.endTerm()
			}
			e.mu.Unlock()
			if leading {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.ttl/3)
				_ = e.leases.Resign(rctx, e.holder)
				cancel()
			}
			return
		case <-time.After(wait):
		}
	}
}

// term returns the current term, nil while following.
func (e *elector) term() *term {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cur
}

// leaderAddr returns the leader's address ("" when none is known) and the
// last Lead's error.
func (e *elector) leaderAddr() (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leader, e.lastErr
}
