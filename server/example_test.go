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
