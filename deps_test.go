package flotilla_test

import (
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
