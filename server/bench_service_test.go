package server

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/scheduler"
)

// The benchmarks of issue 9's speed and memory goals. The large ones build
// worlds of a million jobs and run once per op; run them with
// -benchtime=1x (submit), a few x (cycle) or some hundred x (report):
//
//	go test ./server -run '^$' -bench 'Service' -benchtime 1x -count 3

// heapInUse is the live heap after two collections.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// benchNodes returns n nodes of cluster named <cluster>-n<i>, each with cpu
// cores and 8Gi of memory per core.
func benchNodes(cluster string, n int, cpu int64) []flotilla.Node {
	total := worldSchema().MustParse(map[string]string{"cpu": strconv.FormatInt(cpu, 10), "memory": strconv.FormatInt(8*cpu, 10) + "Gi"})
	out := make([]flotilla.Node, n)
	for i := range out {
		out[i] = flotilla.Node{Name: cluster + "-n" + strconv.Itoa(i), Total: slices.Clone(total),
			Labels: map[string]string{"zone": "z" + strconv.Itoa(i%4)}}
	}
	return out
}

// submitBatch is one request of the submit benchmark: 1,000 jobs in 10
// templates of 100, each template with a client id, a node selector and
// a toleration (as BenchmarkJobs1000's).
func submitBatch(queue, set, client string) *SubmitRequest {
	req := &SubmitRequest{Queue: queue, JobSet: set}
	for i := range 10 {
		req.Jobs = append(req.Jobs, JobTemplate{
			Count:                  intp(100),
			Requests:               map[string]string{"cpu": "1", "memory": "4Gi"},
			NodeSelector:           map[string]string{"zone": "z" + strconv.Itoa(i%4)},
			Tolerations:            []Toleration{{Key: "gpu", Effect: "NoSchedule"}},
			TerminationGracePeriod: "30s",
			ClientID:               client + "-t" + strconv.Itoa(i),
		})
	}
	return req
}

// ulids makes a world's ids real ULIDs (26 characters): the service's
// own (Config.NewID nil), which it draws a request at a time.
func ulids(c *Config) { c.NewID = nil }

// BenchmarkServiceSubmit1M submits 1,000,000 jobs through Server.Submit in
// 1,000 requests of 1,000 (10 job sets of 100,000 in one queue), into the
// memory backend, with ULID ids and a client id on every job. Goals
// (issue 9): ≥ 500,000 jobs/s and ≤ 1 KiB resident per queued job,
// service state included.
//
// Every op submits into a fresh service. Before the first op, untimed, the
// same million jobs go into a service that is then dropped: the process's
// heap has then been as large as a service of a million jobs needs, as a
// running service's has, and the ops measure the service rather than the
// kernel handing the process fresh memory. cold-jobs/s is that first
// submission's rate: in a fresh process (run the benchmark alone, -count
// 1), it counts the first touch of every page, which on a VM can cost
// more than the service's own work (faults/op is the minor page faults
// per op, each a first touch of a page; memory that the Go runtime
// returned to the kernel between ops is touched afresh and counted).
//
// B/job is the live heap after the submits minus the live heap before
// (both after GC), over the jobs; the requests are built before the first
// measurement. On a loaded machine wall time includes waiting for a core:
// jobs/cpu-s is jobs over the process's CPU time (all threads, garbage
// collection included).
func BenchmarkServiceSubmit1M(b *testing.B) {
	const total, batch = 1_000_000, 1_000
	reqs := make([]*SubmitRequest, total/batch)
	for i := range reqs {
		reqs[i] = submitBatch("A", "set-"+strconv.Itoa(i/100), "client-"+strconv.Itoa(i))
	}
	submitAll := func(w *world) {
		for _, req := range reqs {
			w.clock.Advance(time.Millisecond)
			ids, err := w.srv.Submit(w.ctx, req)
			if err != nil || len(ids) != batch {
				b.Fatal(err, len(ids))
			}
		}
	}
	b.StopTimer()
	cold := newWorld(b, ulids)
	cold.queue("A")
	start := time.Now()
	submitAll(cold)
	coldRate := total / time.Since(start).Seconds()
	cold = nil
	var perJob float64
	var elapsed, cpu time.Duration
	var faults int64
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		w := newWorld(b, ulids)
		w.queue("A")
		before := heapInUse()
		b.StartTimer()
		start, cpu0, faults0 := time.Now(), processCPU(), minorFaults()
		submitAll(w)
		elapsed += time.Since(start)
		cpu += processCPU() - cpu0
		faults += minorFaults() - faults0
		b.StopTimer()
		perJob = float64(heapInUse()-before) / total
		if n := w.srv.st.queued.store.Len(); n != total {
			b.Fatalf("%d queued, want %d", n, total)
		}
		runtime.KeepAlive(w)
		b.StartTimer()
	}
	b.ReportMetric(float64(total)*float64(b.N)/elapsed.Seconds(), "jobs/s")
	b.ReportMetric(coldRate, "cold-jobs/s")
	b.ReportMetric(float64(faults)/float64(b.N), "faults/op")
	b.ReportMetric(perJob, "B/job")
	if cpu > 0 {
		b.ReportMetric(float64(total)*float64(b.N)/cpu.Seconds(), "jobs/cpu-s")
	}
}

