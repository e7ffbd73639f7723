package main

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flotilla-sched/flotilla"
	"github.com/flotilla-sched/flotilla/backend/memory"
	"github.com/flotilla-sched/flotilla/httpapi"
	"github.com/flotilla-sched/flotilla/scheduler"
	"github.com/flotilla-sched/flotilla/server"
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

// An executor whose nodes name a resource the service does not schedule
// is refused on its first report: it exits 2 naming the field and value,
// instead of reporting in vain every period.
func TestExecutorExitsWhenTheServiceRefusesItsNodes(t *testing.T) {
	ctx := context.Background()
	schema := flotilla.MustResourceSchema("cpu", "memory")
	srv, err := server.New(ctx, server.Config{Scheduler: scheduler.DefaultConfig(schema), Backend: memory.New(schema), Clock: server.SystemClock{}})
	require.NoError(t, err)
	ts := httptest.NewServer(httpapi.New(srv, httpapi.Options{}))
	t.Cleanup(ts.Close)
	nodes := filepath.Join(t.TempDir(), "nodes.json")
	require.NoError(t, os.WriteFile(nodes, []byte(`[{"name": "n", "resources": {"cpu": "4", "mem": "8Gi"}}]`), 0o600))
	code, _, stderr := runCmd("executor", "-server", ts.URL, "-cluster", "c1", "-nodes", nodes)
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "refused the nodes of "+nodes)
	assert.Contains(t, stderr, "mem")
}
