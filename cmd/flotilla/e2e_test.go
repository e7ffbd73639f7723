package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla/events"
)

// The tests in this file run the built command as real processes on
// loopback: a server, executors, clients. Each process is bounded by the
// test's deadline and killed at cleanup.

// buildOnce builds the flotilla binary once per test binary run.
type built struct {
	once sync.Once
	path string
	err  error
}

func (b *built) get(t *testing.T) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "flotilla-e2e-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "flotilla")
		out, err := exec.Command("go", "build", "-o", b.path, ".").CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, b.err)
	return b.path
}

// theBinary is the command under test, built by the first test that
// needs it.
var theBinary built

// binary is the command under test's path.
func binary(t *testing.T) string {
	t.Helper()
	return theBinary.get(t)
}

// proc is a running process of the command.
type proc struct {
	cmd    *exec.Cmd
	stdout *bufio.Reader
	stderr *strings.Builder
	done   chan error
}

// start runs the command with args; the process is killed at cleanup.
func start(t *testing.T, ctx context.Context, args ...string) *proc {
	t.Helper()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	p := &proc{cmd: cmd, stdout: bufio.NewReader(out), stderr: &strings.Builder{}, done: make(chan error, 1)}
	cmd.Stderr = &lockedWriter{w: p.stderr}
	require.NoError(t, cmd.Start())
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// serveOn starts a server on a free loopback port and returns its URL.
func serveOn(t *testing.T, ctx context.Context, extra ...string) (*proc, string) {
	t.Helper()
	p := start(t, ctx, append([]string{"serve", "-listen", "127.0.0.1:0"}, extra...)...)
	line, err := p.stdout.ReadString('\n')
	require.NoError(t, err, "serve printed nothing; stderr: %s", p.stderr)
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	require.True(t, ok, "serve's first line %q", line)
	return p, url
}

// runClient runs a client command to completion and returns its exit code
// and output.
func runClient(t *testing.T, ctx context.Context, url string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Env = append(os.Environ(), "FLOTILLA_SERVER="+url)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return code, out.String(), errOut.String()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// TestServeTwoExecutorsOneKilledEveryJobSucceedsAndNoneHoldsTwoLeases is
// issue 10's end-to-end test: serve, two executors and a submit of a few
// hundred jobs including a gang; one executor is killed with SIGKILL mid
// run; every job ends succeeded, the killed cluster's jobs show
// lease-expired and then a lease on the other cluster, and no job ever
// holds two live leases. A watcher that disconnects and resumes with -from
// misses nothing and sees nothing twice, and watch -until-done exits when
// the set is done.
func TestServeTwoExecutorsOneKilledEveryJobSucceedsAndNoneHoldsTwoLeases(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	_, url := serveOn(t, ctx, "-cycle", "100ms", "-lease-timeout", "2s")
	code, _, errOut := runClient(t, ctx, url, "queue", "create", "A")
	require.Equal(t, 0, code, errOut)
	nodes := writeFile(t, "nodes.json", `[{"name": "node", "count": 4, "resources": {"cpu": "8", "memory": "32Gi"}}]`)
	var exs []*proc
	for _, c := range []string{"c1", "c2"} {
		exs = append(exs, start(t, ctx, "executor", "-server", url, "-cluster", c, "-nodes", nodes, "-renew", "300ms", "-lease-timeout", "2s"))
	}
	jobs := writeFile(t, "jobs.json", `{"queue": "A", "jobSet": "s1", "jobs": [
		{"count": 290, "requests": {"cpu": "1"}, "runtime": "1s"},
		{"count": 10, "requests": {"cpu": "1"}, "runtime": "1s", "gang": {"id": "g1", "cardinality": 10}}]}`)

	// A watcher follows from the start; it is stopped part way and resumed.
	watchCtx, stopWatch := context.WithCancel(ctx)
	w1 := exec.CommandContext(watchCtx, binary(t), "watch", "-server", url, "-queue", "A", "-jobset", "s1", "-o", "json")
	w1out, err := w1.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, w1.Start())

	code, out, errOut := runClient(t, ctx, url, "submit", jobs)
	require.Equal(t, 0, code, errOut)
	ids := strings.Fields(out)
	require.Len(t, ids, 300)

	// Read events until c1 runs jobs, then kill it while it holds them.
	running := 0
	first := readEventsUntil(t, bufio.NewReader(w1out), func(e events.Event) bool {
		if e.Type == events.Running && e.Cluster == "c1" {
			running++
		}
		return running >= 5
	})
	require.NoError(t, exs[0].cmd.Process.Signal(syscall.SIGKILL))
	stopWatch()
	_ = w1.Wait()

	// Resume the watch after the last event seen, until the set is done.
	from := first[len(first)-1].Seq + 1
	code, out, errOut = runClient(t, ctx, url, "watch", "-queue", "A", "-jobset", "s1", "-from", fmt.Sprint(from), "-until-done", "-o", "json")
	require.Equal(t, 0, code, errOut)
	rest := parseEvents(t, out)
	watched := append(first, rest...)
	for i, e := range watched {
		require.Equal(t, uint64(i+1), e.Seq, "the watcher misses nothing and sees nothing twice")
	}

	// The stored log agrees with what was watched, up to its end.
	code, out, errOut = runClient(t, ctx, url, "events", "-queue", "A", "-jobset", "s1", "-o", "json")
	require.Equal(t, 0, code, errOut)
	stored := parseEvents(t, out)
	require.GreaterOrEqual(t, len(stored), len(watched))
	require.Equal(t, watched, stored[:len(watched)])

	live := map[string]string{}
	expired := map[string]bool{}
	state := map[string]events.Type{}
	for _, e := range stored {
		switch e.Type {
		case events.Leased:
			require.Empty(t, live[e.Job], "job %s leased while it holds a live lease on %s", e.Job, live[e.Job])
			live[e.Job] = e.Cluster
			if expired[e.Job] {
				require.Equal(t, "c2", e.Cluster, "after its lease expired on c1, %s runs on c2", e.Job)
			}
		case events.LeaseExpired:
			require.Equal(t, "c1", live[e.Job], "only the killed cluster's leases expire")
			expired[e.Job] = true
			delete(live, e.Job)
		case events.Succeeded, events.Failed, events.Cancelled, events.Preempted, events.LeaseReturned:
			delete(live, e.Job)
		}
		state[e.Job] = e.Type
	}
	require.NotEmpty(t, expired, "c1 was killed holding leases")
	for _, id := range ids {
		require.Equal(t, events.Succeeded, state[id], "job %s", id)
	}
	code, out, _ = runClient(t, ctx, url, "status", "-o", "json", ids[0])
	require.Equal(t, 0, code)
	var st struct{ State string }
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Equal(t, "succeeded", st.State)
}

// readEventsUntil reads JSON event lines until done says so.
func readEventsUntil(t *testing.T, r *bufio.Reader, done func(events.Event) bool) []events.Event {
	t.Helper()
	var out []events.Event
	for {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		var e events.Event
		require.NoError(t, json.Unmarshal([]byte(line), &e))
		out = append(out, e)
		if done(e) {
			return out
		}
	}
}

func parseEvents(t *testing.T, s string) []events.Event {
	t.Helper()
	var out []events.Event
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		if line == "" {
			continue
		}
		var e events.Event
		require.NoError(t, json.Unmarshal([]byte(line), &e), line)
		out = append(out, e)
	}
	return out
}

