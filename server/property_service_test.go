package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend"
	"github.com/flotilla-sched/flotilla/events"
)

// The service's property test: random programs of commands over a world
// of 2–3 clusters of three 4-cpu nodes in two zones and two queues, each
// cluster driven by a fake executor (fakeExec), with a fake clock and a
// backend whose commits can be made to fail (flakyBackend), a random
// MaxAttempts and RequeuePreempted. Commands: submit (some
// gangs, deadlines, client ids, failing exit codes), resubmit with the
// same client ids, cancel a job or a job set, an executor's report (it
// starts, finishes, returns jobs, obeys kill orders by reporting them
// stopped or dropping them), a report naming a job the executor does not
// hold, executor death and revival (with or without its memory), node
// cordons, clock advances below and past the lease timeout, cycles (some
// with commands run while Schedule runs), service restarts, draining,
// backend faults, deleting and recreating a queue. After every command the
// invariants of svcRun.check hold; after the program a settling phase
// (every executor alive and reporting, cycles) checks them again until
// every job has ended. A failure prints the shrunk program, one command a
// line; SERVICE_PROP_SEED replays another seed.

// cmdKind is what one command of a program does.
type cmdKind uint8

const (
	cmdSubmit cmdKind = iota
	cmdResubmit
	cmdCancel
	cmdCancelSet
	cmdReport
	cmdDie
	cmdRevive
	cmdAdvance
	cmdCycle
	cmdRestart
	cmdFault
	cmdCordon
	cmdDrain
	cmdRogue
	cmdRequeue
)

// svcCmd is one command. Which fields apply depends on kind.
type svcCmd struct {
	kind cmdKind
	// submit: queue (A, B), job set (s0, s1), count identical jobs of cpu
	// cores each, a gang of them, a deadline (0: the default), how long
	// they run and their exit code, the preemptible class, client ids.
	queue, set, count, cpu int
	gang, zone             bool
	deadline, runtime      time.Duration
	exit                   int
	preemptible, clientID  bool
	// cancel: pick chooses among the jobs that have not ended (one time
	// in four among every acknowledged job); cordon: the node.
	pick int
	// report, die, revive, cordon: the cluster (modulo the clusters).
	cluster int
	// report: give back the first job not started yet; obey kill orders
	// by dropping the job silently (not reporting it stopped); keep jobs
	// not started pending; send no nodes. revive: the executor forgot
	// every job it held (a restarted executor, not a partition).
	ret, drop, pending, noNodes, amnesia bool
	// advance: how far.
	d time.Duration
	// cycle: commands run while Schedule runs, the service's lock
	// released (see duringSchedule).
	during []svcCmd
	// fault: how the backend's next Commit fails.
	fault faultMode
}

var (
	genRuntimes      = []time.Duration{0, 5 * time.Second, 20 * time.Second, 50 * time.Second}
	genDeadlinesProp = []time.Duration{0, 0, 15 * time.Second, 40 * time.Second}
)

