// Package kubetest starts a real etcd and kube-apiserver on loopback for
// the adapter's integration tests, from the binaries scripts/kube builds
// (FLOTILLA_KUBE_BIN names their directory).
//
// Each Cluster is a pair of processes of its own: fresh data in a
// temporary directory, free loopback ports, a static admin token, and no
// scheduler or kubelet. Nothing runs pods: tests set a pod's phase by
// updating its status. A test that needs controllers (the Job controller,
// to create the pods of Jobs) starts kube-controller-manager with only
// those (Cluster.Controllers). Stop ends every process by PID and removes
// the directory; a test process that dies takes them with it (on Linux,
// through the parent-death signal).
package kubetest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// EnvBin names the environment variable holding the directory of the
// etcd and kube-apiserver binaries.
const EnvBin = "FLOTILLA_KUBE_BIN"

// token is the admin's bearer token (a member of system:masters).
const token = "flotilla-test-admin"

// Cluster is a running etcd and kube-apiserver.
type Cluster struct {
	// Config reaches the apiserver as an admin over TLS; copy it before
	// changing it.
	Config *rest.Config
	// Dir holds the servers' data, certificates and logs.
	Dir string

	etcd, apiserver, controllers *exec.Cmd
	bin                          string
}

// Start starts etcd and then kube-apiserver from the binaries in bin, and
// waits until the apiserver is ready or ctx ends. On an error nothing is
// left running.
func Start(ctx context.Context, bin string) (c *Cluster, err error) {
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			return nil, fmt.Errorf("kubetest: %s not built in %s (run scripts/kube build): %w", name, bin, err)
		}
	}
	dir, err := os.MkdirTemp("", "flotilla-kube-")
	if err != nil {
		return nil, err
	}
	c = &Cluster{Dir: dir, bin: bin}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	ep, pp, ap := ports[0], ports[1], ports[2]
	client := "http://127.0.0.1:" + strconv.Itoa(ep)
	peer := "http://127.0.0.1:" + strconv.Itoa(pp)
	c.etcd, err = c.start(filepath.Join(bin, "etcd"), "etcd.log",
		"--name", "test", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "test="+peer, "--unsafe-no-fsync", "--log-level", "warn")
	if err != nil {
		return nil, err
	}
	if err := writeKeys(dir); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(token+",admin,admin-uid,system:masters\n"), 0o600); err != nil {
		return nil, err
	}
	api := "https://127.0.0.1:" + strconv.Itoa(ap)
	c.apiserver, err = c.start(filepath.Join(bin, "kube-apiserver"), "apiserver.log",
		"--etcd-servers", client, "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(ap), "--cert-dir", filepath.Join(dir, "certs"),
		"--service-cluster-ip-range", "10.0.0.0/24", "--service-account-issuer", api,
		"--service-account-key-file", filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file", filepath.Join(dir, "sa.key"),
		"--token-auth-file", filepath.Join(dir, "tokens.csv"),
		"--authorization-mode", "AlwaysAllow", "--disable-admission-plugins", "ServiceAccount",
		"--endpoint-reconciler-type", "none", "--allow-privileged=true")
	if err != nil {
		return nil, err
	}
	c.Config = &rest.Config{
		Host:            api,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(dir, "certs", "apiserver.crt")},
		QPS:             -1, // no client-side rate limit: the tests measure the server
	}
	if err := c.waitReady(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// start starts one server with its output in the named log file.
func (c *Cluster) start(path, logName string, args ...string) (*exec.Cmd, error) {
	out, err := os.Create(filepath.Join(c.Dir, logName))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("kubetest: start %s: %w", filepath.Base(path), err)
	}
	go func() { cmd.Wait(); out.Close() }()
	return cmd, nil
}