// TestCommandsExitCodesNameBadInputAndRefusals checks the command line's
// contract: bad input exits 2 naming field and value, storing nothing; a
// refusal by the service (no right, unknown job) exits 1; serve refuses a
// non-loopback address without -auth; SIGTERM stops serve with 0.
func TestCommandsExitCodesNameBadInputAndRefusals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	auth := writeFile(t, "auth.json", `{"tokens": [
		{"token": "t-ops", "principal": "ops", "admin": true, "submit": ["*"]},
		{"token": "t-alice", "principal": "alice", "submit": ["A"]}]}`)
	srv, url := serveOn(t, ctx, "-auth", auth)
	ops := func(args ...string) (int, string, string) {
		return runClient(t, ctx, url, append(args, "-token", "t-ops")...)
	}
	code, _, errOut := ops("queue", "create", "A")
	require.Equal(t, 0, code, errOut)

	bad := writeFile(t, "bad.json", `{"queue": "A", "jobSet": "s", "jobs": [{"requests": {"cpu": "2x"}, "priorityClas": "x"}]}`)
	code, out, errOut := ops("submit", bad)
	require.Equal(t, 2, code, "bad input exits 2")
	require.Empty(t, out)
	require.Contains(t, errOut, `jobs[0].requests.cpu "2x"`)
	require.Contains(t, errOut, `jobs[0].priorityClas`)
	code, out, errOut = ops("events", "-queue", "A", "-jobset", "s", "-o", "json")
	require.Equal(t, 1, code, "nothing stored: the job set does not exist")
	require.Empty(t, strings.TrimSpace(out), "nothing stored")
	require.Contains(t, errOut, `jobSet "s": not found`)

	code, _, errOut = runClient(t, ctx, url, "queue", "create", "B", "-token", "t-alice")
	require.Equal(t, 1, code, "a refused request exits 1: %s", errOut)
	require.Contains(t, errOut, "403")
	code, _, _ = runClient(t, ctx, url, "queue", "list")
	require.Equal(t, 1, code, "no token: 401, exit 1")
	code, _, errOut = ops("status", "no-such-job")
	require.Equal(t, 1, code, errOut)
	code, _, _ = ops("cancel")
	require.Equal(t, 2, code, "usage")
	code, _, _ = ops("watch", "-queue", "A")
	require.Equal(t, 2, code, "usage")

	code, _, errOut = runClient(t, ctx, url, "serve", "-listen", "0.0.0.0:0")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "-auth")

	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-srv.done:
		require.NoError(t, err, "serve exits 0 on SIGTERM: %s", srv.stderr)
		srv.done <- err // for the cleanup
	case <-ctx.Done():
		t.Fatal("serve did not stop on SIGTERM")
	}
}

// TestServeOverTLSIsReachedByTheClientsTrustingItsCertificate serves with
// -tls-cert and -tls-key; a client trusting the certificate (SSL_CERT_FILE)
// reaches it over https.
func TestServeOverTLSIsReachedByTheClientsTrustingItsCertificate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	certPath, keyPath := selfSigned(t)
	_, url := serveOn(t, ctx, "-tls-cert", certPath, "-tls-key", keyPath)
	require.True(t, strings.HasPrefix(url, "https://"), url)
	cmd := exec.CommandContext(ctx, binary(t), "queue", "create", "A", "-server", url)
	cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+certPath)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	// Without trusting it, the client refuses the connection: exit 1.
	code, _, errOut := runClient(t, ctx, url, "queue", "list", "-server", url)
	require.Equal(t, 1, code, errOut)
	require.Contains(t, errOut, "certificate")
}

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "flotilla test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certPath := writeFile(t, "cert.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	keyPath := writeFile(t, "key.pem", string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})))
	return certPath, keyPath
}
