package server_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
)

func ExampleSubmitRules_ParseJobs() {
	cat := &server.Catalog{
		Schema:               flotilla.MustResourceSchema("cpu", "memory", "nvidia.com/gpu"),
		PriorityClasses:      flotilla.DefaultPriorityClasses(),
		DefaultPriorityClass: flotilla.ArmadaDefault,
	}
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	n := 0
	newID := func() string { n++; return "job-" + strconv.Itoa(n) } // the service uses ULID-like ids

	specs, err := server.SubmitRules{}.ParseJobs([]byte(`{"queue": "A", "jobSet": "s1", "jobs": [
		{"count": 2, "clientId": "train", "requests": {"cpu": "1", "nvidia.com/gpu": "1"}},
		{"requests": {"cpu": "500m"}, "terminationGracePeriod": "30s", "activeDeadline": "1h"}]}`), cat, now, newID)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range specs {
		fmt.Println(s.Job.ID, s.ClientID, cat.Schema.String(s.Job.Requests), s.TerminationGracePeriod, s.ActiveDeadline)
	}

	_, err = server.SubmitRules{}.ParseJobs([]byte(`{"queue": "A", "jobSet": "s1", "jobs": [
		{"requests": {"cpu": "1"}, "terminationGracePeriod": "100ms", "priorityClass": "urgent"},
		{"requests": {"cpu": "-1"}, "gang": {"id": "g", "cardinality": 2}}]}`), cat, now, newID)
	fmt.Println(err)
	// Output:
	// job-1 train-0 cpu=1 nvidia.com/gpu=1 1s 336h0m0s
	// job-2 train-1 cpu=1 nvidia.com/gpu=1 1s 336h0m0s
	// job-3  cpu=500m 30s 1h0m0s
	// jobs[0].priorityClass "urgent": names nothing known: no such priority class; known: armada-default, armada-preemptible
	// jobs[0].terminationGracePeriod "100ms": is out of range: want 0 (meaning 1s) or at least 1s
	// jobs[1].requests.cpu "-1": must not be negative
	// jobs[1].gang.cardinality "2": disagrees with another field: gang "g" has 1 members in this request; all members are submitted together
}

// clock is a fake clock for the example: the service reads time only from
// the Clock it is given.
type clock struct{ t time.Time }

func (c *clock) Now() time.Time { return c.t }

func ExampleServer() {
	ctx := context.Background()
	schema := flotilla.MustResourceSchema("cpu", "memory")
	clk := &clock{time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	n := 0
	srv, err := server.New(ctx, server.Config{
		Scheduler: scheduler.DefaultConfig(schema),
		Backend:   memory.New(schema),
		Clock:     clk,
		NewID:     func() string { n++; return "job-" + strconv.Itoa(n) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = srv.CreateQueue(ctx, flotilla.Queue{Name: "A"})

	// An executor registers its cluster's nodes.
	node := flotilla.Node{Name: "n1", Total: schema.MustParse(map[string]string{"cpu": "2", "memory": "8Gi"})}
	_, _ = srv.Report(ctx, &server.Report{Cluster: "c1", Nodes: []flotilla.Node{node}})

	ids, _ := srv.SubmitJSON(ctx, []byte(`{"queue": "A", "jobSet": "s1",
		"jobs": [{"count": 3, "requests": {"cpu": "1"}}]}`))
	fmt.Println("submitted", ids)

	// A cycle leases what fits; the executor's next report receives it.
	_, _ = srv.Cycle(ctx)
	reply, _ := srv.Report(ctx, &server.Report{Cluster: "c1"})
	for _, l := range reply.Leases {
		fmt.Println("lease", l.Job.ID, "attempt", l.Attempt, "on", l.Node)
	}
	st, _ := srv.Status(ctx, ids[2])
	fmt.Println(st[0].Job, st[0].State, "-", st[0].Reason)

	// The executor runs the jobs and reports them done.
	var done []server.JobReport
	for _, l := range reply.Leases {
		done = append(done, server.JobReport{Job: l.Job.ID, Attempt: l.Attempt, Phase: server.PhaseSucceeded})
	}
	clk.t = clk.t.Add(10 * time.Second)
	_, _ = srv.Report(ctx, &server.Report{Cluster: "c1", Jobs: done})
	_, _ = srv.Cycle(ctx)

	evs, _ := srv.Events(ctx, "A", "s1", 0, 0)
	for _, e := range evs {
		fmt.Println(strings.TrimSpace(fmt.Sprint(e.Seq, " ", e.Type, " ", e.Job, " ", e.Node)))
	}
	// Output:
	// submitted [job-1 job-2 job-3]
	// lease job-1 attempt 1 on n1
	// lease job-2 attempt 1 on n1
	// job-3 queued - 0/1 nodes fit: 1 short of cpu by at least 1
	// 1 submitted job-1
	// 2 submitted job-2
	// 3 submitted job-3
	// 4 leased job-1 n1
	// 5 leased job-2 n1
	// 6 running job-1 n1
	// 7 succeeded job-1 n1
	// 8 running job-2 n1
	// 9 succeeded job-2 n1
	// 10 leased job-3 n1
}
