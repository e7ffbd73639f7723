package backend

import (
	"context"
	"errors"
	"time"

	"github.com/flotilla-sched/flotilla"
)

// Lease is the leader lease as one Leases call left it.
type Lease struct {
	// Holder is the process that holds (or last held) the lease; "" when
	// no process ever took it. Address is the address it advertised (where
	// the others forward requests).
	Holder, Address string
	// Token is the holder's fencing token: it grows by at least one with
	// every acquisition that is not a renewal of a live lease (a new
	// holder, or the same holder after its lease ended), and it is higher
	// than the Fence of every write applied before that acquisition. The
	// holder passes it as Write.Fence.
	Token uint64
	// Leading reports whether the caller holds the lease now.
	Leading bool
	// Expires is when the lease ends and Now the time of the call, both by
	// the backend's clock: the lease lasts Expires.Sub(Now) from the call
	// on. Processes compare only such differences, never their own clocks
	// with the backend's.
	Expires, Now time.Time
}

// Leases is an optional interface of a Backend: a lease that elects one
// leader among the processes sharing the backend, with a fencing token.
// The backend owns the lease's clock (a database's now()): processes need
// no synchronised clocks, only clocks that run at about the same rate.
//
// Who owns failure: the caller. A leader must treat its lease as ended
// ttl after it sent the Lead call that last renewed it (not after the
// answer came), whether or not a later call failed, and stop writing then;
// its writes are fenced anyway once a successor has written with its
// higher token. An error means the lease is as it was before the call
// (except ErrOutcomeUnknown, as for every write).
type Leases interface {
	// Lead takes the lease for holder, or renews it, and returns the
	// lease as it stands: one atomic step. When the lease is free (never
	// taken, or ended: its expiry is not after the backend's now) or held
	// by holder, holder gets it until now + ttl, advertising address;
	// when it was not holder's live lease, the token grows. Otherwise
	// nothing changes and the lease returned names the live holder
	// (Leading false). Bad input (an empty holder, a ttl that is not
	// positive, text the backend cannot store) is a *flotilla.FieldError
	// per problem, joined.
	Lead(ctx context.Context, holder, address string, ttl time.Duration) (Lease, error)
	// Resign ends holder's lease now, so another process may take it at
	// once (a leader stepping down cleanly); the token stays. When holder
	// does not hold a live lease it changes nothing and is not an error.
	Resign(ctx context.Context, holder string) error
}

// CheckLead returns Lead's input problems (for implementations): the
// holder is required and ttl must be positive.
func CheckLead(holder string, ttl time.Duration) error {
	var errs []error
	if holder == "" {
		errs = append(errs, flotilla.Errorf("holder", "", flotilla.ErrRequired, ""))
	}
	if ttl <= 0 {
		errs = append(errs, flotilla.Errorf("ttl", ttl.String(), flotilla.ErrOutOfRange, "want a positive duration"))
	}
	return errors.Join(errs...)
}
