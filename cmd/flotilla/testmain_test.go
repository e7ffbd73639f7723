package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain removes what the package's tests leave outside t.TempDir: the
// command's binary, built once into a directory of its own for every
// test that runs it (about 35 MB a run, left in the temporary folder
// before).
func TestMain(m *testing.M) {
	code := m.Run()
	theBinary.remove()
	os.Exit(code)
}

// remove deletes the built binary's directory, if it was built.
func (b *built) remove() {
	if b.path != "" {
		_ = os.RemoveAll(filepath.Dir(b.path))
	}
}

// A run of the package's tests leaves nothing in the temporary folder:
// one that runs the built command, in a go test of its own whose TMPDIR
// is a fresh folder, leaves it empty.
func TestTheTestsLeaveNothingInTheTemporaryFolder(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test again")
	}
	if os.Getenv("FLOTILLA_INNER_TEST") != "" {
		t.Skip("the inner run")
	}
	tmp := t.TempDir()
	cmd := exec.Command("go", "test", "-count=1", "-run", "^TestServeWithAFluxBlockShowsTheBreakdownInStatusVerbose$", ".")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "FLOTILLA_INNER_TEST=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	assert.Empty(t, left, "left in the temporary folder")
}
