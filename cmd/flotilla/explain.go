package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/flotilla-sched/flotilla/explain"
	"github.com/flotilla-sched/flotilla/scenario"
)

// explainHelp is `flotilla explain -h`'s text after the flags: what the
// JSON form holds, field by field (the field names are stable).
const explainHelp = `
flotilla explain -scenario FILE -round N [-o text|json] JOB

Runs the scenario through round N (counted from 0, as "round" in
flotilla schedule's output) and explains what that round decided for JOB.

-o json prints one object:
` + explain.JSONFields + `
Exit codes: 0 explained, 2 bad input or usage (unknown job, round out of
range, a file that is not a valid scenario).
`

// explainCmd runs `flotilla explain`: it plays a scenario up to round N
// and explains, for one job, what that round decided and why.
func explainCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("scenario", "", "scenario file (docs/scenarios.md); required")
	round := fs.Int("round", 0, "the round to explain, from 0; required")
	format := fs.String("o", "text", "output format: text or json")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage of flotilla explain:")
		fs.PrintDefaults()
		fmt.Fprint(stderr, explainHelp)
	}
	pos, err := parse(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	roundSet := false
	fs.Visit(func(f *flag.Flag) { roundSet = roundSet || f.Name == "round" })
	switch {
	case *path == "" || !roundSet || len(pos) != 1:
		fmt.Fprint(stderr, "flotilla explain: want -scenario FILE -round N and one job id\n", usage)
		return 2
	case *format != "text" && *format != "json":
		fmt.Fprintf(stderr, "flotilla explain: -o %q: want text or json\n", *format)
		return 2
	}
	data, err := os.ReadFile(*path)
	if err != nil {
		fmt.Fprintf(stderr, "flotilla: %v\n", err)
		return 2
	}
	f, err := scenario.Parse(data)
	if err != nil {
		reportBadInput(stderr, *path, err)
		return 2
	}
	b, err := f.Build()
	if err != nil {
		reportBadInput(stderr, *path, err)
		return 2
	}
	if err := explain.CheckArgs(b, *round, pos[0]); err != nil {
		fmt.Fprintf(stderr, "flotilla explain: %s:\n", *path)
		printErrors(stderr, err)
		return 2
	}
	ex, err := explain.Scenario(ctx, b, *round, pos[0])
	if err != nil {
		reportBadInput(stderr, *path, err)
		return 2
	}
	if *format == "json" {
		err = ex.WriteJSON(stdout)
	} else {
		err = ex.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "flotilla: %v\n", err)
		return 2
	}
	return 0
}
