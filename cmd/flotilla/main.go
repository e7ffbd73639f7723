// Command flotilla runs Flotilla's scheduler over scenario files: a fake
// cluster, a configuration and rounds of submissions (the format is in the
// repository's docs/scenarios.md), printing what each round decided.
//
//	flotilla schedule [-o table|json] [-expect FILE.expect.json] FILE.json
//	flotilla priority -bank-tree FILE [-weights FILE] [-recompute=false] -jobs FILE
//	flotilla simulate -cluster FILE -workload FILE -o DIR [-config FILE] [-seed N]
//	flotilla explain -scenario FILE -round N [-o text|json] JOB
//
// priority prints flux-accounting's multi-factor priority of each job in a
// jobs file (a JSON array or JSON lines of {"id", "user", "bank", "queue",
// "urgency"}) against a bank tree, as `flux account jobs` does.
//
// simulate runs package sim (the service under a virtual clock) over a
// cluster file and a workload file (sim's JSON; a name ending in .yaml or
// .yml is one of Armada's simulator files, a ClusterSpec or a
// WorkloadSpec, mapped as the README's "Armada simulator files" says)
// and writes its CSV/JSON-lines tables,
// plots made with gonum/plot (share, utilisation, delay, preemptions; PNG
// and SVG) and index.html into -o DIR; -config is serve's (a scenario
// file's config and priorityClasses) read against the cluster file's resources.
//
// explain plays a scenario up to round N and explains what that round
// decided for one job: its place in its queue, its queue's share against
// its fair and adjusted fair share, per group of nodes the filter or the
// shortfall that kept it off them, the gang member that failed, for a
// preemption why and for whom, where it was placed and why there, and its
// priority (explain -h lists the JSON fields).
//
// Exit codes: 0 when the scenario ran (whatever it decided), 1 when an
// -expect file was given and the outcome differs, 2 for bad input.
//
// schedule writes and checks each round as soon as it is decided, keeping
// none, so its memory is one round's whatever the number of rounds; bad
// input found only while running (a finish naming a job that is not
// running) ends the output after the rounds before it. Tables print names
// with control characters Go-quoted.
//
// serve with -db runs highly available (package ha): several serve
// processes on one PostgreSQL database elect a leader with the database's
// lease (-leader-ttl); the others forward every API request to the
// leader's -advertise URL and answer /healthz, /readyz and /metrics
// themselves (flotilla_leader: 1 on the leader). Clients take several
// comma-separated -server URLs and move to the next when one cannot be
// reached.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/flotilla-sched/flotilla/scenario"
)

const usage = `usage:
  flotilla schedule [-o table|json] [-expect FILE.expect.json] FILE.json
      run a scenario file through the scheduler and print each round
  flotilla priority -bank-tree FILE [-weights FILE] [-recompute=false] -jobs FILE
      print each job's multi-factor priority breakdown, as flux account jobs does
  flotilla simulate -cluster FILE -workload FILE -o DIR [-config FILE] [-seed N]
      simulate the service over virtual time; write CSV/JSONL tables, plots and index.html
  flotilla explain  -scenario FILE -round N [-o text|json] JOB
      explain what round N of a scenario decided for one job, and why

  flotilla serve    [-listen 127.0.0.1:8080] [-db URL] [-config FILE] [-auth FILE]
                    [-cycle 1s] [-lease-timeout 30s] [-tls-cert FILE -tls-key FILE]
                    [-advertise URL] [-leader-ttl 10s]   # with -db: several servers, one leader
  flotilla queue    create NAME [-parent G] [-priority-factor F] [-guaranteed Q] [-limit Q]
                    [-lending-limit Q] | update NAME [the same flags] | list [-o json] | delete NAME
                    | cordon NAME | uncordon NAME       # admin: its queued jobs are not leased
  flotilla group    create NAME [the same flags] | update NAME [the same flags] | list [-o json]
                    | delete NAME      # Q: resource=quantity,… (cpu=16,nvidia.com/gpu=4)
  flotilla submit   FILE                 # prints one job id per line, in file order
  flotilla cancel   JOB_ID... | -queue Q [-jobset S]          # without -jobset: the whole queue
  flotilla reprioritize -priority N (JOB_ID... | -queue Q -jobset S)   # queued jobs only
  flotilla preempt  JOB_ID... | -queue Q [-jobset S] | -cluster C [-node N]   [-reason TEXT]
  flotilla cluster  list [-o json] | cordon NAME | uncordon NAME   # cordon: admin; no new leases
  flotilla events   -queue Q -jobset S [-from SEQ] [-o json]
  flotilla watch    -queue Q -jobset S [-from SEQ] [-until-done] [-o json]
  flotilla status   JOB_ID... [-v] [-o json]
  flotilla executor -cluster NAME -nodes FILE [-renew 5s] [-pool P]
  flotilla version                       # the version and the commit it was built from
      the queueing service, its clients and a fake executor (docs/job-lifecycle.md); clients
      take -server URL[,URL...] (or $FLOTILLA_SERVER) and -token T (or $FLOTILLA_TOKEN)

exit codes: 0 success, 1 the service refused or failed the request, 2 bad input or usage

documentation: README.md and docs/ in the repository (every file format: docs/scenarios.md,
docs/submit-file.md, docs/nodes-file.md, docs/serve-config.md, docs/auth-file.md; the HTTP API:
docs/http-api.md; operating the service: docs/operator-commands.md; Kubernetes: docs/kubernetes.md)
`

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "schedule":
		return schedule(ctx, args[1:], stdout, stderr)
	case "priority":
		return priorityCmd(args[1:], stdout, stderr)
	case "serve":
		return serve(ctx, args[1:], stdout, stderr)
	case "queue":
		return queueCmd(ctx, args[1:], stdout, stderr)
	case "group":
		return groupCmd(ctx, args[1:], stdout, stderr)
	case "submit":
		return submitCmd(ctx, args[1:], stdout, stderr)
	case "cancel":
		return cancelCmd(ctx, args[1:], stdout, stderr)
	case "reprioritize":
		return reprioritizeCmd(ctx, args[1:], stdout, stderr)
	case "preempt":
		return preemptCmd(ctx, args[1:], stdout, stderr)
	case "cluster":
		return clusterCmd(ctx, args[1:], stdout, stderr)
	case "events":
		return eventsCmd(ctx, args[1:], stdout, stderr)
	case "watch":
		return watchCmd(ctx, args[1:], stdout, stderr)
	case "status":
		return statusCmd(ctx, args[1:], stdout, stderr)
	case "executor":
		return executorCmd(ctx, args[1:], stdout, stderr)
	case "simulate":
		return simulate(ctx, args[1:], stdout, stderr)
	case "explain":
		return explainCmd(ctx, args[1:], stdout, stderr)
	case "version":
		return versionCmd(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "flotilla: unknown command %q\n%s", args[0], usage)
	return 2
}

