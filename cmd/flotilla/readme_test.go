package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeBlock is a shell block of the README marked runnable: the line
// before its opening fence is `<!-- runnable -->`, or `<!-- runnable
// postgres -->` for a block that starts its own PostgreSQL server.
type readmeBlock struct {
	line     int // the opening fence's line, from 1
	postgres bool
	text     string
}

var runnableMarker = regexp.MustCompile(`^<!-- runnable( postgres)? -->$`)

// runnableBlocks returns the README's runnable blocks in order. A marker
// that is not followed by a shell block is an error: it would silently
// run nothing.
func runnableBlocks(readme string) ([]readmeBlock, error) {
	lines := strings.Split(readme, "\n")
	var out []readmeBlock
	for i := 0; i < len(lines); i++ {
		m := runnableMarker.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			continue
		}
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != "```sh" {
			return nil, errors.New("README line " + strconv.Itoa(i+1) + ": a runnable marker not followed by a ```sh block")
		}
		b := readmeBlock{line: i + 2, postgres: m[1] != ""}
		var body []string
		j := i + 2
		for ; j < len(lines) && strings.TrimSpace(lines[j]) != "```"; j++ {
			body = append(body, lines[j])
		}
		if j == len(lines) {
			return nil, errors.New("README line " + strconv.Itoa(b.line) + ": a runnable block never closed")
		}
		b.text = strings.Join(body, "\n")
		out = append(out, b)
		i = j
	}
	return out, nil
}

// The markers are found, a marker without its block is refused.
func TestRunnableBlocksAreTheMarkedShellBlocks(t *testing.T) {
	blocks, err := runnableBlocks("a\n<!-- runnable -->\n```sh\necho 1\necho 2\n```\n```sh\necho no\n```\n<!-- runnable postgres -->\n```sh\necho db\n```\n")
	require.NoError(t, err)
	require.Len(t, blocks, 2)
	assert.Equal(t, readmeBlock{line: 3, text: "echo 1\necho 2"}, blocks[0])
	assert.Equal(t, readmeBlock{line: 11, postgres: true, text: "echo db"}, blocks[1])
	_, err = runnableBlocks("<!-- runnable -->\ntext\n```sh\necho\n```\n")
	assert.Error(t, err)
	_, err = runnableBlocks("<!-- runnable -->\n```sh\necho\n")
	assert.Error(t, err)
}

// The README's blocks marked runnable run as pasted, in order, in one
// shell at the repository's root, so they cannot drift from the commands:
// the walkthrough, the operator's verbs, two servers on one database (when
// PostgreSQL is installed: FLOTILLA_POSTGRES_URL set, or CI=true), the
// scenario runner. The only change is the loopback ports (8080 and 8081
// become free ones, so the test runs beside other servers). The blocks
// stop what they start: no process of theirs is left when the shell ends.
func TestREADMERunnableBlocksRunAsPasted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's runnable blocks: about a minute")
	}
	data, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	blocks, err := runnableBlocks(string(data))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(blocks), 3, "the README's runnable blocks")
	withPostgres := os.Getenv("FLOTILLA_POSTGRES_URL") != "" || os.Getenv("CI") == "true"
	script := []string{"set -euo pipefail"}
	for _, b := range blocks {
		if b.postgres && !withPostgres {
			t.Logf("README line %d: needs PostgreSQL (FLOTILLA_POSTGRES_URL is not set): not run", b.line)
			continue
		}
		script = append(script, "echo '== README line "+strconv.Itoa(b.line)+"' >&2", b.text)
	}
	text := strings.Join(script, "\n")
	a1, a2 := freePort(t), freePort(t)
	text = strings.ReplaceAll(text, "127.0.0.1:8080", a1)
	text = strings.ReplaceAll(text, "127.0.0.1:8081", a2)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", text)
	cmd.Dir = "../.."
	// Clients without -server reach the walkthrough's server, as they
	// reach 127.0.0.1:8080 by default.
	// The blocks' mktemp -d folders go into the test's own, removed after.
	// The tests' shared PostgreSQL server is not the blocks': one that starts
	// one and then stops "its" server must never reach the one the other
	// tests share, even when starting its own failed.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "FLOTILLA_POSTGRES_URL=") || strings.HasPrefix(kv, "FLOTILLA_POSTGRES_DIR=")
	})
	cmd.Env = append(env, "FLOTILLA_SERVER=http://"+a1, "FLOTILLA_TOKEN=", "TMPDIR="+t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	err = cmd.Wait()
	tail := out.String()
	if len(tail) > 6000 {
		tail = "…" + tail[len(tail)-6000:]
	}
	require.NoError(t, err, "the README's runnable blocks failed (ctx: %v); output:\n%s", ctx.Err(), tail)
	// The shared PostgreSQL server is still up: the blocks stopped only
	// what they started.
	if u, err := url.Parse(os.Getenv("FLOTILLA_POSTGRES_URL")); err == nil && u.Host != "" {
		c, err := net.Dial("tcp", u.Host)
		require.NoError(t, err, "the tests' PostgreSQL server is gone after the README's blocks")
		_ = c.Close()
	}
	// Every process the blocks started has ended: serve and executors
	// are stopped by the blocks themselves.
	if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
		ps, _ := exec.Command("ps", "-o", "pid,args", "-g", strconv.Itoa(pgid)).CombinedOutput()
		t.Errorf("the README's blocks left processes running:\n%s", ps)
	}
}
