package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/flotilla-sched/flotilla/backend"
)

var _ backend.Leases = (*Backend)(nil)

// leadSQL takes or renews the lease in one statement, on the database's
// clock: the row is created on the first call; afterwards it is taken
// when it has ended or is the caller's, and the token grows (above every
// applied fence too) unless the caller renews its live lease. $4 is the
// tests' clock (NULL otherwise: now()). Every SET expression reads the row
// as it was; RETURNING reads it as it is.
const leadSQL = `
WITH c AS (SELECT coalesce($4::timestamptz, now()) AS now,
                  (SELECT biased # (-9223372036854775808)::bigint FROM fence) AS fence)
INSERT INTO leader AS l (one, holder, address, token, expires)
SELECT true, $1, $2, greatest(c.fence, 0) + 1, c.now + $3 * interval '1 microsecond' FROM c
ON CONFLICT (one) DO UPDATE SET
    holder  = CASE WHEN l.expires <= (SELECT now FROM c) OR l.holder = $1 THEN $1 ELSE l.holder END,
    address = CASE WHEN l.expires <= (SELECT now FROM c) OR l.holder = $1 THEN $2 ELSE l.address END,
    expires = CASE WHEN l.expires <= (SELECT now FROM c) OR l.holder = $1
                   THEN (SELECT now FROM c) + $3 * interval '1 microsecond' ELSE l.expires END,
    token   = CASE WHEN l.holder = $1 AND l.expires > (SELECT now FROM c) THEN l.token
                   WHEN l.expires <= (SELECT now FROM c) THEN greatest(l.token, (SELECT fence FROM c)) + 1
                   ELSE l.token END
RETURNING holder, address, token, expires, (SELECT now FROM c), holder = $1`

// Lead takes or renews the leader lease in one statement, on the
// database's clock (now()); see backend.Leases. The ttl counts in whole
// microseconds, PostgreSQL's resolution.
func (b *Backend) Lead(ctx context.Context, holder, address string, ttl time.Duration) (backend.Lease, error) {
	err := backend.CheckLead(holder, ttl)
	err = errors.Join(err, textProblem("holder", holder), textProblem("address", address))
	if err != nil {
		return backend.Lease{}, err
	}
	if err := b.ready(ctx); err != nil {
		return backend.Lease{}, err
	}
	ctx, cancel := b.bound(ctx, 0)
	defer cancel()
	var l backend.Lease
	var token int64
	err = b.pool.QueryRow(ctx, leadSQL, holder, address, ttl.Microseconds(), b.testNow()).
		Scan(&l.Holder, &l.Address, &token, &l.Expires, &l.Now, &l.Leading)
	if err != nil {
		return backend.Lease{}, b.fail(ctx, "leading", err)
	}
	l.Token = uint64(token)
	l.Expires, l.Now = l.Expires.UTC(), l.Now.UTC()
	return l, nil
}

// Resign ends holder's lease now (on the database's clock); see
// backend.Leases.
func (b *Backend) Resign(ctx context.Context, holder string) error {
	if err := b.ready(ctx); err != nil {
		return err
	}
	ctx, cancel := b.bound(ctx, 0)
	defer cancel()
	_, err := b.pool.Exec(ctx, `UPDATE leader SET expires = coalesce($2::timestamptz, now())
		WHERE holder = $1 AND expires > coalesce($2::timestamptz, now())`, holder, b.testNow())
	if err != nil {
		return b.fail(ctx, "resigning", err)
	}
	return nil
}

// testNow is the tests' lease clock, nil (the database's now()) unless
// set.
func (b *Backend) testNow() *time.Time {
	if b.leaseNow == nil {
		return nil
	}
	t := b.leaseNow()
	return &t
}
