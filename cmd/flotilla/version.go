package main

import (
	"fmt"
	"io"
	"runtime/debug"
)

// version and commit, when the build sets them (go build -ldflags "-X
// main.version=v0.3.0 -X main.commit=$(git rev-parse HEAD)"), name the
// build where Go's build information does not (a build with
// -buildvcs=false, or outside version control).
var version, commit string

// versionLine is `flotilla version`'s line: the module version and the
// commit it was built from (with ", modified" when the work tree had
// changes): version and commit when the build set them, else what Go's
// build information records; "unknown" for what neither records.
func versionLine(info *debug.BuildInfo, ok bool) string {
	v, c, modified := versionFrom(info, ok)
	line := fmt.Sprintf("flotilla %s (commit %s", or(version, v), or(commit, c))
	if modified && commit == "" {
		line += ", modified"
	}
	return line + ")"
}

// versionFrom reads Go's build information.
func versionFrom(info *debug.BuildInfo, ok bool) (version, commit string, modified bool) {
	version, commit = "unknown", "unknown"
	if ok {
		if v := info.Main.Version; v != "" && v != "(devel)" {
			version = v
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	return version, commit, modified
}

func versionCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fmt.Fprintln(stderr, "usage: flotilla version\n  prints the module version and the commit it was built from (docs/operator-commands.md)")
		return 0
	}
	if len(args) != 0 {
		fmt.Fprintln(stderr, "flotilla version: takes no arguments")
		return 2
	}
	fmt.Fprintln(stdout, versionLine(debug.ReadBuildInfo()))
	return 0
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
