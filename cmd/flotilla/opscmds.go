package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/flotilla-sched/flotilla/api"
)

// The operator's commands: reprioritize and preempt.

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

// preemptCmd is `flotilla preempt JOB_ID... | -queue Q [-jobset S] |
// -cluster C [-node N] [-reason TEXT]`.
func preemptCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := cmdIO{"preempt", stdout, stderr}
	fs := flag.NewFlagSet("preempt", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addClientFlags(fs)
	queue := fs.String("queue", "", "preempt the leased and running jobs of this queue")
	jobSet := fs.String("jobset", "", "only those of this job set (with -queue)")
	cluster := fs.String("cluster", "", "preempt the jobs leased on this cluster (admin)")
	node := fs.String("node", "", "only those on this node (with -cluster)")
	reason := fs.String("reason", "", "why, kept on the preempted events")
	pos, err := parse(fs, args)
	if err != nil {
		return flagExit(err)
	}
	ways := 0
	for _, given := range []bool{len(pos) > 0, *queue != "" || *jobSet != "", *cluster != "" || *node != ""} {
		if given {
			ways++
		}
	}
	switch {
	case ways != 1:
		return c.usage("want JOB_ID..., -queue Q [-jobset S] or -cluster C [-node N]")
	case *jobSet != "" && *queue == "":
		return c.usage("-jobset needs -queue")
	case *node != "" && *cluster == "":
		return c.usage("-node needs -cluster")
	}
	cl, err := cf.client()
	if err != nil {
		return c.usage("%v", err)
	}
	res, err := cl.Preempt(ctx, api.PreemptRequest{JobIDs: pos, Queue: *queue, JobSet: *jobSet, Cluster: *cluster, Node: *node, Reason: *reason})
	if err != nil {
		return c.fail(err)
	}
	for _, id := range res.Preempted {
		fmt.Fprintf(stdout, "%s preempted\n", id)
	}
	for _, id := range res.Queued {
		fmt.Fprintf(stdout, "%s is queued: nothing to preempt\n", id)
	}
	for _, id := range res.Finished {
		fmt.Fprintf(stdout, "%s had ended\n", id)
	}
	return 0
}

// cordonCmd is `flotilla queue|cluster cordon|uncordon NAME` (admin).
func cordonCmd(ctx context.Context, kind string, args []string, stdout, stderr io.Writer) int {
	c := cmdIO{kind + " " + args[0], stdout, stderr}
	fs := flag.NewFlagSet(kind+" "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addClientFlags(fs)
	pos, err := parse(fs, args[1:])
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 {
		return c.usage("%s takes one %s name", args[0], kind)
	}
	cl, err := cf.client()
	if err != nil {
		return c.usage("%v", err)
	}
	if err := cl.Cordon(ctx, kind, pos[0], args[0] == "cordon"); err != nil {
		return c.fail(err)
	}
	fmt.Fprintf(stdout, "%s %s %sed\n", kind, pos[0], args[0])
	return 0
}

// clusterCmd is `flotilla cluster list [-o json] | cordon NAME |
// uncordon NAME`.
func clusterCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := cmdIO{"cluster", stdout, stderr}
	if len(args) == 0 {
		return c.usage("want list, cordon NAME or uncordon NAME")
	}
	if isHelp(args[0]) {
		fmt.Fprint(stderr, "usage: flotilla cluster list [-o json] | cordon NAME | uncordon NAME\n"+
			"  cordon: no new leases go to the cluster, its running jobs go on (admin)\n")
		return 0
	}
	switch args[0] {
	case "cordon", "uncordon":
		return cordonCmd(ctx, "cluster", args, stdout, stderr)
	case "list":
	default:
		return c.usage("unknown subcommand %q: want list, cordon or uncordon", args[0])
	}
	fs := flag.NewFlagSet("cluster list", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addClientFlags(fs)
	out := outputFlag(fs)
	pos, err := parse(fs, args[1:])
	if err != nil {
		return flagExit(err)
	}
	asJSON, code := checkOutput(c, *out)
	if code != 0 {
		return code
	}
	if len(pos) != 0 {
		return c.usage("list takes no arguments")
	}
	cl, err := cf.client()
	if err != nil {
		return c.usage("%v", err)
	}
	cs, err := cl.ListClusters(ctx)
	if err != nil {
		return c.fail(err)
	}
	if asJSON {
		return writeJSONLine(c, cs)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tPOOL\tNODES\tALIVE\tCORDONED\tLEASED\tRUNNING\tREPORTED")
	for _, x := range cs {
		reported := "-"
		if x.Reported != nil {
			reported = x.Reported.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%v\t%v\t%d\t%d\t%s\n", x.Name, x.Pool, x.Nodes, x.Alive, x.Cordoned, x.Leased, x.Running, reported)
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintf(stderr, "flotilla cluster: %v\n", err)
		return 1
	}
	return 0
}
