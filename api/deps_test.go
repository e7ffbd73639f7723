package api_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// serviceSide are the packages of the service and of the scheduling
// library: a program that only speaks the HTTP API or the executor
// protocol links none of them. (Package executor is not among them: it
// is checked itself below, and the Kubernetes executor uses its report
// loop and refusal helpers.)
var serviceSide = []string{
	"server", "scheduler", "backend", "httpapi",
	"queue", "binpack", "fairness", "preempt", "gang", "priority",
	"scenario", "sim",
}

// TestWireSideLinksNothingOfTheService lists the non-test dependencies of
// the wire types (api), the Go client (client) and the executors of the
// protocol (the fake one, executor, and the Kubernetes one, kube/executor
// with its command): none links a package of the service or an algorithm
// package, so a client or an executor does not link the scheduler.
func TestWireSideLinksNothingOfTheService(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	const mod = "github.com/flotilla-sched/flotilla/"
	for _, pkg := range []string{mod + "api", mod + "client", mod + "executor", mod + "kube/executor", mod + "kube/cmd/flotilla-kube-executor"} {
		out, err := exec.Command(goBin, "list", "-deps", pkg).CombinedOutput()
		require.NoError(t, err, "go list: %s", out)
		var bad []string
		for _, dep := range strings.Fields(string(out)) {
			rest, ok := strings.CutPrefix(dep, mod)
			if !ok || dep == pkg {
				continue
			}
			for _, s := range serviceSide {
				if rest == s || strings.HasPrefix(rest, s+"/") {
					bad = append(bad, dep)
				}
			}
		}
		require.Empty(t, bad, "%s links packages of the service", pkg)
	}
}
