package scheduler_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/queue"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// fuzzBytes hands out the fuzz input a little at a time; past its end it
// reads zeros.
type fuzzBytes struct {
	b []byte
}

func (f *fuzzBytes) byte() byte {
	if len(f.b) == 0 {
		return 0
	}
	v := f.b[0]
	f.b = f.b[1:]
	return v
}

// intn is a number in [0, n).
func (f *fuzzBytes) intn(n int) int { return int(f.byte()) % n }

func (f *fuzzBytes) bit() bool { return f.byte()&1 == 1 }

// fuzzWorld is a snapshot and config built from fuzz bytes through the
// public API, and the queued jobs (some invalid) behind its Queued.
type fuzzWorld struct {
	cfg    scheduler.Config
	snap   *scheduler.Snapshot
	queued map[string]int // per queue, entries the store holds
	valid  map[*flotilla.Job]bool
	lies   *lyingQueued // the Queued, when it misstates counts (nothing adds up then)
	tree   bool         // addTree made it a queue tree
}

var fuzzClasses = []flotilla.PriorityClass{
	{Name: flotilla.ArmadaDefault, Priority: 30000},
	{Name: flotilla.ArmadaPreemptible, Priority: 20000, Preemptible: true},
	{Name: "urgent", Priority: 25000, Preemptible: true},
	{Name: "scavenger", Priority: 10000, Preemptible: true},
	{Name: "batch", Priority: 15000},
}

// buildFuzzWorld builds a flat world, then (from the bytes left) maybe
// makes it a queue tree.
func buildFuzzWorld(data []byte) *fuzzWorld {
	f := &fuzzBytes{data}
	w := buildFlatFuzzWorld(f)
	w.addTree(f)
	return w
}

