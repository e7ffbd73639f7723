package main

import (
	"flag"
	"fmt"
	"reflect"
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

// isDefaultUsage reports whether fs's Usage is the flag package's own (the
// command set none): the same method of a FlagSet, so the same code.
func isDefaultUsage(fs *flag.FlagSet) bool {
	def := flag.NewFlagSet("", flag.ContinueOnError).Usage
	return fs.Usage != nil && reflect.ValueOf(fs.Usage).Pointer() == reflect.ValueOf(def).Pointer()
}

// synopsisUsage is a command's -h text when it sets none of its own: its
// lines of the command's usage (its arguments, which the flag package's
// default text leaves out), then its flags.
func synopsisUsage(fs *flag.FlagSet) {
	fmt.Fprint(fs.Output(), "usage:\n"+synopsis(fs.Name()))
	fs.PrintDefaults()
}

// synopsis returns the lines of the main usage text that describe the
// command name (its first word: "queue create" is queue's), with their
// continuation lines.
func synopsis(name string) string {
	cmd, _, _ := strings.Cut(name, " ")
	var b strings.Builder
	in := false
	for _, line := range strings.Split(usage, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "flotilla "):
			f := strings.Fields(t)
			in = len(f) > 1 && f[1] == cmd
		case t == "" || !strings.HasPrefix(line, "   "):
			in = false
		}
		if in {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}
