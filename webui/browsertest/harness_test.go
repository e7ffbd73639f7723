package browsertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// flotillaBin is the flotilla command TestMain builds.
var flotillaBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "flotilla-browsertest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	flotillaBin = filepath.Join(dir, "flotilla")
	build := exec.Command("go", "build", "-o", flotillaBin, "./cmd/flotilla")
	build.Dir = filepath.Join("..", "..")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building cmd/flotilla:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// startProcess runs the flotilla command with args until the test ends,
// when it is killed by its PID and waited for.
func startProcess(t *testing.T, stdout io.Writer, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(flotillaBin, args...)
	cmd.Stdout = stdout
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("flotilla %s: stderr:\n%s", args[0], stderr.String())
		}
	})
	return cmd
}

// service is a `flotilla serve` on loopback.
type service struct {
	t   *testing.T
	url string
	// token is sent as a bearer token with the test's own calls.
	token string
}

// serve starts `flotilla serve` on a free loopback port with extra
// flags, and returns once it listens.
func serve(t *testing.T, flags ...string) *service {
	t.Helper()
	r, w := io.Pipe()
	startProcess(t, w, append([]string{"serve", "-listen", "127.0.0.1:0", "-cycle", "200ms"}, flags...)...)
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				addr <- a
			}
		}
	}()
	t.Cleanup(func() { _ = w.Close() })
	select {
	case a := <-addr:
		return &service{t: t, url: a}
	case <-time.After(30 * time.Second):
		t.Fatal("flotilla serve did not say it listens within 30 s")
	}
	return nil
}

// executor starts a fake executor for cluster with the nodes given (the
// nodes array of a scenario file), in the default pool.
func (s *service) executor(cluster, nodes string, token string, flags ...string) {
	s.t.Helper()
	f := filepath.Join(s.t.TempDir(), cluster+"-nodes.json")
	if err := os.WriteFile(f, []byte(nodes), 0o600); err != nil {
		s.t.Fatal(err)
	}
	args := []string{"executor", "-cluster", cluster, "-nodes", f, "-renew", "200ms", "-server", s.url}
	if token != "" {
		args = append(args, "-token", token)
	}
	startProcess(s.t, io.Discard, append(args, flags...)...)
}

// call makes an API call with the service's token and decodes a 2xx
// answer into out (when not nil); any other status fails the test.
func (s *service) call(method, path, body string, out any) {
	s.t.Helper()
	if code, text := s.try(method, path, body, out); code/100 != 2 {
		s.t.Fatalf("%s %s: %d %s", method, path, code, text)
	}
}

// try makes an API call and returns its status and, when not 2xx, body.
func (s *service) try(method, path, body string, out any) (int, string) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	if res.StatusCode/100 != 2 {
		return res.StatusCode, string(data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			s.t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
	return res.StatusCode, ""
}

// submit submits a submit file and returns the job ids.
func (s *service) submit(file string) []string {
	var res struct {
		JobIDs []string `json:"jobIds"`
	}
	s.call(http.MethodPost, "/v1/jobs", file, &res)
	return res.JobIDs
}

// eventually polls cond every 50 ms until it holds or d passes (the
// processes run on real time; there is no clock to advance).
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// chromium is the browser's path; without one the test skips, or fails
// under CI=true.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("FLOTILLA_CHROMIUM"); p != "" {
		if _, err := exec.LookPath(p); err == nil {
			return p
		}
		t.Logf("FLOTILLA_CHROMIUM=%s is not an executable; looking elsewhere", p)
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no Chromium found (FLOTILLA_CHROMIUM, /usr/bin/chromium, PATH); scripts/chromium installs it")
	}
	t.Skip("no Chromium found (FLOTILLA_CHROMIUM, /usr/bin/chromium, PATH); scripts/chromium installs it")
	return ""
}

// browser starts a headless Chromium with a fresh profile and a
// 1280×800 window, closed when the test ends; its context times out
// after a minute.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	// The page's viewport is 1280×800 exactly (the window's size holds
	// the browser's own frame too).
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil { // starts the browser
		t.Fatal("starting Chromium:", err)
	}
	return ctx
}

// run runs browser actions in order, failing the test on an error.
func run(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

// eval evaluates a JavaScript expression in the page, failing the test
// on an error.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// do evaluates JavaScript for its effect.
func do(expr string) chromedp.Action[chromedp.Void] { return chromedp.Evaluate[chromedp.Void](expr) }

// css is a CSS selector.
func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

// screenshot captures the viewport as name (ui-NAME.png) in
// $FLOTILLA_UI_SCREENSHOTS or the test's temporary directory, and checks
// it is a 1280×800 PNG and that the page needs no horizontal scrolling
// at that width.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	scrollWidth := eval[int](t, ctx, `document.documentElement.scrollWidth`)
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 800 {
		t.Fatalf("screenshot %s is %dx%d, want 1280x800", name, b.Dx(), b.Dy())
	}
	if scrollWidth > 1280 {
		t.Errorf("page %s is %d px wide: it does not fit 1280 px", name, scrollWidth)
	}
	dir := os.Getenv("FLOTILLA_UI_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.WriteFile(filepath.Join(dir, "ui-"+name+".png"), buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

// texts is the text of each element sel matches.
func texts(t *testing.T, ctx context.Context, sel string) []string {
	t.Helper()
	return eval[[]string](t, ctx, fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.textContent.trim())`, sel))
}

// waitJS waits until a JavaScript expression is true.
func waitJS(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(20*time.Second), chromedp.WithPollingInterval(20*time.Millisecond))
}
