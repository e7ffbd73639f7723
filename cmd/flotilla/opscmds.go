package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/flotilla-sched/flotilla/api"
)

// The operator's commands (SERVICE.md): reprioritize and preempt.

// reprioritizeCmd is `flotilla reprioritize -priority N (JOB_ID... |
// -queue Q -jobset S)`.
func reprioritizeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := cmdIO{"reprioritize", stdout, stderr}
	fs := flag.NewFlagSet("reprioritize", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addClientFlags(fs)
	prio := fs.String("priority", "", "the new per-job priority, 0 to 4294967295 (lower runs first within a class)")
	queue := fs.String("queue", "", "the job set's queue")
	jobSet := fs.String("jobset", "", "reprioritize every queued job of this job set")
	pos, err := parse(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if *prio == "" {
		return c.usage("-priority N is required")
	}
	p, err := strconv.ParseUint(*prio, 10, 32)
	if err != nil {
		return c.usage("-priority %q: want a whole number from 0 to 4294967295", *prio)
	}
	if (len(pos) == 0) == (*queue == "" && *jobSet == "") || (len(pos) == 0 && (*queue == "" || *jobSet == "")) {
		return c.usage("want JOB_ID... or -queue Q -jobset S")
	}
	cl, err := cf.client()
	if err != nil {
		return c.usage("%v", err)
	}
	p32 := uint32(p)
	res, err := cl.Reprioritize(ctx, api.ReprioritizeRequest{JobIDs: pos, Queue: *queue, JobSet: *jobSet, Priority: &p32})
	if err != nil {
		return c.fail(err)
	}
	for _, id := range res.Reprioritized {
		fmt.Fprintf(stdout, "%s priority %d\n", id, p32)
	}
	for _, id := range res.Live {
		fmt.Fprintf(stdout, "%s is leased or running: left alone\n", id)
	}
	for _, id := range res.Finished {
		fmt.Fprintf(stdout, "%s had ended\n", id)
	}
	return 0
}