// waitReady polls /readyz until it answers ok, a server exits, or ctx
// ends.
func (c *Cluster) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	var last error
	for {
		if c.apiserver.ProcessState != nil || c.etcd.ProcessState != nil {
			return fmt.Errorf("%w; logs in %s:\n%s", errExitedEarly, c.Dir, c.tail("apiserver.log")+c.tail("etcd.log"))
		}
		cs, err := kubernetes.NewForConfig(c.Config)
		if err == nil {
			var body []byte
			body, err = cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
			if err == nil && strings.TrimSpace(string(body)) == "ok" {
				return nil
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("kubetest: apiserver not ready (%v); logs in %s:\n%s", last, c.Dir, c.tail("apiserver.log"))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// tail returns the end of a log file.
func (c *Cluster) tail(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, name))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Stop stops the apiserver, then etcd (SIGTERM, then SIGKILL after five
// seconds), and removes the directory. It may be called more than once.
func (c *Cluster) Stop() error {
	var errs []error
	for _, cmd := range []*exec.Cmd{c.controllers, c.apiserver, c.etcd} {
		if cmd == nil || cmd.Process == nil {
			continue
		}
		stop(cmd)
	}
	c.controllers, c.apiserver, c.etcd = nil, nil, nil
	if c.Dir != "" {
		errs = append(errs, os.RemoveAll(c.Dir))
		c.Dir = ""
	}
	return errors.Join(errs...)
}

// stop ends one process: SIGTERM, then SIGKILL if it lingers.
func stop(cmd *exec.Cmd) {
	cmd.Process.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if cmd.Process.Signal(syscall.Signal(0)) != nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill()
}

// New starts a Cluster for a test and stops it when the test ends. Without
// FLOTILLA_KUBE_BIN the test is skipped, unless CI=true, where it fails:
// CI must never pass by skipping. A benchmark fails too: one that skips
// measures nothing, yet go test would print ok. With -short the test is
// skipped (scripts/test builds no servers for -short).
func New(t testing.TB) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("a real apiserver and etcd: not with -short")
	}
	bin := os.Getenv(EnvBin)
	if bin == "" {
		if _, bench := t.(*testing.B); bench {
			t.Fatalf("%s is not set: a benchmark against a real apiserver needs its binaries; run eval \"$(scripts/kube build)\" first", EnvBin)
		}
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: run the tests with scripts/test, which builds the servers (CI=true: not skipping)", EnvBin)
		}
		t.Skipf("%s is not set: eval \"$(scripts/kube build)\" to run the tests against a real apiserver", EnvBin)
	}
	// A server that exits at once has most likely lost its port to another
	// process between freePorts and its bind: start again on new ports.
	var c *Cluster
	var err error
	for try := 0; try < 3; try++ {
		if c, err = Start(context.Background(), bin); !errors.Is(err, errExitedEarly) {
			break
		}
		t.Logf("kubetest: starting again: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop() })
	return c
}

// Controllers starts kube-controller-manager against the cluster with only
// the named controllers ("job": the Job controller), no leader election
// and no serving port; Stop stops it first. Without the binary (a
// FLOTILLA_KUBE_BIN built before scripts/kube built it) the test is
// skipped, unless CI=true, where it fails.
func (c *Cluster) Controllers(t testing.TB, names ...string) {
	t.Helper()
	path := filepath.Join(c.bin, "kube-controller-manager")
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("kube-controller-manager not built in %s (CI=true: not skipping): %v", c.bin, err)
		}
		t.Skipf("kube-controller-manager not built in %s: run scripts/kube build again", c.bin)
	}
	if c.controllers != nil {
		t.Fatal("kubetest: controllers already started")
	}
	kubeconfig := filepath.Join(c.Dir, "kubeconfig")
	conf := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: %q, certificate-authority: %q}}]
users: [{name: admin, user: {token: %q}}]
contexts: [{name: test, context: {cluster: test, user: admin}}]
current-context: test
`, c.Config.Host, c.Config.TLSClientConfig.CAFile, token)
	if err := os.WriteFile(kubeconfig, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, err := c.start(path, "controller-manager.log",
		"--kubeconfig", kubeconfig, "--controllers", strings.Join(names, ","),
		"--leader-elect=false", "--secure-port=0", "--concurrent-job-syncs=20",
		"--kube-api-qps=5000", "--kube-api-burst=10000")
	if err != nil {
		t.Fatal(err)
	}
	c.controllers = cmd
}

// Log returns the end of one server's log ("apiserver.log", "etcd.log",
// "controller-manager.log"), for a failing test's message.
func (c *Cluster) Log(name string) string { return c.tail(name) }

// Clientset returns a clientset for the cluster's admin.
func (c *Cluster) Clientset(t testing.TB) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// errExitedEarly is Start's error when a server exits before the
// apiserver is ready.
var errExitedEarly = errors.New("kubetest: a server exited early")

// freePorts returns n distinct loopback ports that were free a moment ago,
// outside the kernel's ephemeral range when there is room below or above
// it: the local end of any connection made on the machine takes a port
// from that range, and could take one of these before its server binds it.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	lo, hi := 32768, 60999
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		_, _ = fmt.Sscan(string(b), &lo, &hi)
	}
	from, span := 0, 0
	switch {
	case lo > 12000:
		from, span = 10000, lo-10000
	case hi < 63000:
		from, span = hi+1, 65535-hi
	}
	ports := make([]int, 0, n)
	for try := 0; len(ports) < n; try++ {
		port := 0 // the kernel's choice
		if span > 0 && try < 100*n {
			port = from + mrand.IntN(span)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			if port == 0 {
				return nil, err
			}
			continue
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// writeKeys writes the service-account signing key pair.
func writeKeys(dir string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}
