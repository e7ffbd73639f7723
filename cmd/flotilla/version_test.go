package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestVersionLineNamesTheVersionAndTheCommit(t *testing.T) {
	info := &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}}
	require.Equal(t, "flotilla v1.2.3 (commit abc123, modified)", versionLine(info, true))
	info.Settings = info.Settings[:1]
	require.Equal(t, "flotilla v1.2.3 (commit abc123)", versionLine(info, true))
	require.Equal(t, "flotilla unknown (commit unknown)", versionLine(nil, false))
	var out, errOut bytes.Buffer
	require.Equal(t, 2, run(context.Background(), []string{"version", "x"}, &out, &errOut))
}

// A command built with the commit stamped (-ldflags -X main.commit, for
// builds without Go's VCS stamping) prints it.
func TestVersionCommandPrintsTheCommitItWasBuiltFrom(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "flotilla")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin,
		"-ldflags", "-X main.version=v9.8.7 -X main.commit=0123abc", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.CommandContext(ctx, bin, "version").Output()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(out), "flotilla v9.8.7 (commit "), "%s", out)
	require.Equal(t, "flotilla v9.8.7 (commit 0123abc)\n", string(out), "what the build sets wins")
}
