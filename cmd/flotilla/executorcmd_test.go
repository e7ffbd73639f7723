package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestExecutorRefusesANonPositiveDurationAsUsage: -renew and -lease-timeout
// must be positive; anything else is a usage error (exit 2) naming the
// flag, before anything is contacted.
func TestExecutorRefusesANonPositiveDurationAsUsage(t *testing.T) {
	nodes := filepath.Join(t.TempDir(), "nodes.json")
	if err := os.WriteFile(nodes, []byte(`[{"name": "n", "resources": {"cpu": "1"}}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ flag, value string }{
		{"-renew", "0s"}, {"-renew", "-1s"}, {"-lease-timeout", "0s"}, {"-lease-timeout", "-5s"},
	} {
		code, _, stderr := runCmd("executor", "-server", "http://127.0.0.1:1", "-cluster", "c", "-nodes", nodes, tc.flag, tc.value)
		assert.Equal(t, 2, code, "%s %s", tc.flag, tc.value)
		assert.Contains(t, stderr, tc.flag+" "+tc.value, "%s %s", tc.flag, tc.value)
	}
}
