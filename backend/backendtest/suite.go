package backendtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// TB is what the suite needs of a test: *testing.T satisfies TB[*testing.T].
// Run calls Run once per rule; Fatalf must stop the calling goroutine (as
// testing's does, with runtime.Goexit).
type TB[T any] interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Run(name string, f func(T)) bool
}

// checker is what a rule uses of its TB.
type checker interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// rule is one check of the contract, on a fresh backend.
type rule struct {
	name  string
	check func(t checker, b backend.Backend)
}

// Schema returns the resource schema the suite's jobs and nodes use: cpu
// and memory. newBackend must open its backend over these resources.
func Schema() *flotilla.ResourceSchema {
	return flotilla.MustResourceSchema("cpu", "memory")
}

// Rules lists the names of the suite's rules, in the order Run runs them.
func Rules() []string {
	var names []string
	for _, r := range rules() {
		names = append(names, r.name)
	}
	return names
}

func rules() []rule {
	return []rule{
		{"QueuesCreateUpdateDeleteList", queuesCRUD},
		{"CreateQueueTwiceIsErrExists", createQueueTwice},
		{"UpdateOrDeleteUnknownQueueIsErrNotFound", unknownQueueOps},
		{"InvalidQueueIsRejectedAndNotStored", invalidQueue},
		{"DeleteQueueWithLiveJobsIsErrNotEmpty", deleteQueueWithLiveJobs},
		{"QueueTreeFieldsAreStoredAsGiven", queueTreeFields},
		{"GroupsCreateUpdateDeleteList", groupsCRUD},
		{"DeleteGroupWithChildrenIsErrNotEmpty", deleteGroupWithChildren},
		{"QueueCreatedAgainContinuesItsLogsAndClientIDs", queueCreatedAgain},
		{"CommitStoresJobsAndTheirEvents", commitStores},
		{"CommitIsAtomicWhenOneEventIsRefused", commitAtomicRefused},
		{"CommitIsAtomicWhenOneJobIsADuplicate", commitAtomicDuplicate},
		{"CommitRejectsJobsAndSubmittedEventsWithoutTheirPair", commitUnpaired},
		{"CommitToUnknownQueueIsErrNotFound", commitUnknownQueue},
		{"SequenceNumbersAreGapFreeFromOnePerJobSet", sequenceGapFree},
		{"ConcurrentWritersGetGapFreeUniqueSequenceNumbers", concurrentWriters},
		{"EventsPagesWithFromAndLimit", eventsPaging},
		{"ReplayOfEveryJobSetEqualsTheStoredStates", replayEqualsStored},
		{"LiveJobsOmitsTerminalJobs", liveJobsOmitsTerminal},
		{"ClientIDIsUniquePerQueue", clientIDUnique},
		{"NamesAtTheirLimitsAreStoredWholeAndLongerOnesRefused", namesAtTheirLimits},
		{"JobsByIDAnswersEveryIDAtItsPlaceAndMissingOnesAsNone", jobsByID},
		{"EndedJobsPageEachTerminalStateOfASetInSubmitOrder", endedJobs},
		{"JobSetNamesPageEveryJobSetOfAQueueByName", jobSetNames},
		{"WriteFencedBelowTheHighestAppliedIsRefused", fencing},
		{"FencedViewRefusesQueueExecutorUsageCordonAndRetryPolicyWritesBelowTheHighestFence", fencedWrites},
		{"RefusedTransitionChangesNothingAndConsumesNoSequenceNumber", refusedTransition},
		{"CancelledContextAppliesNothing", cancelledContext},
		{"ExecutorsPutReplacesAndListSortsByCluster", executorsRule},
		{"UsagePutIsAtomicAndListSortsByKey", usageRule},
		{"CordonsPutIdempotentlyAndListSortedByKindAndName", cordonsRule},
		{"RetryPoliciesPutReplaceRemoveAndListCopies", retryPoliciesRule},
		{"PoolsOfJobsAndClustersAreStoredAsGiven", poolsRule},
		{"ClosedBackendReturnsErrClosed", closedRule},
	}
}

// Run runs every rule as a subtest of t, each on a fresh, empty backend
// from newBackend, which it closes at the end of the subtest.
func Run[T TB[T]](t T, newBackend func(T) backend.Backend) {
	t.Helper()
	for _, r := range rules() {
		t.Run(r.name, func(t T) {
			b := newBackend(t)
			defer b.Close()
			r.check(t, b)
		})
	}
}

// base is the time of the suite's first event; the suite reads no clock.
func base() time.Time { return time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC) }

// at is base plus k seconds and a few nanoseconds, so that times are
// stored to the nanosecond.
func at(k int) time.Time { return base().Add(time.Duration(k)*time.Second + time.Duration(k)) }

