package backendtest

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
)

// leaseRule is one check of the backend.Leases contract, on a fresh
// backend and a function that moves the backend's lease clock forward.
type leaseRule struct {
	name  string
	check func(t checker, b backend.Backend, l backend.Leases, advance func(time.Duration))
}

// LeaseRules lists the names of RunLeases' rules, in the order it runs
// them.
func LeaseRules() []string {
	var names []string
	for _, r := range leaseRules() {
		names = append(names, r.name)
	}
	return names
}

func leaseRules() []leaseRule {
	return []leaseRule{
		{"LeadTakesAFreeLeaseForTTL", leaseTakeFree},
		{"OneLeaderAtATime", leaseOneLeader},
		{"RenewalKeepsTheTokenAndExtendsTheLease", leaseRenewal},
		{"LeaseEndsAfterTTLAndTheTokenGrowsOnTakeover", leaseExpiry},
		{"RetakingAnEndedLeaseGrowsTheToken", leaseRetake},
		{"ResignFreesTheLeaseAtOnce", leaseResign},
		{"DeposedLeaderIsFencedOnceTheNewLeaderHasWritten", leaseFenced},
		{"TokenIsAboveEveryAppliedFence", leaseAboveFence},
		{"ConcurrentLeadsElectOneLeader", leaseConcurrent},
		{"BadLeadInputIsAFieldErrorPerProblem", leaseBadInput},
	}
}

// RunLeases runs every rule of backend.Leases as a subtest of t, each on a
// fresh, empty backend from newBackend, which must implement
// backend.Leases and return, with the backend, a function that moves the
// lease's clock forward by d (a fake clock's, or an offset the backend
// adds to its own). It closes the backend at the end of the subtest.
func RunLeases[T TB[T]](t T, newBackend func(T) (backend.Backend, func(d time.Duration))) {
	t.Helper()
	for _, r := range leaseRules() {
		t.Run(r.name, func(t T) {
			b, advance := newBackend(t)
			defer b.Close()
			l, ok := b.(backend.Leases)
			if !ok {
				t.Fatalf("%T does not implement backend.Leases", b)
			}
			r.check(t, b, l, advance)
		})
	}
}

// ttl is the suite's lease duration.
const ttl = 10 * time.Second

func mustLead(t checker, l backend.Leases, holder, address string) backend.Lease {
	t.Helper()
	got, err := l.Lead(context.Background(), holder, address, ttl)
	if err != nil {
		t.Fatalf("Lead(%q): %v", holder, err)
	}
	return got
}

// wantLeader reports unless got names holder at address with token,
// leading as said.
func wantLeader(t checker, what string, got backend.Lease, holder, address string, token uint64, leading bool) {
	t.Helper()
	if got.Holder != holder || got.Address != address || got.Token != token || got.Leading != leading {
		t.Errorf("%s: lease %+v, want holder %q at %q, token %d, leading %v", what, got, holder, address, token, leading)
	}
}

func leaseTakeFree(t checker, _ backend.Backend, l backend.Leases, _ func(time.Duration)) {
	a := mustLead(t, l, "a", "http://a")
	if !a.Leading || a.Holder != "a" || a.Address != "http://a" || a.Token == 0 {
		t.Errorf("the first Lead: %+v, want a leading at http://a with a token above 0", a)
	}
	if d := a.Expires.Sub(a.Now); d != ttl {
		t.Errorf("the first Lead: the lease lasts %s from the call, want %s", d, ttl)
	}
}

func leaseOneLeader(t checker, _ backend.Backend, l backend.Leases, advance func(time.Duration)) {
	a := mustLead(t, l, "a", "http://a")
	advance(ttl / 2)
	for _, h := range []string{"b", "c"} {
		got := mustLead(t, l, h, "http://"+h)
		wantLeader(t, "Lead("+h+") while a leads", got, "a", "http://a", a.Token, false)
		if d := got.Expires.Sub(got.Now); d != ttl/2 {
			t.Errorf("Lead(%s) half a ttl after a took the lease: it lasts %s more, want %s", h, d, ttl/2)
		}
	}
}

func leaseRenewal(t checker, _ backend.Backend, l backend.Leases, advance func(time.Duration)) {
	a := mustLead(t, l, "a", "http://a")
	for range 3 {
		advance(ttl * 2 / 3)
		got := mustLead(t, l, "a", "http://a")
		wantLeader(t, "a renewing", got, "a", "http://a", a.Token, true)
		if d := got.Expires.Sub(got.Now); d != ttl {
			t.Errorf("a renewal: the lease lasts %s from the call, want %s", d, ttl)
		}
	}
	// Two ttls after the first Lead, the renewals kept the lease a's.
	wantLeader(t, "b after a's renewals", mustLead(t, l, "b", "http://b"), "a", "http://a", a.Token, false)
}

func leaseExpiry(t checker, _ backend.Backend, l backend.Leases, advance func(time.Duration)) {
	a := mustLead(t, l, "a", "http://a")
	advance(ttl - time.Millisecond)
	wantLeader(t, "b 1ms before a's lease ends", mustLead(t, l, "b", "http://b"), "a", "http://a", a.Token, false)
	advance(time.Millisecond)
	b := mustLead(t, l, "b", "http://b")
	if !b.Leading || b.Holder != "b" || b.Address != "http://b" || b.Token <= a.Token {
		t.Errorf("b when a's lease has ended: %+v, want b leading with a token above a's %d", b, a.Token)
	}
	wantLeader(t, "a after b took over", mustLead(t, l, "a", "http://a"), "b", "http://b", b.Token, false)
}

