package kubetest

import (
	"testing"
)

// A benchmark run without FLOTILLA_KUBE_BIN fails rather than skips: a
// skipped benchmark measures nothing while go test prints ok.
func TestNewFailsABenchmarkWithoutTheBinaries(t *testing.T) {
	if testing.Short() {
		t.Skip("New skips every test under -short first")
	}
	t.Setenv(EnvBin, "")
	t.Setenv("CI", "")
	var failed, skipped bool
	testing.Benchmark(func(b *testing.B) {
		defer func() { failed, skipped = b.Failed(), b.Skipped() }()
		New(b)
	})
	if !failed || skipped {
		t.Fatalf("New in a benchmark without %s: failed %v, skipped %v; want failed", EnvBin, failed, skipped)
	}
}