// decodeCmd draws one command from a seed, so that a program is a slice of
// seeds gopter shrinks by dropping commands.
func decodeCmd(seed uint64) svcCmd {
	rng := rand.New(rand.NewPCG(seed, 9))
	c := svcCmd{cluster: rng.IntN(3)}
	// Weights: reports and cycles most, then submits and clock advances.
	switch k := rng.IntN(36); {
	case k < 5:
		c.kind = cmdSubmit
	case k < 6:
		c.kind = cmdResubmit
	case k < 8:
		c.kind = cmdCancel
	case k < 9:
		c.kind = cmdCancelSet
	case k < 17:
		c.kind = cmdReport
	case k < 18:
		c.kind = cmdDie
	case k < 19:
		c.kind = cmdRevive
	case k < 23:
		c.kind = cmdAdvance
	case k < 29:
		c.kind = cmdCycle
	case k < 30:
		c.kind = cmdRestart
	case k < 32:
		c.kind = cmdFault
	case k < 33:
		c.kind = cmdCordon
	case k < 34:
		c.kind = cmdRogue
	case k < 35:
		c.kind = cmdRequeue
	case rng.IntN(3) == 0:
		c.kind = cmdDrain // rare: cycles lease nothing until a restart
	default:
		c.kind = cmdCycle
	}
	c.fault = faultMode(1 + rng.IntN(3))
	c.queue, c.set = rng.IntN(2), rng.IntN(2)
	c.gang = rng.IntN(4) == 0
	if c.gang {
		c.count, c.cpu, c.zone = 2+rng.IntN(2), 1+rng.IntN(2), rng.IntN(2) == 0
	} else {
		c.count, c.cpu = 1+rng.IntN(3), 1+rng.IntN(3)
	}
	c.deadline = genDeadlinesProp[rng.IntN(len(genDeadlinesProp))]
	c.runtime = genRuntimes[rng.IntN(len(genRuntimes))]
	if rng.IntN(4) == 0 {
		c.exit = 1
	}
	c.preemptible, c.clientID = rng.IntN(2) == 0, rng.IntN(2) == 0
	c.pick = rng.IntN(1000)
	c.ret, c.drop = rng.IntN(6) == 0, rng.IntN(3) == 0
	c.pending, c.noNodes, c.amnesia = rng.IntN(5) == 0, rng.IntN(2) == 0, rng.IntN(2) == 0
	if rng.IntN(3) == 0 {
		c.d = time.Duration(31+rng.IntN(15)) * time.Second // past the lease timeout
	} else {
		c.d = time.Duration(1+rng.IntN(15)) * time.Second
	}
	if c.kind == cmdCycle && rng.IntN(3) == 0 {
		for range 1 + rng.IntN(3) {
			d := decodeCmd(rng.Uint64())
			if d.kind != cmdRestart {
				d.during = nil
				c.during = append(c.during, d)
			}
		}
	}
	return c
}

func (c svcCmd) String() string {
	cl := "c" + strconv.Itoa(c.cluster)
	switch c.kind {
	case cmdSubmit:
		var b strings.Builder
		fmt.Fprintf(&b, "submit %s/s%d %d×cpu%d", []string{"A", "B"}[c.queue], c.set, c.count, c.cpu)
		if c.gang {
			b.WriteString(" gang")
			if c.zone {
				b.WriteString("(zone)")
			}
		}
		if c.preemptible {
			b.WriteString(" preemptible")
		}
		if c.deadline > 0 {
			fmt.Fprintf(&b, " deadline=%s", c.deadline)
		}
		fmt.Fprintf(&b, " runtime=%s exit=%d", c.runtime, c.exit)
		if c.clientID {
			b.WriteString(" clientIds")
		}
		return b.String()
	case cmdResubmit:
		return "resubmit the last request with client ids"
	case cmdCancel:
		return fmt.Sprintf("cancel job #%d", c.pick)
	case cmdCancelSet:
		return fmt.Sprintf("cancel job set %s/s%d", []string{"A", "B"}[c.queue], c.set)
	case cmdReport:
		var flags []string
		for _, f := range []struct {
			on   bool
			name string
		}{{c.ret, "return one"}, {c.drop, "drop killed"}, {c.pending, "keep pending"}, {c.noNodes, "no nodes"}} {
			if f.on {
				flags = append(flags, f.name)
			}
		}
		return fmt.Sprintf("report %s %v", cl, flags)
	case cmdDie:
		return "executor " + cl + " dies"
	case cmdRevive:
		if c.amnesia {
			return "executor " + cl + " restarts, forgetting its jobs"
		}
		return "executor " + cl + " comes back"
	case cmdAdvance:
		return "advance " + c.d.String()
	case cmdFault:
		return "the next commit " + c.fault.String()
	case cmdCordon:
		return fmt.Sprintf("executor %s cordons or uncordons node %d (reported next)", cl, c.pick%3)
	case cmdDrain:
		return "drain the service"
	case cmdRogue:
		return "executor " + cl + " reports a job it does not hold"
	case cmdRequeue:
		return fmt.Sprintf("delete queue %s and create it again", propQueues[c.queue])
	case cmdCycle:
		if len(c.during) == 0 {
			return "cycle"
		}
		return fmt.Sprintf("cycle, while Schedule runs: %v", c.during)
	default:
		return "restart the service"
	}
}

// svcProgram is a generated program.
type svcProgram struct {
	clusters         int
	requeuePreempted bool
	maxAttempts      int
	cmds             []svcCmd
}

func (p svcProgram) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d clusters, requeuePreempted=%v, maxAttempts=%d, %d commands:\n", p.clusters, p.requeuePreempted, p.maxAttempts, len(p.cmds))
	for i, c := range p.cmds {
		fmt.Fprintf(&b, "  %3d %s\n", i, c)
	}
	return b.String()
}

