package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBadFlagsExitTwoNamingEveryProblem(t *testing.T) {
	tmpl := filepath.Join(t.TempDir(), "pod.yaml")
	require.NoError(t, os.WriteFile(tmpl, []byte("apiVersion: v1\nkind: Pod\nspec: {}\n"), 0o600))
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-cluster", "c1", "-renew", "0s", "-node-selector", "a in (", "-resources", "",
		"-pod-template", tmpl, "extra"}, &stdout, &stderr)
	require.Equal(t, 2, code)
	for _, want := range []string{"unexpected arguments", "renew", "node-selector", "resources", "template.spec.containers"} {
		require.Contains(t, stderr.String(), want)
	}
}

func TestAPodTemplateFileIsReadIntoTheConfig(t *testing.T) {
	tmpl := filepath.Join(t.TempDir(), "pod.json")
	require.NoError(t, os.WriteFile(tmpl, []byte(`{"kind": "Pod", "spec": {"containers": [{"name": "main", "image": "alpine"}]}}`), 0o600))
	var stderr bytes.Buffer
	o, err := parseFlags([]string{"-cluster", "c1", "-pod-template", tmpl, "-resources", "cpu, memory", "-node-selector", "pool=batch",
		"-pool", "h100"}, &stderr)
	require.NoError(t, err)
	require.Equal(t, "h100", o.cfg.Pool)
	require.Equal(t, "main", o.cfg.Template.Spec.Containers[0].Name)
	require.Equal(t, []string{"cpu", "memory"}, o.cfg.Resources)
	require.Equal(t, "pool=batch", o.cfg.NodeSelector.String())
}
