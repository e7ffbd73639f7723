package backend

import (
	"context"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/events"
)

// RetryPolicies stores each queue's retry policy (docs/operator-commands.md's
// `-retry-policy`), so that a restart keeps them. The backend does not
// check that the queue exists: the service does, and removes a deleted
// queue's policy.
type RetryPolicies interface {
	// PutRetryPolicy stores queue's policy, replacing the one stored; nil
	// removes it (removing none is no error). A policy that does not check
	// (events.RetryPolicy.Check, fields under "retryPolicy") or an empty
	// queue name is a *flotilla.FieldError and changes nothing. The
	// backend keeps a copy.
	PutRetryPolicy(ctx context.Context, queue string, p *events.RetryPolicy) error
	// ListRetryPolicies returns every stored policy by queue name (copies
	// the caller owns; an empty map when there is none).
	ListRetryPolicies(ctx context.Context) (map[string]*events.RetryPolicy, error)
}

// CheckRetryPolicy is what PutRetryPolicy checks: a queue name and, unless
// p is nil, p.Check under "retryPolicy".
func CheckRetryPolicy(queue string, p *events.RetryPolicy) error {
	if queue == "" {
		return flotilla.Errorf("queue", "", flotilla.ErrRequired, "a retry policy belongs to a queue")
	}
	if p == nil {
		return nil
	}
	return p.Check("retryPolicy")
}