func schedule(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("schedule", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("o", "table", "output format: table or json")
	expectPath := fs.String("expect", "", "compare the outcome with this .expect.json file")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: flotilla schedule [-o table|json] [-expect FILE.expect.json] FILE\n"+
			"  FILE is a scenario file (docs/scenarios.md); flags may come before or after it\n")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if len(pos) != 1 {
		if len(pos) == 0 {
			fmt.Fprint(stderr, "flotilla schedule: want a scenario FILE\n")
		} else {
			fmt.Fprintf(stderr, "flotilla schedule: want one scenario FILE, got %d arguments: %q\n", len(pos), pos)
		}
		fs.Usage()
		return 2
	}
	if *format != "table" && *format != "json" {
		fmt.Fprintf(stderr, "flotilla: -o %q: want table or json\n", *format)
		return 2
	}
	path := pos[0]
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "flotilla: %v\n", err)
		return 2
	}
	var expect *scenario.Expect
	if *expectPath != "" {
		edata, err := os.ReadFile(*expectPath)
		if err != nil {
			fmt.Fprintf(stderr, "flotilla: %v\n", err)
			return 2
		}
		if expect, err = scenario.ParseExpect(edata); err != nil {
			fmt.Fprintf(stderr, "flotilla: %s is not a valid expect file (docs/scenarios.md):\n", *expectPath)
			printErrors(stderr, err)
			return 2
		}
	}
	f, err := scenario.Parse(data)
	if err != nil {
		reportBadInput(stderr, path, err)
		return 2
	}
	built, err := f.Build()
	if err != nil {
		reportBadInput(stderr, path, err)
		return 2
	}
	// Each round is written and checked as soon as it is decided and then
	// dropped: memory stays that of one round, whatever the number of rounds.
	var check *scenario.Check
	if expect != nil {
		check = expect.NewCheck()
	}
	var writeRound func(*scenario.RoundOutput) error
	var finish func() error
	if *format == "json" {
		js := scenario.NewJSONStream(stdout)
		writeRound, finish = js.WriteRound, js.Close
	} else {
		writeRound, finish = scenario.NewTableStream(stdout).WriteRound, func() error { return nil }
	}
	var writeErr error
	rounds := 0
	err = scenario.RunStream(ctx, built, func(r *scenario.RoundOutput) error {
		rounds++
		if writeErr = writeRound(r); writeErr != nil {
			return writeErr
		}
		if check != nil {
			check.Round(r)
		}
		return nil
	})
	if err == nil {
		writeErr = finish()
		err = writeErr
	}
	if err != nil {
		if writeErr != nil {
			fmt.Fprintf(stderr, "flotilla: %v\n", err)
		} else {
			reportBadInput(stderr, path, err)
		}
		return 2
	}
	if rounds == 0 {
		fmt.Fprintf(stderr, "flotilla: %s has no rounds: nothing was scheduled\n", path)
	}
	if check != nil {
		if err := check.Err(); err != nil {
			fmt.Fprintf(stderr, "flotilla: %s differs from %s:\n", path, *expectPath)
			printErrors(stderr, err)
			return 1
		}
		fmt.Fprintf(stderr, "flotilla: %s matches %s (%d rounds)\n", path, *expectPath, rounds)
	}
	return 0
}

// reportBadInput prints each joined problem on its own line.
func reportBadInput(w io.Writer, path string, err error) {
	fmt.Fprintf(w, "flotilla: %s is not a valid scenario (docs/scenarios.md):\n", path)
	printErrors(w, err)
}

func printErrors(w io.Writer, err error) {
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		for _, e := range joined.Unwrap() {
			printErrors(w, e)
		}
		return
	}
	fmt.Fprintf(w, "  %v\n", err)
}
