package memory

import (
	"context"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
)

var _ backend.Leases = (*Backend)(nil)

// leader is the leader lease (backend.Leases).
type leader struct {
	// now is the lease's clock (SetLeaseClock); nil until set.
	now     func() time.Time
	holder  string
	address string
	token   uint64
	expires time.Time
}

// SetLeaseClock gives the backend the clock its leader lease runs on
// (backend.Leases): the package reads no clock of its own, so a test
// passes a fake one and advances it. Lead and Resign refuse to run
// without one.
func (b *Backend) SetLeaseClock(now func() time.Time) {
	b.mu.Lock()
	b.lease.now = now
	b.mu.Unlock()
}

// noClock is Lead's and Resign's refusal without SetLeaseClock.
func noClock() error {
	return flotilla.Errorf("leaseClock", "<nil>", flotilla.ErrRequired, "call SetLeaseClock before Lead or Resign")
}

// Lead takes or renews the leader lease; see backend.Leases.
func (b *Backend) Lead(ctx context.Context, holder, address string, ttl time.Duration) (backend.Lease, error) {
	if err := backend.CheckLead(holder, ttl); err != nil {
		return backend.Lease{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.ready(ctx); err != nil {
		return backend.Lease{}, err
	}
	l := &b.lease
	if l.now == nil {
		return backend.Lease{}, noClock()
	}
	now := l.now()
	live := now.Before(l.expires)
	if !live || l.holder == holder {
		if !live || l.holder != holder {
			l.token = max(l.token, b.fence) + 1
		}
		l.holder, l.address, l.expires = holder, address, now.Add(ttl)
	}
	return backend.Lease{Holder: l.holder, Address: l.address, Token: l.token, Leading: l.holder == holder,
		Expires: l.expires, Now: now}, nil
}

// Resign ends holder's lease now; see backend.Leases.
func (b *Backend) Resign(ctx context.Context, holder string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.ready(ctx); err != nil {
		return err
	}
	l := &b.lease
	if l.now == nil {
		return noClock()
	}
	if now := l.now(); l.holder == holder && now.Before(l.expires) {
		l.expires = now
	}
	return nil
}