// servicePropertyParams sizes the runs: fewer and shorter with -short.
func servicePropertyParams() *gopter.TestParameters {
	seed := int64(20261122)
	if s, err := strconv.ParseInt(os.Getenv("SERVICE_PROP_SEED"), 10, 64); err == nil {
		seed = s
	}
	params := gopter.DefaultTestParametersWithSeed(seed)
	params.MinSuccessfulTests, params.MinSize, params.MaxSize = 200, 10, 200
	if testing.Short() {
		params.MinSuccessfulTests, params.MaxSize = 30, 80
	}
	return params
}

// serviceProperty runs check over random programs; check returns "" or
// what went wrong.
func serviceProperty(t *testing.T, name string, check func(p svcProgram) string) {
	props := gopter.NewProperties(servicePropertyParams())
	props.Property(name, prop.ForAll(func(clusters int, requeue bool, attempts int, seeds []uint64) string {
		p := svcProgram{clusters: clusters, requeuePreempted: requeue, maxAttempts: attempts}
		for _, s := range seeds {
			p.cmds = append(p.cmds, decodeCmd(s))
		}
		if msg := check(p); msg != "" {
			return msg + "\nprogram: " + p.String()
		}
		return ""
	}, gen.IntRange(2, 3), gen.Bool(), gen.IntRange(1, 3), gen.SliceOf(gen.UInt64())))
	props.TestingRun(t)
}

// TestPropertyServiceKeepsItsInvariantsOverRandomInterleavings checks,
// after every command of a random program and through a settling phase
// at its end: at most one live lease per job, no two executors holding
// the same lease, and after each report an executor runs only its
// cluster's live leases; no job lost or duplicated; replay of every log
// equals the backend's records, Status and the server's memory; no node
// over-committed by live leases; every event a transition of SERVICE.md's
// table, sequence numbers 1…n; a cycle leases a gang whole into one
// cluster, and nothing to a silent cluster, a cordoned node, or while
// draining; a refused report changes nothing; and, once settled, every
// job ended (but members of a gang that can never be whole again, see
// incompleteGang).
func TestPropertyServiceKeepsItsInvariantsOverRandomInterleavings(t *testing.T) {
	serviceProperty(t, "service invariants", func(p svcProgram) string {
		return runProgram(t, p, false)
	})
}

// runProgram runs p with the invariants checked after every command, then
// settles. avoid adds the avoid-cluster rule (svcRun.checkAvoid).
func runProgram(t *testing.T, p svcProgram, avoid bool) string {
	r, err := newSvcRun(t, p)
	if err != "" {
		return err
	}
	r.avoid = avoid
	for i, c := range p.cmds {
		if msg := r.do(c); msg != "" {
			return fmt.Sprintf("command %d (%s): %s", i, c, msg)
		}
		if msg := r.check(); msg != "" {
			return fmt.Sprintf("after command %d (%s): %s", i, c, msg)
		}
	}
	if msg := r.settle(); msg != "" {
		return "settling: " + msg
	}
	return ""
}

// svcRun is one program's world: the service, its fake executors, and
// what the checks remember.
type svcRun struct {
	w     *world
	execs []*fakeExec
	// acked are the job ids Submit returned, in order, each once.
	acked   []string
	ackedIn map[string]bool
	// lastReq and lastIDs are the last accepted request with client ids
	// and its ids, for resubmission.
	lastReq *SubmitRequest
	lastIDs []string
	submits int
	// seen is, per log (queue/set), the last sequence number checked.
	seen  map[string]uint64
	avoid bool
	// flaky is the service's backend; maybe are the ids of jobs in writes
	// whose commit failed (stored or not).
	flaky *flakyBackend
	maybe map[string]bool
}

// The world's queues and job sets.
var (
	propQueues = []string{"A", "B"}
	propSets   = []string{"s0", "s1"}
)