func leaseRetake(t checker, _ backend.Backend, l backend.Leases, advance func(time.Duration)) {
	a := mustLead(t, l, "a", "http://a")
	advance(ttl)
	again := mustLead(t, l, "a", "http://a2")
	if !again.Leading || again.Token <= a.Token || again.Address != "http://a2" {
		t.Errorf("a retaking its ended lease: %+v, want leading at http://a2 with a token above %d", again, a.Token)
	}
}

func leaseResign(t checker, _ backend.Backend, l backend.Leases, advance func(time.Duration)) {
	ctx := context.Background()
	a := mustLead(t, l, "a", "http://a")
	if err := l.Resign(ctx, "b"); err != nil {
		t.Errorf("Resign by a process that does not lead: %v", err)
	}
	wantLeader(t, "b after b resigned a lease it does not hold", mustLead(t, l, "b", "http://b"), "a", "http://a", a.Token, false)
	if err := l.Resign(ctx, "a"); err != nil {
		t.Fatalf("Resign(a): %v", err)
	}
	b := mustLead(t, l, "b", "http://b")
	if !b.Leading || b.Token <= a.Token {
		t.Errorf("b right after a resigned: %+v, want leading with a token above %d", b, a.Token)
	}
	advance(time.Second)
	if err := l.Resign(ctx, "a"); err != nil {
		t.Errorf("Resign by the deposed a: %v", err)
	}
	wantLeader(t, "c after the deposed a resigned", mustLead(t, l, "c", "http://c"), "b", "http://b", b.Token, false)
}

func leaseFenced(t checker, be backend.Backend, l backend.Leases, advance func(time.Duration)) {
	ctx := context.Background()
	mustQueue(t, be, "A")
	write := func(fence uint64, ids ...string) error {
		w := submit("A", "s", ids...)
		w.Fence = fence
		_, err := be.Commit(ctx, w)
		return err
	}
	a := mustLead(t, l, "a", "http://a")
	if err := write(a.Token, "a1"); err != nil {
		t.Fatalf("the leader's write: %v", err)
	}
	advance(ttl)
	b := mustLead(t, l, "b", "http://b")
	if !b.Leading {
		t.Fatalf("b after a's lease ended: %+v, want leading", b)
	}
	// b's first write, empty, raises the fence: a can write no more.
	if _, err := be.Commit(ctx, &backend.Write{Fence: b.Token}); err != nil {
		t.Fatalf("the new leader's empty write: %v", err)
	}
	wantErr(t, "the deposed leader's write after the new leader's", write(a.Token, "a2"), backend.ErrFenced)
	wantAbsent(t, be, "a2")
	if err := write(b.Token, "b1"); err != nil {
		t.Errorf("the new leader's write: %v", err)
	}
	wantSeqs(t, "job set s", mustEvents(t, be, "A", "s"), 1)
}

func leaseAboveFence(t checker, be backend.Backend, l backend.Leases, advance func(time.Duration)) {
	ctx := context.Background()
	if _, err := be.Commit(ctx, &backend.Write{Fence: 100}); err != nil {
		t.Fatalf("a write with fence 100: %v", err)
	}
	a := mustLead(t, l, "a", "http://a")
	if a.Token <= 100 {
		t.Errorf("the first lease after a write with fence 100 has token %d, want above 100", a.Token)
	}
	if _, err := be.Commit(ctx, &backend.Write{Fence: a.Token + 50}); err != nil {
		t.Fatalf("a write with fence %d: %v", a.Token+50, err)
	}
	advance(ttl)
	b := mustLead(t, l, "b", "http://b")
	if b.Token <= a.Token+50 {
		t.Errorf("a takeover after a write with fence %d has token %d, want above it", a.Token+50, b.Token)
	}
}

func leaseConcurrent(t checker, _ backend.Backend, l backend.Leases, _ func(time.Duration)) {
	const n = 8
	got := make([]backend.Lease, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			got[i], errs[i] = l.Lead(context.Background(), string(rune('a'+i)), "addr", ttl)
		})
	}
	wg.Wait()
	leaders := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Lead(%c): %v", 'a'+i, errs[i])
		}
		if got[i].Leading {
			leaders++
		}
	}
	if leaders != 1 {
		t.Fatalf("%d of %d concurrent Leads lead, want 1", leaders, n)
	}
	for i := range n {
		if got[i].Token != got[0].Token {
			t.Errorf("concurrent Leads see tokens %d and %d, want one", got[0].Token, got[i].Token)
		}
	}
	final := mustLead(t, l, "z", "http://z")
	if final.Leading || final.Token != got[0].Token {
		t.Errorf("a Lead after the race: %+v, want the race's leader with token %d", final, got[0].Token)
	}
}

func leaseBadInput(t checker, _ backend.Backend, l backend.Leases, _ func(time.Duration)) {
	ctx := context.Background()
	_, err := l.Lead(ctx, "", "http://a", 0)
	wantFieldError(t, "Lead with no holder and ttl 0", err)
	wantErr(t, "Lead with no holder", err, flotilla.ErrRequired)
	wantErr(t, "Lead with ttl 0", err, flotilla.ErrOutOfRange)
	var fe *flotilla.FieldError
	if errors.As(err, &fe) && fe.Field != "holder" && fe.Field != "ttl" {
		t.Errorf("Lead's bad input names field %q, want holder or ttl", fe.Field)
	}
	_, err = l.Lead(ctx, "a", "http://a", -time.Second)
	wantErr(t, "Lead with a negative ttl", err, flotilla.ErrOutOfRange)
	// The refused calls took nothing.
	a := mustLead(t, l, "a", "http://a")
	if !a.Leading {
		t.Errorf("Lead after refused calls: %+v, want leading", a)
	}
}
