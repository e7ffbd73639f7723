package backendtest_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/backend/backendtest"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/events"
)

// recorder is a backendtest.TB that records failures by rule instead of
// failing; each subtest runs in its own goroutine, so Fatalf can stop it
// with runtime.Goexit as testing does.
type recorder struct {
	name string
	log  *failures
}

type failures struct {
	mu     sync.Mutex
	byRule map[string][]string
}

func newRecorder() *recorder { return &recorder{log: &failures{byRule: map[string][]string{}}} }

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	r.log.byRule[r.name] = append(r.log.byRule[r.name], fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Run(name string, f func(*recorder)) bool {
	c := &recorder{name: name, log: r.log}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(c)
	}()
	<-done
	return len(r.failed(name)) == 0
}

func (r *recorder) failed(rule string) []string {
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	return r.log.byRule[rule]
}

// dropsOneEvent loses the event of sequence number 2 when it reads a log.
type dropsOneEvent struct{ *memory.Backend }

func (b dropsOneEvent) Events(ctx context.Context, q, s string, from uint64, limit int) ([]events.Event, error) {
	es, err := b.Backend.Events(ctx, q, s, from, limit)
	return slices.DeleteFunc(es, func(e events.Event) bool { return e.Seq == 2 }), err
}

// reordersTwo swaps the first two events it reads.
type reordersTwo struct{ *memory.Backend }

func (b reordersTwo) Events(ctx context.Context, q, s string, from uint64, limit int) ([]events.Event, error) {
	es, err := b.Backend.Events(ctx, q, s, from, limit)
	if len(es) >= 2 {
		es[0], es[1] = es[1], es[0]
	}
	return es, err
}

// skipsASequenceNumber numbers every log 1, 3, 4, 5, …
type skipsASequenceNumber struct{ *memory.Backend }

func skip(es []events.Event) []events.Event {
	for i := range es {
		if es[i].Seq >= 2 {
			es[i].Seq++
		}
	}
	return es
}

func (b skipsASequenceNumber) Commit(ctx context.Context, w *backend.Write) ([]events.Event, error) {
	es, err := b.Backend.Commit(ctx, w)
	return skip(es), err
}

func (b skipsASequenceNumber) Events(ctx context.Context, q, s string, from uint64, limit int) ([]events.Event, error) {
	es, err := b.Backend.Events(ctx, q, s, from, limit)
	return skip(es), err
}

// appliesHalfABatch, when a write is refused, applies its first half (the
// first half of its events and their new jobs) anyway.
type appliesHalfABatch struct{ *memory.Backend }

func (b appliesHalfABatch) Commit(ctx context.Context, w *backend.Write) ([]events.Event, error) {
	es, err := b.Backend.Commit(ctx, w)
	if err != nil && len(w.Events) > 1 {
		half := &backend.Write{Events: w.Events[:len(w.Events)/2], Fence: w.Fence}
		for _, s := range w.Jobs {
			if slices.ContainsFunc(half.Events, func(e events.Event) bool { return e.Type == events.Submitted && e.Job == s.Job.ID }) {
				half.Jobs = append(half.Jobs, s)
			}
		}
		_, _ = b.Backend.Commit(ctx, half)
	}
	return es, err
}

// ignoresTheFence hands out itself, unfenced, as every fenced view.
type ignoresTheFence struct{ *memory.Backend }

func (b ignoresTheFence) WithFence(uint64) backend.Backend { return b }

// keepsStaleRecords answers JobsByID job by job and leaves the record of
// an id that names no job as the caller's slice held it.
type keepsStaleRecords struct{ *memory.Backend }

func (b keepsStaleRecords) JobsByID(ctx context.Context, ids []string, recs []backend.Record) error {
	if len(recs) != len(ids) {
		return b.Backend.JobsByID(ctx, ids, recs)
	}
	for i, id := range ids {
		if r, err := b.Job(ctx, id); err == nil {
			recs[i] = r
		}
	}
	return nil
}

// answersEachIDOnce answers an id given twice only at its first place.
type answersEachIDOnce struct{ *memory.Backend }

func (b answersEachIDOnce) JobsByID(ctx context.Context, ids []string, recs []backend.Record) error {
	if err := b.Backend.JobsByID(ctx, ids, recs); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, id := range ids {
		if seen[id] {
			recs[i] = backend.Record{}
		}
		seen[id] = true
	}
	return nil
}

// answersAThousand answers the first 1,000 ids of a batch, and the others
// as jobs that do not exist.
type answersAThousand struct{ *memory.Backend }

func (b answersAThousand) JobsByID(ctx context.Context, ids []string, recs []backend.Record) error {
	if err := b.Backend.JobsByID(ctx, ids, recs); err != nil {
		return err
	}
	if len(recs) > 1000 {
		clear(recs[1000:])
	}
	return nil
}

// endsPagesByID orders each page of ended jobs by id alone.
type endsPagesByID struct{ *memory.Backend }