func newSvcRun(t *testing.T, p svcProgram) (*svcRun, string) {
	r := &svcRun{ackedIn: map[string]bool{}, seen: map[string]uint64{}, maybe: map[string]bool{}}
	r.w = newWorld(t, func(c *Config) {
		c.RequeuePreempted, c.MaxAttempts = p.requeuePreempted, p.maxAttempts
		r.flaky = &flakyBackend{Backend: c.Backend, maybe: r.maybe}
		c.Backend = r.flaky
	})
	w := r.w
	for i, q := range propQueues {
		var opts []QueueOption
		if i == 0 {
			// The first queue retries a run failing with exit 1 or on its
			// deadline once, off its node: run-failed events, retry
			// counts and avoided nodes for the replay to rebuild.
			opts = append(opts, WithRetryPolicy(&events.RetryPolicy{Rules: []events.RetryRule{
				{OnExitCodes: []int{1}, OnReasons: []events.FailureReason{events.ReasonDeadline}, RetryLimit: 1, AvoidSameNode: true}}}))
		}
		if err := w.srv.CreateQueue(w.ctx, flotilla.Queue{Name: q}, opts...); err != nil {
			return nil, err.Error()
		}
	}
	for i := range p.clusters {
		name := "c" + strconv.Itoa(i)
		nodes := nodesOf(name, 3, 4)
		for k := range nodes {
			// Two zones a cluster: n0 and n1, n2.
			nodes[k].Labels = map[string]string{"zone": fmt.Sprintf("%s-z%d", name, min(k, 1))}
		}
		e := &fakeExec{name: name, nodes: nodes, alive: true, held: map[string]*heldJob{}}
		r.execs = append(r.execs, e)
		if msg := r.report(e, svcCmd{kind: cmdReport}); msg != "" {
			return nil, msg
		}
	}
	return r, ""
}

// do runs one command; it returns what went wrong, if anything. A
// command that fails on an injected fault has done what it did (nothing,
// or all of it when the outcome is unknown): that is not a failure.
func (r *svcRun) do(c svcCmd) string {
	fired := r.flaky.fired
	msg := r.do1(c)
	if msg != "" && r.flaky.fired != fired && strings.Contains(msg, errInjected.Error()) {
		return ""
	}
	return msg
}

func (r *svcRun) do1(c svcCmd) string {
	w := r.w
	switch c.kind {
	case cmdSubmit:
		return r.submit(r.request(c))
	case cmdResubmit:
		if r.lastReq == nil {
			return ""
		}
		ids, err := w.srv.Submit(w.ctx, r.lastReq)
		if err != nil {
			return fmt.Sprintf("resubmission refused: %v", err)
		}
		if r.lastIDs == nil {
			// The first submission failed: its jobs were stored or not;
			// the client's retry names them either way.
			return r.ack(r.lastReq, ids)
		}
		if !slices.Equal(ids, r.lastIDs) {
			return fmt.Sprintf("resubmission with the same client ids returned %v, first %v", ids, r.lastIDs)
		}
	case cmdCancel:
		if len(r.acked) == 0 {
			return ""
		}
		// Mostly a job that has not ended.
		ids := r.acked
		if open := slices.Sorted(w.srv.st.jobs.ids()); len(open) > 0 && c.pick%4 > 0 {
			ids = open
		}
		if _, err := w.srv.Cancel(w.ctx, ids[c.pick%len(ids)]); err != nil {
			return fmt.Sprintf("cancel: %v", err)
		}
	case cmdCancelSet:
		// A set that never had a job is not found; one that had is
		// cancelled (its live jobs), also when they all ended.
		logged, err := w.srv.Events(w.ctx, propQueues[c.queue], propSets[c.set], 1, 1)
		if err != nil {
			return fmt.Sprintf("cancel job set: reading its log: %v", err)
		}
		_, err = w.srv.CancelJobSet(w.ctx, propQueues[c.queue], propSets[c.set])
		switch {
		case len(logged) == 0 && !errors.Is(err, backend.ErrNotFound):
			return fmt.Sprintf("cancel job set that never had a job: %v, want not found", err)
		case len(logged) > 0 && err != nil:
			return fmt.Sprintf("cancel job set: %v", err)
		}
	case cmdReport:
		return r.report(r.exec(c), c)
	case cmdDie:
		r.exec(c).alive = false
	case cmdRevive:
		e := r.exec(c)
		e.alive = true
		if c.amnesia {
			clear(e.held)
		}
	case cmdAdvance:
		w.clock.Advance(c.d)
	case cmdCycle:
		return r.cycle(c.during)
	case cmdFault:
		r.flaky.armed = c.fault
	case cmdCordon:
		n := &r.exec(c).nodes[c.pick%3]
		n.Unschedulable = !n.Unschedulable
	case cmdDrain:
		w.srv.Drain()
	case cmdRogue:
		return r.rogueReport(r.exec(c))
	case cmdRequeue:
		return r.recreateQueue(propQueues[c.queue])
	case cmdRestart:
		srv, err := New(w.ctx, w.srv.st.cfg)
		if err != nil {
			return fmt.Sprintf("restart: %v", err)
		}
		w.srv = srv
	}
	return ""
}

