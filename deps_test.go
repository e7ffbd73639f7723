package flotilla_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// coreModules are the only modules the core module's packages may import
// outside the standard library (DESIGN.md §2: the design card's btree,
// gonum and x/exp). Heavy dependencies (client-go, pgx, Prometheus) live in
// nested modules, so a program importing scheduler or server gets nothing
// more.
var coreModules = []string{
	"github.com/flotilla-sched/flotilla",
	"github.com/google/btree",
	"gonum.org/v1/gonum",
	"golang.org/x/exp",
}

// TestCoreImportsOnlyTheDesignCardsModules lists the non-test dependencies
// of every package of the core module, as a consumer's build would see
// them, and refuses any module outside coreModules.
func TestCoreImportsOnlyTheDesignCardsModules(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{if .Module}}{{.ImportPath}} {{.Module.Path}}{{end}}", "./...").CombinedOutput()
	require.NoError(t, err, "go list: %s", out)
	var bad []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, mod, ok := strings.Cut(line, " ")
		require.True(t, ok, "go list line %q", line)
		if !slices.Contains(coreModules, mod) {
			bad = append(bad, pkg+" (module "+mod+")")
		}
	}
	require.Empty(t, bad, "the core module imports packages outside the design card's modules")
}

// consumerImports are the packages a program embedding Flotilla imports:
// the library, the service, its storage, its HTTP API, client and fake
// executor.
var consumerImports = []string{
	"github.com/flotilla-sched/flotilla/scheduler",
	"github.com/flotilla-sched/flotilla/server",
	"github.com/flotilla-sched/flotilla/backend",
	"github.com/flotilla-sched/flotilla/backend/memory",
	"github.com/flotilla-sched/flotilla/events",
	"github.com/flotilla-sched/flotilla/httpapi",
	"github.com/flotilla-sched/flotilla/client",
	"github.com/flotilla-sched/flotilla/executor",
}

// TestConsumerModuleGraphHoldsNoNestedModulesDependencies builds a
// consumer module that imports the core packages (with a replace
// directive to this checkout, outside the workspace) and lists its module
// graph: the packages it builds come only from the design card's modules,
// and the graph holds none of the heavy modules the nested modules use
// (Prometheus, pgx, client-go).
func TestConsumerModuleGraphHoldsNoNestedModulesDependencies(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	root, err := filepath.Abs(".")
	require.NoError(t, err)
	dir := t.TempDir()
	gomod := "module example.com/consumer\n\ngo 1.26\n\nrequire github.com/flotilla-sched/flotilla v0.0.0\n\nreplace github.com/flotilla-sched/flotilla => " + root + "\n"
	var src strings.Builder
	src.WriteString("package main\n\nimport (\n")
	for _, p := range consumerImports {
		src.WriteString("\t_ \"" + p + "\"\n")
	}
	src.WriteString(")\n\nfunc main() {}\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(src.String()), 0o600))
	run := func(args ...string) string {
		cmd := exec.Command(goBin, args...)
		cmd.Dir = dir
		// Outside the workspace, from the module cache only.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off", "GOSUMDB=off")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %v: %s", args, out)
		return string(out)
	}
	run("mod", "tidy")
	var bad []string
	for _, line := range strings.Split(strings.TrimSpace(run("list", "-deps", "-f", "{{if .Module}}{{.Module.Path}}{{end}}", ".")), "\n") {
		if line != "" && line != "example.com/consumer" && !slices.Contains(coreModules, line) {
			bad = append(bad, line)
		}
	}
	require.Empty(t, bad, "a consumer of the core packages builds modules outside the design card's")
	graph := run("list", "-m", "all")
	for _, heavy := range []string{"github.com/prometheus/", "github.com/jackc/pgx", "k8s.io/client-go"} {
		require.NotContains(t, graph, heavy, "the consumer's module graph")
	}
}