// executor is a benchmark's fake executor of one cluster: the jobs it
// holds, oldest first, each running.
type executor struct {
	cluster string
	held    []JobReport
}

// report reports the executor's jobs, the first n as succeeded, and
// returns the reply; take then updates what the executor holds.
func (e *executor) report(b *testing.B, srv *Server, n int) *ReportReply {
	b.Helper()
	n = min(n, len(e.held))
	for i := range n {
		e.held[i].Phase = PhaseSucceeded
	}
	reply, err := srv.Report(context.Background(), &Report{Cluster: e.cluster, Jobs: e.held})
	if err != nil {
		b.Fatal(err)
	}
	if len(reply.Kill) > 0 {
		b.Fatalf("cluster %s told to kill %d jobs, e.g. %+v", e.cluster, len(reply.Kill), reply.Kill[0])
	}
	return reply
}

// take forgets the n jobs a report said succeeded and holds the reply's
// new leases as running.
func (e *executor) take(reply *ReportReply, n int) {
	n = min(n, len(e.held))
	e.held = append(e.held[:0], e.held[n:]...)
	for _, l := range reply.Leases {
		e.held = append(e.held, JobReport{Job: l.Job.ID, Attempt: l.Attempt, Phase: PhaseRunning})
	}
}

// finish is report then take.
func (e *executor) finish(b *testing.B, srv *Server, n int) *ReportReply {
	b.Helper()
	reply := e.report(b, srv, n)
	e.take(reply, n)
	return reply
}