func (r *svcRun) exec(c svcCmd) *fakeExec { return r.execs[c.cluster%len(r.execs)] }

// request builds a submit command's request: client ids and gang ids are
// unique per submission.
func (r *svcRun) request(c svcCmd) *SubmitRequest {
	r.submits++
	t := JobTemplate{
		Count:    intp(c.count),
		Requests: map[string]string{"cpu": strconv.Itoa(c.cpu), "memory": "1Gi"},
		Runtime:  c.runtime.String(),
		ExitCode: c.exit,
	}
	if c.deadline > 0 {
		t.ActiveDeadline = c.deadline.String()
	}
	if c.preemptible {
		t.PriorityClass = flotilla.ArmadaPreemptible
	}
	if c.clientID {
		t.ClientID = "cid" + strconv.Itoa(r.submits)
	}
	if c.gang {
		t.Gang = &GangSpec{ID: "g" + strconv.Itoa(r.submits), Cardinality: c.count}
		if c.zone {
			t.Gang.NodeUniformityLabel = "zone"
		}
	}
	return &SubmitRequest{Queue: propQueues[c.queue], JobSet: propSets[c.set], Jobs: []JobTemplate{t}}
}

// submit submits req and remembers the ids acknowledged.
func (r *svcRun) submit(req *SubmitRequest) string {
	ids, err := r.w.srv.Submit(r.w.ctx, req)
	if err != nil {
		if req.Jobs[0].ClientID != "" {
			r.lastReq, r.lastIDs = req, nil // retried by a resubmission
		}
		return fmt.Sprintf("valid request refused: %v", err)
	}
	return r.ack(req, ids)
}

// ack remembers ids as acknowledged for req.
func (r *svcRun) ack(req *SubmitRequest, ids []string) string {
	for _, id := range ids {
		if r.ackedIn[id] {
			return fmt.Sprintf("a new request's id %s was acknowledged before", id)
		}
		r.ackedIn[id] = true
		r.acked = append(r.acked, id)
	}
	if req.Jobs[0].ClientID != "" {
		r.lastReq, r.lastIDs = req, ids
	}
	return ""
}

// fakeExec is one cluster's executor: it remembers the leases it received
// and what it did with them.
type fakeExec struct {
	name  string
	nodes []flotilla.Node
	alive bool
	held  map[string]*heldJob
}

// heldJob is one lease an executor holds.
type heldJob struct {
	attempt int
	node    string
	// started is when the executor started the job (zero: pending).
	started  time.Time
	runtime  time.Duration
	exit     int
	stopping bool // told to kill it: reports it stopped next
}