func buildFlatFuzzWorld(f *fuzzBytes) *fuzzWorld {
	schema := flotilla.MustResourceSchema("cpu", "memory")
	cfg := scheduler.DefaultConfig(schema)
	cfg.PriorityClasses = append([]flotilla.PriorityClass(nil), fuzzClasses[:2+f.intn(4)]...)
	knobs := f.byte()
	cfg.MaxQueueLookback = int(knobs % 4)
	if knobs&(1<<2) != 0 {
		cfg.EvictionProbability = 0.5
	}
	cfg.ProtectedFractionOfFairShare = []float64{1, 0.5, 0}[f.intn(3)]
	if knobs&(1<<3) != 0 {
		cfg.MaximumResourceFractionToSchedule = map[string]float64{"cpu": 0.3}
	}
	if knobs&(1<<4) != 0 {
		cfg.MaximumPerQueueSchedulingRate, cfg.MaximumPerQueueSchedulingBurst = 1, 1+f.intn(4)
	}
	if knobs&(1<<5) != 0 {
		cfg.MaximumSchedulingRate, cfg.MaximumSchedulingBurst = 1, 1+f.intn(8)
	}
	if knobs&(1<<6) != 0 {
		for i := range cfg.PriorityClasses {
			cfg.PriorityClasses[i].MaximumResourceFractionPerQueue = map[string]float64{"cpu": 0.5}
		}
	}
	if knobs&(1<<7) != 0 {
		cfg.Strategy, cfg.PriorityHalftime = scheduler.Lottery, time.Minute
	}
	cfg.ReportEveryUnscheduled = f.bit()
	cfg.EnablePreferLargeJobOrdering = f.bit()

	w := &fuzzWorld{cfg: cfg, snap: &scheduler.Snapshot{Seed: uint64(f.byte())}, queued: map[string]int{}, valid: map[*flotilla.Job]bool{}}
	res := func(cpu, mem int) flotilla.Resources {
		return flotilla.Resources{int64(cpu) * 500, int64(mem) << 30 * 1000}
	}
	for i := range 1 + f.intn(5) {
		n := &flotilla.Node{Name: fmt.Sprintf("n%d", i), Total: res(f.intn(17), f.intn(9)),
			Cluster: fmt.Sprintf("c%d", f.intn(2)), Labels: map[string]string{"rack": fmt.Sprintf("r%d", f.intn(2))}}
		switch f.intn(8) {
		case 0:
			n.Unschedulable = true
		case 1:
			n.Taints = []flotilla.Taint{{Key: "gpu", Effect: flotilla.TaintNoSchedule}}
		}
		w.snap.Nodes = append(w.snap.Nodes, n)
	}
	nq := 1 + f.intn(3)
	for i := range nq {
		w.snap.Queues = append(w.snap.Queues, &flotilla.Queue{Name: fmt.Sprintf("q%d", i), PriorityFactor: []float64{1, 2, 0.5}[f.intn(3)]})
	}
	seq := 0
	job := func() *flotilla.Job {
		seq++
		j := &flotilla.Job{ID: fmt.Sprintf("j%d", seq), Queue: fmt.Sprintf("q%d", f.intn(nq)),
			PriorityClass: cfg.PriorityClasses[f.intn(len(cfg.PriorityClasses))].Name,
			Priority:      uint32(f.intn(3)), SubmitTime: t0.Add(time.Duration(f.intn(4)) * time.Second),
			Requests: res(f.intn(9), f.intn(3))}
		switch f.intn(8) {
		case 0:
			j.NodeSelector = map[string]string{"rack": "r0"}
		case 1:
			j.Tolerations = []flotilla.Toleration{{Key: "gpu", Operator: flotilla.TolerationExists}}
		case 2, 3:
			card := 1 + f.intn(3)
			j.Gang = flotilla.Gang{ID: fmt.Sprintf("g%d", f.intn(4)), Cardinality: card}
			if f.bit() {
				j.Gang.NodeUniformityLabel = "rack"
			}
		}
		return j
	}
	// Running jobs, on a node with room left, except one time in eight (a
	// snapshot that over-commits is an error, which the fuzzer explores too).
	free := make([]flotilla.Resources, len(w.snap.Nodes))
	for i, n := range w.snap.Nodes {
		free[i] = n.Total.Clone()
	}
	for range f.intn(8) {
		j := job()
		j.ID = "r" + j.ID
		ni := f.intn(len(w.snap.Nodes))
		if !j.Requests.Fits(free[ni]) && f.intn(8) != 0 {
			continue
		}
		free[ni].Sub(j.Requests)
		w.snap.Running = append(w.snap.Running, scheduler.Running{Job: j, Node: w.snap.Nodes[ni].Name,
			Start: t0.Add(-time.Duration(f.intn(60)) * time.Second)})
	}
	// Queued jobs: through a Store, or a hand-written Queued that hands
	// out whatever it is given, invalid jobs included.
	useStore := f.bit()
	var store *queue.Store
	list := newListQueued(cfg)
	if useStore {
		store, _ = queue.New(schema, cfg.PriorityClasses, cfg.DefaultPriorityClass)
	}
	for range f.intn(24) {
		j := job()
		if !useStore {
			switch f.intn(10) {
			case 0:
				j.Requests = j.Requests[:1]
			case 1:
				j.Requests[0] = -j.Requests[0] - 1000
			case 2:
				list.add(j.Queue, nil)
				w.queued[j.Queue]++
				continue
			}
		}
		w.valid[j] = j.Validate(schema) == nil
		if useStore {
			if store.Add(j) == nil {
				w.queued[j.Queue]++
			}
			continue
		}
		list.addJob(j)
		w.queued[j.Queue]++
	}
	if useStore {
		w.snap.Queued = store
		return w
	}
	// A list hands out its entries in queue order, except one time in
	// four (out-of-order entries are reported invalid); a lying list
	// misstates its counts or fails part way.
	if f.intn(4) != 0 {
		for _, es := range list.queues {
			slices.SortStableFunc(es, func(a, b *queue.Entry) int {
				switch {
				case a == nil || a.Job == nil || b == nil || b.Job == nil:
					return 0
				case queue.Less(a, b):
					return -1
				case queue.Less(b, a):
					return 1
				}
				return 0
			})
		}
	}
	if f.intn(4) == 0 {
		w.lies = &lyingQueued{listQueued: list, jobs: f.intn(5) - 2, gangJobs: f.intn(3) - 1,
			keys: f.intn(3) - 1, failAfter: f.intn(6) - 1, twice: f.bit(), overread: f.intn(3) - 1, nilReader: f.intn(8) == 0}
		w.snap.Queued = w.lies
		return w
	}
	w.snap.Queued = list
	return w
}

