package server

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// JobsQuery asks for a page of a job set's live jobs, or of its ended
// jobs in one terminal state.
type JobsQuery struct {
	Queue, JobSet string
	// State keeps the jobs in that state (Queued, LeasedState or
	// RunningState); AnyState keeps every live job. A terminal state
	// (SucceededState, FailedState, CancelledState, PreemptedState)
	// pages the backend's records of the set's jobs that ended so
	// (backend.EndedJobs), by submit time only.
	State    events.State
	AnyState bool
	// ByPriority orders the jobs by priority (lower first), then submit
	// time; otherwise by submit time. Ties go by job id.
	ByPriority bool
	// Cursor is the Next of the previous page; "" for the first.
	Cursor string
	// Limit is the most jobs of the page (1 to UIMaxLimit).
	Limit int
}

// jobsCursor is where a page ended: after the job of that priority (when
// ordering by priority), submit time and id.
type jobsCursor struct {
	prio uint32
	sec  int64
	nsec int64
	id   string
}

func (c jobsCursor) String() string {
	return base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("%d.%d.%d.%s", c.prio, c.sec, c.nsec, c.id)))
}

// ParseJobsCursor reads a page's cursor; a malformed one is a
// *flotilla.FieldError naming "cursor".
func parseJobsCursor(s string) (jobsCursor, error) {
	bad := flotilla.Errorf("cursor", s, flotilla.ErrMalformed, "not a cursor this service gave")
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return jobsCursor{}, bad
	}
	parts := strings.SplitN(string(raw), ".", 4)
	if len(parts) != 4 {
		return jobsCursor{}, bad
	}
	p, err1 := strconv.ParseUint(parts[0], 10, 32)
	sec, err2 := strconv.ParseInt(parts[1], 10, 64)
	nsec, err3 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || nsec < 0 || nsec >= 1e9 {
		return jobsCursor{}, bad
	}
	return jobsCursor{prio: uint32(p), sec: sec, nsec: nsec, id: parts[3]}, nil
}

func cursorOf(j *job) jobsCursor {
	t := j.spec.SubmitTime
	return jobsCursor{prio: j.sched().Priority, sec: t.Unix(), nsec: int64(t.Nanosecond()), id: j.id()}
}

// afterCursor reports whether j sorts after c by submit time and id.
func (c jobsCursor) submitCmp(j *job) int {
	t := j.spec.SubmitTime
	if x := cmp.Compare(t.Unix(), c.sec); x != 0 {
		return x
	}
	if x := cmp.Compare(int64(t.Nanosecond()), c.nsec); x != 0 {
		return x
	}
	return strings.Compare(j.id(), c.id)
}

// Jobs returns a page of a job set's live jobs (JobsQuery), with the
// set's counts. backend.ErrNotFound when there is no such queue; a bad
// cursor or limit is a *flotilla.FieldError naming it. A job set with no
// live job is an empty page. The page looks at no more than UIScanBudget
// jobs: filtered on leased or running, only the leases of the queue's
// clusters; otherwise the set's jobs from the cursor on, in order.
func (s *Server) Jobs(ctx context.Context, q JobsQuery) (api.JobsPage, error) {
	var cur *jobsCursor
	var errs []error
	if q.Cursor != "" {
		c, err := parseJobsCursor(q.Cursor)
		errs = append(errs, err)
		cur = &c
	}
	if q.Limit < 1 || q.Limit > UIMaxLimit {
		errs = append(errs, flotilla.Errorf("limit", strconv.Itoa(q.Limit), flotilla.ErrOutOfRange, "want 1 to %d", UIMaxLimit))
	}
	ended := !q.AnyState && q.State.Terminal()
	if ended && q.ByPriority {
		errs = append(errs, flotilla.Errorf("sort", "priority", flotilla.ErrMalformed, "ended jobs (state %s) are listed by submit time only", q.State))
	}
	if err := joinAll(errs); err != nil {
		return api.JobsPage{}, err
	}
	s.mu.Lock()
	page, err := s.st.jobsPage(ctx, &q, cur)
	s.mu.Unlock()
	if err == nil && ended {
		err = s.endedPage(ctx, &q, cur, &page)
	}
	if err == nil {
		err = s.endedCounts(ctx, &q, &page)
	}
	if err != nil {
		return page, err
	}
	page.LastSeq, err = s.lastSeq(ctx, q.Queue, q.JobSet)
	return page, err
}