// report sends e's report (nothing when e is dead) and does what the reply
// says: it starts holding the new leases and obeys the kill orders. Then
// every lease it still believes it runs is the server's live lease on its
// cluster, not asked to stop.
func (r *svcRun) report(e *fakeExec, c svcCmd) string {
	if !e.alive {
		return ""
	}
	now := r.w.clock.Now()
	rep := &Report{Cluster: e.name}
	if !c.noNodes {
		rep.Nodes = e.nodes
	}
	returned := false
	for _, id := range slices.Sorted(maps.Keys(e.held)) {
		h := e.held[id]
		jr := JobReport{Job: id, Attempt: h.attempt}
		switch {
		case h.stopping:
			jr.Phase = PhaseStopped
		case h.started.IsZero() && c.ret && !returned:
			jr.Phase, returned = PhaseReturned, true
		case h.started.IsZero() && c.pending:
			jr.Phase = PhasePending
		case h.started.IsZero():
			h.started, jr.Phase = now, PhaseRunning
		case now.Sub(h.started) < h.runtime:
			jr.Phase = PhaseRunning
		case h.exit == 0:
			jr.Phase = PhaseSucceeded
		default:
			jr.Phase, jr.ExitCode = PhaseFailed, h.exit
		}
		rep.Jobs = append(rep.Jobs, jr)
	}
	reply, err := r.w.srv.Report(r.w.ctx, rep)
	if err != nil {
		return fmt.Sprintf("report of %s refused: %v\nreport: %+v", e.name, err, rep.Jobs)
	}
	for _, jr := range rep.Jobs {
		switch jr.Phase {
		case PhaseSucceeded, PhaseFailed, PhaseReturned, PhaseStopped:
			delete(e.held, jr.Job)
		}
	}
	killed := map[string]bool{}
	for _, k := range reply.Kill {
		if h := e.held[k.Job]; h != nil && h.attempt == k.Attempt {
			killed[k.Job] = true
			if c.drop {
				delete(e.held, k.Job)
			} else {
				h.stopping = true
			}
		}
	}
	for _, l := range reply.Leases {
		// A new lease of a job whose older lease the reply kills replaces
		// it (the executor runs one copy of a job); any other lease of a
		// job it holds is one it knew.
		if h := e.held[l.Job.ID]; h != nil && !(killed[l.Job.ID] && h.attempt < l.Attempt) {
			return fmt.Sprintf("%s was sent lease %d of %s, which it holds (attempt %d)", e.name, l.Attempt, l.Job.ID, h.attempt)
		}
		e.held[l.Job.ID] = &heldJob{attempt: l.Attempt, node: l.Node, runtime: l.Runtime, exit: l.ExitCode}
	}
	// Rule 1, the executor's side: once it obeyed the reply, what it
	// believes it runs is live on its cluster; and it holds every lease of
	// its cluster not started yet, but those of jobs its report listed
	// (under a lease that ended: they come with its next report).
	s := r.w.srv
	listed := map[string]bool{}
	for _, jr := range rep.Jobs {
		listed[jr.Job] = true
	}
	for j := range s.st.clusters[e.name].jobs() {
		if j.state == events.LeasedState && !j.cancelRequested && e.held[j.id()] == nil && !listed[j.id()] {
			return fmt.Sprintf("after its report %s does not hold lease %d of %s", e.name, j.attempts, j.id())
		}
	}
	for _, id := range slices.Sorted(maps.Keys(e.held)) {
		h := e.held[id]
		if h.stopping {
			continue
		}
		j := s.st.jobs.get(id)
		switch {
		case j == nil || !j.state.Live():
			return fmt.Sprintf("after its report %s still runs %s (lease %d), which holds no lease", e.name, id, h.attempt)
		case j.lease.cluster.name != e.name || int(j.attempts) != h.attempt || j.lease.node != h.node:
			return fmt.Sprintf("after its report %s still runs %s lease %d on %s; the live lease is %d on %s/%s",
				e.name, id, h.attempt, h.node, j.attempts, j.lease.cluster.name, j.lease.node)
		case j.cancelRequested:
			return fmt.Sprintf("after its report %s still runs %s, whose cancellation was requested, without a kill order", e.name, id)
		}
	}
	return ""
}

// faultMode is how an armed flakyBackend fails its next Commit.
type faultMode uint8

const (
	faultNone faultMode = iota
	// faultRefused: an error, nothing stored.
	faultRefused
	// faultLost: backend.ErrOutcomeUnknown, nothing stored.
	faultLost
	// faultApplied: backend.ErrOutcomeUnknown, the write stored.
	faultApplied
)

func (m faultMode) String() string {
	return [...]string{"succeeds", "fails", "has an unknown outcome (lost)", "has an unknown outcome (stored)"}[m]
}

// errInjected marks the errors a flakyBackend makes up.
var errInjected = errors.New("injected fault")

// flakyBackend is a backend whose next Commit fails as armed.
type flakyBackend struct {
	backend.Backend
	armed faultMode
	// fired counts the faults injected; maybe collects the ids of the jobs
	// of failed writes.
	fired int
	maybe map[string]bool
}