func (b endsPagesByID) EndedJobs(ctx context.Context, q backend.EndedQuery) ([]backend.Record, error) {
	recs, err := b.Backend.EndedJobs(ctx, q)
	slices.SortFunc(recs, func(x, y backend.Record) int { return strings.Compare(x.Spec.Job.ID, y.Spec.Job.ID) })
	return recs, err
}

func TestConformanceSuiteFailsEachBrokenBackendOnTheRuleItBreaks(t *testing.T) {
	for _, c := range []struct {
		name  string
		wrap  func(*memory.Backend) backend.Backend
		rules []string
	}{
		{"drops one event", func(m *memory.Backend) backend.Backend { return dropsOneEvent{m} }, []string{
			"SequenceNumbersAreGapFreeFromOnePerJobSet", "ConcurrentWritersGetGapFreeUniqueSequenceNumbers",
			"EventsPagesWithFromAndLimit", "ReplayOfEveryJobSetEqualsTheStoredStates",
		}},
		{"reorders two events", func(m *memory.Backend) backend.Backend { return reordersTwo{m} }, []string{
			"SequenceNumbersAreGapFreeFromOnePerJobSet", "ConcurrentWritersGetGapFreeUniqueSequenceNumbers",
			"EventsPagesWithFromAndLimit", "ReplayOfEveryJobSetEqualsTheStoredStates",
		}},
		{"skips a sequence number", func(m *memory.Backend) backend.Backend { return skipsASequenceNumber{m} }, []string{
			"CommitStoresJobsAndTheirEvents", "SequenceNumbersAreGapFreeFromOnePerJobSet",
			"ConcurrentWritersGetGapFreeUniqueSequenceNumbers", "RefusedTransitionChangesNothingAndConsumesNoSequenceNumber",
		}},
		{"applies half a batch", func(m *memory.Backend) backend.Backend { return appliesHalfABatch{m} }, []string{
			"CommitIsAtomicWhenOneEventIsRefused", "CommitIsAtomicWhenOneJobIsADuplicate",
		}},
		{"keeps stale records of missing ids", func(m *memory.Backend) backend.Backend { return keepsStaleRecords{m} }, []string{
			"JobsByIDAnswersEveryIDAtItsPlaceAndMissingOnesAsNone",
		}},
		{"answers each id once", func(m *memory.Backend) backend.Backend { return answersEachIDOnce{m} }, []string{
			"JobsByIDAnswersEveryIDAtItsPlaceAndMissingOnesAsNone",
		}},
		{"ignores a fenced view's token", func(m *memory.Backend) backend.Backend { return ignoresTheFence{m} }, []string{
			"FencedViewRefusesQueueExecutorUsageCordonAndRetryPolicyWritesBelowTheHighestFence",
		}},
		{"orders the pages of ended jobs by id", func(m *memory.Backend) backend.Backend { return endsPagesByID{m} }, []string{
			"EndedJobsPageEachTerminalStateOfASetInSubmitOrder",
		}},
		{"answers a thousand ids of a batch", func(m *memory.Backend) backend.Backend { return answersAThousand{m} }, []string{
			"JobsByIDAnswersEveryIDAtItsPlaceAndMissingOnesAsNone",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRecorder()
			backendtest.Run(r, func(*recorder) backend.Backend { return c.wrap(memory.New(backendtest.Schema())) })
			for _, rule := range c.rules {
				if len(r.failed(rule)) == 0 {
					t.Errorf("the suite passes rule %s on a backend that %s", rule, c.name)
				} else {
					t.Logf("%s: %s", rule, r.failed(rule)[0])
				}
			}
		})
	}
}

func TestConformanceSuiteRecordsNoFailureOnTheMemoryBackend(t *testing.T) {
	r := newRecorder()
	backendtest.Run(r, func(*recorder) backend.Backend { return memory.New(backendtest.Schema()) })
	for _, rule := range backendtest.Rules() {
		if f := r.failed(rule); len(f) > 0 {
			t.Errorf("rule %s: %q", rule, f)
		}
	}
	if len(r.log.byRule) != 0 {
		t.Errorf("failures recorded: %v", r.log.byRule)
	}
}

// leaseBackend is a memory backend whose lease runs on a fake clock.
func leaseBackend() (*memory.Backend, func(time.Duration)) {
	b := memory.New(backendtest.Schema())
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	b.SetLeaseClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	return b, func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
}

// keepsTheToken hands a taken-over lease the token of the one before.
// The suite calls Lead concurrently, so last is guarded.
type keepsTheToken struct {
	*memory.Backend
	last *lastToken
}

type lastToken struct {
	mu    sync.Mutex
	token uint64
}

func (b keepsTheToken) Lead(ctx context.Context, holder, address string, ttl time.Duration) (backend.Lease, error) {
	l, err := b.Backend.Lead(ctx, holder, address, ttl)
	b.last.mu.Lock()
	defer b.last.mu.Unlock()
	if b.last.token != 0 {
		l.Token = b.last.token
	}
	b.last.token = l.Token
	return l, err
}

// neverExpires lets nobody take over a lease, ended or not.
type neverExpires struct{ *memory.Backend }