// endedPage fills page with a page of the set's ended jobs in q.State,
// read from the backend (outside the lock: the records of ended jobs
// change no more).
func (s *Server) endedPage(ctx context.Context, q *JobsQuery, cur *jobsCursor, page *api.JobsPage) error {
	bq := backend.EndedQuery{Queue: q.Queue, JobSet: q.JobSet, State: q.State, Limit: q.Limit}
	if cur != nil {
		bq.After = &backend.EndedAfter{SubmitTime: time.Unix(cur.sec, cur.nsec), ID: cur.id}
	}
	recs, err := backend.ListEnded(ctx, s.st.be, bq)
	if err != nil {
		return err
	}
	for i := range recs {
		page.Jobs = append(page.Jobs, endedRow(&recs[i]))
	}
	if len(recs) == q.Limit {
		j := recs[len(recs)-1].Spec.Job
		c := jobsCursor{sec: j.SubmitTime.Unix(), nsec: int64(j.SubmitTime.Nanosecond()), id: j.ID}
		page.Next = c.String()
	}
	return nil
}

// endedCounts gives page the set's ended jobs per terminal state when
// the backend counts them (backend.EndedCounts), read outside the lock.
func (s *Server) endedCounts(ctx context.Context, q *JobsQuery, page *api.JobsPage) error {
	c, err := backend.CountEnded(ctx, s.st.be, q.Queue, q.JobSet)
	if errors.Is(err, errors.ErrUnsupported) {
		return nil
	}
	if err != nil {
		return err
	}
	page.EndedCounts = &api.EndedCounts{Succeeded: c.Succeeded, Failed: c.Failed, Cancelled: c.Cancelled, Preempted: c.Preempted}
	return nil
}

// endedRow is the row of an ended job's record.
func endedRow(r *backend.Record) api.JobRow {
	st := &r.State
	p := r.Spec.Job.Priority
	if st.Reprioritized {
		p = st.Priority
	}
	row := api.JobRow{ID: r.Spec.Job.ID, State: st.State.String(), Priority: p, Submitted: r.Spec.Job.SubmitTime.UTC(),
		Attempts: st.Attempts, Cluster: st.Cluster, Node: st.Node, CancelRequested: st.CancelRequested}
	if !st.Finished.IsZero() {
		t := st.Finished.UTC()
		row.Finished = &t
	}
	return row
}

func joinAll(errs []error) error {
	var out error
	for _, e := range errs {
		if e != nil {
			out = joinErr(out, e)
		}
	}
	return out
}

func (s *state) jobsPage(ctx context.Context, q *JobsQuery, cur *jobsCursor) (api.JobsPage, error) {
	if err := s.fresh(ctx); err != nil {
		return api.JobsPage{}, err
	}
	if _, ok := s.queues[q.Queue]; !ok {
		return api.JobsPage{}, flotilla.Errorf("queue", q.Queue, backend.ErrNotFound, "no such queue")
	}
	page := api.JobsPage{Queue: q.Queue, JobSet: q.JobSet, Counts: api.JobSetSummary{Name: q.JobSet}, Jobs: []api.JobRow{}}
	set := s.ui.set(q.Queue, q.JobSet, false)
	if set == nil {
		return page, nil
	}
	live := s.liveBySet(q.Queue)[q.JobSet]
	page.Counts.Leased, page.Counts.Running = live[0], live[1]
	page.Counts.Queued = set.live - live[0] - live[1]
	var jobs []*job
	var next *jobsCursor
	switch {
	case !q.AnyState && q.State.Terminal():
		return page, nil // Jobs reads the page from the backend
	case !q.AnyState && q.State.Live():
		jobs, next = s.livePage(q, cur)
	default:
		budget := s.ui.budget
		if budget == 0 {
			budget = UIScanBudget
		}
		jobs, next, page.Partial = set.scanPage(q, cur, budget)
	}
	for _, j := range jobs {
		page.Jobs = append(page.Jobs, rowOf(j))
	}
	if next != nil {
		page.Next = next.String()
	}
	return page, nil
}

