package backendtest

import (
	"context"
	"reflect"

	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// retryPoliciesRule: PutRetryPolicy stores a queue's policy as given,
// replaces it, and removes it with nil (removing none is no error);
// ListRetryPolicies lists copies by queue; a policy that does not check,
// or no queue, is a field error and changes nothing.
func retryPoliciesRule(t checker, b backend.Backend) {
	ctx := context.Background()
	list := func() map[string]*events.RetryPolicy {
		t.Helper()
		ps, err := b.ListRetryPolicies(ctx)
		if err != nil {
			t.Fatalf("ListRetryPolicies: %v", err)
		}
		return ps
	}
	if ps := list(); len(ps) != 0 {
		t.Errorf("a new backend lists retry policies %v", ps)
	}
	p := &events.RetryPolicy{MaxAttempts: 5, Rules: []events.RetryRule{
		{OnExitCodes: []int{137, 143}, OnReasons: events.FailureReasons(), RetryLimit: 3, AvoidSameNode: true},
		{OnReasons: []events.FailureReason{events.ReasonDeadline}},
	}}
	q := &events.RetryPolicy{Rules: []events.RetryRule{{OnExitCodes: []int{1}}}}
	for _, put := range []struct {
		queue string
		p     *events.RetryPolicy
	}{{"A", q}, {"B", q}, {"A", p}, {"B", nil}, {"C", nil}} {
		if err := b.PutRetryPolicy(ctx, put.queue, put.p); err != nil {
			t.Fatalf("PutRetryPolicy(%s): %v", put.queue, err)
		}
	}
	want := map[string]*events.RetryPolicy{"A": p}
	got := list()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ListRetryPolicies = %v, want %v", got, want)
	}
	got["A"].Rules[0].OnExitCodes[0] = 1
	for _, bad := range []struct {
		queue string
		p     *events.RetryPolicy
	}{{"", q}, {"A", &events.RetryPolicy{MaxAttempts: -1}}, {"A", &events.RetryPolicy{Rules: []events.RetryRule{{}}}}} {
		wantFieldError(t, "PutRetryPolicy of a bad policy", b.PutRetryPolicy(ctx, bad.queue, bad.p))
	}
	if got := list(); !reflect.DeepEqual(got, want) {
		t.Errorf("ListRetryPolicies after a changed copy and refusals = %v, want %v", got, want)
	}
}