func (f *flakyBackend) Commit(ctx context.Context, w *backend.Write) ([]events.Event, error) {
	mode := f.armed
	f.armed = faultNone
	if mode == faultNone {
		return f.Backend.Commit(ctx, w)
	}
	f.fired++
	for _, sp := range w.Jobs {
		f.maybe[sp.Job.ID] = true
	}
	switch mode {
	case faultRefused:
		return nil, errInjected
	case faultApplied:
		if _, err := f.Backend.Commit(ctx, w); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: %w", errInjected, backend.ErrOutcomeUnknown)
}

// rogueReport sends e's report with one job it does not hold: another
// cluster's live lease, or a job that does not exist. The report must be
// refused whole: no event stored, no lease renewed, the cluster's report
// time unchanged.
func (r *svcRun) rogueReport(e *fakeExec) string {
	s := r.w.srv
	if !e.alive || s.st.clusters[e.name] == nil {
		return ""
	}
	rep := &Report{Cluster: e.name}
	for _, id := range slices.Sorted(maps.Keys(e.held)) {
		h := e.held[id]
		jr := JobReport{Job: id, Attempt: h.attempt, Phase: PhaseRunning}
		switch {
		case h.stopping:
			jr.Phase = PhaseStopped
		case h.started.IsZero():
			jr.Phase = PhasePending
		}
		rep.Jobs = append(rep.Jobs, jr)
	}
	bogus := JobReport{Job: "no-such-job", Attempt: 1, Phase: PhaseRunning}
	for _, id := range slices.Sorted(s.st.jobs.ids()) {
		if j := s.st.jobs.get(id); j.lease != nil && j.lease.cluster.name != e.name && e.held[id] == nil {
			bogus = JobReport{Job: id, Attempt: int(j.attempts), Phase: PhaseRunning}
			break
		}
	}
	rep.Jobs = append(rep.Jobs, bogus)
	before := r.fingerprint()
	_, err := s.Report(r.w.ctx, rep)
	if !errors.Is(err, ErrNotHeld) && !errors.Is(err, backend.ErrNotFound) {
		return fmt.Sprintf("a report naming %s, which %s does not hold: %v, want ErrNotHeld or ErrNotFound", bogus.Job, e.name, err)
	}
	if after := r.fingerprint(); after != before {
		return fmt.Sprintf("a refused report changed the service:\n%s\nbecame\n%s", before, after)
	}
	return ""
}

// fingerprint sums up what a refused report must not change: the logs'
// lengths, the leases' renewals, the clusters' report times.
func (r *svcRun) fingerprint() string {
	s := r.w.srv
	var b strings.Builder
	for _, q := range propQueues {
		for _, set := range propSets {
			evs, _ := s.Events(r.w.ctx, q, set, 0, 0)
			fmt.Fprintf(&b, "%s/%s: %d events\n", q, set, len(evs))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.st.clusters)) {
		c := s.st.clusters[name]
		fmt.Fprintf(&b, "%s reported %s\n", name, c.reported.Format(time.RFC3339Nano))
	}
	for _, id := range slices.Sorted(s.st.jobs.ids()) {
		if j := s.st.jobs.get(id); j.lease != nil {
			fmt.Fprintf(&b, "%s renewed %s\n", id, j.lease.cluster.mark(j).renewed.Format(time.RFC3339Nano))
		}
	}
	return b.String()
}

// recreateQueue deletes queue q, which must be refused (ErrNotEmpty) while
// it has jobs that have not ended, and creates it again: its logs go on.
func (r *svcRun) recreateQueue(q string) string {
	s := r.w.srv
	open := 0
	for j := range s.st.jobs.all() {
		if j.spec.Queue == q {
			open++
		}
	}
	err := s.DeleteQueue(r.w.ctx, q)
	switch {
	case open > 0 && !errors.Is(err, backend.ErrNotEmpty):
		return fmt.Sprintf("deleting queue %s with %d jobs that have not ended: %v, want ErrNotEmpty", q, open, err)
	case open > 0:
		return ""
	case err != nil:
		return fmt.Sprintf("deleting queue %s, whose jobs have all ended: %v", q, err)
	}
	if _, err := s.Queue(r.w.ctx, q); !errors.Is(err, backend.ErrNotFound) {
		return fmt.Sprintf("queue %s deleted, then: %v, want ErrNotFound", q, err)
	}
	if err := s.CreateQueue(r.w.ctx, flotilla.Queue{Name: q}); err != nil {
		return fmt.Sprintf("creating queue %s again: %v", q, err)
	}
	return ""
}

// TestPropertyServiceNeverLeasesAJobBackToAClusterWhereItFailedWhileAnotherHadRoom
// runs the same programs with rule 5 checked after every cycle: a job
// (a gang) whose lease expired or was returned on a cluster is not leased
// there again while another cluster in the cycle, where it did not fail,
// had free room for it (svcRun.checkAvoid).
func TestPropertyServiceNeverLeasesAJobBackToAClusterWhereItFailedWhileAnotherHadRoom(t *testing.T) {
	serviceProperty(t, "avoid failed clusters", func(p svcProgram) string {
		return runProgram(t, p, true)
	})
}
