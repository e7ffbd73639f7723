package server

import (
	"strconv"
	"testing"
	"time"
)

// BenchmarkReportWithEndedJobs is the report of an executor back after a
// failover (or a restart of the service): its cluster of 1,000 nodes × 8
// cores runs 1,000 jobs, and it lists besides them 5,000 jobs that have
// ended, which the service keeps in the backend only. They are listed as
// succeeded, so the report changes nothing and every op is the same
// report. ns/op is the whole report on the memory backend;
// backend/postgres has the same benchmark on PostgreSQL.
func BenchmarkReportWithEndedJobs(b *testing.B) {
	const nodes, ended, live = 1000, 5000, 1000
	w := newWorld(b, ulids)
	w.queue("A")
	w.report(Report{Cluster: "c1", Nodes: benchNodes("c1", nodes, 8)})
	for i := 0; i < ended+live; i += 1000 {
		w.submit("A", "s"+strconv.Itoa(i/1000), cpuJobs(1000, "1"))
	}
	if rep := w.cycle(); rep.Leased != ended+live {
		b.Fatalf("the cycle leased %d, want %d", rep.Leased, ended+live)
	}
	jobs := held(PhaseRunning, w.report(Report{Cluster: "c1"}).Leases)
	w.report(Report{Cluster: "c1", Jobs: jobs})
	for i := range jobs[:ended] {
		jobs[i].Phase = PhaseSucceeded
	}
	w.report(Report{Cluster: "c1", Jobs: jobs})
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w.clock.Advance(time.Second)
		reply, err := w.srv.Report(w.ctx, &Report{Cluster: "c1", Jobs: jobs})
		if err != nil {
			b.Fatal(err)
		}
		if len(reply.Kill) != 0 || len(reply.Leases) != 0 {
			b.Fatalf("reply with %d kill orders and %d leases, want none", len(reply.Kill), len(reply.Leases))
		}
	}
}