// lyingQueued is a listQueued that misstates Stats and SchedulingKeys
// counts and the counts Read returns by fixed amounts, hands out its first
// entry twice, returns a nil reader, or fails reading after a number of
// reads.
type lyingQueued struct {
	*listQueued
	jobs, gangJobs, keys int
	failAfter            int // reads before every read fails; < 0 never
	twice                bool
	overread             int  // added to the count Read returns
	nilReader            bool // Open returns a nil reader
	reads                int
}

func (l *lyingQueued) Stats(q string) queue.Stats {
	st := l.listQueued.Stats(q)
	st.Jobs += l.jobs
	st.GangJobs += l.gangJobs
	return st
}

func (l *lyingQueued) SchedulingKeys(q string, fn func(uint64, int) bool) {
	first := true
	l.listQueued.SchedulingKeys(q, func(k uint64, n int) bool {
		if first {
			n += l.keys
			first = false
		}
		return fn(k, n)
	})
}

func (l *lyingQueued) Open(q string) (queue.EntryReader, error) {
	if l.nilReader {
		return nil, nil
	}
	es := l.queues[q]
	if l.twice && len(es) > 0 {
		es = append([]*queue.Entry{es[0]}, es...)
	}
	return &lyingReader{l: l, entries: es}, nil
}

type lyingReader struct {
	l       *lyingQueued
	entries []*queue.Entry
}

func (r *lyingReader) Read(dst []*queue.Entry) (int, error) {
	if r.l.failAfter >= 0 && r.l.reads >= r.l.failAfter {
		return 0, fmt.Errorf("read %d fails", r.l.reads)
	}
	r.l.reads++
	n := copy(dst, r.entries)
	r.entries = r.entries[n:]
	return n + r.l.overread, nil
}

// check returns the first broken invariant of a successful Schedule.
func (w *fuzzWorld) check(res *scheduler.Result) string {
	class := func(j *flotilla.Job) flotilla.PriorityClass {
		pc, _ := classIn(w.cfg, j)
		return pc
	}
	running := map[string]bool{}
	for _, r := range w.snap.Running {
		running[r.Job.ID] = true
	}
	preempted := map[string]bool{}
	for _, p := range res.Preempted {
		if !running[p.Job.ID] || preempted[p.Job.ID] {
			return fmt.Sprintf("preempted %s: not running, or twice", p.Job.ID)
		}
		preempted[p.Job.ID] = true
	}
	type placed struct {
		j    *flotilla.Job
		node string
	}
	var all []placed
	for _, r := range w.snap.Running {
		if !preempted[r.Job.ID] {
			all = append(all, placed{r.Job, r.Node})
		}
	}
	reported := map[string]int{}
	scheduled := map[*flotilla.Job]bool{}
	for _, a := range res.Scheduled {
		switch {
		case a.Job == nil:
			return "nil job scheduled"
		case !w.valid[a.Job]:
			return fmt.Sprintf("invalid or unknown job %s scheduled", a.Job.ID)
		case scheduled[a.Job]:
			return fmt.Sprintf("%s scheduled twice", a.Job.ID)
		case preempted[a.Job.ID]:
			return fmt.Sprintf("%s both scheduled and preempted", a.Job.ID)
		}
		scheduled[a.Job] = true
		reported[a.Job.Queue]++
		all = append(all, placed{a.Job, a.Node})
	}
	for _, u := range res.UnscheduledJobs {
		if u.Job != nil && scheduled[u.Job] && !(w.lies.repeats() && u.Reason.Code == scheduler.ReasonInvalid) {
			return fmt.Sprintf("%s both scheduled and unscheduled", u.Job.ID)
		}
	}
	for _, g := range res.Unscheduled {
		if g.Count <= 0 {
			return fmt.Sprintf("group %s/%s count %d", g.Queue, g.Reason.Code, g.Count)
		}
		for _, j := range g.Examples {
			// A job handed out twice is reported invalid the second time.
			if scheduled[j] && !(w.lies.repeats() && g.Reason.Code == scheduler.ReasonInvalid) {
				return fmt.Sprintf("%s both scheduled and an unscheduled example", j.ID)
			}
		}
		reported[g.Queue] += g.Count
	}
	for _, r := range res.NotExamined {
		reported[r.Queue] += r.Count
	}
	for _, q := range w.snap.Queues {
		if w.lies == nil && reported[q.Name] != w.queued[q.Name] {
			return fmt.Sprintf("queue %s: %d queued, %d reported", q.Name, w.queued[q.Name], reported[q.Name])
		}
	}
	// Gangs are placed whole.
	gangs := map[string]int{}
	for _, a := range res.Scheduled {
		if a.Job.IsGang() {
			gangs[a.Job.Gang.ID]++
		}
	}
	for _, a := range res.Scheduled {
		if a.Job.IsGang() && gangs[a.Job.Gang.ID] != a.Job.Gang.Cardinality {
			return fmt.Sprintf("gang %s: %d of %d members placed", a.Job.Gang.ID, gangs[a.Job.Gang.ID], a.Job.Gang.Cardinality)
		}
	}
	// A gang with a non-preemptible member holds its capacity at every
	// priority.
	pinned := map[string]bool{}
	for _, x := range all {
		if x.j.IsGang() && !class(x.j).Preemptible {
			pinned[x.j.Gang.ID] = true
		}
	}
	// A node the snapshot over-commits (Result.OverCommitted) takes
	// nothing new while it stays over its total: without new work there
	// it holds a subset of what it held.
	over := map[string]bool{}
	for _, n := range res.OverCommitted {
		over[n] = true
	}
	for _, a := range res.Scheduled {
		delete(over, a.Node)
	}
	for _, pc := range w.cfg.PriorityClasses {
		free := map[string]flotilla.Resources{}
		for _, n := range w.snap.Nodes {
			free[n.Name] = n.Total.Clone()
		}
		for _, x := range all {
			if c := class(x.j); c.Priority >= pc.Priority || !c.Preemptible || (x.j.IsGang() && pinned[x.j.Gang.ID]) {
				free[x.node].Sub(x.j.Requests)
				if free[x.node].AnyNegative() && !over[x.node] {
					return fmt.Sprintf("%s over-committed at priority %d by %s", x.node, pc.Priority, x.j.ID)
				}
			}
		}
	}
	return ""
}

