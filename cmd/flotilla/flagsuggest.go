package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/flotilla-sched/flotilla/internal/strictjson"
)

// suggestFlag follows the flag package's report of an unknown flag (its
// error and the usage, already printed) with the closest flag the command
// has, as a file's unknown field gets a did-you-mean. Other errors pass.
func suggestFlag(fs *flag.FlagSet, err error) {
	name, ok := strings.CutPrefix(fmt.Sprint(err), "flag provided but not defined: -")
	if !ok {
		return
	}
	var known []string
	fs.VisitAll(func(f *flag.Flag) { known = append(known, f.Name) })
	if s := strictjson.Suggest(name, known); s != "" {
		fmt.Fprintf(fs.Output(), "flotilla %s: unknown flag -%s; did you mean -%s?\n", fs.Name(), name, s)
	} else {
		fmt.Fprintf(fs.Output(), "flotilla %s: unknown flag -%s; its flags are listed above\n", fs.Name(), name)
	}
}