func rowOf(j *job) api.JobRow {
	r := api.JobRow{ID: j.id(), State: j.state.String(), Priority: j.sched().Priority, Submitted: j.spec.SubmitTime.UTC(),
		Attempts: int(j.attempts), CancelRequested: j.cancelRequested}
	if l := j.lease; l != nil {
		r.Cluster, r.Node = l.cluster.name, l.node
	}
	return r
}

// pageCmp orders a page's jobs: by priority first when asked, then by
// submit time and id.
func pageCmp(byPriority bool) func(a, b *job) int {
	return func(a, b *job) int {
		if byPriority {
			if c := cmp.Compare(int64(a.sched().Priority), int64(b.sched().Priority)); c != 0 {
				return c
			}
		}
		return submitCmp(a, b)
	}
}

// after reports whether j sorts after the cursor.
func (c *jobsCursor) after(j *job, byPriority bool) bool {
	if c == nil {
		return true
	}
	if byPriority {
		if p := j.sched().Priority; p != c.prio {
			return p > c.prio
		}
	}
	return c.submitCmp(j) > 0
}

// livePage is a page of the set's leased or running jobs: those of the
// queue's leases, sorted (they are few: no more than the clusters run).
func (s *state) livePage(q *JobsQuery, cur *jobsCursor) (page []*job, next *jobsCursor) {
	var all []*job
	for _, c := range s.clusters {
		for j := range c.jobs() {
			if j.state == q.State && j.spec.Queue == q.Queue && j.spec.JobSet == q.JobSet && cur.after(j, q.ByPriority) {
				all = append(all, j)
			}
		}
	}
	slices.SortFunc(all, pageCmp(q.ByPriority))
	if len(all) > q.Limit {
		c := cursorOf(all[q.Limit-1])
		return all[:q.Limit], &c
	}
	return all, nil
}

// scanPage is a page of the set's jobs (queued ones, or all) read in
// order from the cursor: by submit order, or one priority level at a
// time, each in submit order. It stops at the limit or after looking at
// budget jobs (partial).
func (st *uiSet) scanPage(q *JobsQuery, cur *jobsCursor, budget int) (page []*job, next *jobsCursor, partial bool) {
	keep := func(j *job) bool { return !dead(j) && (q.AnyState || j.state == q.State) }
	level, li, lastAt := uint32(0), 0, 0
	// at is the cursor after the job at i of the level being read.
	at := func(i int) *jobsCursor {
		if i < 0 {
			return &jobsCursor{prio: level, sec: math.MinInt64}
		}
		c := cursorOf(st.jobs[i])
		c.prio = level
		return &c
	}
	if q.ByPriority {
		if cur != nil {
			li, _ = slices.BinarySearch(st.levels, cur.prio)
		}
		if li >= len(st.levels) {
			return nil, nil, false
		}
		level = st.levels[li]
	}
	start := 0
	if cur != nil && (!q.ByPriority || cur.prio == level) {
		start, _ = slices.BinarySearchFunc(st.jobs, cur, func(j *job, c *jobsCursor) int { return c.submitCmp(j) })
		if start < len(st.jobs) && cur.submitCmp(st.jobs[start]) == 0 {
			start++
		}
	}
	for {
		for i := start; i < len(st.jobs); i++ {
			if budget--; budget < 0 {
				return page, at(i - 1), true
			}
			j := st.jobs[i]
			if !keep(j) {
				continue
			}
			if q.ByPriority {
				p := j.sched().Priority
				if p != level {
					continue
				}
			}
			if len(page) == q.Limit {
				return page, at(lastAt), false
			}
			page, lastAt = append(page, j), i
		}
		if !q.ByPriority {
			return page, nil, false
		}
		// The next level: the levels may have grown meanwhile.
		li, _ = slices.BinarySearch(st.levels, level)
		li++
		if li >= len(st.levels) {
			return page, nil, false
		}
		if len(page) == q.Limit {
			// Whether the next level holds a job is for the next page.
			return page, at(len(st.jobs) - 1), false
		}
		level, start = st.levels[li], 0
	}
}