// FuzzSchedule builds snapshots from the fuzz input through the public API
// (nodes, queues, running jobs, a Store or a hand-written Queued handing
// out invalid jobs, config variations with preemptible classes, gangs, and
// limits; queue trees with groups, parents, guarantees, limits, lending
// limits and usage memory, valid or not) and runs Schedule: it never
// panics, and either fails with an error or returns a result that
// over-commits no node at any priority, accounts for every queued job
// exactly once (scheduled, unscheduled group counts, not-examined counts),
// never schedules an invalid job, never both schedules and preempts a job,
// and takes no node of the tree above its limit in a resource where it was
// not already.
func FuzzSchedule(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x02\x00\x00\x00\x00\x04\x10\x08\x01\x02\x00\x00\x03\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c"))
	f.Add([]byte("\x03\x17\x01\x01\x00\x07\x04\x10\x08\x00\x00\x00\x10\x04\x00\x00\x00\x02\x02\x06\x05\x00\x00\x02\x01\x02\x01\x03\x00\x01\x00\x10\x01\x00\x02\x03\x00\x07\x02\x00\x03\x01\x00\x01\x02\x02\x00\x01\x05\x01\x00\x00\x02\x00\x01\x08\x02\x00\x00\x01"))
	f.Add([]byte("\x01\x80\x00\x00\x01\x00\x03\x10\x04\x00\x00\x00\x10\x08\x00\x00\x00\x00\x00\x0c\x00\x01\x00\x04\x01\x00\x00\x05\x02\x01\x00\x03\x00\x00\x01\x00\x02\x01\x06\x01\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		w := buildFuzzWorld(data)
		s, err := scheduler.New(w.cfg)
		if err != nil {
			t.Fatalf("config: %v", err)
		}
		res, err := s.Schedule(context.Background(), w.snap, t0)
		if err != nil {
			return
		}
		if msg := w.check(res); msg != "" {
			t.Fatal(msg)
		}
		if msg := w.checkTree(res); msg != "" {
			t.Fatal(msg)
		}
	})
}

// repeats reports whether l may hand out an entry a second time (its first
// entry twice, or stale entries of its buffer past what it copied): the
// second time is reported invalid, so the job may also be placed.
func (l *lyingQueued) repeats() bool { return l != nil && (l.twice || l.overread > 0) }
