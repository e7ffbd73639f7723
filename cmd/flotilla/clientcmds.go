package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flotilla-sched/flotilla/api"
	"github.com/flotilla-sched/flotilla/client"
	"github.com/flotilla-sched/flotilla/events"
	"github.com/flotilla-sched/flotilla/explain"
)

// DefaultServer is the service's address when neither -server nor
// $FLOTILLA_SERVER names one.
const DefaultServer = "http://127.0.0.1:8080"

// clientFlags are the flags every client command takes.
type clientFlags struct {
	server, token *string
}

func addClientFlags(fs *flag.FlagSet) clientFlags {
	srv := os.Getenv("FLOTILLA_SERVER")
	if srv == "" {
		srv = DefaultServer
	}
	return clientFlags{
		server: fs.String("server", srv, "the service's URL, or several comma-separated (the servers of one service: the next is tried when one cannot be reached; or $FLOTILLA_SERVER)"),
		token:  fs.String("token", os.Getenv("FLOTILLA_TOKEN"), "bearer token (or $FLOTILLA_TOKEN)"),
	}
}

func (f clientFlags) client() (*client.Client, error) { return client.New(*f.server, *f.token, nil) }

// cmdIO carries a command's name and streams.
type cmdIO struct {
	name           string
	stdout, stderr io.Writer
}

// usage reports a usage problem: exit code 2.
func (c cmdIO) usage(format string, a ...any) int {
	fmt.Fprintf(c.stderr, "flotilla %s: "+format+"\n", append([]any{c.name}, a...)...)
	return 2
}

// fail reports an error from the service: exit code 2 for bad input
// (400, 413), with every problem by field and value; 1 otherwise.
func (c cmdIO) fail(err error) int {
	var ce *client.Error
	if errors.As(err, &ce) && len(ce.Body.Problems) > 0 {
		fmt.Fprintf(c.stderr, "flotilla %s: the service refused the request (%d):\n", c.name, ce.Status)
		for _, p := range ce.Body.Problems {
			if p.Field != "" {
				fmt.Fprintf(c.stderr, "  %s %q: %s\n", p.Field, p.Value, p.Error)
			} else {
				fmt.Fprintf(c.stderr, "  %s\n", p.Error)
			}
		}
	} else {
		fmt.Fprintf(c.stderr, "flotilla %s: %v\n", c.name, err)
	}
	if errors.Is(err, client.ErrBadRequest) || errors.Is(err, client.ErrTooLarge) {
		return 2
	}
	return 1
}

// parse parses a command's flags, allowing them after positional
// arguments too (flotilla cancel ID -server URL).
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	if isDefaultUsage(fs) {
		fs.Usage = func() { synopsisUsage(fs) }
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			suggestFlag(fs, err)
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func outputFlag(fs *flag.FlagSet) *string {
	return fs.String("o", "", "output: empty for people, json for scripts")
}

func checkOutput(c cmdIO, o string) (bool, int) {
	switch o {
	case "":
		return false, 0
	case "json":
		return true, 0
	}
	return false, c.usage("-o %q: want json or nothing", o)
}

func writeJSONLine(c cmdIO, v any) int {
	if err := json.NewEncoder(c.stdout).Encode(v); err != nil {
		fmt.Fprintf(c.stderr, "flotilla %s: %v\n", c.name, err)
		return 1
	}
	return 0
}

func submitCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := cmdIO{"submit", stdout, stderr}
	fs := flag.NewFlagSet("submit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addClientFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: flotilla submit FILE\n"+
			"  FILE is a submit file (docs/submit-file.md), - for standard input; prints one job id per line,\n"+
			"  and on standard error a warning for each template whose jobs no node of any known cluster can run\n")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) != 1 {
		return c.usage("want one submit file (- for standard input)")
	}
	var data []byte
	if pos[0] == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(pos[0])
	}
	if err != nil {
		return c.usage("%v", err)
	}
	cl, err := cf.client()
	if err != nil {
		return c.usage("%v", err)
	}
	res, err := cl.SubmitFile(ctx, data)
	if err != nil {
		return c.fail(err)
	}
	for _, id := range res.JobIDs {
		fmt.Fprintln(stdout, id)
	}
	// The jobs are stored: a warning does not change the exit status.
	for _, w := range res.Warnings {
		fmt.Fprintln(stderr, "warning: "+w.Message)
	}
	return 0
}

func cancelCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := cmdIO{"cancel", stdout, stderr}
	fs := flag.NewFlagSet("cancel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addClientFlags(fs)
	queue := fs.String("queue", "", "the job set's queue")
	jobSet := fs.String("jobset", "", "cancel every job of this job set (without it: every job of the queue)")
	pos, err := parse(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if (len(pos) == 0) == (*queue == "" && *jobSet == "") || (len(pos) == 0 && *queue == "") {
		return c.usage("want JOB_ID... or -queue Q [-jobset S]")
	}
	cl, err := cf.client()
	if err != nil {
		return c.usage("%v", err)
	}
	var res api.CancelResponse
	if len(pos) > 0 {
		res, err = cl.Cancel(ctx, pos...)
	} else {
		res, err = cl.CancelJobSet(ctx, *queue, *jobSet)
	}
	if err != nil {
		return c.fail(err)
	}
	for _, id := range res.Cancelled {
		fmt.Fprintf(stdout, "%s cancelled\n", id)
	}
	for _, id := range res.Requested {
		fmt.Fprintf(stdout, "%s cancel requested\n", id)
	}
	for _, id := range res.Finished {
		fmt.Fprintf(stdout, "%s had ended\n", id)
	}
	return 0
}

// eventLine is an event as a person reads it.
func eventLine(e events.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s %-16s %s", e.Seq, e.Time.UTC().Format("2006-01-02T15:04:05.000Z"), e.Type, e.Job)
	if e.Cluster != "" {
		fmt.Fprintf(&b, " on %s/%s", e.Cluster, e.Node)
	}
	if e.Attempt != 0 {
		fmt.Fprintf(&b, " attempt %d", e.Attempt)
	}
	if e.Type.HasExitCode() {
		fmt.Fprintf(&b, " exit %d", e.ExitCode)
	}
	if e.Rule != 0 {
		fmt.Fprintf(&b, " rule %d", e.Rule)
	}
	if e.AvoidNode {
		b.WriteString(" (avoid node)")
	}
	if e.Type == events.Reprioritized {
		fmt.Fprintf(&b, " priority %d", e.Priority)
	}
	if e.Requeued {
		b.WriteString(" (requeued)")
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, ": %s", e.Reason)
	}
	return b.String()
}

// jobSetFlags are events' and watch's flags.
type jobSetFlags struct {
	queue, jobSet *string
	from          *uint64
	out           *string
}

func addJobSetFlags(fs *flag.FlagSet) jobSetFlags {
	return jobSetFlags{
		queue:  fs.String("queue", "", "the job set's queue (required)"),
		jobSet: fs.String("jobset", "", "the job set (required)"),
		from:   fs.Uint64("from", 0, "first sequence number (0: the first event)"),
		out:    outputFlag(fs),
	}
}

// jobSetCommand parses the flags of events and watch (fs may hold more of
// the command's own) and checks them; a nil client means the command ends
// with code.
func jobSetCommand(c cmdIO, fs *flag.FlagSet, args []string) (*client.Client, jobSetFlags, bool, int) {
	fs.SetOutput(c.stderr)
	cf := addClientFlags(fs)
	jf := addJobSetFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return nil, jf, false, flagExit(err)
	}
	asJSON, code := checkOutput(c, *jf.out)
	switch {
	case code != 0:
		return nil, jf, false, code
	case len(pos) != 0:
		return nil, jf, false, c.usage("unexpected arguments %q", pos)
	case *jf.queue == "" || *jf.jobSet == "":
		return nil, jf, false, c.usage("-queue and -jobset are required")
	}
	cl, err := cf.client()
	if err != nil {
		return nil, jf, false, c.usage("%v", err)
	}
	return cl, jf, asJSON, 0
}

func eventsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := cmdIO{"events", stdout, stderr}
	fs := flag.NewFlagSet("events", flag.ContinueOnError)
	cl, jf, asJSON, code := jobSetCommand(c, fs, args)
	if cl == nil {
		return code
	}
	evs, err := cl.Events(ctx, *jf.queue, *jf.jobSet, *jf.from, 0)
	if err != nil {
		return c.fail(err)
	}
	for _, e := range evs {
		if code := printEvent(c, e, asJSON); code != 0 {
			return code
		}
	}
	return 0
}

func printEvent(c cmdIO, e events.Event, asJSON bool) int {
	if asJSON {
		return writeJSONLine(c, e)
	}
	if _, err := fmt.Fprintln(c.stdout, eventLine(e)); err != nil {
		return 1
	}
	return 0
}

func watchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := cmdIO{"watch", stdout, stderr}
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	untilDone := fs.Bool("until-done", false, "exit once every job of the set that existed at the start has ended")
	cl, jf, asJSON, code := jobSetCommand(c, fs, args)
	if cl == nil {
		return code
	}
	// With -until-done, the jobs that exist now are those of the log so
	// far, replayed into a job set that then follows the stream. The
	// stream starts no later than the log's end, so that the set sees every
	// event after it even when -from lies beyond; only events from -from
	// are printed.
	from := *jf.from
	next := from // the next event the stream is to deliver
	var waiting map[string]bool
	var set *events.JobSet
	if *untilDone {
		all, err := cl.Events(ctx, *jf.queue, *jf.jobSet, 0, 0)
		if err != nil {
			return c.fail(err)
		}
		set = events.NewJobSet(*jf.queue, *jf.jobSet)
		for _, e := range all {
			if err := set.Apply(e); err != nil {
				fmt.Fprintf(stderr, "flotilla watch: the job set's log does not replay: %v\n", err)
				return 1
			}
		}
		waiting = map[string]bool{}
		for j := range set.Jobs() {
			if !j.State.Terminal() {
				waiting[j.ID] = true
			}
		}
		if len(waiting) == 0 {
			// Done already: the stored events from -from, then exit.
			for _, e := range all {
				if e.Seq >= from {
					if code := printEvent(c, e, asJSON); code != 0 {
						fmt.Fprintln(stderr, "flotilla watch: writing the output failed")
						return code
					}
				}
			}
			return 0
		}
		next = min(next, set.Next())
	}
	errDone := errors.New("done")
	var stop error // set by the callback when the watch cannot go on
	for {
		err := cl.Watch(ctx, *jf.queue, *jf.jobSet, next, func(e events.Event) error {
			next = e.Seq + 1
			if e.Seq >= from {
				if code := printEvent(c, e, asJSON); code != 0 {
					stop = errors.New("writing the output failed")
					return stop
				}
			}
			if set != nil && e.Seq == set.Next() {
				if err := set.Apply(e); err != nil {
					stop = fmt.Errorf("the job set's log does not replay: %w", err)
					return stop
				}
				if j, _ := set.Job(e.Job); j.State.Terminal() {
					delete(waiting, e.Job)
				}
				if len(waiting) == 0 {
					return errDone
				}
			}
			return nil
		})
		switch {
		case errors.Is(err, errDone):
			return 0
		case stop != nil:
			fmt.Fprintf(stderr, "flotilla watch: %v\n", stop)
			return 1
		case ctx.Err() != nil:
			return 0
		case errors.Is(err, io.ErrUnexpectedEOF) || isConnError(err):
			// The connection dropped: resume after the last event seen.
			fmt.Fprintf(stderr, "flotilla watch: %v; reconnecting from %d\n", err, next)
			select {
			case <-ctx.Done():
				return 0
			case <-time.After(time.Second):
			}
		default:
			return c.fail(err)
		}
	}
}

// isConnError reports whether err is a failure to reach the service, as
// opposed to a refusal.
func isConnError(err error) bool {
	var ce *client.Error
	return err != nil && !errors.As(err, &ce)
}

func statusCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := cmdIO{"status", stdout, stderr}
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addClientFlags(fs)
	out := outputFlag(fs)
	verbose := fs.Bool("v", false, "the long form: priority, place in the queue, queue shares, the last cycle's reason per group of nodes, flux breakdown")
	pos, err := parse(fs, args)
	if err != nil {
		return flagExit(err)
	}
	asJSON, code := checkOutput(c, *out)
	if code != 0 {
		return code
	}
	if len(pos) == 0 {
		return c.usage("want one or more job ids")
	}
	cl, err := cf.client()
	if err != nil {
		return c.usage("%v", err)
	}
	status := cl.Status
	if *verbose {
		status = cl.StatusExplained
	}
	sts, err := status(ctx, pos...)
	if err != nil {
		return c.fail(err)
	}
	if *verbose && !asJSON {
		if err := explain.WriteStatus(stdout, sts); err != nil {
			return c.fail(err)
		}
		return 0
	}
	if asJSON {
		for _, s := range sts {
			if code := writeJSONLine(c, s); code != 0 {
				return code
			}
		}
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tQUEUE\tJOB SET\tSTATE\tATTEMPTS\tWHERE\tREASON")
	for _, s := range sts {
		where := ""
		if s.Cluster != "" {
			where = s.Cluster + "/" + s.Node
		}
		state := s.State
		if s.CancelRequested {
			state += " (cancel requested)"
		}
		attempts := strconv.Itoa(s.Attempts)
		if r := s.RetryText(); r != "" {
			attempts += " (" + r + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Job, s.Queue, s.JobSet, state, attempts, where, s.Reason)
	}
	_ = tw.Flush()
	return 0
}
