package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/flotilla-sched/flotilla/cmd/flotilla/internal/jobsfile"
	"github.com/flotilla-sched/flotilla/priority"
)

// priorityCmd runs `flotilla priority`: it loads a bank tree (and optional
// weights), ranks every association by its usage, computes each job's
// multi-factor priority and prints the breakdowns as `flux account jobs`
// does. Priorities are computed at one fixed instant, the moment the tree
// is read, so the output depends on the files alone.
func priorityCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("priority", flag.ContinueOnError)
	fs.SetOutput(stderr)
	treePath := fs.String("bank-tree", "", "bank tree JSON file (banks, associations with usage, queue priorities: flux.bankTree of docs/serve-config.md); required")
	weightsPath := fs.String("weights", "", "factor weights JSON file; absent means flux-accounting's defaults")
	jobsPath := fs.String("jobs", "", `jobs file: a JSON array or JSON lines of {"id", "user", "bank", "queue", "urgency"}; required`)
	recompute := fs.Bool("recompute", true, "rank associations by their usage first; false keeps every fair-share at 0.5, as for new associations")
	if err := fs.Parse(args); err != nil {
		suggestFlag(fs, err)
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 0 || *treePath == "" || *jobsPath == "" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	// A fixed instant: no usage decays between loading and prioritizing.
	now := time.Unix(0, 0).UTC()

	tree, code := loadFile(stderr, *treePath, "bank tree", func(r io.Reader) (*priority.BankTree, error) {
		return priority.LoadBankTree(r, now)
	})
	if code != 0 {
		return code
	}
	if *weightsPath != "" {
		w, code := loadFile(stderr, *weightsPath, "weights file", priority.LoadWeights)
		if code != 0 {
			return code
		}
		if err := tree.SetWeights(w); err != nil {
			reportBad(stderr, *weightsPath, "weights file", err)
			return 2
		}
	}
	jobs, code := loadFile(stderr, *jobsPath, "jobs file", jobsfile.Decode)
	if code != 0 {
		return code
	}
	if *recompute {
		if err := tree.Recompute(now); err != nil {
			fmt.Fprintf(stderr, "flotilla: %v\n", err)
			return 2
		}
	}
	rows := make([]priority.Breakdown, 0, len(jobs))
	var errs []error
	for i, j := range jobs {
		b, err := tree.Prioritize(priority.JobRef{ID: j.ID, User: j.User, Bank: j.Bank, Queue: j.Queue}, j.Urgency, now)
		if err != nil {
			errs = append(errs, j.Problem(err, i))
			continue
		}
		rows = append(rows, b)
	}
	if len(errs) > 0 {
		reportBad(stderr, *jobsPath, "jobs file", errors.Join(errs...))
		return 2
	}
	if err := priority.WriteJobsTable(stdout, rows); err != nil {
		fmt.Fprintf(stderr, "flotilla: %v\n", err)
		return 2
	}
	return 0
}

// loadFile opens path and decodes it with load, reporting failures (exit 2).
func loadFile[T any](stderr io.Writer, path, what string, load func(io.Reader) (T, error)) (T, int) {
	var zero T
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(stderr, "flotilla: %v\n", err)
		return zero, 2
	}
	defer f.Close()
	v, err := load(f)
	if err != nil {
		reportBad(stderr, path, what, err)
		return zero, 2
	}
	return v, 0
}

func reportBad(w io.Writer, path, what string, err error) {
	fmt.Fprintf(w, "flotilla: %s is not a valid %s:\n", path, what)
	printErrors(w, err)
}