// busyWorld is a service with clusters × nodes nodes of cpu cores, queues
// queues of one-core jobs, queued jobs in all plus what fills the
// clusters, leased by one cycle and reported running, then one more cycle
// (which finds no room): the steady state of a busy service.
func busyWorld(b *testing.B, clusters, nodes int, cpu int64, queues, queued int) (*world, []*executor) {
	b.Helper()
	w := newWorld(b, ulids)
	var exs []*executor
	for c := range clusters {
		name := "c" + strconv.Itoa(c)
		w.report(Report{Cluster: name, Nodes: benchNodes(name, nodes, cpu)})
		exs = append(exs, &executor{cluster: name})
	}
	capacity := clusters * nodes * int(cpu)
	perQueue := (queued + capacity) / queues
	const batch = 1000
	for q := range queues {
		name := "q" + strconv.Itoa(q)
		w.queue(name)
		for i := 0; i < perQueue; i += batch {
			w.clock.Advance(time.Millisecond)
			req := &SubmitRequest{Queue: name, JobSet: "set-" + strconv.Itoa(i/100_000), Jobs: []JobTemplate{
				{Count: intp(min(batch, perQueue-i)), Requests: map[string]string{"cpu": "1", "memory": "4Gi"}},
			}}
			if _, err := w.srv.Submit(w.ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	}
	w.clock.Advance(time.Second)
	for _, e := range exs {
		w.report(Report{Cluster: e.cluster})
	}
	if rep := w.cycle(); rep.Leased != capacity {
		b.Fatalf("first cycle leased %d, want %d", rep.Leased, capacity)
	}
	w.clock.Advance(time.Second)
	for _, e := range exs {
		e.finish(b, w.srv, 0) // receives the leases
		e.finish(b, w.srv, 0) // reports them running
	}
	// A cycle with no room: the first after a wave of leases puts them in
	// order (sortLive), as a service does once, not every cycle.
	if rep := w.cycle(); rep.Leased != 0 {
		b.Fatalf("a full service leased %d", rep.Leased)
	}
	return w, exs
}

// BenchmarkServiceCycle1M is one cycle of a busy service: 10 clusters ×
// 1,000 nodes × 32 cores, 10 queues, the clusters full of 320,000 running
// one-core jobs and 1,000,000 more queued. Before each cycle every cluster
// reports all it holds, 1,000 of them succeeded, so the cycle leases
// 10,000 jobs into the room they left. The goal (issue 9): what the
// service adds around Schedule (expiries, snapshot, writing the decision
// as events and applying them) ≤ 25% of Schedule itself. ns/op is the
// whole Cycle, schedule-ms the Schedule call inside it (timed by wrapping
// it); overhead-% is (Cycle − Schedule) / Schedule over all ops, and
// overhead-cpu-% the same over the CPU time of the thread that ran them
// (on a loaded machine wall time includes waiting for a core).
func BenchmarkServiceCycle1M(b *testing.B) {
	if testing.Short() {
		b.Skip("large")
	}
	const clusters, nodes, cpu, finished = 10, 1000, 32, 1000
	w, exs := busyWorld(b, clusters, nodes, cpu, 10, 1_000_000)
	srv := w.srv
	var cycleT, schedT, cycleCPU, schedCPU time.Duration
	inner := srv.st.schedule
	srv.st.schedule = func(ctx context.Context, snap *scheduler.Snapshot, now time.Time) (*scheduler.Result, error) {
		start, cpu0 := time.Now(), threadCPU()
		res, err := inner(ctx, snap, now)
		schedT += time.Since(start)
		schedCPU += threadCPU() - cpu0
		return res, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		w.clock.Advance(time.Second)
		for _, e := range exs {
			e.finish(b, srv, finished)
		}
		runtime.GC()
		b.StartTimer()
		start, cpu0 := time.Now(), threadCPU()
		rep, err := srv.Cycle(w.ctx)
		cycleT += time.Since(start)
		cycleCPU += threadCPU() - cpu0
		if err != nil {
			b.Fatal(err)
		}
		if rep.Leased != clusters*finished || rep.Expired != 0 || rep.Preempted != 0 {
			b.Fatalf("cycle leased %d, expired %d, preempted %d; want %d, 0, 0", rep.Leased, rep.Expired, rep.Preempted, clusters*finished)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(schedT.Microseconds())/1000/float64(b.N), "schedule-ms")
	b.ReportMetric(100*float64(cycleT-schedT)/float64(schedT), "overhead-%")
	if schedCPU > 0 {
		b.ReportMetric(100*float64(cycleCPU-schedCPU)/float64(schedCPU), "overhead-cpu-%")
	}
}

// BenchmarkServiceReport1kNodes is an executor's report and lease for a
// cluster of 1,000 nodes × 12 cores running 12,000 one-core jobs, with
// 200,000 more queued: each op is one report listing every job the
// cluster holds, 100 of them succeeded, whose reply carries the 100 leases
// the previous cycle made (a cycle runs between reports, outside the
// timer). The goal (issue 9): p99 ≤ 10 ms; p50-ms and p99-ms are over
// the ops' wall times, p50-cpu-ms and p99-cpu-ms over the CPU time of the
// thread that ran them (on a loaded machine a report's wall time includes
// waiting for a core).
func BenchmarkServiceReport1kNodes(b *testing.B) {
	const finished = 100
	w, exs := busyWorld(b, 1, 1000, 12, 10, 200_000)
	e, srv := exs[0], w.srv
	lat := make([]time.Duration, 0, b.N)
	cpu := make([]time.Duration, 0, b.N)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		w.clock.Advance(time.Second)
		b.StartTimer()
		start, cpu0 := time.Now(), threadCPU()
		reply := e.report(b, srv, finished)
		cpu = append(cpu, threadCPU()-cpu0)
		lat = append(lat, time.Since(start))
		b.StopTimer()
		e.take(reply, finished)
		if len(lat) > 1 && len(reply.Leases) != finished {
			b.Fatalf("reply with %d leases, want %d", len(reply.Leases), finished)
		}
		if rep := w.cycle(); rep.Leased != finished {
			b.Fatalf("cycle leased %d, want %d", rep.Leased, finished)
		}
		b.StartTimer()
	}
	b.StopTimer()
	pct := func(ds []time.Duration, p float64) float64 {
		slices.Sort(ds)
		return float64(ds[min(len(ds)-1, int(p*float64(len(ds))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(lat, 0.50), "p50-ms")
	b.ReportMetric(pct(lat, 0.99), "p99-ms")
	if slices.Max(cpu) > 0 {
		b.ReportMetric(pct(cpu, 0.50), "p50-cpu-ms")
		b.ReportMetric(pct(cpu, 0.99), "p99-cpu-ms")
	}
	b.ReportMetric(float64(len(e.held)), "held")
}