func (b neverExpires) Lead(ctx context.Context, holder, address string, ttl time.Duration) (backend.Lease, error) {
	return b.Backend.Lead(ctx, holder, address, 1000*ttl)
}

// everyoneLeads tells every caller it leads.
type everyoneLeads struct{ *memory.Backend }

func (b everyoneLeads) Lead(ctx context.Context, holder, address string, ttl time.Duration) (backend.Lease, error) {
	l, err := b.Backend.Lead(ctx, holder, address, ttl)
	l.Leading = err == nil
	return l, err
}

func TestLeaseSuiteFailsEachBrokenLeaseOnTheRuleItBreaks(t *testing.T) {
	for _, c := range []struct {
		name  string
		wrap  func(*memory.Backend) backend.Backend
		rules []string
	}{
		{"keeps the token on takeover", func(m *memory.Backend) backend.Backend { return keepsTheToken{m, new(lastToken)} }, []string{
			"LeaseEndsAfterTTLAndTheTokenGrowsOnTakeover", "RetakingAnEndedLeaseGrowsTheToken", "ResignFreesTheLeaseAtOnce",
			"DeposedLeaderIsFencedOnceTheNewLeaderHasWritten", "TokenIsAboveEveryAppliedFence",
		}},
		{"never expires", func(m *memory.Backend) backend.Backend { return neverExpires{m} }, []string{
			"LeadTakesAFreeLeaseForTTL", "LeaseEndsAfterTTLAndTheTokenGrowsOnTakeover", "RetakingAnEndedLeaseGrowsTheToken",
			"DeposedLeaderIsFencedOnceTheNewLeaderHasWritten",
		}},
		{"lets everyone lead", func(m *memory.Backend) backend.Backend { return everyoneLeads{m} }, []string{
			"OneLeaderAtATime", "ConcurrentLeadsElectOneLeader",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRecorder()
			backendtest.RunLeases(r, func(*recorder) (backend.Backend, func(time.Duration)) {
				m, advance := leaseBackend()
				return c.wrap(m), advance
			})
			for _, rule := range c.rules {
				if len(r.failed(rule)) == 0 {
					t.Errorf("the lease suite passes rule %s on a backend that %s", rule, c.name)
				} else {
					t.Logf("%s: %s", rule, r.failed(rule)[0])
				}
			}
		})
	}
}

func TestLeaseSuiteRecordsNoFailureOnTheMemoryBackend(t *testing.T) {
	r := newRecorder()
	backendtest.RunLeases(r, func(*recorder) (backend.Backend, func(time.Duration)) {
		m, advance := leaseBackend()
		return m, advance
	})
	if len(r.log.byRule) != 0 {
		t.Errorf("failures recorded: %v", r.log.byRule)
	}
}

// forgetsClientIDs answers no client id.
type forgetsClientIDs struct{ *memory.Backend }

func (b forgetsClientIDs) JobByClientID(context.Context, string, string) (string, error) {
	return "", backend.ErrNotFound
}

// misnumbersCommits returns a write's events one sequence number too high.
type misnumbersCommits struct{ *memory.Backend }

func (b misnumbersCommits) Commit(ctx context.Context, w *backend.Write) ([]events.Event, error) {
	es, err := b.Backend.Commit(ctx, w)
	for i := range es {
		es[i].Seq++
	}
	return es, err
}

// CheckHistory agrees with a backend that keeps the contract and finds
// each of these broken ones out on one short history: two jobs
// submitted (one with a client id), one leased, a resubmission refused,
// and reads of a log page, a record, a client id and the live jobs.
func TestCheckHistoryFindsEveryBrokenBackendAndPassesTheMemoryOne(t *testing.T) {
	steps := []backendtest.Step{
		{Job: 0, Type: events.Submitted, ClientID: 1},
		{Job: 2, Type: events.Submitted, Last: true},
		{Job: 0, Type: events.Leased, Last: true},
		{Job: 0, Type: events.Submitted, Last: true}, // refused: stored already
		{Read: 1, Job: 0, From: 1, Limit: 3},
		{Read: 2, Job: 0},
		{Read: 3, ClientID: 1},
		{Read: 4},
	}
	ctx := context.Background()
	check := func(b backend.Backend, broken bool, name string) {
		t.Helper()
		d := backendtest.CheckHistory(ctx, b, "A", steps)
		if broken && d == "" {
			t.Errorf("%s: no disagreement found", name)
		}
		if !broken && d != "" {
			t.Errorf("%s: %s", name, d)
		}
	}
	check(memory.New(backendtest.Schema()), false, "memory")
	check(dropsOneEvent{memory.New(backendtest.Schema())}, true, "dropsOneEvent")
	check(reordersTwo{memory.New(backendtest.Schema())}, true, "reordersTwo")
	check(forgetsClientIDs{memory.New(backendtest.Schema())}, true, "forgetsClientIDs")
	check(misnumbersCommits{memory.New(backendtest.Schema())}, true, "misnumbersCommits")
}