// spec is a job of queue q, job set s, requesting 1 cpu and 1 GiB.
func spec(id, q, s, clientID string) backend.JobSpec {
	return backend.JobSpec{
		Job: &flotilla.Job{
			ID: id, Queue: q, JobSet: s, PriorityClass: flotilla.ArmadaDefault, Priority: 3,
			SubmitTime: base(), Requests: flotilla.Resources{1000, 1 << 30},
			NodeSelector: map[string]string{"zone": "a"},
		},
		ClientID: clientID, Principal: "alice", TerminationGracePeriod: 30 * time.Second, ActiveDeadline: time.Hour,
		Runtime: 20 * time.Second, ExitCode: 3,
	}
}

// ev is an event of job j in q/s.
func ev(q, s, j string, typ events.Type, k int) events.Event {
	return events.Event{Queue: q, JobSet: s, Job: j, Type: typ, Time: at(k)}
}

// lease is a leased event on cluster c, node n, attempt a.
func lease(q, s, j, c, n string, a, k int) events.Event {
	e := ev(q, s, j, events.Leased, k)
	e.Cluster, e.Node, e.Attempt = c, n, a
	return e
}

// submit is a write of new jobs ids in q/s with their submitted events.
func submit(q, s string, ids ...string) *backend.Write {
	w := &backend.Write{}
	for i, id := range ids {
		w.Jobs = append(w.Jobs, spec(id, q, s, ""))
		w.Events = append(w.Events, ev(q, s, id, events.Submitted, i))
	}
	return w
}

func mustQueue(t checker, b backend.Backend, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := b.CreateQueue(context.Background(), flotilla.Queue{Name: n}); err != nil {
			t.Fatalf("CreateQueue(%q): %v", n, err)
		}
	}
}

func mustCommit(t checker, b backend.Backend, w *backend.Write) []events.Event {
	t.Helper()
	out, err := b.Commit(context.Background(), w)
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if len(out) != len(w.Events) {
		t.Fatalf("Commit returned %d events, want %d", len(out), len(w.Events))
	}
	return out
}

func mustEvents(t checker, b backend.Backend, q, s string) []events.Event {
	t.Helper()
	out, err := b.Events(context.Background(), q, s, 1, 0)
	if err != nil {
		t.Fatalf("Events(%s/%s): %v", q, s, err)
	}
	return out
}

// wantErr reports unless errors.Is(err, target).
func wantErr(t checker, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error %v, want one that is %q", what, err, target)
	}
}

// wantFieldError reports unless err holds a *flotilla.FieldError.
func wantFieldError(t checker, what string, err error) {
	t.Helper()
	var fe *flotilla.FieldError
	if !errors.As(err, &fe) {
		t.Errorf("%s: error %v names no field (want a *flotilla.FieldError)", what, err)
	}
}

// wantAbsent reports each of ids that the backend stores.
func wantAbsent(t checker, b backend.Backend, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, err := b.Job(context.Background(), id); !errors.Is(err, backend.ErrNotFound) {
			t.Errorf("Job(%q) after a refused write: error %v, want ErrNotFound", id, err)
		}
	}
}

// wantSeqs reports unless es carry sequence numbers first, first+1, ….
func wantSeqs(t checker, what string, es []events.Event, first uint64) {
	t.Helper()
	for i, e := range es {
		if e.Seq != first+uint64(i) {
			t.Errorf("%s: event %d has seq %d, want %d", what, i, e.Seq, first+uint64(i))
			return
		}
	}
}

// sameEvent reports how a and b differ (Time as instants), or "".
func sameEvent(a, b events.Event) string {
	ta, tb := a.Time, b.Time
	a.Time, b.Time = time.Time{}, time.Time{}
	if a != b || !ta.Equal(tb) {
		return fmt.Sprintf("%+v (time %v) != %+v (time %v)", a, ta, b, tb)
	}
	return ""
}

// sameJob reports how a and b differ (times as instants), or "".
func sameJob(a, b events.Job) string {
	ok := a.ID == b.ID && a.Queue == b.Queue && a.JobSet == b.JobSet && a.State == b.State &&
		a.Attempts == b.Attempts && a.CancelRequested == b.CancelRequested &&
		a.Cluster == b.Cluster && a.Node == b.Node && slices.Equal(a.FailedClusters, b.FailedClusters) &&
		a.Submitted.Equal(b.Submitted) && a.Leased.Equal(b.Leased) && a.Finished.Equal(b.Finished) &&
		a.Reason == b.Reason && a.ExitCode == b.ExitCode && a.Reprioritized == b.Reprioritized && a.Priority == b.Priority &&
		slices.Equal(a.Retries, b.Retries) && a.Rule == b.Rule && slices.Equal(a.AvoidNodes, b.AvoidNodes)
	if ok {
		return ""
	}
	return fmt.Sprintf("%+v != %+v", a, b)
}
